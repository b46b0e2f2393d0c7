#!/usr/bin/env bash
# Runs the demo: installs missing Debian packages (as root, or with sudo), configures ./build (or
# $BATON_BUILD_DIR; reused when present), builds the demo and runs it on the best backend present
# (CUDA when its driver loads, else the host backend). Arguments go to the demo, e.g.
# `bash scripts/demo.sh host` to force the host backend.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

baton_install_packages
baton_configure
echo "== building the demo"
meson compile -C "$BUILD" hello_timeline baton-info
echo "== baton-info"
"$BUILD/tools/baton-info"
echo
echo "== hello_timeline $*"
exec "$BUILD/samples/hello_timeline" "$@"
