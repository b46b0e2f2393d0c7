#!/usr/bin/env python3
"""The multi-process collective tests: one process per rank, as real jobs run.

Launches baton-collective-rank (tests/collectives/collective_rank.cpp) once per rank, each on its
own GPU, hands the CommunicatorId from rank 0 to the others through a file in a temporary
directory, prints every rank's output prefixed with [rank r], and judges what they print. The
in-process tests cannot cover this: NCCL's inter-process transports, the id travelling through the
application's channel, and above all a peer process that dies (the fake NCCL is in-process only,
so these runs need GPUs).

Subcommands:
  ops        every collective on every element type, checked by every rank (RESULT failures=0)
  pipeline   compute and all-reduce on two queues ordered by timeline semaphores
  kill       --trials times: start the ranks in kill-loop mode, wait until all print READY,
             sleep 50-300 ms, SIGKILL the last rank, and judge the survivors: their wait must
             fail within --timeout-ms + 1 s of the kill (FAILED_AT, CLOCK_MONOTONIC like
             time.monotonic_ns), they must shrink and get a correct all-reduce, leak nothing,
             exit 0 and never hang (a survivor still running at timeout + 30 s is a hang)
  selftest   no GPU: the verdict logic on canned outputs, and every command line the harness
             composes parsed by the rank program (--parse-only); with --fake-library, 1-rank runs
             on the fake driver through the same launch and judging code
Common options: --binary (the rank program), --build (the build directory, for the HIP
translation library; default: the build root holding the binary), --backend cuda|hip,
--sockets (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: the socket transport over loopback, as between
two machines), --env KEY=VALUE (repeatable), --dry-run (print the command lines only).
--backend hip on an NVIDIA machine: BATON_HIP_DRIVER defaults to the build's
tests/hip/driver/libbaton_hip_over_cuda.so and then BATON_RCCL_LIBRARY to libnccl.so.2 (through
that library a hipStream_t is a CUstream, so NCCL serves under RCCL's names).
Exit status: 0 when every verdict passed, 1 otherwise, 2 for bad arguments.
"""

import argparse
import os
import random
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RANK_PROGRAM = "baton-collective-rank"
HIP_OVER_CUDA = os.path.join("tests", "hip", "driver", "libbaton_hip_over_cuda.so")

_print_lock = threading.Lock()


def say(text):
    with _print_lock:
        print(text, flush=True)


# ---- the environment and the command lines ------------------------------------------------------


def find_build_root(binary):
    """The build directory that holds `binary`: the nearest parent with build.ninja."""
    d = os.path.dirname(os.path.abspath(binary))
    while d != os.path.dirname(d):
        if os.path.exists(os.path.join(d, "build.ninja")):
            return d
        d = os.path.dirname(d)
    return os.path.dirname(os.path.abspath(binary))


def rank_env(args, base=None):
    """(full environment, the variables this harness set) for the rank processes."""
    env = dict(os.environ if base is None else base)
    added = {}

    def put(key, value, overwrite=True):
        if overwrite or key not in env:
            env[key] = value
            added[key] = value

    # NVLink multicast can take the host's GPUs out of service (a rule of the multi-GPU test
    # machines).
    put("NCCL_NVLS_ENABLE", "0", overwrite=False)
    if args.sockets:
        put("NCCL_P2P_DISABLE", "1")
        put("NCCL_SHM_DISABLE", "1")
    if args.backend == "hip" and "BATON_HIP_DRIVER" not in env:
        translation = os.path.join(args.build, HIP_OVER_CUDA)
        if os.path.exists(translation):
            put("BATON_HIP_DRIVER", translation)
    if (args.backend == "hip" and env.get("BATON_HIP_DRIVER", "").endswith(
            "libbaton_hip_over_cuda.so")):
        put("BATON_RCCL_LIBRARY", "libnccl.so.2", overwrite=False)
    for item in args.env or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit("--env wants KEY=VALUE, not %r" % item)
        put(key, value)
    return env, added


def rank_command(args, rank, mode, id_file, extra=()):
    devices = [int(d) for d in args.devices.split(",")] if args.devices else None
    device = devices[rank] if devices else rank
    return [args.binary, "--rank", str(rank), "--ranks", str(args.ranks), "--id-file", id_file,
            "--device", str(device), "--backend", args.backend, "--mode", mode,
            "--timeout-ms", str(args.timeout_ms), "--limit-s", str(args.limit_s)] + list(extra)


def show_command(rank, added, cmd):
    assignments = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in sorted(added.items()))
    say("[run %d] %s%s" % (rank, assignments + " " if assignments else "", shlex.join(cmd)))


# ---- one rank process ---------------------------------------------------------------------------


class RankProcess:
    """A running rank: its output is printed as it comes, prefixed, and kept for the verdict."""

    def __init__(self, rank, cmd, env, echo=True):
        self.rank = rank
        self.lines = []
        self.ready = threading.Event()
        self.returncode = None
        self.hung = False
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace")
        self._echo = echo
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.lines.append(line)
            if self._echo:
                say("[rank %d] %s" % (self.rank, line))
            if line.strip() == "READY":
                self.ready.set()
        self.ready.set()  # also on exit: whoever waits for READY then looks at the output

    def wait(self, deadline):
        """Waits until the monotonic `deadline` (seconds); kills a rank still running then."""
        try:
            self.returncode = self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.hung = True
            self.proc.kill()
            self.returncode = self.proc.wait()
            say("[rank %d] HANG: killed by the harness" % self.rank)
        self._reader.join(timeout=5)
        return self.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()


def launch(args, mode, extra_for_rank, tmp, echo=True):
    """Starts every rank of one group; returns the RankProcess list (or None with --dry-run)."""
    env, added = rank_env(args)
    id_file = os.path.join(tmp, "communicator.id")
    cmds = [rank_command(args, r, mode, id_file, extra_for_rank(r)) for r in range(args.ranks)]
    for r, cmd in enumerate(cmds):
        show_command(r, added, cmd)
    if args.dry_run:
        return None
    return [RankProcess(r, cmd, env, echo) for r, cmd in enumerate(cmds)]


# ---- reading a rank's output --------------------------------------------------------------------


def parse_fields(text):
    """'a=1 b=x reason=rest of line' -> dict; reason= takes the rest of the line."""
    fields = {}
    head, sep, reason = text.partition("reason=")
    for token in head.split():
        key, eq, value = token.partition("=")
        if eq:
            fields[key] = value
    if sep:
        fields["reason"] = reason.strip()
    return fields


def parse_output(lines):
    """What a rank reported, from its lines (see collective_rank.cpp for the formats)."""
    out = {"result": None, "ready": False, "failed_at_ns": None, "reason": None, "state": None,
           "shrink_ok": None, "shrink_ms": None, "shrink_ranks": None, "shrink_reason": None,
           "leaks": None, "hang": False}
    for line in lines:
        word, _, rest = line.strip().partition(" ")
        if word == "READY":
            out["ready"] = True
        elif word == "RESULT":
            kind, _, fields = rest.partition(" ")
            out["result"] = dict(parse_fields(fields), kind=kind)
        elif word == "FAILED_AT":
            ns, _, reason = rest.partition(" ")
            try:
                out["failed_at_ns"] = int(ns)
            except ValueError:
                pass
            out["reason"] = parse_fields(reason).get("reason", "")
        elif word == "STATE":
            out["state"] = rest.strip()
        elif word in ("SHRINK_OK", "SHRINK_FAIL"):
            f = parse_fields(rest)
            out["shrink_ok"] = word == "SHRINK_OK"
            out["shrink_ms"] = float(f["ms"]) if "ms" in f else None
            out["shrink_ranks"] = int(f["ranks"]) if "ranks" in f else None
            out["shrink_reason"] = f.get("reason")
        elif word == "LEAKCHECK":
            out["leaks"] = {k: int(v) for k, v in parse_fields(rest).items() if v.isdigit()}
        elif word == "HANG":
            out["hang"] = True
    return out


def judge_checks(kind, outputs, returncodes, hung):
    """ops/pipeline: every rank printed RESULT <kind> with failures=0, exited 0, did not hang.

    Returns (ok, [one line per rank])."""
    ok, notes = True, []
    for r, (out, rc, h) in enumerate(zip(outputs, returncodes, hung)):
        res = out["result"]
        good = (res is not None and res["kind"] == kind and res.get("failures") == "0"
                and rc == 0 and not h and not out["hang"])
        ok = ok and good
        if res is None:
            what = "no RESULT line"
        else:
            what = "checks=%s failures=%s" % (res.get("checks"), res.get("failures"))
            if "reason" in res:
                what += " reason=" + res["reason"]
        notes.append("%s rank=%d %s exit=%s%s %s" % (kind, r, what, rc,
                                                     " HANG" if h or out["hang"] else "",
                                                     "ok" if good else "FAILED"))
    return ok, notes


def judge_survivor(out, returncode, hung, kill_ns, timeout_ms):
    """One survivor of a kill trial: what the summary counts."""
    wake_ms = None
    if out["failed_at_ns"] is not None and kill_ns is not None:
        wake_ms = (out["failed_at_ns"] - kill_ns) / 1e6
    leaks = out["leaks"]
    return {
        "hang": hung or out["hang"],
        "wake_ms": wake_ms,
        "in_time": wake_ms is not None and wake_ms <= timeout_ms + 1000,
        "reason": out["reason"],
        "shrink_ok": bool(out["shrink_ok"]),
        "shrink_ms": out["shrink_ms"],
        "leak": leaks is None or any(leaks.get(k, 1) != 0 for k in
                                     ("events_in_use", "timepoints_live", "records_in_flight")),
        "exit_ok": returncode == 0,
        "result_ok": out["result"] is not None and out["result"].get("ok") == "1",
    }


def summarize_kill(trials, survivors, timeout_ms):
    """The summary of a kill run; returns (ok, lines)."""
    y = len(survivors)
    in_time = sum(s["in_time"] for s in survivors)
    hangs = sum(s["hang"] for s in survivors)
    shrinks = sum(s["shrink_ok"] for s in survivors)
    leaks = sum(s["leak"] for s in survivors)
    bad_exit = sum(not s["exit_ok"] for s in survivors)
    wakes = sorted(s["wake_ms"] for s in survivors if s["wake_ms"] is not None)
    if wakes:
        spread = "%.1f/%.1f/%.1f" % (wakes[0], statistics.median(wakes), wakes[-1])
    else:
        spread = "-/-/-"
    lines = ["kill trials=%d survivors_failed_in_time=%d/%d hangs=%d shrink_ok=%d/%d leaks=%d "
             "death_to_wake_ms min/median/max=%s (limit %d ms)"
             % (trials, in_time, y, hangs, shrinks, y, leaks, spread, timeout_ms + 1000)]
    shrink_ms = sorted(s["shrink_ms"] for s in survivors if s["shrink_ms"] is not None
                       and s["shrink_ok"])
    if shrink_ms:
        lines.append("shrink (failure to checked result) ms min/median/max=%.1f/%.1f/%.1f"
                     % (shrink_ms[0], statistics.median(shrink_ms), shrink_ms[-1]))
    if bad_exit:
        lines.append("survivors with a non-zero exit: %d" % bad_exit)
    reasons = []
    for s in survivors:
        if s["reason"] and s["reason"] not in reasons:
            reasons.append(s["reason"])
    for reason in reasons[:3]:
        lines.append("reason: " + reason)
    ok = y > 0 and in_time == y and hangs == 0 and shrinks == y and leaks == 0 and bad_exit == 0
    lines.append("kill %s" % ("PASSED" if ok else "FAILED"))
    return ok, lines


# ---- the subcommands ----------------------------------------------------------------------------


def run_checks(args, mode, extra):
    """ops and pipeline: one group, every rank's RESULT judged."""
    with tempfile.TemporaryDirectory(prefix="baton-collectives-") as tmp:
        ranks = launch(args, mode, lambda r: extra, tmp)
        if ranks is None:
            return 0
        deadline = time.monotonic() + args.limit_s + 30
        codes = [p.wait(deadline) for p in ranks]
    kind = "ops" if mode == "ops" else "pipeline"
    ok, notes = judge_checks(kind, [parse_output(p.lines) for p in ranks], codes,
                             [p.hung for p in ranks])
    for note in notes:
        say(note)
    say("%s %s" % (kind, "PASSED" if ok else "FAILED"))
    return 0 if ok else 1


def cmd_ops(args):
    return run_checks(args, "ops", [])


def cmd_pipeline(args):
    return run_checks(args, "pipeline", ["--iterations", str(args.layers),
                                         "--bytes", str(args.bytes)])


def cmd_kill(args):
    if args.ranks < 2:
        raise SystemExit("kill needs --ranks 2 or more (one dies, the others survive)")
    rng = random.Random(args.seed)
    victim = args.ranks - 1
    extra = ["--iterations", str(args.iterations), "--bytes", str(args.bytes),
             "--dead", str(victim)]
    survivors = []
    setup_failures = 0
    for trial in range(1, args.trials + 1):
        say("---- trial %d/%d" % (trial, args.trials))
        with tempfile.TemporaryDirectory(prefix="baton-kill-") as tmp:
            ranks = launch(args, "kill-loop", lambda r: extra, tmp, echo=not args.quiet)
            if ranks is None:
                return 0
            ready_by = time.monotonic() + 90
            for p in ranks:
                p.ready.wait(max(0.0, ready_by - time.monotonic()))
            if not all(parse_output(p.lines)["ready"] for p in ranks):
                # Not a verdict on failure handling: the group never ran (printed above).
                setup_failures += 1
                for p in ranks:
                    p.kill()
                    p.wait(time.monotonic() + 10)
                    if args.quiet:
                        for line in p.lines[-20:]:
                            say("[rank %d] %s" % (p.rank, line))
                say("trial %d: not every rank printed READY" % trial)
                continue
            time.sleep(rng.uniform(args.min_delay_ms, args.max_delay_ms) / 1000.0)
            os.kill(ranks[victim].proc.pid, signal.SIGKILL)
            kill_ns = time.monotonic_ns()
            say("trial %d: SIGKILL rank %d at %d" % (trial, victim, kill_ns))
            deadline = time.monotonic() + args.timeout_ms / 1000.0 + 30
            ranks[victim].wait(time.monotonic() + 10)
            for p in ranks[:victim]:
                p.wait(deadline)
                judged = judge_survivor(parse_output(p.lines), p.returncode, p.hung, kill_ns,
                                        args.timeout_ms)
                survivors.append(judged)
                if args.quiet and not (judged["in_time"] and judged["shrink_ok"]
                                       and not judged["leak"] and judged["exit_ok"]):
                    for line in p.lines[-30:]:
                        say("[rank %d] %s" % (p.rank, line))
                say("trial %d rank %d: death_to_wake_ms=%s in_time=%d shrink_ok=%d shrink_ms=%s "
                    "leak=%d exit=%s%s" % (
                        trial, p.rank,
                        "%.1f" % judged["wake_ms"] if judged["wake_ms"] is not None else "-",
                        judged["in_time"], judged["shrink_ok"], judged["shrink_ms"],
                        judged["leak"], p.returncode, " HANG" if judged["hang"] else ""))
    ok, lines = summarize_kill(args.trials, survivors, args.timeout_ms)
    if setup_failures:
        lines.insert(1, "trials whose ranks never all printed READY: %d" % setup_failures)
        ok = False
    for line in lines:
        say(line)
    return 0 if ok else 1


# ---- selftest -----------------------------------------------------------------------------------

CANNED_SURVIVOR = """library libnccl.so.2 version 22809 canRevoke=1 canShrink=1
READY
FAILED_AT 1000000000 reason=baton: Semaphore::wait: semaphore 'loop' failed: no progress for 2000 ms
STATE failed
shrunk: rank 0 of 1
SHRINK_OK ranks=1 ms=312.5
LEAKCHECK events_in_use=0 timepoints_live=0 records_in_flight=0
RESULT kill rank=0 ok=1""".splitlines()


def selftest(args):
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)
        say("selftest %s: %s" % ("ok" if cond else "FAILED", what))

    # Parsing.
    out = parse_output(CANNED_SURVIVOR)
    expect(out["ready"] and out["failed_at_ns"] == 1000000000, "READY and FAILED_AT parsed")
    expect(out["reason"].endswith("no progress for 2000 ms"), "the reason keeps its spaces")
    expect(out["shrink_ok"] and out["shrink_ms"] == 312.5 and out["shrink_ranks"] == 1,
           "SHRINK_OK parsed")
    expect(out["leaks"] == {"events_in_use": 0, "timepoints_live": 0, "records_in_flight": 0},
           "LEAKCHECK parsed")
    expect(out["result"] == {"kind": "kill", "rank": "0", "ok": "1"}, "RESULT kill parsed")

    # A survivor woken 2.5 s after a kill with a 2 s timeout is in time; 3.5 s is not.
    good = judge_survivor(out, 0, False, 1000000000 - 2_500_000_000, 2000)
    expect(good["in_time"] and abs(good["wake_ms"] - 2500) < 1e-6 and not good["leak"],
           "in time at 2500 ms for a 2000 ms timeout")
    late = judge_survivor(out, 0, False, 1000000000 - 3_500_000_000, 2000)
    expect(not late["in_time"], "late at 3500 ms")
    leaky = parse_output(CANNED_SURVIVOR[:-2] + [
        "LEAKCHECK events_in_use=0 timepoints_live=2 records_in_flight=0"])
    expect(judge_survivor(leaky, 0, False, 0, 2000)["leak"], "a live timepoint is a leak")
    hang = parse_output(["READY", "HANG rank=0: still running after 120 s (--limit-s)"])
    hung = judge_survivor(hang, 3, False, 0, 2000)
    expect(hung["hang"] and not hung["in_time"] and not hung["shrink_ok"] and hung["leak"],
           "the rank's own watchdog counts as a hang")
    shrink_fail = parse_output(CANNED_SURVIVOR[:5] + [
        "SHRINK_FAIL ms=2.0 reason=shrink: ErrorNotSupported: no ncclCommShrink"])
    expect(not shrink_fail["shrink_ok"] and shrink_fail["shrink_reason"].startswith("shrink:"),
           "SHRINK_FAIL parsed")

    # The kill summary.
    ok, lines = summarize_kill(2, [good, good], 2000)
    expect(ok and lines[0].startswith(
        "kill trials=2 survivors_failed_in_time=2/2 hangs=0 shrink_ok=2/2 leaks=0 "
        "death_to_wake_ms min/median/max=2500.0/2500.0/2500.0"), "summary of two good survivors")
    expect(any(l.startswith("reason: baton: Semaphore::wait") for l in lines),
           "the summary lists the reason")
    ok, lines = summarize_kill(3, [good, late, hung], 2000)
    expect(not ok and "survivors_failed_in_time=1/3 hangs=1 shrink_ok=2/3 leaks=1" in lines[0],
           "summary counts late, hung and leaking survivors")
    expect(not summarize_kill(0, [], 2000)[0], "no survivors is no pass")

    # ops/pipeline verdicts.
    passed = parse_output(["RESULT ops rank=0 checks=132 failures=0"])
    failed = parse_output(["RESULT ops rank=1 checks=120 failures=2"])
    expect(judge_checks("ops", [passed, passed], [0, 0], [False, False])[0], "ops passes")
    expect(not judge_checks("ops", [passed, failed], [0, 1], [False, False])[0],
           "ops fails on failures=2")
    expect(not judge_checks("ops", [passed, parse_output([])], [0, 1], [False, False])[0],
           "ops fails without a RESULT line")
    expect(not judge_checks("ops", [passed, passed], [0, 0], [False, True])[0],
           "ops fails on a hang")
    expect(not judge_checks("pipeline", [passed], [0], [False])[0],
           "a RESULT of another mode does not count")

    # The environment.
    ns = argparse.Namespace(sockets=True, backend="hip", build="/nonexistent",
                            env=["NCCL_DEBUG=WARN"], binary=args.binary)
    env, added = rank_env(ns, base={"BATON_HIP_DRIVER": "/x/libbaton_hip_over_cuda.so"})
    expect(added == {"NCCL_NVLS_ENABLE": "0", "NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1",
                     "BATON_RCCL_LIBRARY": "libnccl.so.2", "NCCL_DEBUG": "WARN"},
           "environment for --sockets --backend hip over the translation library")
    env, added = rank_env(argparse.Namespace(sockets=False, backend="cuda", build="/x", env=[],
                                             binary=args.binary),
                          base={"NCCL_NVLS_ENABLE": "1"})
    expect(added == {} and env["NCCL_NVLS_ENABLE"] == "1", "a caller's NCCL_NVLS_ENABLE stays")

    # Every command line the harness composes must parse in the rank program.
    if not os.path.exists(args.binary):
        expect(False, "the rank program exists: %s" % args.binary)
    else:
        ns = argparse.Namespace(ranks=2, binary=args.binary, backend="hip", timeout_ms=2000,
                                limit_s=62, devices="1,0")
        for mode, extra in (("ops", []), ("pipeline", ["--iterations", "8", "--bytes", "4096"]),
                            ("kill-loop", ["--iterations", "100000", "--bytes", "4194304",
                                           "--dead", "1"])):
            for r in range(2):
                cmd = rank_command(ns, r, mode, "/tmp/id", extra) + ["--parse-only"]
                p = subprocess.run(cmd, capture_output=True, text=True)
                want = "rank=%d ranks=2 id-file=/tmp/id device=%d backend=hip mode=%s" % (
                    r, 1 - r, mode)
                expect(p.returncode == 0 and p.stdout.startswith(want),
                       "the rank program parses: %s" % shlex.join(cmd[1:]))
        p = subprocess.run([args.binary, "--rank", "2", "--ranks", "2", "--id-file", "x"],
                           capture_output=True, text=True)
        expect(p.returncode == 2, "the rank program refuses --rank 2 of 2")

    # 1-rank runs on the fake driver, through the launch and judging code of the subcommands.
    if args.fake_library:
        fake = os.path.abspath(args.fake_library)
        env_items = ["BATON_CUDA_DRIVER=" + fake, "BATON_NCCL_LIBRARY=" + fake]
        common = dict(binary=args.binary, build=args.build, backend="cuda", sockets=False,
                      env=env_items, ranks=1, timeout_ms=2000, limit_s=60, devices=None,
                      dry_run=False)
        expect(cmd_ops(argparse.Namespace(**common)) == 0, "ops, 1 rank on the fake")
        expect(cmd_pipeline(argparse.Namespace(layers=4, bytes=65536, **common)) == 0,
               "pipeline, 1 rank on the fake")
        # The survivor's path without a death: an injected ncclRemoteError, then shrink.
        ns = argparse.Namespace(**common)
        with tempfile.TemporaryDirectory(prefix="baton-selftest-") as tmp:
            start_ns = time.monotonic_ns()
            ranks = launch(ns, "kill-loop", lambda r: ["--iterations", "1000", "--bytes", "4096",
                                                       "--inject-error-after", "10"], tmp)
            ranks[0].wait(time.monotonic() + 90)
        judged = judge_survivor(parse_output(ranks[0].lines), ranks[0].returncode,
                                ranks[0].hung, start_ns, ns.timeout_ms)
        expect(judged["in_time"] and judged["shrink_ok"] and not judged["leak"]
               and judged["exit_ok"] and judged["result_ok"] and not judged["hang"],
               "kill-loop with an injected library error: woken, shrunk, no leak")

    say("selftest %s (%d failure(s))" % ("PASSED" if not failures else "FAILED", len(failures)))
    return 0 if not failures else 1


# ---- arguments ----------------------------------------------------------------------------------


def main(argv):
    default_binary = os.path.join(REPO, "build", "tests", "collectives", RANK_PROGRAM)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--binary", default=default_binary,
                        help="the rank program (default: %(default)s)")
    common.add_argument("--build", help="the build directory (default: the one holding --binary)")
    common.add_argument("--backend", choices=("cuda", "hip"), default="cuda")
    common.add_argument("--ranks", type=int, default=2)
    common.add_argument("--devices", help="device per rank, comma-separated (default: rank r "
                        "on device r)")
    common.add_argument("--sockets", action="store_true",
                        help="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: sockets over loopback")
    common.add_argument("--env", action="append", metavar="KEY=VALUE",
                        help="set for the ranks (repeatable)")
    common.add_argument("--timeout-ms", type=int,
                        help="the communicator's timeout, for its creation too (default: kill "
                        "2000, others 30000)")
    common.add_argument("--limit-s", type=int,
                        help="each rank's watchdog (default: 120, kill: timeout + 60 s)")
    common.add_argument("--dry-run", action="store_true", help="print the command lines only")

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n", 1)[1])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("ops", parents=[common], help="every collective on every type")
    p = sub.add_parser("pipeline", parents=[common], help="compute and all-reduce on two queues")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--bytes", type=int, default=4 << 20, help="per layer")
    p = sub.add_parser("kill", parents=[common], help="SIGKILL a rank; the survivors must wake")
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--iterations", type=int, default=10_000_000,
                   help="all-reduces in each rank's loop (more than a trial runs)")
    p.add_argument("--bytes", type=int, default=4 << 20, help="per all-reduce")
    p.add_argument("--min-delay-ms", type=float, default=50)
    p.add_argument("--max-delay-ms", type=float, default=300)
    p.add_argument("--seed", type=int, help="for the delays (default: random)")
    p.add_argument("--quiet", action="store_true",
                   help="print the ranks' lines only when a trial goes wrong")
    p = sub.add_parser("selftest", parents=[common], help="no GPU: verdicts on canned outputs")
    p.add_argument("--fake-library", help="the fake driver (libbaton_fake_cuda.so): also run "
                   "1-rank ops, pipeline and kill-loop on it")
    args = parser.parse_args(argv)

    args.binary = os.path.abspath(args.binary)
    if args.build is None:
        args.build = find_build_root(args.binary)
    if args.timeout_ms is None:
        args.timeout_ms = 2000 if args.command == "kill" else 30000
    if args.limit_s is None:
        args.limit_s = args.timeout_ms // 1000 + 60 if args.command == "kill" else 120
    if args.ranks < 1:
        parser.error("--ranks must be 1 or more")
    if args.devices and len(args.devices.split(",")) < args.ranks:
        parser.error("--devices names fewer devices than --ranks")
    if args.command != "selftest" and not args.dry_run and not os.path.exists(args.binary):
        parser.error("no rank program at %s (build it: ninja -C build)" % args.binary)
    return {"ops": cmd_ops, "pipeline": cmd_pipeline, "kill": cmd_kill,
            "selftest": selftest}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
