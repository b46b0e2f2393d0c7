#!/usr/bin/env python3
"""Checks that the README's performance table is the summary table of docs/performance.md.

Usage: check_perf_summary.py [--update] <project root>

docs/performance.md holds every figure. Its summary table sits between the lines

    <!-- summary-table -->
    <!-- /summary-table -->

and README.md has a copy between the same two lines, with each link `(performance.md#anchor)`
written `(docs/performance.md#anchor)` (the summary's links name their own page: Doxygen, which
reads performance.md, warns about bare `(#anchor)` links). This script checks that:

  - the README's table is that copy, line for line (--update rewrites it from performance.md);
  - the summary has a header, a separator and at most 10 rows, each with five cells (figure,
    baton, raw baseline, ratio, hardware and date);
  - each row's first cell links to a heading of performance.md, and the numbers of its baton,
    raw and ratio cells, and the dates and machines (H100, H200) of its last cell, all appear in
    that heading's section (up to the next heading of the same or a higher level), so that a
    summary row cannot show a figure, a date or a machine its benchmark's section does not have;
  - README.md has at most 250 lines.

Prints one line per check and exits 1 on any problem.
"""
import re
import sys

BEGIN = "<!-- summary-table -->"
END = "<!-- /summary-table -->"
MAX_ROWS = 10
MAX_README_LINES = 250
HEADING = re.compile(r"^(?P<level>#{1,6})\s+(?P<text>.*?)\s*$")
LINK = re.compile(r"\]\(performance\.md#(?P<anchor>[^)\s]+)\)")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
MACHINE = re.compile(r"\bH[12]00\b")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:–\d[\d,]*(?:\.\d+)?)?")


def slug(text):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def sections(lines):
    """{anchor: text of the section}, for every heading outside code blocks."""
    found = []
    fenced = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            found.append((i, len(m.group("level")), slug(m.group("text"))))
    result = {}
    seen = {}
    for n, (start, level, anchor) in enumerate(found):
        end = len(lines)
        for later, later_level, _ in found[n + 1:]:
            if later_level <= level:
                end = later
                break
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        result[anchor if count == 0 else f"{anchor}-{count}"] = "\n".join(lines[start:end])
    return result


def block(lines, name):
    """(first line index, lines) between the markers; raises ValueError."""
    starts = [i for i, l in enumerate(lines) if l.strip() == BEGIN]
    ends = [i for i, l in enumerate(lines) if l.strip() == END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ValueError(f"{name}: needs exactly one '{BEGIN}' line followed by one '{END}' line "
                         f"(found {len(starts)} and {len(ends)})")
    body = [l for l in lines[starts[0] + 1:ends[0]]]
    return starts[0] + 1, body


def cells(row):
    return [c.strip() for c in row.strip().strip("|").split("|")]


def appears(token, text):
    return re.search(r"(?<![\d.,])" + re.escape(token) + r"(?![\d])", text) is not None


def check_rows(table, anchors):
    problems = []
    rows = [l for l in table if l.strip()]
    if any(not l.startswith("|") for l in rows):
        problems.append("performance.md: the summary block holds lines that are not table rows")
        return problems
    if len(rows) < 3 or not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", rows[1].strip()):
        problems.append("performance.md: the summary needs a header row, a separator and rows")
        return problems
    data = rows[2:]
    if len(data) > MAX_ROWS:
        problems.append(f"performance.md: the summary has {len(data)} rows, at most {MAX_ROWS}")
    for row in data:
        c = cells(row)
        name = re.sub(r"\]\(.*?\)", "]", c[0])
        if len(c) != 5:
            problems.append(f"summary row '{name}': {len(c)} cells, expected 5")
            continue
        link = LINK.search(c[0])
        if not link:
            problems.append(f"summary row '{name}': the first cell links to no "
                            "'(performance.md#section)'")
            continue
        anchor = link.group("anchor")
        if anchor not in anchors:
            problems.append(f"summary row '{name}': no heading of performance.md has the anchor "
                            f"'#{anchor}'")
            continue
        section = anchors[anchor]
        missing = []
        for cell in c[1:4]:
            for token in NUMBER.findall(cell):
                if not appears(token, section):
                    missing.append(token)
        last = c[4]
        for token in DATE.findall(last) + MACHINE.findall(last):
            if token not in section:
                missing.append(token)
        if not DATE.search(last):
            problems.append(f"summary row '{name}': the last cell states no date (YYYY-MM-DD)")
        if missing:
            problems.append(f"summary row '{name}': not in the section '#{anchor}' of "
                            f"performance.md: {', '.join(missing)}")
        else:
            print(f"ok  summary row '{name}': its figures are in '#{anchor}'")
    return problems


def main():
    args = sys.argv[1:]
    update = bool(args) and args[0] == "--update"
    if update:
        args = args[1:]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = args[0]
    perf_path = f"{root}/docs/performance.md"
    readme_path = f"{root}/README.md"
    with open(perf_path, encoding="utf-8") as f:
        perf = f.read().splitlines()
    with open(readme_path, encoding="utf-8") as f:
        readme = f.read().splitlines()
    problems = []
    try:
        _, summary = block(perf, "docs/performance.md")
        start, copy = block(readme, "README.md")
    except ValueError as e:
        print(e)
        return 1
    problems += check_rows(summary, sections(perf))

    expected = [LINK.sub(lambda m: f"](docs/performance.md#{m.group('anchor')})", l)
                for l in summary]
    if copy != expected:
        if update:
            readme[start:start + len(copy)] = expected
            with open(readme_path, "w", encoding="utf-8") as f:
                f.write("\n".join(readme) + "\n")
            print("updated README.md: its performance table copied from docs/performance.md")
        else:
            problems.append("README.md: its performance table is not the summary table of "
                            "docs/performance.md (run tests/docs/check_perf_summary.py --update .)")
            for n, (a, b) in enumerate(zip(copy, expected)):
                if a != b:
                    problems.append(f"  first difference, line {n + 1} of the table:\n"
                                    f"    README.md:      {a!r}\n    performance.md: {b!r}")
                    break
            else:
                problems.append(f"  README.md's table has {len(copy)} lines, "
                                f"performance.md's {len(expected)}")
    else:
        print("ok  README.md: its performance table is performance.md's summary")

    with open(readme_path, encoding="utf-8") as f:
        lines = len(f.read().splitlines())
    if lines > MAX_README_LINES:
        problems.append(f"README.md: {lines} lines, at most {MAX_README_LINES}")
    else:
        print(f"ok  README.md: {lines} lines (at most {MAX_README_LINES})")

    for p in problems:
        print(p)
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
