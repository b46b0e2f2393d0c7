#!/usr/bin/env bash
# Builds baton and runs its tests: installs missing Debian packages (as root, or with sudo),
# configures ./build (or $BATON_BUILD_DIR; reused when present), compiles everything (library,
# tests, tools, samples, benchmarks) and runs `meson test`. Extra arguments go to `meson test`,
# e.g. `bash scripts/test.sh --suite guide`. Exits non-zero on any failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

baton_install_packages
baton_configure
baton_enable tests
echo "== compiling"
meson compile -C "$BUILD"
echo "== testing"
# meson prints each test, the error logs of failures, and the summary (Ok/Fail/Skipped...) last.
meson test -C "$BUILD" --print-errorlogs "$@"
