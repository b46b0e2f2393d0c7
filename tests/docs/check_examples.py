#!/usr/bin/env python3
"""Checks that every C or C++ code example in the documentation is a file the tests compile.

Usage: check_examples.py [--update] <project root> <page.md>...

In a page, a fenced code block in C or C++ (```cpp, ```c++, ```c) must follow a marker line

    <!-- samples/guide/failure.cpp#fail -->

naming a source file (relative to the project root) and, after '#', a region of it. The block
must be exactly that region: the lines between `// [fail]` and the next `// [fail]` (or
`/* [fail] */` in C), with their common indentation removed. Without '#region' the block is the
file from its first #include on. The marker is an HTML comment, which readers do not see, so the
paragraph right above it must name the file too (`samples/guide/failure.cpp`, as written in the
marker), e.g. a line "From `samples/guide/failure.cpp`:". The files themselves are compiled and run by meson test
(samples/meson.build, samples/guide/meson.build), so an example in the docs cannot stop
compiling unnoticed. Blocks in other languages (sh, cmake, meson) are not checked.

Prints one line per example and exits 1 when any block differs, a marker names a missing file or
region, a marker's file is not named in the paragraph above it, or a C/C++ block has no marker. With --update it rewrites each differing block from its
file instead (after editing an example: run it, then review the diff).
"""
import os
import re
import sys

MARKER = re.compile(r"^<!-- (?P<path>[\w./-]+)(?:#(?P<region>[\w-]+))? -->$")
FENCE = re.compile(r"^```(?P<lang>[\w+]*)\s*$")
CHECKED = {"cpp", "c++", "c"}


def region_lines(text, region, path):
    """The lines of `region` in `text` (a source file), dedented; raises ValueError."""
    lines = text.splitlines()
    if region is None:
        for i, line in enumerate(lines):
            if line.startswith("#include"):
                return lines[i:]
        raise ValueError(f"{path} has no #include to start from")
    tag = re.compile(r"^\s*(//|/\*) \[" + re.escape(region) + r"\]( \*/)?\s*$")
    marks = [i for i, line in enumerate(lines) if tag.match(line)]
    if len(marks) != 2:
        raise ValueError(f"{path}: region '{region}' needs exactly two '[{region}]' lines, "
                         f"found {len(marks)}")
    body = lines[marks[0] + 1:marks[1]]
    indents = [len(l) - len(l.lstrip(" ")) for l in body if l.strip()]
    cut = min(indents) if indents else 0
    return [l[cut:] if l.strip() else "" for l in body]


def names_file(lines, marker, path):
    """Whether the paragraph above line `marker` (blank lines between them skipped) names `path`
    in a code span."""
    i = marker - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    paragraph = []
    while i >= 0 and lines[i].strip():
        paragraph.append(lines[i])
        i -= 1
    return f"`{path}`" in " ".join(reversed(paragraph))


def check_page(root, page, update=False):
    """Returns (examples checked, list of problems) for one Markdown page; with `update`, rewrites
    the page's differing blocks from their files."""
    problems = []
    checked = 0
    with open(page, encoding="utf-8") as f:
        lines = f.read().splitlines()
    i = 0
    marker, marker_line = None, 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m:
            marker, marker_line = m, i
            i += 1
            continue
        fence = FENCE.match(line)
        if not fence:
            marker = None if line.strip() else marker
            i += 1
            continue
        # A fenced block: find its end.
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        block = lines[i + 1:end]
        lang = fence.group("lang").lower()
        where = f"{page}:{i + 1}"
        if lang in CHECKED:
            if marker is None:
                problems.append(f"{where}: a ```{lang} block without a '<!-- file#region -->' "
                                "marker line right before it")
            else:
                path, region = marker.group("path"), marker.group("region")
                if not names_file(lines, marker_line, path):
                    problems.append(f"{page}:{marker_line + 1}: the paragraph above the marker "
                                    f"does not name `{path}` (readers do not see the marker)")
                full = os.path.join(root, path)
                try:
                    with open(full, encoding="utf-8") as f:
                        expected = region_lines(f.read(), region, path)
                except (OSError, ValueError) as e:
                    problems.append(f"{where}: {e}")
                else:
                    checked += 1
                    name = path + (f"#{region}" if region else "")
                    if block != expected and update:
                        lines[i + 1:end] = expected
                        end = i + 1 + len(expected)
                        print(f"updated {page}: {name} ({len(expected)} lines)")
                    elif block != expected:
                        problems.append(f"{where}: the block differs from {name}")
                        for n, (a, b) in enumerate(zip(block, expected)):
                            if a != b:
                                problems.append(f"  first difference, line {n + 1} of the block:"
                                                f"\n    page: {a!r}\n    file: {b!r}")
                                break
                        else:
                            problems.append(f"  the page has {len(block)} lines, the file "
                                            f"{len(expected)}")
                    else:
                        print(f"ok  {page}: {name} ({len(block)} lines)")
        marker = None
        i = end + 1
    if update:
        with open(page, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return checked, problems


def main():
    args = sys.argv[1:]
    update = bool(args) and args[0] == "--update"
    if update:
        args = args[1:]
    if len(args) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = args[0]
    total = 0
    problems = []
    for page in args[1:]:
        checked, page_problems = check_page(root, page, update)
        total += checked
        problems += page_problems
    for p in problems:
        print(p)
    print(f"{total} examples checked, {len(problems)} problems")
    return 1 if problems or total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
