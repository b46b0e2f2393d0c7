#!/usr/bin/env python3
"""Runs Doxygen for the API reference and fails on any gap in it.

Usage: run_doxygen.py <doxygen> <Doxyfile> <xml output dir>

Doxygen 1.9.4 (Debian 12's) stays silent about some undocumented public entities: enumerators
(WARN_IF_UNDOC_ENUM_VAL came in 1.9.6), defaulted or deleted members, destructors, macros it was
told to expand (BATON_API), and a header without a \\file comment, whose global functions, types
and macros it then leaves out of the reference without a word. So this script runs Doxygen,
prints its warnings once each (with XML output on, Doxygen repeats a page's warnings per output
format), then reads Doxygen's XML output and reports every header, namespace, class, non-private
member and enumerator that has no documentation (some again: Doxygen reports most of them too).
Exits non-zero when Doxygen failed or anything was reported.
"""
import subprocess
import sys
import xml.etree.ElementTree as ET


def text(node, path):
    found = node.find(path)
    return "".join(found.itertext()).strip() if found is not None else ""


def blank(node):
    return not any(text(node, p + "description") for p in ("brief", "detailed", "inbody"))


def at(node):
    location = node.find("location")
    return "%s:%s: error: (docs check)" % (location.get("file"), location.get("line", 1))


def undocumented(xml):
    """Messages for every public entity without documentation in Doxygen's XML output."""
    index = ET.parse(xml + "/index.xml").getroot()
    defs = [ET.parse(xml + "/" + c.get("refid") + ".xml").find("compounddef") for c in index]
    defs = [d for d in defs if d.get("kind") in ("file", "namespace", "class", "struct", "union")
            and not d.findtext("compoundname").endswith(".md")]
    found = {}  # by id: Doxygen lists a member under its file and its namespace both
    for d in defs:
        name = d.findtext("compoundname")
        if blank(d):
            found[d.get("id")] = "%s %s %s is not documented." % (at(d), d.get("kind"), name)
        for m in d.iter("memberdef"):
            if m.get("prot") != "private" and blank(m):
                found[m.get("id")] = "%s %s %s of %s is not documented." % (
                    at(m), m.get("kind"), m.findtext("name"), name)
            for v in m.iter("enumvalue"):
                if blank(v):
                    found[v.get("id")] = "%s enumerator %s of %s is not documented." % (
                        at(m), v.findtext("name"), m.findtext("name"))
    return list(found.values())


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    doxygen = subprocess.run(sys.argv[1:3], stderr=subprocess.PIPE, text=True)
    problems = list(dict.fromkeys(doxygen.stderr.splitlines()))
    if doxygen.returncode == 0 or problems:
        problems += undocumented(sys.argv[3])
    if problems:
        print(*problems, sep="\n", file=sys.stderr)
    return doxygen.returncode or (1 if problems else 0)


if __name__ == "__main__":
    sys.exit(main())
