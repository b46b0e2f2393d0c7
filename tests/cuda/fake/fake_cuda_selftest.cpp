// Checks the fake driver's documented behaviours (fake_cuda.hpp, "Behaviours modelled") directly
// on its entry points, in async mode: the module named by BATON_CUDA_DRIVER is opened with dlopen,
// as baton opens it. Streams are held up by a host function waiting on a Gate, so that what is
// pending is known exactly.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "fake_cuda.hpp"

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

}  // namespace
