#!/bin/bash
# Builds baton with the CUDA and HIP backends and Vulkan interop on the GPU test machine and runs
# the CUDA tests, the conformance suite on CUDA, the device-loss tests, the HIP tests, device-loss
# tests, conformance suite and stress through the HIP-over-CUDA translation library
# (tests/hip/driver), the graphs across HIP, CUDA and the host, the interop tests (native on the
# NVIDIA Vulkan driver), the demo, compute-sanitizer and the benchmarks, writing logs to $OUT
# (see shared/device/README.md). From the project root:
#   bash .device/setup-on-device.sh && bash tests/cuda/gpu_run.sh [steps...]
# Steps (default: all but imageprobe, soak, soakwait, full, onerank and collectives): build info tests lost
# conformance hip hiplost hipconf shared graph cross interop vkfd images imageprobe demo sanitizer soak soakwait bench hipbench
# framebench ibench full onerank collectives multiprocess collbench collprofile (the last four: two
# GPUs or more)
# The machine has no HIP headers: the build unpacks Debian's libamdhip64-dev from .device/extra
# (ROCm 5.2's headers; the HIP backend loads its runtime at run time, here the translation
# library) and points -Dhip_include_dir at it.
# Every step has a time limit, so a hang costs its limit, not the session. The script exits 1 when
# the build or a step that judges its own result (sanitizer, onerank) failed.
set -u
status=0
OUT=${OUT:-/tmp/out}
B=${BUILD:-/tmp/b}
mkdir -p "$OUT"
steps=${*:-build info tests lost conformance hip hiplost hipconf shared graph cross interop vkfd images demo sanitizer bench hipbench framebench ibench}
# The HIP backend on the H100: its hip* entry points implemented over the CUDA driver API.
HIP_OVER_CUDA="$B/tests/hip/driver/libbaton_hip_over_cuda.so"
# The NVIDIA Vulkan device (any of its GPUs' names), not a CPU implementation; a name that matches
# nothing makes every interop test skip, which the interop step reports.
export BATON_VULKAN_DEVICE=${BATON_VULKAN_DEVICE:-NVIDIA}
# The interop and demo steps run under the Khronos validation layer (the kit's
# vulkan-validationlayers; tests/interop/vulkan_validation.hpp): core checks and synchronization
# validation, unless BATON_VULKAN_VALIDATION says otherwise ("core", or "0" for none).
VALIDATE=(env "BATON_VULKAN_VALIDATION=${BATON_VULKAN_VALIDATION:-sync}")
validation_summary() {  # <log>: the harness's summary lines and every message it printed
  grep -h '^vulkan validation (' "$1" | sort | uniq -c
  grep -hE '^\[vulkan validation\]|Vulkan validation error' "$1" | cut -c1-400 | sort | uniq -c | sort -rn | head -20
}
has() { [[ " $steps " == *" $1 "* ]]; }
log() { echo "=== $* ($(date +%T))"; }
if has build; then
  log build
  hip_args=()
  if [ ! -e /usr/include/hip/hip_runtime_api.h ]; then
    hip_deb=$(ls .device/extra/libamdhip64-dev_*.deb 2>/dev/null | head -1)
    if [ -n "$hip_deb" ]; then
      dpkg -x "$hip_deb" /tmp/hip-dev && hip_args=(-Dhip=enabled -Dhip_include_dir=/tmp/hip-dev/usr/include)
    else
      echo "no HIP headers (/usr/include/hip, .device/extra/libamdhip64-dev_*.deb): HIP not built"
    fi
  fi
  # The machine has no nccl.h: the kit's (NCCL 2.28.9's, .device/extra) builds the collectives.
  nccl_args=()
  [ -e /usr/local/cuda/include/nccl.h ] || nccl_args=(-Dnccl_include_dir="$PWD/.device/extra")
  # BATON_MESON_ARGS: more options (e.g. -Dbench=false for a quicker build).
  { meson setup "$B" -Dcuda=enabled -Dvulkan=enabled "${hip_args[@]}" "${nccl_args[@]}" ${BATON_MESON_ARGS:-} --buildtype=debugoptimized \
    && meson compile -C "$B"; } > "$OUT/build.log" 2>&1
  rc=$?; tail -5 "$OUT/build.log"; grep -E "error|warning:" "$OUT/build.log" | head -20
  [ $rc -eq 0 ] || { echo "build failed ($rc)"; exit 1; }
fi
if has info; then
  log info; timeout 30 "$B/tools/baton-info" 2>&1 | head -30
  log info with the HIP backend on the translation library
  BATON_HIP_DRIVER="$HIP_OVER_CUDA" timeout 30 "$B/tools/baton-info" 2>&1 | grep -A12 "^Backends\|hip #"
fi
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
# The HIP steps: the HIP backend's own code (symbol table, error mapping, enumeration) and the
# shared machinery, on the H100 through libbaton_hip_over_cuda.so.
if has hip; then
  log hip tests
  BATON_HIP_DRIVER="$HIP_OVER_CUDA" timeout 240 stdbuf -oL "$B/tests/hip/baton-hip-tests" > "$OUT/hip-tests.log" 2>&1
  echo "rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran|events created|hip:" "$OUT/hip-tests.log" | head -40
  grep -A10 "Failure$" "$OUT/hip-tests.log" | head -60
fi
if has hiplost; then
  log hip device lost tests
  BATON_HIP_DRIVER="$HIP_OVER_CUDA" timeout 120 stdbuf -oL "$B/tests/hip/baton-hip-device-lost" > "$OUT/hip-lost.log" 2>&1
  echo "rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran|host waiter" "$OUT/hip-lost.log" | head -20
  grep -A10 "Failure$" "$OUT/hip-lost.log" | head -30
fi
if has hipconf; then
  log conformance on hip
  BATON_HIP_DRIVER="$HIP_OVER_CUDA" timeout 300 stdbuf -oL "$B/tests/baton-conformance" --gtest_filter='*/hip' > "$OUT/conformance-hip.log" 2>&1
  echo "rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran" "$OUT/conformance-hip.log" | head -40
  grep -A10 "Failure$" "$OUT/conformance-hip.log" | head -40
  BATON_HIP_DRIVER="$HIP_OVER_CUDA" BATON_STRESS_OPS=${BATON_STRESS_OPS:-20000} timeout 200 stdbuf -oL "$B/tests/baton-stress" --gtest_filter='*/hip' >> "$OUT/conformance-hip.log" 2>&1
  echo "stress rc=$?"; grep -E "^\[  (FAILED|PASSED) |tests ran" "$OUT/conformance-hip.log" | tail -3
fi
# Across processes (tests/shared): two-process suites on CUDA and under HIP names through the
# translation library, with the SIGKILL trials; each peer is a real process sharing the GPU.
if has shared; then
  log shared across processes on cuda
  BATON_SHARED_PEER="$B/tests/shared/baton-shared-peer" BATON_TEST_REQUIRE_BACKENDS=cuda \
    timeout 300 stdbuf -oL "$B/tests/shared/baton-shared-tests" --gtest_filter='*/cuda' > "$OUT/shared-cuda.log" 2>&1
  echo "rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran|^\[       OK" "$OUT/shared-cuda.log" | head -40
  grep -A10 "Failure$" "$OUT/shared-cuda.log" | head -40
  log shared across processes on hip
  BATON_HIP_DRIVER="$HIP_OVER_CUDA" BATON_SHARED_PEER="$B/tests/shared/baton-shared-peer" BATON_TEST_REQUIRE_BACKENDS=hip \
    timeout 300 stdbuf -oL "$B/tests/shared/baton-shared-tests" --gtest_filter='*/hip' > "$OUT/shared-hip.log" 2>&1
  echo "rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran|^\[       OK" "$OUT/shared-hip.log" | head -40
  grep -A10 "Failure$" "$OUT/shared-hip.log" | head -40
fi
# Graph command buffers: the CUDA tests, the device-loss tests (the faulting kernel
# captured into a graph command buffer), the conformance suite and stress on CUDA, then the same on
# HIP through the translation library, with every command buffer the suites record as a graph
# (BATON_TEST_COMMAND_BUFFERS=graph; tests/test_support.hpp).
if has graph; then
  graph_run() {  # <name> <binary> <filter> [env...]: one suite with graph command buffers
    local name=$1 bin=$2 filter=$3; shift 3
    log "graph command buffers: $name"
    env BATON_TEST_COMMAND_BUFFERS=graph "$@" timeout 300 stdbuf -oL "$bin" --gtest_filter="$filter" > "$OUT/graph-$name.log" 2>&1
    echo "rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran|host waiter" "$OUT/graph-$name.log" | head -20
    grep -A10 "Failure$" "$OUT/graph-$name.log" | head -40
  }
  graph_run cuda-tests "$B/tests/cuda/baton-cuda-tests" '*'
  graph_run cuda-lost "$B/tests/cuda/baton-cuda-device-lost" '*'
  graph_run conformance-cuda "$B/tests/baton-conformance" '*/cuda'
  graph_run stress-cuda "$B/tests/baton-stress" '*/cuda' BATON_STRESS_OPS=${BATON_STRESS_OPS:-20000}
  graph_run hip-tests "$B/tests/hip/baton-hip-tests" '*' BATON_HIP_DRIVER="$HIP_OVER_CUDA"
  graph_run hip-lost "$B/tests/hip/baton-hip-device-lost" '*' BATON_HIP_DRIVER="$HIP_OVER_CUDA"
  graph_run conformance-hip "$B/tests/baton-conformance" '*/hip' BATON_HIP_DRIVER="$HIP_OVER_CUDA"
  graph_run stress-hip "$B/tests/baton-stress" '*/hip' BATON_HIP_DRIVER="$HIP_OVER_CUDA" BATON_STRESS_OPS=${BATON_STRESS_OPS:-20000}
  (cd "$OUT" && tar czf graph-logs.tgz graph-*.log && rm -f graph-*.log)
fi
# Collectives (tests/collectives) on the GPUs of this machine (two or more: nvidia-h100-x2), with
# the system's NCCL (2.28.3: no ncclCommRevoke), PyTorch's (2.28.9), and through HIP names (the
# translation library, NCCL loaded as RCCL: its streams are CUDA streams).
TORCH_NCCL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
collective_run() {  # <name> <gtest filter> <env...>: the collective tests under `env`; their status
  local name=$1 filter=$2 rc; shift 2
  log "collectives: $name"
  env "$@" timeout ${COLLECTIVES_LIMIT:-120} stdbuf -oL "$B/tests/collectives/baton-collective-tests" --gtest_filter="$filter" > "$OUT/collectives-$name.log" 2>&1
  rc=$?
  echo "rc=$rc"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran|Skipped|unavailable" "$OUT/collectives-$name.log" | head -30
  grep -A10 "Failure$" "$OUT/collectives-$name.log" | head -40
  return $rc
}
if has collectives; then
  log collective support; timeout 30 "$B/tools/baton-info" 2>&1 | grep -i -A3 "collective"
  required=(BATON_TEST_REQUIRE_COLLECTIVES=1)
  collective_run cuda-nccl-2.28.3 '*/cuda:CollectivesOnTheHost.*' "${required[@]}" BATON_TEST_REQUIRE_BACKENDS=cuda
  [ -e "$TORCH_NCCL" ] && collective_run cuda-nccl-2.28.9 '*/cuda' BATON_NCCL_LIBRARY="$TORCH_NCCL" "${required[@]}" BATON_TEST_REQUIRE_BACKENDS=cuda
  collective_run hip-over-cuda '*/hip' BATON_HIP_DRIVER="$HIP_OVER_CUDA" BATON_RCCL_LIBRARY="$TORCH_NCCL" "${required[@]}" BATON_TEST_REQUIRE_BACKENDS=hip
  # Non-blocking communicators only (BATON_NCCL_BLOCKING_CALLS=0), with 2.28.3.
  collective_run cuda-nonblocking '*/cuda' BATON_NCCL_BLOCKING_CALLS=0 "${required[@]}" BATON_TEST_REQUIRE_BACKENDS=cuda
  # The same four with graph command buffers (the collectives captured from NCCL).
  g=(BATON_TEST_COMMAND_BUFFERS=graph "${required[@]}")
  collective_run graph-cuda-nccl-2.28.3 '*/cuda:CollectivesOnTheHost.*' "${g[@]}" BATON_TEST_REQUIRE_BACKENDS=cuda
  [ -e "$TORCH_NCCL" ] && collective_run graph-cuda-nccl-2.28.9 '*/cuda' BATON_NCCL_LIBRARY="$TORCH_NCCL" "${g[@]}" BATON_TEST_REQUIRE_BACKENDS=cuda
  collective_run graph-hip-over-cuda '*/hip' BATON_HIP_DRIVER="$HIP_OVER_CUDA" BATON_RCCL_LIBRARY="$TORCH_NCCL" "${g[@]}" BATON_TEST_REQUIRE_BACKENDS=hip
  collective_run graph-cuda-nonblocking '*/cuda' BATON_NCCL_BLOCKING_CALLS=0 "${g[@]}" BATON_TEST_REQUIRE_BACKENDS=cuda
fi
# The multi-process runs (tests/collectives/multiprocess.py): one rank per process and GPU, the id
# through a file; over NVLink/P2P and over sockets (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1, as
# between two machines); the SIGKILL trials with NCCL 2.28.3 (the system's: no revoke) and 2.28.9.
MP=(python3 tests/collectives/multiprocess.py)
RANKBIN=(--binary "$B/tests/collectives/baton-collective-rank")
mp_run() {  # <name> <limit s> <args...>: returns the harness's exit status
  local name=$1 limit=$2 rc; shift 2
  log "multiprocess: $name"
  timeout "$limit" "${MP[@]}" "$@" "${RANKBIN[@]}" > "$OUT/mp-$name.log" 2>&1
  rc=$?
  echo "rc=$rc"; grep -E "^(RESULT|kill trials|verdict|FAIL|PASS)|^(ops|pipeline) |survivors|reasons|death_to_wake|HANG" "$OUT/mp-$name.log" | head -12
  return $rc
}
# One GPU: what NCCL refuses with one rank (the float8 average: ncclInvalidArgument from 2.24 on)
# is refused when it is recorded (ErrorNotSupported naming the operation, the type and NCCL): the
# one-rank tests of the collective suite, and `multiprocess.py ops --ranks 1` (every op and type:
# each rank's checks=132 failures=0, the two float8 averages passing as refusals), with the
# system's NCCL (2.28.3), PyTorch's (2.28.9) and under HIP names.
if has onerank; then
  onerank_failed=0
  one=(BATON_TEST_REQUIRE_COLLECTIVES=1)
  collective_run onerank-cuda-nccl-2.28.3 'CollectiveRefusalOneRank.*/cuda:CollectiveOneRank.*/cuda' "${one[@]}" BATON_TEST_REQUIRE_BACKENDS=cuda || onerank_failed=1
  [ -e "$TORCH_NCCL" ] && { collective_run onerank-cuda-nccl-2.28.9 'CollectiveRefusalOneRank.*/cuda:CollectiveOneRank.*/cuda' BATON_NCCL_LIBRARY="$TORCH_NCCL" "${one[@]}" BATON_TEST_REQUIRE_BACKENDS=cuda || onerank_failed=1; }
  collective_run onerank-hip-over-cuda 'CollectiveRefusalOneRank.*/hip:CollectiveOneRank.*/hip' BATON_HIP_DRIVER="$HIP_OVER_CUDA" BATON_RCCL_LIBRARY=/usr/lib/x86_64-linux-gnu/libnccl.so.2 "${one[@]}" BATON_TEST_REQUIRE_BACKENDS=hip || onerank_failed=1
  mp_run ops-1rank-2.28.3 120 ops --ranks 1 || onerank_failed=1
  [ -e "$TORCH_NCCL" ] && { mp_run ops-1rank-2.28.9 120 ops --ranks 1 --env BATON_NCCL_LIBRARY="$TORCH_NCCL" || onerank_failed=1; }
  mp_run ops-1rank-hip 120 ops --ranks 1 --backend hip || onerank_failed=1
  grep -h "refused when recorded" "$OUT"/mp-ops-1rank-*.log | cut -c1-160 | head -6
  if [ $onerank_failed = 0 ]; then echo "onerank PASSED"; else echo "onerank FAILED"; status=1; fi
  (cd "$OUT" && tar czf onerank-logs.tgz collectives-onerank-*.log mp-ops-1rank-*.log &&
    rm -f collectives-onerank-*.log mp-ops-1rank-*.log)
fi
if has multiprocess; then
  mp_run ops-nvlink 120 ops --ranks 2
  mp_run ops-sockets 120 ops --ranks 2 --sockets
  mp_run ops-hip 120 ops --ranks 2 --backend hip --env BATON_RCCL_LIBRARY="$TORCH_NCCL"
  mp_run pipeline 120 pipeline --ranks 2
  # KILL_RANKS: the ranks of the NVLink trials (4 on nvidia-h100-x4: 3 survivors shrink).
  mp_run kill-nvlink-2.28.3 ${KILL_LIMIT:-200} kill --ranks ${KILL_RANKS:-2} --trials ${KILL_TRIALS:-20} --timeout-ms 2000 --quiet
  mp_run kill-nvlink-2.28.9 ${KILL_LIMIT:-200} kill --ranks ${KILL_RANKS:-2} --trials ${KILL_TRIALS_MORE:-20} --timeout-ms 2000 --env BATON_NCCL_LIBRARY="$TORCH_NCCL" --quiet
  mp_run kill-sockets ${KILL_LIMIT:-200} kill --ranks 2 --trials ${KILL_TRIALS_MORE:-20} --timeout-ms 2000 --sockets --quiet
  # Graph command buffers (BATON_TEST_COMMAND_BUFFERS=graph in the ranks): ops, and the kill trials.
  if [ "${MP_GRAPH:-1}" = 1 ]; then
    mp_run ops-graph 120 ops --ranks 2 --env BATON_TEST_COMMAND_BUFFERS=graph
    mp_run kill-nvlink-graph ${KILL_LIMIT:-200} kill --ranks ${KILL_RANKS:-2} --trials ${KILL_TRIALS_MORE:-20} --timeout-ms 2000 --env BATON_NCCL_LIBRARY="$TORCH_NCCL" --env BATON_TEST_COMMAND_BUFFERS=graph --quiet
  fi
  # The same on non-blocking communicators only (the design before blocking calls).
  [ "${KILL_NONBLOCKING:-0}" = 1 ] && mp_run kill-nvlink-nonblocking ${KILL_LIMIT:-200} kill --ranks 2 --trials ${KILL_TRIALS_MORE:-20} --timeout-ms 2000 --env BATON_NCCL_BLOCKING_CALLS=0 --quiet
fi
# bench/collectives: allReduce bandwidth and latency, the training-step pipeline, against raw NCCL
# on raw streams and events in the same run; CUDA, then HIP names through the translation library.
if has collbench; then
  log collectives_bench cuda
  timeout 300 "$B/bench/collectives/collectives_bench" --json "$OUT/collbench-cuda.json" > "$OUT/collbench-cuda.log" 2>&1
  echo "rc=$?"; cat "$OUT/collbench-cuda.log" | head -80
  # The floor of baton's figures: raw NCCL on non-blocking communicators (NCCL_COMM_BLOCKING=0
  # applies to the raw side's only: baton sets its communicators' config itself).
  log collectives_bench cuda, raw non-blocking
  NCCL_COMM_BLOCKING=0 timeout 300 "$B/bench/collectives/collectives_bench" bandwidth latency --json "$OUT/collbench-cuda-nb.json" > "$OUT/collbench-cuda-nb.log" 2>&1
  echo "rc=$?"; grep -A60 "raw communicators" "$OUT/collbench-cuda-nb.log" | head -50
  if [ "${COLLBENCH_HIP:-1}" = 1 ]; then
  log collectives_bench hip names
  BATON_HIP_DRIVER="$HIP_OVER_CUDA" BATON_RCCL_LIBRARY=/usr/lib/x86_64-linux-gnu/libnccl.so.2 \
    timeout 300 "$B/bench/collectives/collectives_bench" --backend hip --json "$OUT/collbench-hip.json" > "$OUT/collbench-hip.log" 2>&1
  echo "rc=$?"; grep -A40 "bus bandwidth" "$OUT/collbench-hip.log" | head -60
  fi
fi
# Where collectives_bench's time goes: the latency run traced (BATON_TRACE)
# and bench/collectives/trace_profile.py's stretches, by default, with the host waits spinning,
# and with every submission through the issuing threads (no direct issue); the bandwidth at
# 20 and 200 back-to-back allReduces per timing (a fixed cost per timing against one per call);
# NCCL's channels for the raw communicators and baton's (NCCL_DEBUG=INFO).
if has collprofile; then
  CB="$B/bench/collectives/collectives_bench"
  prof() {  # <name> <benchmark> <env...>: traced into /tmp/trace-<name>.json
    local name=$1 what=$2; shift 2
    log "collectives profile: $what, $name"
    env "$@" BATON_TRACE="/tmp/trace-$name.json" timeout 120 "$CB" $what --reps ${PROFILE_REPS:-3} > "$OUT/profile-$name.log" 2>&1
    echo "rc=$?"; grep -E -A10 "size  |step time" "$OUT/profile-$name.log" | head -12
    python3 bench/collectives/trace_profile.py "/tmp/trace-$name.json" 2>&1 | tee -a "$OUT/profile-$name.log"
  }
  prof latency latency
  prof latency-spin latency BATON_BENCH_HOST_WAIT_SPIN=forever
  prof latency-issuing-thread latency BATON_STREAM_DIRECT_ISSUE=0
  prof pipeline pipeline
  prof pipeline-spin pipeline BATON_BENCH_HOST_WAIT_SPIN=forever
  [ "${PROFILE_BW:-1}" = 1 ] && for it in 20 200; do
    log "collectives profile: bandwidth, $it per timing"
    timeout 200 "$CB" bandwidth --sizes ${PROFILE_SIZES:-8M,32M,64M,128M,256M} --iterations $it > "$OUT/profile-bw-$it.log" 2>&1
    echo "rc=$?"; grep -A8 "size  " "$OUT/profile-bw-$it.log" | head -8
  done
  [ "${PROFILE_BW:-1}" = 1 ] && log "collectives profile: NCCL's channels" && NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT timeout 120 "$CB" bandwidth --sizes 64M --reps 1 > "$OUT/profile-nccl-info.log" 2>&1 && grep -E "nRanks|nChannels|Channel 00|comm 0x|CC Off|Init COMPLETE" "$OUT/profile-nccl-info.log" | cut -c1-200 | head -30
fi
if has cross; then
  log graphs across hip, cuda and the host
  BATON_HIP_DRIVER="$HIP_OVER_CUDA" timeout 120 stdbuf -oL "$B/tests/hip/baton-cross-backend-tests" > "$OUT/cross.log" 2>&1
  echo "rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran|producer not gated|same UUID" "$OUT/cross.log" | head -20
  grep -A10 "Failure$" "$OUT/cross.log" | head -40
fi
if has interop; then
  log interop tests
  timeout 240 stdbuf -oL "${VALIDATE[@]}" "$B/tests/interop/baton-interop-tests" > "$OUT/interop.log" 2>&1
  echo "bridged rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran" "$OUT/interop.log" | head -20
  grep -m1 -o "no usable Vulkan device.*" "$OUT/interop.log" | sed 's/^/interop NOT RUN: /' | cut -c1-300
  grep -A10 "Failure$" "$OUT/interop.log" | head -40
  validation_summary "$OUT/interop.log"
  # HIP semaphores bridged to the H100's Vulkan device, in a process of its own (loading the HIP
  # backend starts driver threads that the thread-leak test of the run above would count).
  BATON_HIP_DRIVER="$HIP_OVER_CUDA" BATON_TEST_REQUIRE_BACKENDS=hip timeout 120 stdbuf -oL \
    "${VALIDATE[@]}" "$B/tests/interop/baton-interop-tests" --gtest_filter='*Hip*' > "$OUT/interop-hip.log" 2>&1
  BATON_HIP_DRIVER="$HIP_OVER_CUDA" BATON_TEST_REQUIRE_BACKENDS=hip timeout 120 stdbuf -oL \
    "${VALIDATE[@]}" "$B/tests/interop/baton-interop-native-tests" --gtest_filter='*Hip*:*DuringACapture*' >> "$OUT/interop-hip.log" 2>&1
  echo "hip bridged rc=$?"; grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|^\[  (FAILED|PASSED|SKIPPED) " "$OUT/interop-hip.log" | head
  grep -A10 "Failure$" "$OUT/interop-hip.log" | head -20
  validation_summary "$OUT/interop-hip.log"
  timeout 300 stdbuf -oL "${VALIDATE[@]}" "$B/tests/interop/baton-interop-native-tests" > "$OUT/interop-native.log" 2>&1
  echo "native rc=$?"; grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|^\[  (FAILED|PASSED|SKIPPED) |tests ran" "$OUT/interop-native.log" | head -60
  grep -B2 -A12 "Failure$" "$OUT/interop-native.log" | head -80
  validation_summary "$OUT/interop-native.log"
  # The C API's Vulkan test and the layer's reproducers (tests/interop/layer_repro.cpp: the one
  # about imported timelines needs the fd extensions, which lavapipe lacks).
  timeout 120 stdbuf -oL "${VALIDATE[@]}" "$B/tests/c_api/baton-c-api-vulkan-test" > "$OUT/c-api-vulkan.log" 2>&1
  echo "c api vulkan rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) " "$OUT/c-api-vulkan.log"
  validation_summary "$OUT/c-api-vulkan.log"
  # (core checks, as meson runs them: synchronization validation adds its stall to them).
  timeout 120 stdbuf -oL env BATON_VULKAN_VALIDATION=core "$B/tests/interop/baton-layer-repro" \
    --gtest_filter='-*StallUnlessLockedFinely*' > "$OUT/layer-repro.log" 2>&1
  echo "layer repro rc=$?"; grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|rounds in|the layer says" "$OUT/layer-repro.log" | cut -c1-300
fi
# A Vulkan timeline known by its descriptor alone: the peer process (baton-vkfd-peer, under the
# validation layer) exports it from the NVIDIA Vulkan device, CUDA imports it here.
if has vkfd; then
  log vulkan fd import tests
  timeout 300 stdbuf -oL "${VALIDATE[@]}" BATON_VKFD_PEER="$B/tests/interop/baton-vkfd-peer" \
    "$B/tests/interop/baton-vkfd-tests" > "$OUT/vkfd.log" 2>&1
  echo "vkfd rc=$?"; grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|^\[  (FAILED|PASSED|SKIPPED) " "$OUT/vkfd.log" | head -40
  grep -B2 -A12 "Failure$" "$OUT/vkfd.log" | head -60
  grep -m3 "cannot export\|cannot import" "$OUT/vkfd.log" | cut -c1-300
fi
# Vulkan images: imported into CUDA as mipmapped arrays (every format, levels, layers, graphs,
# wait-before-signal, refusals, 1,000 cycles), and the host backend's linear images, under the
# validation layer.
if has images; then
  log vulkan images
  timeout 300 stdbuf -oL "${VALIDATE[@]}" "$B/tests/interop/baton-native-image-tests" > "$OUT/images.log" 2>&1
  echo "native images rc=$?"; grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|^\[  (FAILED|PASSED|SKIPPED) |round-tripped" "$OUT/images.log" | head -20
  grep -B2 -A12 "Failure$" "$OUT/images.log" | head -60
  validation_summary "$OUT/images.log"
  timeout 300 stdbuf -oL "${VALIDATE[@]}" "$B/tests/interop/baton-image-tests" >> "$OUT/images.log" 2>&1
  echo "host images rc=$?"; grep -E "^\[  (FAILED|PASSED|SKIPPED) |round-tripped|^(cuda|hip):" "$OUT/images.log" | tail -6
fi
# The Vulkan image import probe (tests/interop/image_probe.cpp): not a test, a record of what the
# driver does with imported images; built here against the machine's libcuda.
if has imageprobe; then
  log vulkan image probe
  g++ -O1 -std=c++17 tests/interop/image_probe.cpp -I/usr/local/cuda/include -lvulkan \
    -l:libcuda.so.1 -o "$B/image_probe" > "$OUT/image-probe.log" 2>&1 &&
    timeout 120 "$B/image_probe" >> "$OUT/image-probe.log" 2>&1
  echo "image probe rc=$?"; cut -c1-200 "$OUT/image-probe.log"
fi
if has demo; then
  log demo
  (cd "$OUT" && timeout 120 stdbuf -oL "${VALIDATE[@]}" "$B/samples/demo/baton-demo" --frames 120 --out "$OUT/baton-demo.png") > "$OUT/demo.log" 2>&1
  echo "rc=$?"; grep -vE "^ *frame +[0-9]+ |^\[vulkan validation\]" "$OUT/demo.log" | head -40
  validation_summary "$OUT/demo.log"
  # Its timeline trace (baton-demo-trace.json), drawn as the README's picture.
  if [ -f "$OUT/baton-demo-trace.json" ] && command -v python3 > /dev/null; then
    python3 tools/baton-trace-render "$OUT/baton-demo-trace.json" -o "$OUT/baton-demo-trace.svg"
  fi
fi
# compute-sanitizer over the CUDA tests and the conformance suite on CUDA: memcheck, racecheck and
# synccheck, the six runs side by side (each its own process on the one GPU). A failing driver call
# is reported (API errors, the default), so the tests that make one on purpose
# (SANITIZER_API_ERROR_TESTS: a capture that a synchronizing call invalidates, whose end then fails
# twice) are left out of those runs and run apart afterwards, one per tool with
# --report-api-errors no: their memory errors, races and synchronization errors still count. Every
# run must exit 0 (--error-exitcode 3 makes any error fail it, a failed test too), run some tests
# and print a summary of 0 errors, else the step fails (and the script exits 1); a clean run prints
# "sanitizer PASSED" and 0 errors in each of the nine lines.
SANITIZER_API_ERROR_TESTS=${SANITIZER_API_ERROR_TESTS:-'GraphCommandBufferTest.ACaptureThatFailsFailsEnd/*'}
sanitizer_verdict() {  # <log> <exit status>: one line; returns 1 unless the run was clean
  local f=$1 rc=$2 summary ran
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$f" | tail -1)
  ran=$(grep -E "^\[==========\] [0-9]+ tests? from .* ran" "$f" | tail -1 | awk '{print $2}')
  echo "$(basename "$f"): rc=$rc ${summary:-no summary} | tests ran: ${ran:-none}" \
    "| $(grep -E "^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?" "$f" | tr '\n' ' ')"
  grep -B2 -A12 "Failure$\|========= [A-Z][a-z]* .*error\|========= Invalid\|========= Program hit\|Race reported" "$f" | head -20
  [ "$rc" = 0 ] && [ "${ran:-0}" -gt 0 ] &&
    echo "$summary" | grep -qE "SUMMARY: 0 (errors|hazards)"
}
if has sanitizer; then
  log compute-sanitizer
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  declare -A san_pid=()
  for tool in memcheck racecheck synccheck; do
    BATON_CUDA_TEST_SUBMISSIONS=800 timeout 420 "$CS" --tool $tool --error-exitcode 3 \
      "$B/tests/cuda/baton-cuda-tests" --gtest_filter="-$SANITIZER_API_ERROR_TESTS" \
      > "$OUT/sanitizer-$tool-cuda.log" 2>&1 &
    san_pid[$tool-cuda]=$!
    BATON_STRESS_OPS=4000 timeout 420 "$CS" --tool $tool --error-exitcode 3 \
      "$B/tests/baton-conformance" --gtest_filter='*/cuda' > "$OUT/sanitizer-$tool-conformance.log" 2>&1 &
    san_pid[$tool-conformance]=$!
  done
  declare -A san_rc=()
  for run in "${!san_pid[@]}"; do
    wait "${san_pid[$run]}"
    san_rc[$run]=$?
  done
  # The tests that fail driver calls on purpose, with those failures not reported.
  for tool in memcheck racecheck synccheck; do
    timeout 300 "$CS" --tool $tool --error-exitcode 3 --report-api-errors no \
      "$B/tests/cuda/baton-cuda-tests" --gtest_filter="$SANITIZER_API_ERROR_TESTS" \
      > "$OUT/sanitizer-$tool-api-error-tests.log" 2>&1
    san_rc[$tool-api-error-tests]=$?
  done
  sanitizer_failed=0
  for tool in memcheck racecheck synccheck; do
    for part in cuda conformance api-error-tests; do
      sanitizer_verdict "$OUT/sanitizer-$tool-$part.log" "${san_rc[$tool-$part]}" || sanitizer_failed=1
    done
  done
  if [ $sanitizer_failed = 0 ]; then echo "sanitizer PASSED"; else echo "sanitizer FAILED"; status=1; fi
  (cd "$OUT" && tar czf sanitizer-logs.tgz sanitizer-*.log && rm -f sanitizer-*.log)
fi
# The soak (tests/soak/soak.cpp) on the real driver, with Vulkan interop (Auto: bridged) on the H100:
# SOAK_SECONDS (600) of load, a sample every minute. With SOAK_DETACH=1 it starts in a session of
# its own and the step returns at once (a run of the device tool may last 10 minutes in all);
# the step soakwait waits for it and collects its log.
SOAK_SECONDS=${SOAK_SECONDS:-600}
if has soak; then
  log "soak ($SOAK_SECONDS s)"
  soak_cmd="timeout $((SOAK_SECONDS + 180)) stdbuf -oL $B/tests/soak/baton-soak --seconds $SOAK_SECONDS --sample 60"
  if [ -n "${SOAK_DETACH:-}" ]; then
    rm -f /tmp/soak.log /tmp/soak.rc
    setsid nohup sh -c "$soak_cmd > /tmp/soak.log 2>&1; echo \$? > /tmp/soak.rc" < /dev/null > /dev/null 2>&1 &
    echo "soak started in the background; step soakwait collects /tmp/soak.log"
  else
    $soak_cmd > "$OUT/soak.log" 2>&1; echo "rc=$?"; cat "$OUT/soak.log"
  fi
fi
if has soakwait; then
  log soak: waiting for the background run
  for _ in $(seq 1 600); do [ -e /tmp/soak.rc ] && break; sleep 1; done
  cp /tmp/soak.log "$OUT/soak.log" 2>/dev/null
  echo "rc=$(cat /tmp/soak.rc 2>/dev/null || echo 'still running')"; cat /tmp/soak.log
fi
# Before the benchmarks: the machine's cross-CPU cache-line latency (bench/core_latency.cpp),
# against which their multi-thread figures are read.
if has bench || has hipbench || has framebench || has ibench; then
  log core latency
  timeout 60 "$B/bench/core_latency" 2>&1
fi
if has bench; then
  log bench
  # --trace: the submit figure also with a timeline trace session paused and recording.
  timeout 200 stdbuf -oL "$B/bench/cuda/cuda_bench" --trace /tmp/cuda-bench-trace.json \
    > "$OUT/bench.log" 2>&1
  echo "rc=$?"; cat "$OUT/bench.log"
  if [ -n "${BLOCKING_TOO:-}" ]; then
    BATON_CUDA_BLOCKING_SYNC_EVENTS=1 BATON_BENCH_SCALE=4 timeout 120 stdbuf -oL "$B/bench/cuda/cuda_bench" > "$OUT/bench-blocking.log" 2>&1
    echo "rc=$?"; head -20 "$OUT/bench-blocking.log"
  fi
fi
if has hipbench; then
  log hip bench
  BATON_HIP_DRIVER="$HIP_OVER_CUDA" timeout 200 stdbuf -oL "$B/bench/cuda/cuda_bench" --backend hip > "$OUT/hip-bench.log" 2>&1
  echo "rc=$?"; cat "$OUT/hip-bench.log"
fi
# The engine frame (bench/cuda/frame_bench.cpp): baton against raw streams and events, on CUDA and
# on HIP through the translation library; a broken ordering makes rc=1.
if has framebench; then
  log frame bench
  timeout 150 stdbuf -oL "$B/bench/cuda/frame_bench" > "$OUT/frame-bench.log" 2>&1
  echo "rc=$?"; cat "$OUT/frame-bench.log"
  log frame bench on hip
  BATON_HIP_DRIVER="$HIP_OVER_CUDA" timeout 150 stdbuf -oL "$B/bench/cuda/frame_bench" --backend hip > "$OUT/hip-frame-bench.log" 2>&1
  echo "rc=$?"; cat "$OUT/hip-frame-bench.log"
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
exit $status
