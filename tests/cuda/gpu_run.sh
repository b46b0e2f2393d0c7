#!/bin/bash
# Builds baton with the CUDA backend and Vulkan interop on the GPU test machine and runs the CUDA
# tests, the conformance suite on CUDA, the device-loss tests, the interop tests (native on the
# NVIDIA Vulkan driver), the demo, compute-sanitizer and the benchmarks, writing logs to $OUT
# (see shared/device/README.md). From the project root:
#   bash .device/setup-on-device.sh && bash tests/cuda/gpu_run.sh [steps...]
# Steps (default: all but full): build info tests lost conformance interop demo sanitizer bench
# ibench full
# Every step has a time limit, so a hang costs its limit, not the session.
set -u
OUT=${OUT:-/tmp/out}
B=${BUILD:-/tmp/b}
mkdir -p "$OUT"
steps=${*:-build info tests lost conformance interop demo sanitizer bench ibench}
# The Vulkan device interop runs on: the H100 (the NVIDIA driver), not a CPU implementation.
export BATON_VULKAN_DEVICE=${BATON_VULKAN_DEVICE:-H100}
has() { [[ " $steps " == *" $1 "* ]]; }
log() { echo "=== $* ($(date +%T))"; }
if has build; then
  log build
  { meson setup "$B" -Dcuda=enabled -Dvulkan=enabled --buildtype=debugoptimized \
    && meson compile -C "$B"; } > "$OUT/build.log" 2>&1
  rc=$?; tail -5 "$OUT/build.log"; grep -E "error|warning:" "$OUT/build.log" | head -20
  [ $rc -eq 0 ] || { echo "build failed ($rc)"; exit 1; }
fi
if has info; then log info; timeout 30 "$B/tools/baton-info" 2>&1 | head -30; fi
if has tests; then
  log cuda tests
  timeout 240 stdbuf -oL "$B/tests/cuda/baton-cuda-tests" > "$OUT/cuda-tests.log" 2>&1
  echo "rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran|returned|events created|cuda:" "$OUT/cuda-tests.log" | head -40
  grep -A10 "Failure$" "$OUT/cuda-tests.log" | head -60
fi
if has lost; then
  log device lost tests
  timeout 120 stdbuf -oL "$B/tests/cuda/baton-cuda-device-lost" > "$OUT/cuda-lost.log" 2>&1
  echo "rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran|host waiter" "$OUT/cuda-lost.log" | head -20
  grep -A10 "Failure$" "$OUT/cuda-lost.log" | head -30
fi
if has conformance; then
  log conformance on cuda
  timeout 300 stdbuf -oL "$B/tests/baton-conformance" --gtest_filter='*/cuda' > "$OUT/conformance-cuda.log" 2>&1
  echo "rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran" "$OUT/conformance-cuda.log" | head -40
  grep -A10 "Failure$" "$OUT/conformance-cuda.log" | head -40
  BATON_STRESS_OPS=${BATON_STRESS_OPS:-20000} timeout 200 stdbuf -oL "$B/tests/baton-stress" --gtest_filter='*/cuda' >> "$OUT/conformance-cuda.log" 2>&1
  echo "stress rc=$?"; grep -E "^\[  (FAILED|PASSED) |tests ran" "$OUT/conformance-cuda.log" | tail -3
fi
if has interop; then
  log interop tests
  timeout 240 stdbuf -oL "$B/tests/interop/baton-interop-tests" > "$OUT/interop.log" 2>&1
  echo "bridged rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran" "$OUT/interop.log" | head -20
  grep -A10 "Failure$" "$OUT/interop.log" | head -40
  timeout 300 stdbuf -oL "$B/tests/interop/baton-interop-native-tests" > "$OUT/interop-native.log" 2>&1
  echo "native rc=$?"; grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|^\[  (FAILED|PASSED|SKIPPED) |tests ran" "$OUT/interop-native.log" | head -60
  grep -B2 -A12 "Failure$" "$OUT/interop-native.log" | head -80
fi
if has demo; then
  log demo
  (cd "$OUT" && timeout 120 stdbuf -oL "$B/samples/demo/baton-demo" --frames 120 --out "$OUT/baton-demo.png") > "$OUT/demo.log" 2>&1
  echo "rc=$?"; grep -vE "^ *frame +[0-9]+ " "$OUT/demo.log" | head -40
fi
if has sanitizer; then
  log compute-sanitizer
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  BATON_CUDA_TEST_SUBMISSIONS=800 timeout 300 "$CS" --tool memcheck --error-exitcode 3 \
    "$B/tests/cuda/baton-cuda-tests" > "$OUT/sanitizer.log" 2>&1
  echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|^\[  (FAILED|PASSED) |tests ran" "$OUT/sanitizer.log" | head
  BATON_CUDA_TEST_SUBMISSIONS=800 timeout 200 "$CS" --tool racecheck \
    "$B/tests/cuda/baton-cuda-tests" --gtest_filter='*Chain*:*RuntimeApi*' >> "$OUT/sanitizer.log" 2>&1
  echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|ERROR SUMMARY" "$OUT/sanitizer.log" | tail -2
fi
if has bench; then
  log bench
  timeout 200 stdbuf -oL "$B/bench/cuda/cuda_bench" > "$OUT/bench.log" 2>&1
  echo "rc=$?"; cat "$OUT/bench.log"
  if [ -n "${BLOCKING_TOO:-}" ]; then
    BATON_CUDA_BLOCKING_SYNC_EVENTS=1 BATON_BENCH_SCALE=4 timeout 120 stdbuf -oL "$B/bench/cuda/cuda_bench" > "$OUT/bench-blocking.log" 2>&1
    echo "rc=$?"; head -20 "$OUT/bench-blocking.log"
  fi
fi
if has ibench; then
  log interop bench
  timeout 240 stdbuf -oL "$B/bench/interop/baton-interop-bench" > "$OUT/ibench.log" 2>&1
  echo "rc=$?"; cat "$OUT/ibench.log"
fi
if has full; then
  log meson test
  timeout 400 meson test -C "$B" --print-errorlogs > "$OUT/meson-test.log" 2>&1
  echo "rc=$?"; grep -E "^ *[0-9]+/[0-9]+ |^Ok:|^Fail:|^Skipped:|^Timeout:" "$OUT/meson-test.log"
fi
