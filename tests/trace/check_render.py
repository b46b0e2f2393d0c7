#!/usr/bin/env python3
"""The renderer's test: runs the traced graph on the host backend (baton-trace-tests, which keeps
its traces in BATON_TRACE_TEST_OUT), draws the graph's trace with tools/baton-trace-render, and
checks that the SVG is well-formed XML with a lane for each queue, the submissions' boxes, the
graph's arrows, the failures' marks, a time axis and a legend; then that --window and a broken
trace behave.

    check_render.py <baton-trace-tests> <baton-trace-render>
"""
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def fail(message):
    print("check_render: FAIL: " + message)
    sys.exit(1)


def render(renderer, trace, svg, *extra):
    run = subprocess.run([sys.executable, renderer, trace, "-o", svg, *extra],
                         capture_output=True, text=True)
    return run


def main():
    tests, renderer = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, BATON_TRACE_TEST_OUT=out)
        env.pop("BATON_TRACE", None)
        run = subprocess.run([tests, "--gtest_filter=TraceTest.*/host"], env=env,
                             capture_output=True, text=True)
        if run.returncode != 0:
            fail("the traced graph failed:\n" + run.stdout + run.stderr)
        trace = os.path.join(out, "TraceTest.GraphTraceIsWellFormedAndArrowsMatchWaits.host.json")
        if not os.path.exists(trace):
            fail("no trace kept in " + out)
        svg = os.path.join(out, "graph.svg")
        run = render(renderer, trace, svg)
        if run.returncode != 0:
            fail("the renderer failed:\n" + run.stdout + run.stderr)
        try:
            root = ET.parse(svg).getroot()
        except ET.ParseError as e:
            fail("not well-formed XML: %s" % e)
        if root.tag != SVG + "svg":
            fail("the root element is %s, not svg" % root.tag)
        if not (int(root.get("width")) > 0 and int(root.get("height")) > 0):
            fail("no size")
        texts = ["".join(t.itertext()) for t in root.iter(SVG + "text")]
        for queue in ("queue 0 of", "queue 1 of", "queue 2 of"):
            if not any(t.startswith(queue) for t in texts):
                fail("no lane labelled '%s...'" % queue)
        if not any(t.endswith("· held") for t in texts):
            fail("no held lane")
        if not any(t.endswith(" µs") or t.endswith(" ms") for t in texts):
            fail("no time axis")
        if not any("signal → the wait it released" in t for t in texts):
            fail("no legend")
        if not any("failed" in t for t in texts):
            fail("no failure marked")
        arrows = [p for p in root.iter(SVG + "path") if p.get("marker-end") == "url(#arrow)"]
        # The graph's five arrows (A, B, H, C, G) and the legend's.
        if len(arrows) < 6:
            fail("%d arrows drawn, expected the graph's 5 and the legend's" % len(arrows))
        titles = ["".join(t.itertext()) for t in root.iter(SVG + "title")]
        for name in ("'A' >= 1", "'B' >= 1", "'H' >= 1", "'C' >= 1", "'G' >= 1"):
            if not any(t.startswith(name) for t in titles):
                fail("no arrow for the wait %s" % name)
        boxes = [r for r in root.iter(SVG + "rect") if r.find(SVG + "title") is not None]
        if len(boxes) < 10:
            fail("only %d slices drawn" % len(boxes))
        # A window: valid too, and says so.
        run = render(renderer, trace, svg, "--window", "0:0.5")
        if run.returncode != 0:
            fail("--window failed:\n" + run.stdout + run.stderr)
        root = ET.parse(svg).getroot()
        if not any("window shown" in "".join(t.itertext()) for t in root.iter(SVG + "text")):
            fail("--window does not say it drew a window")
        # A file that is not a trace: an error, not a traceback.
        bad = os.path.join(out, "bad.json")
        with open(bad, "w") as f:
            f.write("{\"traceEvents\": [")
        run = render(renderer, bad, svg)
        if run.returncode == 0 or "Traceback" in run.stderr:
            fail("a broken trace did not fail cleanly:\n" + run.stderr)
    print("check_render: OK: the graph's trace drawn as a valid SVG (%d arrows, %d slices)"
          % (len(arrows) - 1, len(boxes)))


if __name__ == "__main__":
    main()
