#!/usr/bin/env python3
"""Where a collective submission's time goes, from a timeline trace (BATON_TRACE, trace.hpp).

Usage: trace_profile.py TRACE.json [--skip N]

For every traced submission that ran collectives, the trace has its "submit" slice (the
submitting thread), its "issue #N" slice (the thread that made its driver calls: the submitting
thread when issued directly, else the device's issuing thread), its "library call #N" slice (the
device's caller thread enqueueing the group, impl/stream/collectives.cpp), its completion as a
thread observed it (completed_us), and the host wait that its signal released. This prints the
median and the 90th percentile of each stretch between them, in µs:

  submit        the submit call
  to issue      end of submit -> start of the issue (0 or less: issued inside submit, directly)
  to call       start of the issue -> the caller thread starts the library call (the hand-off)
  call          the library call (ncclGroupStart, the calls, ncclGroupEnd)
  after call    end of the library call -> end of the issue (the hand-back, the events behind)
  to complete   end of the issue -> completion observed (the GPU's work and its detection)
  to wake       completion observed -> the host wait for its signal returned

and the round trip, from the submit to the end of that host wait. The first --skip submissions
(default 20: warm-up) are left out. Used on the GPU machine with collectives_bench latency
(tests/cuda/gpu_run.sh, step collprofile).
"""
import json
import sys


def percentile(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(p * (len(v) - 1) + 0.5))]


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__.strip().splitlines()[2])
        return 2
    skip = 20
    if "--skip" in args:
        skip = int(args[args.index("--skip") + 1])
    with open(args[0]) as f:
        events = json.load(f)["traceEvents"]

    subs = {}        # id -> the submission's slice args
    collective = set()  # ids with a collective slice
    submit = {}      # id -> (begin, end)
    issue = {}       # id -> (begin, end)
    call = {}        # id -> (begin, end)
    open_calls = {}  # (tid, name) -> begin
    open_waits = {}  # tid -> (begin, entries)
    waits = []       # (begin, end, entries)
    for e in events:
        name, ph = e.get("name", ""), e["ph"]
        if ph == "X" and e.get("cat") == "submission":
            subs[e["args"]["id"]] = e["args"]
        elif ph == "X" and e.get("cat") == "collective":
            collective.add(e["args"]["id"])
        elif ph == "X" and name.startswith("submit #"):
            for i in e["args"]["submissions"]:
                submit[i] = (e["ts"], e["ts"] + e["dur"])
        elif ph == "X" and name.startswith("issue #"):
            issue[e["args"]["submission"]] = (e["ts"], e["ts"] + e["dur"])
        elif name.startswith("library call #"):
            key = (e["tid"], name)
            if ph == "B":
                open_calls[key] = e["ts"]
            elif ph == "E" and key in open_calls:
                call[int(name.split("#")[1])] = (open_calls.pop(key), e["ts"])
        elif e.get("cat") == "host_wait":
            if ph == "B":
                open_waits[e["tid"]] = (e["ts"], e.get("args", {}).get("entries", []))
            elif ph == "E" and e["tid"] in open_waits:
                b, entries = open_waits.pop(e["tid"])
                waits.append((b, e["ts"], entries))

    # The first host wait that ended after the signal was due and asked for (semaphore, value).
    wait_end = {}
    for b, end, entries in waits:
        for w in entries:
            key = (w["semaphore"], w["value"])
            if key not in wait_end or end < wait_end[key]:
                wait_end[key] = end

    stretches = {k: [] for k in ("submit", "to issue", "to call", "call", "after call",
                                 "to complete", "to wake", "round trip")}
    ids = sorted(i for i in collective if i in subs and i in submit and i in issue)
    for i in ids[skip:]:
        s, sub_b, sub_e = subs[i], submit[i][0], submit[i][1]
        iss_b, iss_e = issue[i]
        stretches["submit"].append(sub_e - sub_b)
        stretches["to issue"].append(iss_b - sub_e)
        if i in call:
            stretches["to call"].append(call[i][0] - iss_b)
            stretches["call"].append(call[i][1] - call[i][0])
            stretches["after call"].append(iss_e - call[i][1])
        done = s.get("completed_us")
        if done is None:
            continue
        stretches["to complete"].append(done - iss_e)
        ends = [wait_end[(sig["semaphore"], sig["value"])] for sig in s["signals"]
                if (sig["semaphore"], sig["value"]) in wait_end]
        if ends:
            stretches["to wake"].append(min(ends) - done)
            stretches["round trip"].append(min(ends) - sub_b)

    print("%d submissions with collectives (%d skipped as warm-up)" % (max(0, len(ids) - skip),
                                                                      min(skip, len(ids))))
    print("%-12s %8s %8s %8s %6s" % ("stretch", "median", "p90", "mean", "n"))
    for k, v in stretches.items():
        mean = sum(v) / len(v) if v else float("nan")
        print("%-12s %8.2f %8.2f %8.2f %6d" % (k, percentile(v, 0.5), percentile(v, 0.9), mean,
                                              len(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
