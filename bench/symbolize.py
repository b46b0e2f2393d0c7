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


def is_ours(module):
    short = module.rsplit("/", 1)[-1]
    return module != "?" and any(k in short for k in ("baton", "submit_micro", "bench"))


_symbols = {}


def exported(module, off):
    """The nearest symbol at or below file offset `off` in `module` (its dynamic symbol table,
    plus its static one when present): a rough name for code without debug information."""
    if module not in _symbols:
        table = []
        for flags in (["-D"], []):
            try:
                out = subprocess.run(["nm", "-C", "--defined-only"] + flags + [module],
                                     capture_output=True, text=True).stdout
            except OSError:
                out = ""
            for ln in out.splitlines():
                f = ln.split()
                if len(f) >= 3 and f[1] in "TtWi":
                    table.append((int(f[0], 16), " ".join(f[2:])))
        table.sort()
        _symbols[module] = table
    table = _symbols[module]
    lo, hi = 0, len(table)
    while lo < hi:
        mid = (lo + hi) // 2
        if table[mid][0] <= off:
            lo = mid + 1
        else:
            hi = mid
    if lo == 0:
        return "(not symbolized)"
    addr, name = table[lo - 1]
    return f"{name}+{off - addr:#x}"


def main():
    path = sys.argv[1]
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    maps, pcs, tops = [], [], []
    for line in open(path):
        if line.startswith("M "):
            f = line[2:].split()
            if len(f) >= 6 and "x" in f[1]:
                lo, hi = (int(x, 16) for x in f[0].split("-"))
                maps.append((lo, hi, int(f[2], 16), f[5]))
        elif line.startswith("P "):
            f = line[2:].split()
            pcs.append(int(f[0], 16))
            tops.append(int(f[1], 16) if len(f) > 1 else 0)
    total = len(pcs) or 1
    def locate(pc):
        for lo, hi, off, module in maps:
            if lo <= pc < hi:
                return module, pc - lo + off
        return "?", 0

    offsets = collections.defaultdict(list)
    outside = collections.Counter()  # (module, nearest exported symbol, caller) of other modules
    for pc, top in zip(pcs, tops):
        module, off = locate(pc)
        offsets[module].append(off)
        if not is_ours(module):
            caller, coff = locate(top)
            outside[(module, off, caller, coff)] += 1
    print(f"{len(pcs)} samples")
    for module, offs in sorted(offsets.items(), key=lambda kv: -len(kv[1])):
        print(f"{100 * len(offs) / total:6.1f}%  module {module}")

    functions = collections.Counter()
    lines = {}
    for module, offs in offsets.items():
        short = module.rsplit("/", 1)[-1]
        if not is_ours(module):
            for o in offs:
                functions[short + ": " + exported(module, o)] += 1
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
    print("--- outside baton: nearest exported symbol, and the module and nearest exported symbol")
    print("    of the word at the stack pointer (the return address in a leaf function)")
    callers = collections.Counter()
    for (module, off, caller, coff), c in outside.items():
        where = caller.rsplit("/", 1)[-1] + ":" + (exported(caller, coff) if caller != "?" else "?")
        callers[(module.rsplit("/", 1)[-1] + ": " + exported(module, off), where)] += c
    for (name, where), c in callers.most_common(rows):
        print(f"{100 * c / total:6.1f}%  {name[:60]}  <- {where[:90]}")
    print("--- hottest addresses in libbaton (innermost source line first)")
    for (short, o), (c, where) in sorted(lines.items(), key=lambda kv: -kv[1][0])[:rows]:
        print(f"{100 * c / total:6.1f}%  {o:#x}  {where[:150]}")


if __name__ == "__main__":
    main()
