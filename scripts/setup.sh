# Sourced by demo.sh and test.sh: installs the Debian packages baton's build needs (only those
# missing) and configures the build directory, reusing it when it is already configured.
#
# BATON_BUILD_DIR   build directory (default: build, in the project root)
# BATON_MESON_ARGS  extra `meson setup` arguments for a new build directory, e.g.
#                   "-Dcuda=disabled" (an existing directory keeps its options)

# What the build, the tests (GoogleTest), the benchmarks (Google Benchmark) and the Vulkan interop
# work (loader and headers, lavapipe as the CPU Vulkan driver, glslc, libpng for images) need,
# and the HIP backend: ROCm 5.2's headers and AMD's runtime, which loads on a machine without an
# AMD GPU and reports no device (baton-info shows its reason); Doxygen for the API reference
# (meson compile docs); the Khronos validation layer the Vulkan tests run under (docs/testing.md).
BATON_PACKAGES=(meson ninja-build g++ pkg-config libgtest-dev libgmock-dev libbenchmark-dev
  libvulkan-dev mesa-vulkan-drivers glslc libpng-dev libamdhip64-dev libamdhip64-5 doxygen
  vulkan-validationlayers)

baton_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$baton_root"
BUILD="${BATON_BUILD_DIR:-build}"

baton_install_packages() {
  local missing=() p
  for p in "${BATON_PACKAGES[@]}"; do
    # dpkg-query exits 0 for packages it knows in any state; the Status field tells installed.
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
      missing+=("$p")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing Debian packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then
      sudo=(sudo)
    else
      echo "error: missing packages (${missing[*]}) and not root; install them with apt-get" >&2
      return 1
    fi
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
}

# baton_enable <option>...: turns on boolean build options (samples, tools, tests) that a reused
# build directory was configured without, so that the quick-start commands find their targets.
baton_enable() {
  local off=()
  for option in "$@"; do
    if meson introspect "$BUILD" --buildoptions 2>/dev/null |
      grep -qE "\"name\": \"$option\", \"value\": false"; then
      off+=("-D$option=true")
    fi
  done
  if [ "${#off[@]}" -gt 0 ]; then
    echo "== $BUILD was configured with ${off[*]/=true/=false}: turning it on"
    meson setup --reconfigure "$BUILD" "${off[@]}"
  fi
}

baton_configure() {
  if [ -f "$BUILD/build.ninja" ]; then
    echo "== reusing build directory $BUILD"
  elif [ -f "$BUILD/meson-private/coredata.dat" ]; then
    # Configured once but its build files are gone (an interrupted setup): configure it again.
    echo "== reconfiguring build directory $BUILD"
    # shellcheck disable=SC2086
    meson setup --reconfigure "$BUILD" ${BATON_MESON_ARGS:-}
  else
    echo "== configuring build directory $BUILD"
    # shellcheck disable=SC2086
    meson setup "$BUILD" ${BATON_MESON_ARGS:-}
  fi
}
