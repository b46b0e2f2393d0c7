// The two ranks of collectives_bench: see collective_ranks.hpp.
#include "collective_ranks.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ptx_kernels.hpp"

namespace baton_bench {

using baton::Result;

RawNccl nccl;
const baton::cuda::Symbols* cu = nullptr;
Env env;

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "collectives_bench: %s: %s\n", what, detail.c_str());
  std::exit(1);
}

const char* backendName() { return env.backend == baton::BackendKind::Hip ? "HIP" : "CUDA"; }

namespace {

// Ends the run as skipped (meson's exit code 77), saying why; a failure where
// BATON_TEST_REQUIRE_BACKENDS names the backend (the smoke tests on the emulated driver).
[[noreturn]] void skip(const std::string& why) {
  std::printf("collectives_bench: %s\n", why.c_str());
  const char* required = std::getenv("BATON_TEST_REQUIRE_BACKENDS");
  const std::string mine = env.backend == baton::BackendKind::Hip ? "hip" : "cuda";
  if (required && std::string(required).find(mine) != std::string::npos) {
    std::printf("collectives_bench: BATON_TEST_REQUIRE_BACKENDS=%s: failing instead of skipping\n",
                required);
    std::exit(1);
  }
  std::exit(77);
}

baton::Semaphore semaphore(const char* name) {
  baton::SemaphoreCreateInfo info;
  info.debugName = name;
  baton::Semaphore s;
  BATON_OK(env.instance.createSemaphore(info, &s));
  return s;
}

}  // namespace

void makeCurrent(const Rank& r) { CU_OK(cu->cuCtxSetCurrent(r.context)); }

baton::CommandBuffer record(const Rank& r, const std::function<Result(baton::CommandBuffer)>& fn) {
  baton::CommandBuffer cb;
  BATON_OK(r.device.createCommandBuffer(&cb));
  BATON_OK(cb.begin());
  BATON_OK(fn(cb));
  BATON_OK(cb.end());
  return cb;
}

void wait(baton::Semaphore s, uint64_t value) {
  const Result r = s.wait(value, kWaitTimeoutNs);
  if (r == Result::Timeout) die("Semaphore::wait", "no completion within 120 s");
  BATON_OK(r);
}

void runAndWait(Rank& r, const std::function<Result(baton::CommandBuffer)>& fn) {
  baton::CommandBuffer cb = record(r, fn);
  baton::SubmitInfo info;
  baton::SemaphoreValue signal{r.reduced, ++r.reducedValue};
  info.commandBuffers = baton::Span<const baton::CommandBuffer>(&cb, 1);
  info.signals = baton::Span<const baton::SemaphoreValue>(&signal, 1);
  BATON_OK(r.comm.submit(info));
  wait(r.reduced, r.reducedValue);
  BATON_OK(cb.destroy());
}

baton::Buffer deviceBuffer(Rank& r, uint64_t bytes, uint32_t fill) {
  baton::BufferCreateInfo info;
  info.size = bytes;
  baton::Buffer b;
  BATON_OK(r.device.createBuffer(info, &b));
  runAndWait(r, [&](baton::CommandBuffer cb) { return cb.fillBuffer(b, 0, bytes, fill); });
  return b;
}
uint64_t address(baton::Buffer b) {
  uint64_t a = 0;
  BATON_OK(b.getDeviceAddress(&a));
  return a;
}

void readEnds(Rank& r, baton::Buffer b, uint64_t bytes, float out[2]) {
  runAndWait(r, [&](baton::CommandBuffer cb) {
    Result e = cb.copyBuffer(b, 0, r.staging, 0, 4);
    return e != Result::Success ? e : cb.copyBuffer(b, bytes - 4, r.staging, 4, 4);
  });
  // The host wait in runAndWait ordered the copies before these reads.
  out[0] = r.stagingHost[0];
  out[1] = r.stagingHost[1];
}

void rawFinish(Streams which) {
  for (Rank& r : env.ranks)
    CU_OK(cu->cuEventRecord(r.done, which == Streams::Comm ? r.commStream : r.computeStream));
  for (Rank& r : env.ranks) CU_OK(cu->cuEventSynchronize(r.done));
}

void setupRanks(baton::BackendKind backend) {
  env.backend = backend;
  baton::InstanceCreateInfo instanceInfo;
  instanceInfo.backendMask = baton::backendBit(env.backend);
  BATON_OK(baton::createInstance(instanceInfo, &env.instance));
  const std::string name = backendName();
  uint32_t count = 0;
  BATON_OK(env.instance.enumerateBackends(&count, nullptr));
  std::vector<baton::BackendInfo> infos(count);
  BATON_OK(env.instance.enumerateBackends(&count, infos.data()));
  for (const baton::BackendInfo& b : infos) {
    if (b.kind != env.backend) continue;
    if (!b.compiled) skip(name + " is not compiled into this build of baton");
    if (!b.available) skip(name + " unavailable: " + b.reason);
  }
  BATON_OK(env.instance.getCollectiveSupport(env.backend, &env.batonNccl));
  if (!env.batonNccl.available)
    skip(name + " collectives unavailable: " + std::string(env.batonNccl.reason));
  BATON_OK(env.instance.enumeratePhysicalDevices(&count, nullptr));
  std::vector<baton::PhysicalDevice> all(count);
  BATON_OK(env.instance.enumeratePhysicalDevices(&count, all.data()));
  std::vector<baton::PhysicalDevice> mine;
  for (baton::PhysicalDevice p : all) {
    baton::PhysicalDeviceProperties props;
    BATON_OK(p.getProperties(&props));
    if (props.backend != env.backend || mine.size() == kRanks) continue;
    mine.push_back(p);
    env.ranks[mine.size() - 1].ordinal = static_cast<int>(props.ordinal);
    env.ranks[mine.size() - 1].name = props.name;
  }
  if (mine.size() < kRanks)
    skip(name + ": " + std::to_string(mine.size()) + " device(s); the benchmark needs " +
         std::to_string(kRanks) + " (BATON_FAKE_CUDA_DEVICES=2 on the emulated driver)");

  // The raw side: the CUDA driver through baton's symbol table (BATON_CUDA_DRIVER or
  // libcuda.so.1), whichever backend baton runs on; NCCL loaded by the benchmark itself.
  const baton::cuda::Driver& driver = baton::cuda::loadDriver();
  if (!driver.loadStatus.ok()) skip("raw CUDA unavailable: " + driver.loadStatus.message());
  cu = &baton::cuda::symbols();
  nccl = baton_bench::loadRawNccl();
  if (!nccl.loaded()) skip("raw " + nccl.reason);
  env.kernels = cu->cuModuleLoadData && cu->cuModuleGetFunction && cu->cuLaunchKernel;

  std::vector<baton::Device> devices;
  for (int i = 0; i < kRanks; ++i) {
    Rank& r = env.ranks[i];
    baton::DeviceCreateInfo info;
    info.queueCount = 2;
    BATON_OK(env.instance.createDevice(mine[i], info, &r.device));
    // BATON_BENCH_HOST_WAIT_SPIN=<ns>: the devices' host-wait spin (Device::setHostWaitSpin;
    // 50 us otherwise; "forever" for kHostWaitSpinForever, as the raw side's cuEventSynchronize
    // spins with the context's default scheduling).
    if (const char* spin = std::getenv("BATON_BENCH_HOST_WAIT_SPIN")) {
      const uint64_t ns = std::string(spin) == "forever" ? baton::kHostWaitSpinForever
                                                         : std::strtoull(spin, nullptr, 10);
      BATON_OK(r.device.setHostWaitSpin(ns));
      if (i == 0) std::printf("host-wait spin: %s ns (BATON_BENCH_HOST_WAIT_SPIN)\n", spin);
    }
    BATON_OK(r.device.getQueue(0, &r.compute));
    BATON_OK(r.device.getQueue(1, &r.comm));
    devices.push_back(r.device);
    r.computed = semaphore("computed");
    r.reduced = semaphore("reduced");
    baton::BufferCreateInfo staging;
    staging.size = 8;
    staging.memory = baton::MemoryKind::HostPinned;
    BATON_OK(r.device.createBuffer(staging, &r.staging));
    void* host = nullptr;
    BATON_OK(r.staging.map(&host));
    r.stagingHost = static_cast<float*>(host);
    r.scratch = deviceBuffer(r, kScratchBytes, 0);
    r.scratchAddress = address(r.scratch);

    CU_OK(cu->cuDeviceGet(&r.cuDevice, r.ordinal));
    CU_OK(cu->cuDevicePrimaryCtxRetain(&r.context, r.cuDevice));
    makeCurrent(r);
    CU_OK(cu->cuStreamCreate(&r.computeStream, CU_STREAM_NON_BLOCKING));
    CU_OK(cu->cuStreamCreate(&r.commStream, CU_STREAM_NON_BLOCKING));
    CU_OK(cu->cuEventCreate(&r.done, CU_EVENT_DISABLE_TIMING));
    if (env.kernels) {
      if (CUresult e = cu->cuModuleLoadData(&r.module, baton_test::kPtxKernels))
        die("cuModuleLoadData (the PTX kernels)", baton::cuda::resultName(e));
      CU_OK(cu->cuModuleGetFunction(&r.spin, r.module, "baton_spin_ns"));
    }
  }
  baton::CommunicatorGroupCreateInfo group;
  group.debugName = "bench";
  baton::Communicator comms[kRanks];
  BATON_OK(env.instance.createCommunicators(devices, group, comms));
  ncclComm_t raw[kRanks];
  const int devlist[kRanks] = {env.ranks[0].ordinal, env.ranks[1].ordinal};
  {
    ncclResult_t r = nccl.ncclCommInitAll(raw, kRanks, devlist);
    if (r != ncclSuccess && r != ncclInProgress) die("ncclCommInitAll", nccl.ncclGetErrorString(r));
  }
  for (int i = 0; i < kRanks; ++i) {
    env.ranks[i].communicator = comms[i];
    env.ranks[i].ncclComm = raw[i];
  }
  rawSettle();
}

void rawSettle() {
  for (Rank& r : env.ranks) {
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) {
      NCCL_OK(nccl.ncclCommGetAsyncError(r.ncclComm, &state));
      if (state != ncclSuccess && state != ncclInProgress)
        die("ncclCommGetAsyncError", nccl.ncclGetErrorString(state));
    }
  }
}

void teardownRanks() {
  for (Rank& r : env.ranks) BATON_OK(r.device.waitIdle());
  for (Rank& r : env.ranks) BATON_OK(r.communicator.destroy());
  for (Rank& r : env.ranks) NCCL_OK(nccl.ncclCommDestroy(r.ncclComm));
  for (Rank& r : env.ranks) {
    makeCurrent(r);
    CU_OK(cu->cuStreamSynchronize(r.computeStream));
    CU_OK(cu->cuStreamSynchronize(r.commStream));
    CU_OK(cu->cuStreamDestroy(r.computeStream));
    CU_OK(cu->cuStreamDestroy(r.commStream));
    CU_OK(cu->cuEventDestroy(r.done));
    for (CUevent e : r.computeEnd) CU_OK(cu->cuEventDestroy(e));
    if (r.module) CU_OK(cu->cuModuleUnload(r.module));
    BATON_OK(r.staging.destroy());
    BATON_OK(r.scratch.destroy());
    BATON_OK(r.computed.destroy());
    BATON_OK(r.reduced.destroy());
    BATON_OK(r.device.destroy());
    CU_OK(cu->cuDevicePrimaryCtxRelease(r.cuDevice));
  }
  BATON_OK(env.instance.destroy());
}

}  // namespace baton_bench
