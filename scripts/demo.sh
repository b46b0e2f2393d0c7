#!/usr/bin/env bash
# Runs the demo, baton-demo: installs missing Debian packages (as root, or with sudo), configures
# ./build (or $BATON_BUILD_DIR; reused when present), builds and runs it. It steps a particle
# simulation on the best baton backend present, splats the particles with a Vulkan compute pass
# (the GPU's Vulkan driver, or Mesa's lavapipe on a machine without one), pipelines several
# frames through one shared timeline semaphore, and writes the last frame to baton-demo.png, its
# timeline trace to baton-demo-trace.json and that trace drawn to baton-demo-trace.svg.
# Arguments go to the demo, e.g. `bash scripts/demo.sh --frames 240 --out frame.png`.
# Without any Vulkan device it says so and runs hello_timeline (queues + host, no Vulkan) instead.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

baton_install_packages
baton_configure
baton_enable samples tools
echo "== building the demo"
meson compile -C "$BUILD" baton-demo hello_timeline baton-info
echo "== baton-info"
"$BUILD/tools/baton-info"
echo
echo "== baton-demo $*"
status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$BUILD/samples/demo/baton-demo" "$@" | tee "$log" || status=${PIPESTATUS[0]}
if [ "$status" -eq 77 ]; then
  echo "== no Vulkan device: running hello_timeline (baton queues and the host) instead"
  exec "$BUILD/samples/hello_timeline"
fi
# The demo's timeline trace (baton-demo-trace.json next to the PNG), drawn as an SVG.
trace=$(sed -n 's/^wrote timeline trace //p' "$log" | tail -n 1)
if [ "$status" -eq 0 ] && [ -n "$trace" ] && [ -f "$trace" ]; then
  if command -v python3 > /dev/null; then
    echo "== baton-trace-render $trace"
    python3 "$(dirname "${BASH_SOURCE[0]}")/../tools/baton-trace-render" "$trace" \
      -o "${trace%.json}.svg" || status=$?
  else
    echo "== python3 not found: $trace not drawn (tools/baton-trace-render needs it)"
  fi
fi
exit "$status"
