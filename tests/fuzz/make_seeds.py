#!/usr/bin/env python3
"""Writes the API fuzzer's seed corpus (tests/fuzz/corpus/): small inputs that each reach one
area of the API, in the format fuzz_session.hpp describes. The files are committed; run this again
(python3 tests/fuzz/make_seeds.py) after changing the format, and review the diff."""
import os

# Opcodes (fuzz_session.cpp, Session::step, modulo 20).
CREATE_SEM, DESTROY_SEM, SIGNAL, FAIL, QUERY, WAIT = 0, 2, 3, 4, 5, 6
CREATE_DEV, DESTROY_DEV, CREATE_CB, DESTROY_CB, RECORD, SUBMIT = 7, 8, 9, 10, 11, 12
CREATE_BUF, DESTROY_BUF, MAP_OR_ALLOCA, DEALLOCA, WAIT_IDLE, MISC = 14, 15, 16, 17, 18, 19


def sems(n):  # create semaphores in slots 0..n-1, initial value 0
    out = []
    for i in range(n):
        out += [CREATE_SEM, i, 1, 0]
    return out


def record_cb(slot, cmds, flags=0):  # flags 0: begin ... end
    out = [CREATE_CB, 0, slot, RECORD, slot, flags, len(cmds)]
    for c in cmds:
        out += c
    return out


# Recorded commands: kind, buffer a, buffer b, then the kind's operands.
def host_call(action, sem, value_sel, ret=0):
    return [3, 0, 0, action, sem, value_sel, ret, 1]


def native(action, sem, value_sel, ret=0):
    return [4, 0, 0, action, sem, value_sel, ret, 1]


def fill(buf, off_sel=0, len_sel=1):
    return [1, buf, buf, off_sel, len_sel]


def copy(a, b):
    return [0, a, b, 0, 0, 1]


def submit(dev, queue, batches):
    # batches: list of (waits [(sem, sel)], cbs [slot], signals [(sem, sel)])
    out = [SUBMIT, dev, queue, len(batches) - 1]
    for waits, cbs, signals in batches:
        out += [len(waits)]
        for s, sel in waits:
            out += [s, sel]
        out += [len(cbs)] + list(cbs)
        out += [len(signals)]
        for s, sel in signals:
            out += [s, sel]
    return out


# Value selectors: signals (Session::signalValue) and waits (Session::waitValue).
SIG_NEXT, SIG_SAME, SIG_ZERO, SIG_MAX = 0, 2, 4, 5
WAIT_REACHED, WAIT_NEXT, WAIT_MAX = 0, 2, 5

seeds = {}
for backend, tag in ((0, "host"), (1, "cuda")):
    b = lambda config, ops: bytes([backend, config] + ops)  # noqa: E731
    seeds[f"{tag}-signal-wait"] = b(0x08, sems(2) + [SIGNAL, 0, SIG_NEXT, QUERY, 0,
                                                     WAIT, 2, 0, WAIT_REACHED, 1, WAIT_NEXT, 0, 3])
    seeds[f"{tag}-nonincreasing"] = b(0, sems(1) + [SIGNAL, 0, SIG_NEXT, SIGNAL, 0, SIG_SAME,
                                                    SIGNAL, 0, SIG_ZERO, SIGNAL, 0, SIG_MAX])
    seeds[f"{tag}-fail-then-wait"] = b(0, sems(2) + [FAIL, 0, 7, FAIL, 0, 8, SIGNAL, 0, SIG_NEXT,
                                                     WAIT, 2, 0, WAIT_NEXT, 1, WAIT_NEXT, 1, 2,
                                                     QUERY, 0])
    seeds[f"{tag}-wait-before-signal"] = b(0x08, sems(2) + submit(0, 0, [([(0, WAIT_NEXT)], [],
                                                                          [(1, SIG_NEXT)])]) +
                                           submit(0, 1, [([], [], [(0, SIG_NEXT)])]) +
                                           [WAIT, 1, 1, WAIT_NEXT, 0, 4])
    seeds[f"{tag}-wait-on-failed"] = b(0x08, sems(2) + submit(0, 0, [([(0, WAIT_NEXT)], [],
                                                                      [(1, SIG_NEXT)])]) +
                                       [FAIL, 0, 1, WAIT, 1, 1, WAIT_NEXT, 0, 4, QUERY, 1])
    seeds[f"{tag}-same-queue-deadlock-drained"] = b(0, sems(1) + submit(
        0, 0, [([(0, WAIT_NEXT)], [], []), ([], [], [(0, SIG_NEXT)])]))
    seeds[f"{tag}-commands"] = b(0x10, sems(1) + [CREATE_BUF, 0, 0, 5, 1, CREATE_BUF, 0, 1, 5, 1] +
                                 record_cb(0, [fill(0), copy(0, 1), [2, 1, 1, 0, 1],
                                               host_call(0, 0, 0), native(0, 0, 0)]) +
                                 submit(0, 0, [([], [0], [(0, SIG_NEXT)])]) +
                                 [WAIT, 1, 0, WAIT_NEXT, 0, 4, MAP_OR_ALLOCA, 1, 1])
    seeds[f"{tag}-hostcall-signals"] = b(0, sems(2) + record_cb(0, [host_call(1, 1, SIG_NEXT)]) +
                                         submit(0, 0, [([(0, WAIT_NEXT)], [0], [])]) +
                                         [SIGNAL, 0, SIG_NEXT, WAIT, 1, 1, WAIT_NEXT, 0, 4])
    seeds[f"{tag}-hostcall-fails"] = b(0, sems(2) + record_cb(0, [host_call(0, 0, 0, 220)]) +
                                       submit(0, 0, [([], [0], [(1, SIG_NEXT)])]) +
                                       [WAIT, 1, 1, WAIT_NEXT, 0, 4, QUERY, 1])
    seeds[f"{tag}-native-fail-action"] = b(0, sems(2) + record_cb(0, [native(2, 1, 0)]) +
                                           submit(0, 0, [([], [0], [(0, SIG_NEXT)])]) +
                                           [WAIT_IDLE, 1, 3, 0, 0])
    seeds[f"{tag}-alloca"] = b(0x08, sems(2) + [MAP_OR_ALLOCA, 0, 0, 0, 2, 1, 0, WAIT_NEXT, 3,
                                                1, 1, SIG_NEXT] +
                               [SIGNAL, 0, SIG_NEXT, DEALLOCA, 0, 0, 2, 0, 1, 1, 1, SIG_NEXT,
                                WAIT_IDLE, 0, 4, 0])
    seeds[f"{tag}-destroy-device-pending"] = b(0x08, sems(2) + submit(0, 0, [([(0, WAIT_NEXT)],
                                                                              [], [(1, SIG_NEXT)])])
                                               + [DESTROY_DEV, 0, QUERY, 1])
    seeds[f"{tag}-destroy-semaphore-waited"] = b(0x08, sems(2) + submit(0, 0, [(
        [(0, WAIT_NEXT)], [], [(1, SIG_NEXT)])]) + [DESTROY_SEM, 0, WAIT, 1, 1, WAIT_NEXT, 0, 4])
    seeds[f"{tag}-teardown-pending"] = b(0x02, sems(2) + submit(0, 0, [([(0, WAIT_NEXT)], [],
                                                                        [(1, SIG_NEXT)])]))
    seeds[f"{tag}-teardown-explicit"] = b(0x04, sems(2) + [CREATE_BUF, 0, 0, 3, 0] +
                                          record_cb(0, [fill(0)]) +
                                          submit(0, 0, [([], [0], [(1, SIG_NEXT)])]))
    seeds[f"{tag}-fail-drain"] = b(0x01, sems(3) + submit(0, 0, [([(0, WAIT_NEXT)], [],
                                                                  [(1, SIG_NEXT)])]) +
                                   submit(0, 1, [([(1, WAIT_NEXT)], [], [(2, SIG_NEXT)])]))
    seeds[f"{tag}-two-devices"] = b(0x08, sems(2) + [CREATE_DEV, 1] +
                                    submit(1, 0, [([(0, WAIT_NEXT)], [], [(1, SIG_NEXT)])]) +
                                    submit(0, 0, [([], [], [(0, SIG_NEXT)])]) +
                                    [WAIT, 1, 1, WAIT_NEXT, 0, 4])
    seeds[f"{tag}-huge-lists"] = b(0, sems(1) + [MISC, 1, 0, 0, 0, 0, MISC, 1, 0, 0, 0, 1,
                                                 MISC, 1, 0, 0, 0, 2, MISC, 1, 0, 0, 0, 3])
    seeds[f"{tag}-stale-handles"] = b(0, sems(1) + [DESTROY_SEM, 0, SIGNAL, 0, 0, QUERY, 0,
                                                    CREATE_CB, 0, 0, DESTROY_CB, 0, RECORD, 0, 0,
                                                    0] + submit(0, 0, [([], [0], [])]))
    seeds[f"{tag}-bad-records"] = b(0, [CREATE_BUF, 0, 0, 2, 1] + record_cb(
        0, [fill(0, 4, 4), [5, 0, 0], [0, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0]], flags=0))

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(here, exist_ok=True)
for name, data in sorted(seeds.items()):
    with open(os.path.join(here, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {here}")
