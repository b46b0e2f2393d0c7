#!/usr/bin/env bash
# Builds baton, installs it into a scratch prefix, and builds and runs each kind of consumer a user
# would write, then prints a summary; exits 1 when any consumer failed.
#
#   cmake        tests/consumers/cmake: find_package(baton CONFIG) + baton::baton (C++17)
#   meson        tests/consumers/meson: an outer Meson project with baton as a subproject
#                (subprojects/baton links to this checkout; no GoogleTest wanted for it)
#   pkg-config   consumer.cpp compiled with `pkg-config --cflags --libs baton` (C++17)
#   c            consumer.c compiled as strict C11 with `pkg-config --cflags --libs baton`
# and, first, checks that the installed libbaton.so.0 exports the public API only
# (scripts/check-exports.sh against the installed headers; the line "exports" of the summary).
#
# The C++ consumers also check that baton/version.hpp's macros match the version their build
# system reports (pkg-config --modversion, CMake's baton_VERSION, the Meson dependency).
# Needs meson, ninja, g++, gcc, cmake and pkg-config; no GPU, no GoogleTest.
#
# usage: tests/consumers/run.sh [WORK_DIR]
#   WORK_DIR  scratch directory (default: a new one under ${TMPDIR:-/tmp}, removed on success);
#             its build directories are reused when run again.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
self="$here/run.sh"
if [ "${1:-}" = "--consumer" ]; then
  # Internal: one consumer in a `bash -e` process of its own (run_consumer), so that `set -e`
  # holds inside it; a function called from an `if` would run with errexit silently off.
  work="$2"
  consumer="$3"
elif [ $# -ge 1 ]; then
  mkdir -p "$1"
  work="$(cd "$1" && pwd)"
  keep=1
else
  work="$(mktemp -d "${TMPDIR:-/tmp}/baton-consumers.XXXXXX")"
  keep=0
fi
prefix="$work/prefix"
# The installed baton only: no GPU backends or Vulkan interop needed to check the packaging,
# and nothing but the library is built (the step stays short).
lib_options=(-Dtests=false -Dbench=false -Dsamples=false -Dtools=false
  -Dcuda=disabled -Dhip=disabled -Dvulkan=disabled)

for tool in meson ninja g++ gcc cmake pkg-config; do
  command -v "$tool" >/dev/null ||
    { echo "error: $tool not found (Debian: see scripts/setup.sh's package list)" >&2; exit 1; }
done

results=()
failed=0
# run_consumer NAME FUNCTION: runs FUNCTION in its own process, its output in $work/NAME.log
# (shown on failure).
run_consumer() {
  local name="$1" fn="$2" start=$SECONDS result
  echo "== consumer $name"
  if bash -euo pipefail "$self" --consumer "$work" "$fn" >"$work/$name.log" 2>&1; then
    result=ok
    grep '^consumer ' "$work/$name.log" || true
  else
    result=FAILED
    failed=1
    tail -n 60 "$work/$name.log"
  fi
  results+=("$(printf '%-12s %-7s %3ds' "$name" "$result" $((SECONDS - start)))")
}

# The consumer executable must load the installed libbaton.so.0, not another one.
check_loads_installed() {  # <executable>
  local resolved
  resolved="$(ldd "$1" | awk '$1 == "libbaton.so.0" { print $3 }')"
  echo "$1: libbaton.so.0 => $resolved"
  case "$resolved" in
    "$prefix"/*) ;;
    *) echo "error: $1 does not load libbaton.so.0 from $prefix" >&2; return 1 ;;
  esac
}

# ---- the consumers (each run as `run.sh --consumer WORK FUNCTION`) ----------------------------
consumer_exports() {
  # Not a consumer: the installed library's dynamic symbols, checked against the installed
  # headers (docs/abi.md); its count line is shown as "consumer exports: ...".
  local libdir includedir
  libdir="$(pkg-config --variable=libdir baton)"
  includedir="$(pkg-config --variable=includedir baton)"
  bash "$root/scripts/check-exports.sh" --headers "$includedir/baton" "$libdir/libbaton.so.0" |
    sed 's/^check-exports: /consumer exports: /'
}

consumer_cmake() {
  # Only the installed prefix is searched for baton (CMAKE_FIND_USE_PACKAGE_REGISTRY off too).
  cmake -S "$here/cmake" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  cmake --build "$work/cmake"
  check_loads_installed "$work/cmake/consumer"  # through the RPATH CMake gives imported targets
  "$work/cmake/consumer"
}

consumer_meson() {
  # An outer project of its own: its meson.build and the consumer source, and the checkout as
  # subprojects/baton (a symlink: works offline and builds what is in the working tree).
  local outer="$work/meson-outer"
  rm -rf "$outer"
  mkdir -p "$outer/subprojects"
  cp "$here/meson/meson.build" "$here/consumer.cpp" "$outer/"
  ln -s "$root" "$outer/subprojects/baton"
  # No installed baton in sight: the dependency must come from the subproject.
  env -u PKG_CONFIG_PATH meson setup "$outer/build" "$outer" --force-fallback-for=baton
  # As a subproject baton configures its library only: no GoogleTest or Google Benchmark lookup,
  # no test, tool, sample or benchmark target.
  if grep -Ei 'dependency (gtest|gmock|benchmark)' "$outer/build/meson-logs/meson-log.txt"; then
    echo "error: the baton subproject looked for GoogleTest or Google Benchmark" >&2
    return 1
  fi
  local targets
  targets="$(meson introspect --targets "$outer/build" | python3 -c \
    'import json, sys; print(" ".join(sorted(t["name"] for t in json.load(sys.stdin))))')"
  echo "targets: $targets"
  if [ "$targets" != "baton consumer" ]; then
    echo "error: expected the targets baton and consumer only" >&2
    return 1
  fi
  meson compile -C "$outer/build"
  "$outer/build/consumer"
}

consumer_pkg_config() {
  # shellcheck disable=SC2046  # pkg-config's output is a list of flags
  g++ -std=c++17 -Wall -Wextra -Werror -o "$work/pkg-config-consumer" "$here/consumer.cpp" \
    -DBATON_CONSUMER_NAME='"pkg-config"' -DBATON_CONSUMER_EXPECTED_VERSION="\"$version\"" \
    $(pkg-config --cflags --libs baton) -Wl,-rpath,"$(pkg-config --variable=libdir baton)"
  check_loads_installed "$work/pkg-config-consumer"
  "$work/pkg-config-consumer"
}

consumer_c() {
  # shellcheck disable=SC2046
  gcc -std=c11 -Wall -Wextra -pedantic -Werror -o "$work/c-consumer" "$here/consumer.c" \
    $(pkg-config --cflags --libs baton) -Wl,-rpath,"$(pkg-config --variable=libdir baton)"
  check_loads_installed "$work/c-consumer"
  "$work/c-consumer"
}

if [ -n "${consumer:-}" ]; then
  version="$(pkg-config --modversion baton)"  # PKG_CONFIG_PATH: from the main process
  "$consumer"
  exit 0
fi

# ---- baton, installed into $prefix ----------------------------------------------------------
install_baton() {
  if [ -f "$work/baton-build/build.ninja" ]; then
    echo "reusing $work/baton-build"
  else
    meson setup "$work/baton-build" "$root" --prefix "$prefix" \
      "${lib_options[@]}"
  fi
  meson compile -C "$work/baton-build"
  rm -rf "$prefix"
  meson install -C "$work/baton-build" --quiet
  find "$prefix" -type f -o -type l | sed "s|^$prefix/|installed: |" | sort
}
echo "== baton: build and install into $prefix"
start=$SECONDS
if ! install_baton >"$work/install.log" 2>&1; then
  tail -n 60 "$work/install.log"
  echo "consumers: FAILED: baton did not build or install (log: $work/install.log)"
  exit 1
fi
grep -E 'installed: .*(libbaton|\.pc|\.cmake|version\.hpp)' "$work/install.log" || true
results+=("$(printf '%-12s %-7s %3ds' "install" ok $((SECONDS - start)))")

libdir="$(dirname "$(find "$prefix" -name libbaton.so.0 | head -1)")"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
version="$(pkg-config --modversion baton)"
project_version="$(meson introspect --projectinfo "$work/baton-build" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')"
echo "pkg-config: baton $version (meson project version $project_version); libdir $libdir"
if [ "$version" != "$project_version" ]; then
  echo "consumers: FAILED: baton.pc says $version, meson.build $project_version"
  exit 1
fi

run_consumer exports consumer_exports
run_consumer cmake consumer_cmake
run_consumer meson consumer_meson
run_consumer pkg-config consumer_pkg_config
run_consumer c consumer_c

echo "== consumers summary (baton $version; logs in $work)"
printf '   %s\n' "${results[@]}"
if [ "$failed" -ne 0 ]; then
  echo "consumers: FAILED"
  exit 1
fi
echo "consumers: all passed"
if [ "$keep" -eq 0 ]; then rm -rf "$work"; fi
