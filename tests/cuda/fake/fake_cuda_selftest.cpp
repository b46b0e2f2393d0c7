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

}  // namespace
