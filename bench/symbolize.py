#!/usr/bin/env python3
"""Summarizes a profile written by bench/sampler.hpp (submit_micro with SAMPLE=<file>).

usage: symbolize.py <file> [rows]

Prints the share of samples per module, per function (the outermost function of the inlined
chain addr2line reports, i.e. the symbol the code was compiled into) and per instruction address
of libbaton (with its inlined chain of source lines). Needs addr2line (binutils); run it on the
machine that made the profile, since it reads the binaries the addresses point into. A sample's
address is usually the instruction after the one that stalled (skid).
"""
import collections
import subprocess
import sys


def main():
    path = sys.argv[1]
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    maps, pcs = [], []
    for line in open(path):
        if line.startswith("M "):
            f = line[2:].split()
            if len(f) >= 6 and "x" in f[1]:
                lo, hi = (int(x, 16) for x in f[0].split("-"))
                maps.append((lo, hi, int(f[2], 16), f[5]))
        elif line.startswith("P "):
            pcs.append(int(line[2:], 16))
    total = len(pcs) or 1
    offsets = collections.defaultdict(list)
    for pc in pcs:
        for lo, hi, off, module in maps:
            if lo <= pc < hi:
                offsets[module].append(pc - lo + off)
                break
        else:
            offsets["?"].append(0)
    print(f"{len(pcs)} samples")
    for module, offs in sorted(offsets.items(), key=lambda kv: -len(kv[1])):
        print(f"{100 * len(offs) / total:6.1f}%  module {module}")

    functions = collections.Counter()
    lines = {}
    for module, offs in offsets.items():
        short = module.rsplit("/", 1)[-1]
        if module == "?" or not any(k in short for k in ("baton", "submit_micro", "bench")):
            functions[short + ": (not symbolized)"] += len(offs)
            continue
        unique = sorted(set(offs))
        out = subprocess.run(["addr2line", "-a", "-f", "-i", "-C", "-e", module] +
                             [hex(o) for o in unique], capture_output=True, text=True).stdout
        chains, current = {}, None
        for ln in out.splitlines():
            if ln.startswith("0x"):
                current = int(ln, 16)
                chains[current] = []
            elif current is not None:
                chains[current].append(ln)
        for o in offs:
            chain = chains.get(o, [])
            names = chain[0::2]
            functions[short + ": " + (names[-1] if names else "?")[:100]] += 1
        if "libbaton" in short:
            counts = collections.Counter(offs)
            for o, c in counts.most_common(rows):
                chain = chains.get(o, [])
                where = " < ".join(x.rsplit("/", 1)[-1] for x in chain[1::2])
                lines[(short, o)] = (c, where)
    print("--- by function")
    for name, c in functions.most_common(rows):
        print(f"{100 * c / total:6.1f}%  {name}")
    print("--- hottest addresses in libbaton (innermost source line first)")
    for (short, o), (c, where) in sorted(lines.items(), key=lambda kv: -kv[1][0])[:rows]:
        print(f"{100 * c / total:6.1f}%  {o:#x}  {where[:150]}")


if __name__ == "__main__":
    main()
