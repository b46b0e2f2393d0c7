#!/usr/bin/env python3
"""Runs a program and checks that it exits with 0 and prints each expected line.

Usage: expect_output.py PROGRAM EXPECTED_LINE...
Used by meson test for samples whose output is their proof (samples/readme_example.c).
"""
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    program, expected = sys.argv[1], sys.argv[2:]
    run = subprocess.run([program], capture_output=True, text=True, timeout=50)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    lines = run.stdout.splitlines()
    missing = [line for line in expected if line not in lines]
    if run.returncode != 0:
        print(f"FAIL: {program} exited with {run.returncode}", file=sys.stderr)
        return 1
    if missing:
        print(f"FAIL: {program} did not print {missing!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
