// Checks the fake driver's documented behaviours (fake_cuda.hpp, "Behaviours modelled") directly
// on its entry points, in async mode: the module named by BATON_CUDA_DRIVER is opened with dlopen,
// as baton opens it. Streams are held up by a host function waiting on a Gate, so that what is
// pending is known exactly. The cross-process checks (M2-M4) run this binary again as a child
// process (FakeCudaChildProcess.Run, told what to do by BATON_FAKE_SELFTEST_CHILD).
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda.hpp"
#ifdef FAKE_SELFTEST_HIP
#include <hip/hip_runtime_api.h>
#endif

// The symbol an entry point resolves to, after cuda.h's versioning macros (cuStreamDestroy ->
// cuStreamDestroy_v2).
#define FAKE_SYM2(x) #x
#define FAKE_SYM(x) FAKE_SYM2(x)

namespace {

struct Driver {
  void* handle = nullptr;
  template <class F>
  F get(const char* name) {
    return reinterpret_cast<F>(dlsym(handle, name));
  }
};

// A host function that holds its stream until open() (a host function may block on the host).
struct Gate {
  std::atomic<bool> opened{false};
  static void CUDA_CB hold(void* g) {
    while (!static_cast<Gate*>(g)->opened.load())
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  void open() { opened.store(true); }
};

struct Flag {
  std::atomic<int> value{0};
  static void CUDA_CB set(void* f) { static_cast<Flag*>(f)->value.store(1); }
};

class FakeCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("BATON_CUDA_DRIVER");
    if (!path) GTEST_SKIP() << "BATON_CUDA_DRIVER not set";
    d_.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(d_.handle, nullptr) << dlerror();
    stats_ = d_.get<void (*)(BatonFakeCudaStats*)>("batonFakeCudaStats");
    ASSERT_NE(stats_, nullptr);
    BatonFakeCudaStats st{};
    stats_(&st);
    if (!st.async) GTEST_SKIP() << "sync mode: nothing is ever pending";
    ctxSetCurrent_ = d_.get<CUresult (*)(CUcontext)>(FAKE_SYM(cuCtxSetCurrent));
    CUcontext ctx = nullptr;
    ASSERT_EQ(
        d_.get<CUresult (*)(CUcontext*, CUdevice)>(FAKE_SYM(cuDevicePrimaryCtxRetain))(&ctx, 0),
        CUDA_SUCCESS);
    ASSERT_EQ(ctxSetCurrent_(ctx), CUDA_SUCCESS);
    streamCreate_ = d_.get<decltype(streamCreate_)>(FAKE_SYM(cuStreamCreate));
    streamDestroy_ = d_.get<decltype(streamDestroy_)>(FAKE_SYM(cuStreamDestroy));
    streamSync_ = d_.get<decltype(streamSync_)>(FAKE_SYM(cuStreamSynchronize));
    streamWait_ = d_.get<decltype(streamWait_)>(FAKE_SYM(cuStreamWaitEvent));
    eventCreate_ = d_.get<decltype(eventCreate_)>(FAKE_SYM(cuEventCreate));
    eventDestroy_ = d_.get<decltype(eventDestroy_)>(FAKE_SYM(cuEventDestroy));
    eventRecord_ = d_.get<decltype(eventRecord_)>(FAKE_SYM(cuEventRecord));
    eventQuery_ = d_.get<decltype(eventQuery_)>(FAKE_SYM(cuEventQuery));
    eventSync_ = d_.get<decltype(eventSync_)>(FAKE_SYM(cuEventSynchronize));
    hostFunc_ = d_.get<decltype(hostFunc_)>(FAKE_SYM(cuLaunchHostFunc));
    ASSERT_TRUE(streamCreate_ && streamDestroy_ && streamSync_ && streamWait_ && eventCreate_ &&
                eventDestroy_ && eventRecord_ && eventQuery_ && eventSync_ && hostFunc_);
  }

  CUstream stream() {
    CUstream s = nullptr;
    EXPECT_EQ(streamCreate_(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    return s;
  }
  CUevent event() {
    CUevent e = nullptr;
    EXPECT_EQ(eventCreate_(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    return e;
  }

  Driver d_;
  void (*stats_)(BatonFakeCudaStats*) = nullptr;
  CUresult (*ctxSetCurrent_)(CUcontext) = nullptr;
  CUresult (*streamCreate_)(CUstream*, unsigned) = nullptr;
  CUresult (*streamDestroy_)(CUstream) = nullptr;
  CUresult (*streamSync_)(CUstream) = nullptr;
  CUresult (*streamWait_)(CUstream, CUevent, unsigned) = nullptr;
  CUresult (*eventCreate_)(CUevent*, unsigned) = nullptr;
  CUresult (*eventDestroy_)(CUevent) = nullptr;
  CUresult (*eventRecord_)(CUevent, CUstream) = nullptr;
  CUresult (*eventQuery_)(CUevent) = nullptr;
  CUresult (*eventSync_)(CUevent) = nullptr;
  CUresult (*hostFunc_)(CUstream, CUhostFn, void*) = nullptr;
};

// Behaviours 2-4: the record completes with the work before it; NOT_READY until then.
TEST_F(FakeCudaTest, RecordCapturesTheStreamPosition) {
  CUstream s = stream();
  CUevent e = event();
  EXPECT_EQ(eventQuery_(e), CUDA_SUCCESS) << "never recorded: an empty set of work";
  EXPECT_EQ(eventSync_(e), CUDA_SUCCESS);
  Gate gate;
  ASSERT_EQ(hostFunc_(s, &Gate::hold, &gate), CUDA_SUCCESS);
  ASSERT_EQ(eventRecord_(e, s), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(eventQuery_(e), CUDA_ERROR_NOT_READY);
  gate.open();
  EXPECT_EQ(eventSync_(e), CUDA_SUCCESS);
  EXPECT_EQ(eventQuery_(e), CUDA_SUCCESS);
  EXPECT_EQ(eventDestroy_(e), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
}

// Behaviour 5: a wait is for the record current at cuStreamWaitEvent; re-recording the event
// afterwards (on an idle stream) does not release it. A never-recorded event waits for nothing.
TEST_F(FakeCudaTest, WaitKeepsTheRecordItWasGiven) {
  CUstream producer = stream(), consumer = stream(), idle = stream();
  CUevent e = event(), never = event();
  Gate gate;
  Flag ran;
  ASSERT_EQ(hostFunc_(producer, &Gate::hold, &gate), CUDA_SUCCESS);
  ASSERT_EQ(eventRecord_(e, producer), CUDA_SUCCESS);
  ASSERT_EQ(streamWait_(consumer, never, 0), CUDA_SUCCESS);
  ASSERT_EQ(streamWait_(consumer, e, 0), CUDA_SUCCESS);
  ASSERT_EQ(hostFunc_(consumer, &Flag::set, &ran), CUDA_SUCCESS);
  ASSERT_EQ(eventRecord_(e, idle), CUDA_SUCCESS);  // re-recorded: complete at once
  EXPECT_EQ(eventSync_(e), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(ran.value.load(), 0) << "the consumer ran before the record it waited for";
  gate.open();
  EXPECT_EQ(streamSync_(consumer), CUDA_SUCCESS);
  EXPECT_EQ(ran.value.load(), 1);
  for (CUevent x : {e, never}) EXPECT_EQ(eventDestroy_(x), CUDA_SUCCESS);
  for (CUstream x : {producer, consumer, idle}) EXPECT_EQ(streamDestroy_(x), CUDA_SUCCESS);
}

// Behaviour 11: pageable sources are staged at the call, page-locked ones read when the copy runs.
TEST_F(FakeCudaTest, PageableCopiesAreStagedAtTheCall) {
  auto htod =
      d_.get<CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>(FAKE_SYM(cuMemcpyHtoDAsync));
  auto alloc = d_.get<CUresult (*)(CUdeviceptr*, size_t)>(FAKE_SYM(cuMemAlloc));
  auto memFree = d_.get<CUresult (*)(CUdeviceptr)>(FAKE_SYM(cuMemFree));
  auto hostAlloc = d_.get<CUresult (*)(void**, size_t, unsigned)>(FAKE_SYM(cuMemHostAlloc));
  auto hostFree = d_.get<CUresult (*)(void*)>(FAKE_SYM(cuMemFreeHost));
  ASSERT_TRUE(htod && alloc && memFree && hostAlloc && hostFree);
  CUstream s = stream();
  CUdeviceptr dst = 0;
  ASSERT_EQ(alloc(&dst, 8), CUDA_SUCCESS);
  uint32_t pageable = 1;
  void* pinnedMem = nullptr;
  ASSERT_EQ(hostAlloc(&pinnedMem, 4, 0), CUDA_SUCCESS);
  auto* pinned = static_cast<uint32_t*>(pinnedMem);
  *pinned = 1;
  Gate gate;
  ASSERT_EQ(hostFunc_(s, &Gate::hold, &gate), CUDA_SUCCESS);
  ASSERT_EQ(htod(dst, &pageable, 4, s), CUDA_SUCCESS);
  ASSERT_EQ(htod(dst + 4, pinned, 4, s), CUDA_SUCCESS);
  pageable = 2;
  *pinned = 2;
  gate.open();
  ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
  uint32_t out[2];
  std::memcpy(out, reinterpret_cast<void*>(dst), sizeof out);
  EXPECT_EQ(out[0], 1u);
  EXPECT_EQ(out[1], 2u);
  EXPECT_EQ(memFree(dst), CUDA_SUCCESS);
  EXPECT_EQ(hostFree(pinnedMem), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
}

// Behaviour 7: a driver call from inside a host function is refused and counted (this test runs
// without BATON_FAKE_CUDA_STRICT, which would abort).
struct Reentry {
  CUresult (*query)(CUevent);
  CUevent event;
  std::atomic<int> result{-1};
  static void CUDA_CB call(void* r) {
    auto* self = static_cast<Reentry*>(r);
    self->result.store(self->query(self->event));
  }
};
TEST_F(FakeCudaTest, DriverCallsInsideHostFunctionsAreRefused) {
  BatonFakeCudaStats before{}, after{};
  stats_(&before);
  CUstream s = stream();
  CUevent e = event();
  Reentry r{eventQuery_, e};
  ASSERT_EQ(hostFunc_(s, &Reentry::call, &r), CUDA_SUCCESS);
  ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
  EXPECT_EQ(r.result.load(), CUDA_ERROR_NOT_PERMITTED);
  stats_(&after);
  EXPECT_EQ(after.hostFunctionViolations, before.hostFunctionViolations + 1);
  EXPECT_EQ(eventDestroy_(e), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
}

// ---- graphs (G1-G6) -----------------------------------------------------------------------------

class FakeCudaGraphTest : public FakeCudaTest {
 protected:
  void SetUp() override {
    FakeCudaTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
#define FAKE_GET(member, name) member = d_.get<decltype(member)>(FAKE_SYM(name))
    FAKE_GET(memAlloc_, cuMemAlloc);
    FAKE_GET(memFree_, cuMemFree);
    FAKE_GET(memset32_, cuMemsetD32Async);
    FAKE_GET(graphCreate_, cuGraphCreate);
    FAKE_GET(graphDestroy_, cuGraphDestroy);
    FAKE_GET(addEmpty_, cuGraphAddEmptyNode);
    FAKE_GET(addMemcpy_, cuGraphAddMemcpyNode);
    FAKE_GET(addMemset_, cuGraphAddMemsetNode);
    FAKE_GET(addHost_, cuGraphAddHostNode);
    FAKE_GET(addChild_, cuGraphAddChildGraphNode);
    FAKE_GET(instantiate_, cuGraphInstantiate);
    FAKE_GET(execDestroy_, cuGraphExecDestroy);
    FAKE_GET(launch_, cuGraphLaunch);
    FAKE_GET(update_, cuGraphExecUpdate);
    FAKE_GET(beginCapture_, cuStreamBeginCapture);
    FAKE_GET(endCapture_, cuStreamEndCapture);
    FAKE_GET(isCapturing_, cuStreamIsCapturing);
#undef FAKE_GET
    ASSERT_TRUE(memAlloc_ && memFree_ && memset32_ && graphCreate_ && graphDestroy_ && addEmpty_ &&
                addMemcpy_ && addMemset_ && addHost_ && addChild_ && instantiate_ && execDestroy_ &&
                launch_ && update_ && beginCapture_ && endCapture_ && isCapturing_);
  }
  uint32_t* alloc(size_t words) {
    CUdeviceptr p = 0;
    EXPECT_EQ(memAlloc_(&p, words * 4), CUDA_SUCCESS);
    return reinterpret_cast<uint32_t*>(p);  // the fake's device memory is host memory
  }
  static CUdeviceptr dev(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }
  CUgraphNode memsetNode(CUgraph g, const CUgraphNode* deps, size_t n, uint32_t* dst,
                         uint32_t value, size_t words) {
    CUDA_MEMSET_NODE_PARAMS p{};
    p.dst = dev(dst);
    p.value = value;
    p.elementSize = 4;
    p.width = words;
    p.height = 1;
    CUgraphNode node = nullptr;
    EXPECT_EQ(addMemset_(&node, g, deps, n, &p, nullptr), CUDA_SUCCESS);
    return node;
  }
  CUgraphNode memcpyNode(CUgraph g, const CUgraphNode* deps, size_t n, uint32_t* dst,
                         const uint32_t* src, size_t words) {
    CUDA_MEMCPY3D p{};
    p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = dev(src);
    p.dstDevice = dev(dst);
    p.WidthInBytes = words * 4;
    p.Height = p.Depth = 1;
    CUgraphNode node = nullptr;
    EXPECT_EQ(addMemcpy_(&node, g, deps, n, &p, nullptr), CUDA_SUCCESS);
    return node;
  }
  BatonFakeCudaStats stats() {
    BatonFakeCudaStats st{};
    stats_(&st);
    return st;
  }

  CUresult (*memAlloc_)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*memFree_)(CUdeviceptr) = nullptr;
  CUresult (*memset32_)(CUdeviceptr, unsigned, size_t, CUstream) = nullptr;
  CUresult (*graphCreate_)(CUgraph*, unsigned) = nullptr;
  CUresult (*graphDestroy_)(CUgraph) = nullptr;
  CUresult (*addEmpty_)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t) = nullptr;
  CUresult (*addMemcpy_)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const CUDA_MEMCPY3D*,
                         CUcontext) = nullptr;
  CUresult (*addMemset_)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                         const CUDA_MEMSET_NODE_PARAMS*, CUcontext) = nullptr;
  CUresult (*addHost_)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                       const CUDA_HOST_NODE_PARAMS*) = nullptr;
  CUresult (*addChild_)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUgraph) = nullptr;
  CUresult (*instantiate_)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*execDestroy_)(CUgraphExec) = nullptr;
  CUresult (*launch_)(CUgraphExec, CUstream) = nullptr;
  CUresult (*update_)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo*) = nullptr;
  CUresult (*beginCapture_)(CUstream, CUstreamCaptureMode) = nullptr;
  CUresult (*endCapture_)(CUstream, CUgraph*) = nullptr;
  CUresult (*isCapturing_)(CUstream, CUstreamCaptureStatus*) = nullptr;
};

// G1-G3: a graph of a fill, a copy after it and a host node after both, launched twice behind a
// held stream: nothing runs before the stream gets there; each launch runs every node in order;
// the executable graph is a snapshot (nodes added later do not run, the graph may go).
TEST_F(FakeCudaGraphTest, AGraphOfNodesRunsInStreamOrderAtEachLaunch) {
  uint32_t* a = alloc(4);
  uint32_t* b = alloc(4);
  CUgraph g = nullptr;
  ASSERT_EQ(graphCreate_(&g, 0), CUDA_SUCCESS);
  CUgraphNode fill = memsetNode(g, nullptr, 0, a, 7, 4);
  CUgraphNode copy = memcpyNode(g, &fill, 1, b, a, 4);
  std::atomic<int> calls{0};
  struct Seen {
    std::atomic<int>* calls;
    uint32_t* b;
    std::atomic<uint32_t> first{0};
  } seen{&calls, b};
  CUDA_HOST_NODE_PARAMS hp{};
  hp.fn = [](void* u) {
    auto* s = static_cast<Seen*>(u);
    s->first.store(s->b[0]);
    s->calls->fetch_add(1);
  };
  hp.userData = &seen;
  CUgraphNode deps[2] = {fill, copy};
  CUgraphNode host = nullptr;
  ASSERT_EQ(addHost_(&host, g, deps, 2, &hp), CUDA_SUCCESS);
  CUgraphNode foreign = reinterpret_cast<CUgraphNode>(&seen);
  CUgraphNode bad = nullptr;
  EXPECT_EQ(addEmpty_(&bad, g, &foreign, 1), CUDA_ERROR_INVALID_VALUE)
      << "a dependency of no graph";
  CUgraphExec x = nullptr;
  ASSERT_EQ(instantiate_(&x, g, 0), CUDA_SUCCESS);
  memsetNode(g, &host, 1, a, 99, 4);  // after instantiation: not in x
  ASSERT_EQ(graphDestroy_(g), CUDA_SUCCESS);
  CUstream s = stream();
  Gate gate;
  ASSERT_EQ(hostFunc_(s, &Gate::hold, &gate), CUDA_SUCCESS);
  const BatonFakeCudaStats before = stats();
  ASSERT_EQ(launch_(x, s), CUDA_SUCCESS);
  ASSERT_EQ(launch_(x, s), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(calls.load(), 0) << "a launch ran before the stream reached it";
  gate.open();
  ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(seen.first.load(), 7u) << "the host node ran before the copy";
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a[i], 7u) << "a node added after instantiation ran";
  EXPECT_EQ(stats().graphLaunches - before.graphLaunches, 2u);
  EXPECT_EQ(execDestroy_(x), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
  EXPECT_EQ(memFree_(dev(a)), CUDA_SUCCESS);
  EXPECT_EQ(memFree_(dev(b)), CUDA_SUCCESS);
}

// G3: a launch on another stream waits for the previous launch of the same executable graph.
TEST_F(FakeCudaGraphTest, LaunchesOfOneGraphAreOrderedAcrossStreams) {
  CUgraph g = nullptr;
  ASSERT_EQ(graphCreate_(&g, 0), CUDA_SUCCESS);
  Flag ran;
  CUDA_HOST_NODE_PARAMS hp{};
  hp.fn = &Flag::set;
  hp.userData = &ran;
  CUgraphNode host = nullptr;
  ASSERT_EQ(addHost_(&host, g, nullptr, 0, &hp), CUDA_SUCCESS);
  CUgraphExec x = nullptr;
  ASSERT_EQ(instantiate_(&x, g, 0), CUDA_SUCCESS);
  CUstream first = stream(), second = stream();
  Gate gate;
  ASSERT_EQ(hostFunc_(first, &Gate::hold, &gate), CUDA_SUCCESS);
  ASSERT_EQ(launch_(x, first), CUDA_SUCCESS);
  Flag after;
  ASSERT_EQ(launch_(x, second), CUDA_SUCCESS);
  ASSERT_EQ(hostFunc_(second, &Flag::set, &after), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(after.value.load(), 0) << "the second launch did not wait for the first";
  gate.open();
  ASSERT_EQ(streamSync_(second), CUDA_SUCCESS);
  EXPECT_EQ(after.value.load(), 1);
  EXPECT_EQ(execDestroy_(x), CUDA_SUCCESS);
  EXPECT_EQ(graphDestroy_(g), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(first), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(second), CUDA_SUCCESS);
}

// G1 and G4: a child graph is cloned when added; an update with the same nodes takes the new
// parameters, one with other nodes or dependencies is refused and leaves the executable graph.
TEST_F(FakeCudaGraphTest, UpdatesTakeNewParametersAndRefuseOtherTopologies) {
  uint32_t* a = alloc(2);
  auto build = [&](uint32_t value, bool extra, CUgraph* out) {
    CUgraph child = nullptr, g = nullptr;
    ASSERT_EQ(graphCreate_(&child, 0), CUDA_SUCCESS);
    memsetNode(child, nullptr, 0, a, value, 2);
    ASSERT_EQ(graphCreate_(&g, 0), CUDA_SUCCESS);
    CUgraphNode first = nullptr, childNode = nullptr;
    ASSERT_EQ(addEmpty_(&first, g, nullptr, 0), CUDA_SUCCESS);
    ASSERT_EQ(addChild_(&childNode, g, &first, 1, child), CUDA_SUCCESS);
    memsetNode(child, nullptr, 0, a + 1, 5, 1);  // after the clone: not in g
    if (extra) memsetNode(g, &childNode, 1, a + 1, 3, 1);
    ASSERT_EQ(graphDestroy_(child), CUDA_SUCCESS);
    *out = g;
  };
  CUgraph g1 = nullptr, g2 = nullptr, g3 = nullptr;
  build(1, false, &g1);
  build(2, false, &g2);
  build(3, true, &g3);
  CUgraphExec x = nullptr;
  ASSERT_EQ(instantiate_(&x, g1, 0), CUDA_SUCCESS);
  CUstream s = stream();
  ASSERT_EQ(launch_(x, s), CUDA_SUCCESS);
  ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
  EXPECT_EQ(a[0], 1u);
  EXPECT_EQ(a[1], 1u) << "the child graph changed after it was added";
  CUgraphExecUpdateResultInfo info{};
  ASSERT_EQ(update_(x, g2, &info), CUDA_SUCCESS);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  ASSERT_EQ(launch_(x, s), CUDA_SUCCESS);
  ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
  EXPECT_EQ(a[0], 2u) << "the update's parameters were not used";
  EXPECT_EQ(update_(x, g3, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  EXPECT_EQ(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  a[0] = 0;
  ASSERT_EQ(launch_(x, s), CUDA_SUCCESS);
  ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
  EXPECT_EQ(a[0], 2u) << "a refused update changed the executable graph";
  for (CUgraph g : {g1, g2, g3}) EXPECT_EQ(graphDestroy_(g), CUDA_SUCCESS);
  EXPECT_EQ(execDestroy_(x), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
  EXPECT_EQ(memFree_(dev(a)), CUDA_SUCCESS);
}

// G5: what is enqueued on a capturing stream becomes the graph, and does not run until launched.
TEST_F(FakeCudaGraphTest, CaptureRecordsTheStreamsWorkWithoutRunningIt) {
  uint32_t* a = alloc(3);
  CUstream s = stream();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  ASSERT_EQ(isCapturing_(s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  ASSERT_EQ(beginCapture_(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(beginCapture_(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
  ASSERT_EQ(isCapturing_(s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  Flag ran;
  ASSERT_EQ(memset32_(dev(a), 9, 3, s), CUDA_SUCCESS);
  ASSERT_EQ(hostFunc_(s, &Flag::set, &ran), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(ran.value.load(), 0) << "captured work ran";
  EXPECT_EQ(a[0], 0u) << "captured work ran";
  CUgraph g = nullptr;
  ASSERT_EQ(endCapture_(s, &g), CUDA_SUCCESS);
  ASSERT_NE(g, nullptr);
  CUgraph none = nullptr;
  EXPECT_EQ(endCapture_(s, &none), CUDA_ERROR_ILLEGAL_STATE) << "ended twice";
  CUgraphExec x = nullptr;
  ASSERT_EQ(instantiate_(&x, g, 0), CUDA_SUCCESS);
  ASSERT_EQ(launch_(x, s), CUDA_SUCCESS);
  ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
  EXPECT_EQ(ran.value.load(), 1);
  EXPECT_EQ(a[2], 9u);
  EXPECT_EQ(execDestroy_(x), CUDA_SUCCESS);
  EXPECT_EQ(graphDestroy_(g), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
  EXPECT_EQ(memFree_(dev(a)), CUDA_SUCCESS);
}

// G6: a synchronization (or an event) on a capturing stream is refused and invalidates the
// capture, which then ends without a graph; the null stream cannot capture. No graph is left.
TEST_F(FakeCudaGraphTest, WhatACaptureCannotTakeInvalidatesIt) {
  const BatonFakeCudaStats before = stats();
  CUstream s = stream();
  EXPECT_EQ(beginCapture_(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ASSERT_EQ(beginCapture_(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(streamSync_(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  ASSERT_EQ(isCapturing_(s, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CUgraph g = reinterpret_cast<CUgraph>(&status);
  EXPECT_EQ(endCapture_(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(g, nullptr);
  CUevent e = event();
  ASSERT_EQ(beginCapture_(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(eventRecord_(e, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(endCapture_(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(eventDestroy_(e), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
  const BatonFakeCudaStats after = stats();
  EXPECT_EQ(after.graphsLive, before.graphsLive);
  EXPECT_EQ(after.execsLive, before.execsLive);
}

// ---- stream memory operations, host registration, VMM and IPC (M1-M4) ---------------------------

// A child process: this binary again, running FakeCudaChildProcess.Run with
// BATON_FAKE_SELFTEST_CHILD=`mode`; `keep` are descriptors it inherits across exec. The
// environment is built before fork, so that the child only clears close-on-exec and execs.
pid_t startChild(const std::string& mode, std::vector<int> keep) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "BATON_FAKE_SELFTEST_CHILD=", 26) != 0) env.emplace_back(*e);
  env.push_back("BATON_FAKE_SELFTEST_CHILD=" + mode);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  char arg0[] = "baton-fake-cuda-selftest";
  char arg1[] = "--gtest_filter=FakeCudaChildProcess.Run";
  char* argv[] = {arg0, arg1, nullptr};
  const pid_t pid = fork();
  if (pid == 0) {
    for (int fd : keep) fcntl(fd, F_SETFD, 0);
    execve("/proc/self/exe", argv, envp.data());
    _exit(127);
  }
  return pid;
}
// The child's exit status; a child still running after `timeoutMs` is killed: -1.
int finishChild(pid_t pid, int timeoutMs = 20000) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int openDescriptors() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// Waits up to `ms` for a flag a host function sets.
bool setWithin(const Flag& f, int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!f.value.load()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

class FakeCudaMemOpsTest : public FakeCudaGraphTest {
 protected:
  void SetUp() override {
    FakeCudaGraphTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
#define FAKE_GET(member, name) member = d_.get<decltype(member)>(FAKE_SYM(name))
    FAKE_GET(wait32_, cuStreamWaitValue32);
    FAKE_GET(wait64_, cuStreamWaitValue64);
    FAKE_GET(write32_, cuStreamWriteValue32);
    FAKE_GET(write64_, cuStreamWriteValue64);
    FAKE_GET(register_, cuMemHostRegister);
    FAKE_GET(unregister_, cuMemHostUnregister);
    FAKE_GET(devicePointer_, cuMemHostGetDevicePointer);
    FAKE_GET(hostAlloc_, cuMemHostAlloc);
    FAKE_GET(hostFree_, cuMemFreeHost);
    FAKE_GET(attribute_, cuDeviceGetAttribute);
    FAKE_GET(query_, cuStreamQuery);
    FAKE_GET(htod_, cuMemcpyHtoD);
    FAKE_GET(dtoh_, cuMemcpyDtoH);
    FAKE_GET(granularity_, cuMemGetAllocationGranularity);
    FAKE_GET(create_, cuMemCreate);
    FAKE_GET(release_, cuMemRelease);
    FAKE_GET(export_, cuMemExportToShareableHandle);
    FAKE_GET(import_, cuMemImportFromShareableHandle);
    FAKE_GET(properties_, cuMemGetAllocationPropertiesFromHandle);
    FAKE_GET(retain_, cuMemRetainAllocationHandle);
    FAKE_GET(reserve_, cuMemAddressReserve);
    FAKE_GET(addressFree_, cuMemAddressFree);
    FAKE_GET(map_, cuMemMap);
    FAKE_GET(unmap_, cuMemUnmap);
    FAKE_GET(setAccess_, cuMemSetAccess);
    FAKE_GET(ipcGet_, cuIpcGetMemHandle);
    FAKE_GET(ipcOpen_, cuIpcOpenMemHandle);
    FAKE_GET(ipcClose_, cuIpcCloseMemHandle);
#undef FAKE_GET
    ASSERT_TRUE(wait32_ && wait64_ && write32_ && write64_ && register_ && unregister_ &&
                devicePointer_ && hostAlloc_ && hostFree_ && attribute_ && query_ && htod_ &&
                dtoh_ && granularity_ && create_ && release_ && export_ && import_ && properties_ &&
                retain_ && reserve_ && addressFree_ && map_ && unmap_ && setAccess_ && ipcGet_ &&
                ipcOpen_ && ipcClose_);
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = 0;
    prop_.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  }
  void TearDown() override {
    for (void* p : pages_) {
      unregister_(p);  // may have been unregistered already
      munmap(p, 4096);
    }
  }

  // A page of a memfd (another process can map it), registered; its device pointer.
  CUdeviceptr sharedPage(int* fdOut = nullptr) {
    const int fd = memfd_create("fake-selftest-word", MFD_CLOEXEC);
    EXPECT_EQ(ftruncate(fd, 4096), 0);
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    EXPECT_NE(p, MAP_FAILED);
    pages_.push_back(p);
    if (fdOut)
      *fdOut = fd;
    else
      close(fd);
    EXPECT_EQ(register_(p, 4096, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE),
              CUDA_SUCCESS);
    CUdeviceptr d = 0;
    EXPECT_EQ(devicePointer_(&d, p, 0), CUDA_SUCCESS);
    return d;
  }
  static uint64_t* word(CUdeviceptr d) { return reinterpret_cast<uint64_t*>(d); }
  static void store(CUdeviceptr d, uint64_t v) { __atomic_store_n(word(d), v, __ATOMIC_RELEASE); }
  // Whether a wait with these arguments on a fresh stream lets the work after it run within
  // `ms`; the stream is left to be released by the caller when it does not.
  bool waitReleases(CUdeviceptr d, uint64_t value, unsigned flags, bool wide, int ms,
                    CUstream* out = nullptr) {
    CUstream s = stream();
    auto flag = std::make_unique<Flag>();
    EXPECT_EQ(wide ? wait64_(s, d, value, flags) : wait32_(s, d, uint32_t(value), flags),
              CUDA_SUCCESS);
    EXPECT_EQ(hostFunc_(s, &Flag::set, flag.get()), CUDA_SUCCESS);
    const bool released = setWithin(*flag, ms);
    if (released) {
      EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
    } else {
      pendingFlags_.push_back(std::move(flag));  // runs once the caller releases the stream
      if (out) *out = s;
    }
    return released;
  }
  CUdeviceptr mapAccessible(CUmemGenericAllocationHandle h, size_t size, CUdeviceptr* va) {
    EXPECT_EQ(reserve_(va, size, 0, 0, 0), CUDA_SUCCESS);
    EXPECT_EQ(map_(*va, size, 0, h, 0), CUDA_SUCCESS);
    CUmemAccessDesc access{};
    access.location = prop_.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    EXPECT_EQ(setAccess_(*va, size, &access, 1), CUDA_SUCCESS);
    return *va;
  }
  size_t granularity() {
    size_t g = 0;
    EXPECT_EQ(granularity_(&g, &prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
    return g;
  }

  std::vector<void*> pages_;
  std::vector<std::unique_ptr<Flag>> pendingFlags_;
  CUmemAllocationProp prop_{};
  CUresult (*wait32_)(CUstream, CUdeviceptr, cuuint32_t, unsigned) = nullptr;
  CUresult (*wait64_)(CUstream, CUdeviceptr, cuuint64_t, unsigned) = nullptr;
  CUresult (*write32_)(CUstream, CUdeviceptr, cuuint32_t, unsigned) = nullptr;
  CUresult (*write64_)(CUstream, CUdeviceptr, cuuint64_t, unsigned) = nullptr;
  CUresult (*register_)(void*, size_t, unsigned) = nullptr;
  CUresult (*unregister_)(void*) = nullptr;
  CUresult (*devicePointer_)(CUdeviceptr*, void*, unsigned) = nullptr;
  CUresult (*hostAlloc_)(void**, size_t, unsigned) = nullptr;
  CUresult (*hostFree_)(void*) = nullptr;
  CUresult (*attribute_)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*query_)(CUstream) = nullptr;
  CUresult (*htod_)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*dtoh_)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*granularity_)(size_t*, const CUmemAllocationProp*,
                           CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*create_)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                      unsigned long long) = nullptr;
  CUresult (*release_)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*export_)(void*, CUmemGenericAllocationHandle, CUmemAllocationHandleType,
                      unsigned long long) = nullptr;
  CUresult (*import_)(CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType) = nullptr;
  CUresult (*properties_)(CUmemAllocationProp*, CUmemGenericAllocationHandle) = nullptr;
  CUresult (*retain_)(CUmemGenericAllocationHandle*, void*) = nullptr;
  CUresult (*reserve_)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*addressFree_)(CUdeviceptr, size_t) = nullptr;
  CUresult (*map_)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                   unsigned long long) = nullptr;
  CUresult (*unmap_)(CUdeviceptr, size_t) = nullptr;
  CUresult (*setAccess_)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  CUresult (*ipcGet_)(CUipcMemHandle*, CUdeviceptr) = nullptr;
  CUresult (*ipcOpen_)(CUdeviceptr*, CUipcMemHandle, unsigned) = nullptr;
  CUresult (*ipcClose_)(CUdeviceptr) = nullptr;
};

// M3: GEQ is cyclic (DESIGN's failure marker: ~0 does not release a wait for 9,000,000, 2^62
// does), for 32 bits too; EQ, AND and NOR as cuda.h defines them.
TEST_F(FakeCudaMemOpsTest, WaitConditionsAreTheDriversIncludingTheCyclicGeq) {
  const CUdeviceptr d = sharedPage();
  store(d, ~0ull);
  CUstream stuck = nullptr;
  EXPECT_FALSE(waitReleases(d, 9000000, CU_STREAM_WAIT_VALUE_GEQ, true, 30, &stuck))
      << "~0 released a cyclic GEQ wait for 9,000,000";
  EXPECT_EQ(query_(stuck), CUDA_ERROR_NOT_READY);
  store(d, 1ull << 62);
  EXPECT_EQ(streamSync_(stuck), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(stuck), CUDA_SUCCESS);
  store(d, 9000000);
  EXPECT_TRUE(waitReleases(d, 9000000, CU_STREAM_WAIT_VALUE_GEQ, true, 2000));
  store(d, 0xFFFFFFFFull);  // 32 bits: (int32_t)(0xFFFFFFFF - 5) < 0
  EXPECT_FALSE(waitReleases(d, 5, CU_STREAM_WAIT_VALUE_GEQ, false, 20, &stuck));
  store(d, 6);
  EXPECT_EQ(streamSync_(stuck), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(stuck), CUDA_SUCCESS);
  store(d, 0x6);
  EXPECT_TRUE(waitReleases(d, 0x6, CU_STREAM_WAIT_VALUE_EQ, true, 2000));
  EXPECT_TRUE(waitReleases(d, 0x2, CU_STREAM_WAIT_VALUE_AND, true, 2000));
  EXPECT_TRUE(waitReleases(d, 0x1, CU_STREAM_WAIT_VALUE_NOR, true, 2000));  // ~(6|1) != 0
  store(d, ~0ull);
  EXPECT_FALSE(waitReleases(d, 0, CU_STREAM_WAIT_VALUE_NOR, true, 20, &stuck));
  store(d, 0);
  EXPECT_EQ(streamSync_(stuck), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(stuck), CUDA_SUCCESS);
}

// M3: a wait holds up only its own stream; a host write releases it; the write after it is
// ordered after the stream's earlier work, and everything before a write is seen by the work a
// wait on it releases.
TEST_F(FakeCudaMemOpsTest, AWaitHoldsOnlyItsStreamAndAHostWriteReleasesIt) {
  const CUdeviceptr d = sharedPage();
  const BatonFakeCudaStats before = stats();
  CUstream waiting = stream(), other = stream(), writer = stream();
  Flag after, otherRan;
  ASSERT_EQ(wait64_(waiting, d, 5, CU_STREAM_WAIT_VALUE_GEQ), CUDA_SUCCESS);
  ASSERT_EQ(hostFunc_(waiting, &Flag::set, &after), CUDA_SUCCESS);
  ASSERT_EQ(hostFunc_(other, &Flag::set, &otherRan), CUDA_SUCCESS);
  EXPECT_TRUE(setWithin(otherRan, 2000)) << "another stream was held up";
  // Until the waiting stream's worker has met the unmet wait, not merely been handed it (a
  // loaded machine, ASan, may take longer than any fixed sleep to get there).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (stats().valueWaitsBlocked == before.valueWaitsBlocked &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(after.value.load(), 0) << "work after an unmet wait ran";
  store(d, 5);
  EXPECT_EQ(streamSync_(waiting), CUDA_SUCCESS);
  EXPECT_EQ(after.value.load(), 1);
  EXPECT_GE(stats().valueWaitsBlocked - before.valueWaitsBlocked, 1u);
  // A stream write after held-up work: not before the gate opens; then visible with what
  // preceded it (the fill) to the stream its value releases.
  uint32_t* data = alloc(4);
  Gate gate;
  ASSERT_EQ(hostFunc_(writer, &Gate::hold, &gate), CUDA_SUCCESS);
  ASSERT_EQ(memset32_(dev(data), 42, 4, writer), CUDA_SUCCESS);
  ASSERT_EQ(write64_(writer, d, 11, CU_STREAM_WRITE_VALUE_DEFAULT), CUDA_SUCCESS);
  struct Seen {
    uint32_t* data;
    std::atomic<uint32_t> value{0};
    static void CUDA_CB read(void* p) {
      auto* s = static_cast<Seen*>(p);
      s->value.store(s->data[3]);
    }
  } seen{data};
  ASSERT_EQ(wait64_(waiting, d, 11, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
  ASSERT_EQ(hostFunc_(waiting, &Seen::read, &seen), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(*word(d), 5u) << "the write ran before the stream's earlier work";
  gate.open();
  EXPECT_EQ(streamSync_(waiting), CUDA_SUCCESS);
  EXPECT_EQ(seen.value.load(), 42u) << "the fill before the write was not visible after the wait";
  ASSERT_EQ(write32_(writer, d, 3, 0), CUDA_SUCCESS);
  ASSERT_EQ(streamSync_(writer), CUDA_SUCCESS);
  EXPECT_EQ(*word(d), 3u) << "a 32-bit write changes the low word only";
  for (CUstream x : {waiting, other, writer}) EXPECT_EQ(streamDestroy_(x), CUDA_SUCCESS);
  EXPECT_EQ(memFree_(dev(data)), CUDA_SUCCESS);
}

// M3 across processes: a child maps the same memfd page, registers it with its own driver and
// releases the parent's stream wait with cuStreamWriteValue64.
TEST_F(FakeCudaMemOpsTest, AWaitIsReleasedByAWriteFromAnotherProcess) {
  int fd = -1;
  const CUdeviceptr d = sharedPage(&fd);
  CUstream s = stream();
  Flag after;
  ASSERT_EQ(wait64_(s, d, 7, CU_STREAM_WAIT_VALUE_GEQ), CUDA_SUCCESS);
  ASSERT_EQ(hostFunc_(s, &Flag::set, &after), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(after.value.load(), 0);
  const pid_t child = startChild("write64 " + std::to_string(fd), {fd});
  const bool released = setWithin(after, 20000);
  EXPECT_EQ(finishChild(child), 0) << "the child failed";
  EXPECT_TRUE(released) << "the other process's write did not release the wait";
  EXPECT_EQ(*word(d), 7u);
  if (!released) store(d, 7);  // let the stream go either way
  EXPECT_EQ(streamSync_(s), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
  close(fd);
}

// M1 and M3: the driver's answers for registration and for operations on bad addresses (as
// measured on the H100).
TEST_F(FakeCudaMemOpsTest, RegistrationAndAddressesAnswerAsTheDriver) {
  void* page = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  char* p = static_cast<char*>(page);
  CUdeviceptr d = 0;
  EXPECT_EQ(devicePointer_(&d, p, 0), CUDA_ERROR_INVALID_VALUE) << "not registered";
  EXPECT_EQ(register_(nullptr, 4096, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(register_(p, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(register_(p, 4096, 0x10), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(register_(p, 4096, CU_MEMHOSTREGISTER_IOMEMORY), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(register_(p, 4096, CU_MEMHOSTREGISTER_DEVICEMAP), CUDA_SUCCESS);
  EXPECT_EQ(register_(p, 4096, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(register_(p + 64, 64, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(register_(p + 4000, 4096, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  ASSERT_EQ(register_(p + 4096, 4096, CU_MEMHOSTREGISTER_READ_ONLY), CUDA_SUCCESS);
  ASSERT_EQ(devicePointer_(&d, p + 8, 0), CUDA_SUCCESS);
  EXPECT_EQ(d, reinterpret_cast<CUdeviceptr>(p + 8));
  EXPECT_EQ(devicePointer_(&d, p, 1), CUDA_ERROR_INVALID_VALUE) << "flags must be 0";
  EXPECT_EQ(devicePointer_(nullptr, p, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(unregister_(p + 64), CUDA_ERROR_INVALID_VALUE) << "not the base";
  EXPECT_EQ(unregister_(nullptr), CUDA_ERROR_INVALID_VALUE);
  int elsewhere = 0;
  EXPECT_EQ(unregister_(&elsewhere), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  void* pinned = nullptr;
  ASSERT_EQ(hostAlloc_(&pinned, 64, 0), CUDA_SUCCESS);
  EXPECT_EQ(register_(pinned, 64, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(devicePointer_(&d, static_cast<char*>(pinned) + 16, 0), CUDA_SUCCESS);
  uint32_t* device = alloc(4);
  EXPECT_EQ(register_(device, 16, 0), CUDA_ERROR_INVALID_VALUE);
  CUstream s = stream();
  const auto addr = reinterpret_cast<CUdeviceptr>(p);
  EXPECT_EQ(write64_(s, addr, 1, 0), CUDA_SUCCESS);
  EXPECT_EQ(write64_(s, addr + 4, 1, 0), CUDA_ERROR_INVALID_VALUE) << "misaligned";
  EXPECT_EQ(wait64_(s, addr + 4, 1, 0), CUDA_ERROR_INVALID_VALUE) << "misaligned";
  EXPECT_EQ(write32_(s, addr + 4, 1, 0), CUDA_SUCCESS);
  EXPECT_EQ(write64_(s, addr, 1, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER), CUDA_ERROR_INVALID_VALUE)
      << "not supported in the v2 API";
  EXPECT_EQ(wait64_(s, addr, 0, 7), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(wait64_(s, addr, 0, CU_STREAM_WAIT_VALUE_FLUSH), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(write64_(s, reinterpret_cast<CUdeviceptr>(&elsewhere), 1, 0), CUDA_ERROR_INVALID_VALUE)
      << "unregistered host memory";
  EXPECT_EQ(write64_(s, dev(device), 9, 0), CUDA_SUCCESS);
  EXPECT_EQ(write64_(s, reinterpret_cast<CUdeviceptr>(pinned), 9, 0), CUDA_SUCCESS);
  EXPECT_EQ(streamSync_(s), CUDA_SUCCESS);
  EXPECT_EQ(device[0], 9u);
  EXPECT_EQ(unregister_(p), CUDA_SUCCESS);
  EXPECT_EQ(unregister_(p), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(unregister_(p + 4096), CUDA_SUCCESS);
  EXPECT_EQ(write64_(s, addr, 1, 0), CUDA_ERROR_INVALID_VALUE) << "unregistered again";
  int nor = 0, memOps = 0;
  EXPECT_EQ(attribute_(&nor, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 0), CUDA_SUCCESS);
  EXPECT_EQ(attribute_(&memOps, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(nor, 1);
  const bool no64 = std::getenv("BATON_FAKE_CUDA_NO_MEMOPS64") &&
                    std::strcmp(std::getenv("BATON_FAKE_CUDA_NO_MEMOPS64"), "1") == 0;
  EXPECT_EQ(memOps, no64 ? 0 : 1);
  EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
  EXPECT_EQ(hostFree_(pinned), CUDA_SUCCESS);
  EXPECT_EQ(memFree_(dev(device)), CUDA_SUCCESS);
  munmap(page, 8192);
}

// BATON_FAKE_CUDA_NO_MEMOPS64=1 (its own meson test): the 64-bit operations are refused, the
// 32-bit ones still work.
TEST_F(FakeCudaMemOpsTest, NoMemOps64RefusesThe64BitOperations) {
  const char* knob = std::getenv("BATON_FAKE_CUDA_NO_MEMOPS64");
  if (!knob || std::strcmp(knob, "1") != 0) GTEST_SKIP() << "BATON_FAKE_CUDA_NO_MEMOPS64 not set";
  const CUdeviceptr d = sharedPage();
  CUstream s = stream();
  EXPECT_EQ(wait64_(s, d, 0, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(write64_(s, d, 0, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(write32_(s, d, 4, 0), CUDA_SUCCESS);
  EXPECT_EQ(wait32_(s, d, 4, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
  EXPECT_EQ(streamSync_(s), CUDA_SUCCESS);
  int memOps = -1;
  EXPECT_EQ(attribute_(&memOps, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(memOps, 0);
  EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
}

// M3 with G5: on a capturing stream the operations become nodes; they run at each launch.
TEST_F(FakeCudaMemOpsTest, MemoryOperationsAreCaptured) {
  const CUdeviceptr d = sharedPage();
  CUstream s = stream();
  ASSERT_EQ(beginCapture_(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(wait32_(s, d, 0, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
  ASSERT_EQ(write64_(s, d, 8, 0), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(*word(d), 0u) << "a captured write ran";
  CUgraph g = nullptr;
  ASSERT_EQ(endCapture_(s, &g), CUDA_SUCCESS);
  CUgraphExec x = nullptr;
  ASSERT_EQ(instantiate_(&x, g, 0), CUDA_SUCCESS);
  ASSERT_EQ(launch_(x, s), CUDA_SUCCESS);
  ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
  EXPECT_EQ(*word(d), 8u);
  EXPECT_EQ(execDestroy_(x), CUDA_SUCCESS);
  EXPECT_EQ(graphDestroy_(g), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
}

// M2 in one process: granularity, the answers measured on the H100, access before and after
// cuMemSetAccess, copies and fills on mapped memory, and the handle's lifetime rules.
TEST_F(FakeCudaMemOpsTest, VirtualMemoryManagementAnswersAsTheDriver) {
  int vmm = 0, posix = 0;
  EXPECT_EQ(attribute_(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(attribute_(&posix, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(vmm, 1);
  EXPECT_EQ(posix, 1);
  const size_t g = granularity();
  EXPECT_EQ(g, size_t(2) << 20);
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(create_(&h, 4096, &prop_, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(create_(&h, g, &prop_, 0), CUDA_SUCCESS);
  CUmemAllocationProp got{};
  ASSERT_EQ(properties_(&got, h), CUDA_SUCCESS);
  EXPECT_EQ(got.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr va = 0;
  EXPECT_EQ(reserve_(&va, 4096, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(reserve_(&va, 2 * g, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(va % g, 0u);
  EXPECT_EQ(map_(va, g, 4096, h, 0), CUDA_ERROR_NOT_SUPPORTED) << "offset";
  EXPECT_EQ(map_(va + 4096, g, 0, h, 0), CUDA_ERROR_INVALID_VALUE) << "misaligned";
  ASSERT_EQ(map_(va, g, 0, h, 0), CUDA_SUCCESS);
  EXPECT_EQ(map_(va, g, 0, h, 0), CUDA_ERROR_INVALID_VALUE) << "mapped twice";
  CUstream s = stream();
  EXPECT_EQ(write64_(s, va, 1, 0), CUDA_ERROR_INVALID_VALUE) << "before cuMemSetAccess";
  CUmemAccessDesc access{};
  access.location = prop_.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(setAccess_(va, g, &access, 1), CUDA_SUCCESS);
  EXPECT_EQ(setAccess_(va, 2 * g, &access, 1), CUDA_ERROR_INVALID_VALUE) << "half unmapped";
  ASSERT_EQ(memset32_(va + 64, 0x51, 4, s), CUDA_SUCCESS);
  ASSERT_EQ(write64_(s, va, 1, 0), CUDA_SUCCESS);
  ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
  uint32_t out[4] = {};
  ASSERT_EQ(dtoh_(out, va + 64, sizeof out), CUDA_SUCCESS);
  EXPECT_EQ(out[3], 0x51u);
  EXPECT_EQ(*word(va), 1u);
  CUmemGenericAllocationHandle retained = 0;
  ASSERT_EQ(retain_(&retained, reinterpret_cast<void*>(va + 64)), CUDA_SUCCESS);
  EXPECT_EQ(retained, h);
  EXPECT_EQ(release_(retained), CUDA_SUCCESS);
  EXPECT_EQ(release_(h), CUDA_SUCCESS);
  EXPECT_EQ(*word(va), 1u) << "the mapping keeps the memory after the last handle";
  ASSERT_EQ(write64_(s, va, 2, 0), CUDA_SUCCESS);
  ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
  EXPECT_EQ(addressFree_(va, 2 * g), CUDA_ERROR_INVALID_VALUE) << "still mapped";
  EXPECT_EQ(unmap_(va, g), CUDA_SUCCESS);
  EXPECT_EQ(addressFree_(va, 2 * g), CUDA_SUCCESS);
  EXPECT_EQ(release_(h), CUDA_ERROR_INVALID_VALUE) << "released once too often";
  CUmemAllocationProp local = prop_;
  local.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  ASSERT_EQ(create_(&h, g, &local, 0), CUDA_SUCCESS);
  int fd = -1;
  EXPECT_EQ(export_(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_ERROR_INVALID_VALUE)
      << "not created for export";
  EXPECT_EQ(release_(h), CUDA_SUCCESS);
  CUmemGenericAllocationHandle bad = 0;
  auto asHandle = [](int n) { return reinterpret_cast<void*>(static_cast<intptr_t>(n)); };
  EXPECT_EQ(import_(&bad, asHandle(100000), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_ERROR_UNKNOWN)
      << "a closed descriptor";
  int pipes[2];
  ASSERT_EQ(pipe(pipes), 0);
  EXPECT_EQ(import_(&bad, asHandle(pipes[0]), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_ERROR_UNKNOWN)
      << "a pipe";
  const int foreign = memfd_create("not-an-allocation", MFD_CLOEXEC);
  EXPECT_EQ(import_(&bad, asHandle(foreign), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_ERROR_UNKNOWN)
      << "another memfd";
  for (int x : {pipes[0], pipes[1], foreign}) close(x);
  EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
}

// M2 across processes: the child imports the exported descriptor (inherited across exec), maps
// it, reads what the parent wrote and writes its own bytes, which the parent reads back through a
// copy.
TEST_F(FakeCudaMemOpsTest, AnExportedAllocationIsSharedWithAnotherProcess) {
  const size_t g = granularity();
  CUmemGenericAllocationHandle h = 0;
  ASSERT_EQ(create_(&h, g, &prop_, 0), CUDA_SUCCESS);
  CUdeviceptr va = 0;
  mapAccessible(h, g, &va);
  const uint32_t a[4] = {0xA0, 0xA1, 0xA2, 0xA3};
  ASSERT_EQ(htod_(va, a, sizeof a), CUDA_SUCCESS);
  int fd = -1;
  ASSERT_EQ(export_(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_SUCCESS);
  EXPECT_EQ(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  EXPECT_EQ(finishChild(startChild("vmm " + std::to_string(fd) + " -1 -1", {fd})), 0)
      << "the child failed";
  uint32_t out[4] = {};
  ASSERT_EQ(dtoh_(out, va, sizeof out), CUDA_SUCCESS);
  EXPECT_EQ(out[0], 0xB0u) << "the child's write is not in the parent's mapping";
  EXPECT_EQ(out[3], 0xB3u);
  close(fd);
  EXPECT_EQ(unmap_(va, g), CUDA_SUCCESS);
  EXPECT_EQ(addressFree_(va, g), CUDA_SUCCESS);
  EXPECT_EQ(release_(h), CUDA_SUCCESS);
}

// M2: the bytes outlive the exporter's release. The child imports and maps, closes its
// descriptor and releases its handle (its mapping alone holds the memory); then the parent
// unmaps, releases and closes everything; the child still reads the parent's bytes and writes.
TEST_F(FakeCudaMemOpsTest, MemorySurvivesTheExportersReleaseWhileAnotherProcessMapsIt) {
  const size_t g = granularity();
  CUmemGenericAllocationHandle h = 0;
  ASSERT_EQ(create_(&h, g, &prop_, 0), CUDA_SUCCESS);
  CUdeviceptr va = 0;
  mapAccessible(h, g, &va);
  const uint32_t a[4] = {0xA0, 0xA1, 0xA2, 0xA3};
  ASSERT_EQ(htod_(va, a, sizeof a), CUDA_SUCCESS);
  int fd = -1;
  ASSERT_EQ(export_(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_SUCCESS);
  int toChild[2], toParent[2];
  ASSERT_EQ(pipe2(toChild, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(toParent, O_CLOEXEC), 0);
  const pid_t child = startChild("vmm " + std::to_string(fd) + " " + std::to_string(toChild[0]) +
                                     " " + std::to_string(toParent[1]),
                                 {fd, toChild[0], toParent[1]});
  close(toChild[0]);
  close(toParent[1]);
  char c = 0;
  ASSERT_EQ(read(toParent[0], &c, 1), 1) << "the child did not map the allocation";
  close(fd);
  EXPECT_EQ(unmap_(va, g), CUDA_SUCCESS);
  EXPECT_EQ(addressFree_(va, g), CUDA_SUCCESS);
  EXPECT_EQ(release_(h), CUDA_SUCCESS);
  ASSERT_EQ(write(toChild[1], "r", 1), 1);
  EXPECT_EQ(finishChild(child), 0) << "the child lost the memory after the exporter released it";
  close(toChild[1]);
  close(toParent[0]);
}

// M2: 1,000 cycles of create, export, import, map, unmap, release and close leave no descriptor
// behind.
TEST_F(FakeCudaMemOpsTest, DescriptorsDoNotLeakOverManyCycles) {
  const size_t g = granularity();
  CUdeviceptr va = 0;
  ASSERT_EQ(reserve_(&va, g, 0, 0, 0), CUDA_SUCCESS);
  const int before = openDescriptors();
  for (int i = 0; i < 1000; ++i) {
    CUmemGenericAllocationHandle h = 0, imported = 0;
    ASSERT_EQ(create_(&h, g, &prop_, 0), CUDA_SUCCESS);
    int fd = -1;
    ASSERT_EQ(export_(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_SUCCESS);
    ASSERT_EQ(import_(&imported, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
              CUDA_SUCCESS);
    ASSERT_EQ(close(fd), 0);
    ASSERT_EQ(map_(va, g, 0, imported, 0), CUDA_SUCCESS);
    ASSERT_EQ(release_(imported), CUDA_SUCCESS);
    ASSERT_EQ(release_(h), CUDA_SUCCESS);
    ASSERT_EQ(unmap_(va, g), CUDA_SUCCESS);
  }
  EXPECT_EQ(openDescriptors(), before);
  EXPECT_EQ(addressFree_(va, g), CUDA_SUCCESS);
}

// M4: with BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS=1 (its own meson test) a child opens the
// handle, reads the parent's bytes and writes its own; the exporter cannot open its own handle.
// Without it, cuIpcGetMemHandle is refused.
TEST_F(FakeCudaMemOpsTest, IpcHandlesOpenInAnotherProcess) {
  uint32_t* device = alloc(4);
  CUipcMemHandle h{};
  const char* knob = std::getenv("BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS");
  if (!knob || std::strcmp(knob, "1") != 0) {
    EXPECT_EQ(ipcGet_(&h, dev(device)), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(memFree_(dev(device)), CUDA_SUCCESS);
    GTEST_SKIP() << "BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS not set: cuIpcGetMemHandle refused";
  }
  for (uint32_t i = 0; i < 4; ++i) device[i] = 0xA0 + i;
  void* pinned = nullptr;
  ASSERT_EQ(hostAlloc_(&pinned, 64, 0), CUDA_SUCCESS);
  EXPECT_EQ(ipcGet_(&h, reinterpret_cast<CUdeviceptr>(pinned)), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(ipcGet_(&h, dev(device) + 4), CUDA_SUCCESS) << "an address inside the allocation";
  CUdeviceptr opened = 0;
  EXPECT_EQ(ipcOpen_(&opened, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_ERROR_INVALID_CONTEXT)
      << "opened by its exporter";
  EXPECT_EQ(ipcClose_(dev(device)), CUDA_ERROR_INVALID_VALUE);
  std::string hex;
  for (unsigned char byte : h.reserved) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", byte);
    hex += two;
  }
  EXPECT_EQ(finishChild(startChild("ipc " + hex, {})), 0) << "the child failed";
  EXPECT_EQ(device[0], 0xB0u) << "the child's write is not in the exporter's allocation";
  EXPECT_EQ(device[3], 0xB3u);
  EXPECT_EQ(hostFree_(pinned), CUDA_SUCCESS);
  EXPECT_EQ(memFree_(dev(device)), CUDA_SUCCESS);
}

#ifdef FAKE_SELFTEST_HIP
// The HIP names of the same module (tests/hip/driver translates them onto the operations above):
// the capability, host registration, the wait's flags and masks, the write, and IPC's flag.
TEST_F(FakeCudaMemOpsTest, HipNamesTranslateOntoTheseOperations) {
  auto hipAttribute = d_.get<decltype(&hipDeviceGetAttribute)>("hipDeviceGetAttribute");
  auto hipRegister = d_.get<decltype(&hipHostRegister)>("hipHostRegister");
  auto hipUnregister = d_.get<decltype(&hipHostUnregister)>("hipHostUnregister");
  auto hipDevicePointer = d_.get<decltype(&hipHostGetDevicePointer)>("hipHostGetDevicePointer");
  auto hipWait64 = d_.get<decltype(&hipStreamWaitValue64)>("hipStreamWaitValue64");
  auto hipWait32 = d_.get<decltype(&hipStreamWaitValue32)>("hipStreamWaitValue32");
  auto hipWrite64 = d_.get<decltype(&hipStreamWriteValue64)>("hipStreamWriteValue64");
  auto hipIpcOpen = d_.get<decltype(&hipIpcOpenMemHandle)>("hipIpcOpenMemHandle");
  if (!hipAttribute) GTEST_SKIP() << "the module exports no HIP names";
  ASSERT_TRUE(hipRegister && hipUnregister && hipDevicePointer && hipWait64 && hipWait32 &&
              hipWrite64 && hipIpcOpen);
  int canWait = -1;
  ASSERT_EQ(hipAttribute(&canWait, hipDeviceAttributeCanUseStreamWaitValue, 0), hipSuccess);
  EXPECT_EQ(canWait, 1);
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  ASSERT_EQ(hipRegister(page, 4096, hipHostRegisterDefault), hipSuccess);
  EXPECT_EQ(hipRegister(page, 4096, hipHostRegisterMapped), hipErrorHostMemoryAlreadyRegistered);
  void* d = nullptr;
  ASSERT_EQ(hipDevicePointer(&d, page, 0), hipSuccess);
  auto* w = static_cast<uint64_t*>(d);
  auto hs = [](CUstream s) { return reinterpret_cast<hipStream_t>(s); };
  CUstream s = stream(), writer = stream();
  EXPECT_EQ(hipWait64(hs(s), d, 5, hipStreamWaitValueGte, 0xFF), hipErrorInvalidValue)
      << "CUDA has no masked GEQ";
  EXPECT_EQ(hipWait64(hs(s), d, 5, 9, ~0ull), hipErrorInvalidValue);
  ASSERT_EQ(hipWait64(hs(s), d, 5, hipStreamWaitValueGte, ~0ull), hipSuccess);
  Flag after;
  ASSERT_EQ(hostFunc_(s, &Flag::set, &after), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(after.value.load(), 0) << "the HIP wait did not hold its stream";
  ASSERT_EQ(hipWrite64(hs(writer), d, 5, 0), hipSuccess);
  EXPECT_TRUE(setWithin(after, 2000)) << "hipStreamWriteValue64 did not release the wait";
  // And with a mask: ((*ptr & 0x0F) & 0x3) != 0.
  __atomic_store_n(w, 0x10, __ATOMIC_RELEASE);
  ASSERT_EQ(hipWait32(hs(s), d, 0x3, hipStreamWaitValueAnd, 0x0F), hipSuccess);
  Flag masked;
  ASSERT_EQ(hostFunc_(s, &Flag::set, &masked), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(masked.value.load(), 0) << "0x10 & 0x0F & 0x3 is 0: the wait must hold";
  __atomic_store_n(w, 0x11, __ATOMIC_RELEASE);
  EXPECT_TRUE(setWithin(masked, 2000));
  // Nor with a mask that clears a bit holds at once.
  __atomic_store_n(w, ~0ull, __ATOMIC_RELEASE);
  ASSERT_EQ(hipWait64(hs(s), d, 0, hipStreamWaitValueNor, 0xFF), hipSuccess);
  Flag nor;
  ASSERT_EQ(hostFunc_(s, &Flag::set, &nor), CUDA_SUCCESS);
  EXPECT_TRUE(setWithin(nor, 2000));
  EXPECT_EQ(streamSync_(s), CUDA_SUCCESS);
  void* opened = nullptr;
  hipIpcMemHandle_t none{};
  EXPECT_EQ(hipIpcOpen(&opened, none, 1), hipErrorInvalidValue) << "HIP's only flag is 0";
  EXPECT_EQ(hipUnregister(page), hipSuccess);
  EXPECT_EQ(hipUnregister(page), hipErrorHostMemoryNotRegistered);
  for (CUstream x : {s, writer}) EXPECT_EQ(streamDestroy_(x), CUDA_SUCCESS);
  munmap(page, 4096);
}
#endif  // FAKE_SELFTEST_HIP

// The child side of the cross-process tests (skipped unless BATON_FAKE_SELFTEST_CHILD is set).
class FakeCudaChildProcess : public FakeCudaMemOpsTest {};
TEST_F(FakeCudaChildProcess, Run) {
  const char* mode = std::getenv("BATON_FAKE_SELFTEST_CHILD");
  if (!mode) GTEST_SKIP() << "run by the cross-process tests only";
  char what[16] = {};
  int fd = -1, in = -1, out = -1;
  char hex[2 * CU_IPC_HANDLE_SIZE + 1] = {};
  if (std::sscanf(mode, "write64 %d", &fd) == 1) {
    void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(page, MAP_FAILED);
    ASSERT_EQ(register_(page, 4096, CU_MEMHOSTREGISTER_DEVICEMAP), CUDA_SUCCESS);
    CUdeviceptr d = 0;
    ASSERT_EQ(devicePointer_(&d, page, 0), CUDA_SUCCESS);
    CUstream s = stream();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(write64_(s, d, 7, 0), CUDA_SUCCESS);
    ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
    EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
    EXPECT_EQ(unregister_(page), CUDA_SUCCESS);
    munmap(page, 4096);
  } else if (std::sscanf(mode, "vmm %d %d %d", &fd, &in, &out) == 3) {
    CUmemGenericAllocationHandle h = 0;
    ASSERT_EQ(import_(&h, reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
              CUDA_SUCCESS);
    close(fd);  // the handle holds the memory now
    const size_t g = granularity();
    CUdeviceptr va = 0;
    mapAccessible(h, g, &va);
    ASSERT_EQ(release_(h), CUDA_SUCCESS);  // the mapping holds it now
    if (out >= 0) {
      ASSERT_EQ(write(out, "m", 1), 1);
      char c = 0;
      ASSERT_EQ(read(in, &c, 1), 1);  // the parent released everything
    }
    uint32_t got[4] = {};
    ASSERT_EQ(dtoh_(got, va, sizeof got), CUDA_SUCCESS);
    for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(got[i], 0xA0 + i);
    const uint32_t b[4] = {0xB0, 0xB1, 0xB2, 0xB3};
    CUstream s = stream();
    ASSERT_EQ(htod_(va, b, sizeof b), CUDA_SUCCESS);
    ASSERT_EQ(write32_(s, va + 64, 5, 0), CUDA_SUCCESS);
    ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
    EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
    EXPECT_EQ(unmap_(va, g), CUDA_SUCCESS);
    EXPECT_EQ(addressFree_(va, g), CUDA_SUCCESS);
  } else if (std::sscanf(mode, "ipc %128s", hex) == 1) {
    CUipcMemHandle h{};
    for (size_t i = 0; i < sizeof h.reserved; ++i) {
      unsigned byte = 0;
      std::sscanf(hex + 2 * i, "%2x", &byte);
      h.reserved[i] = static_cast<char>(byte);
    }
    CUdeviceptr p = 0, again = 0;
    ASSERT_EQ(ipcOpen_(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
    ASSERT_EQ(ipcOpen_(&again, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
    EXPECT_EQ(again, p) << "a second open maps again";
    uint32_t got[4] = {};
    ASSERT_EQ(dtoh_(got, p, sizeof got), CUDA_SUCCESS);
    for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(got[i], 0xA0 + i);
    const uint32_t b[4] = {0xB0, 0xB1, 0xB2, 0xB3};
    ASSERT_EQ(htod_(p, b, sizeof b), CUDA_SUCCESS);
    CUstream s = stream();
    ASSERT_EQ(write32_(s, p + 8, 0xB2, 0), CUDA_SUCCESS) << "opened memory is device memory";
    ASSERT_EQ(streamSync_(s), CUDA_SUCCESS);
    EXPECT_EQ(streamDestroy_(s), CUDA_SUCCESS);
    EXPECT_EQ(ipcClose_(p), CUDA_SUCCESS);
    EXPECT_EQ(ipcClose_(p), CUDA_SUCCESS);
    EXPECT_EQ(ipcClose_(p), CUDA_ERROR_INVALID_VALUE) << "closed more often than opened";
  } else {
    FAIL() << "unknown child mode: " << mode << what;
  }
}

}  // namespace
