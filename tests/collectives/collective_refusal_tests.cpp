// What the collective library refuses (baton/command_buffer.hpp, the collective commands): a call
// baton knows the library does not take — an operation on a type that the library's version, this
// rank's GPU or a communicator of one rank rules out — is refused when it is recorded
// (ErrorNotSupported naming the operation, the type and the library), and the recording stays
// usable; a call only the library can judge (another rank's GPU) still fails when the submission
// runs, as a failed signal, and the communicator stays ready. On the emulated NCCL, which refuses
// what NCCL refuses (tests/cuda/fake/fake_cuda.hpp, N11), and on NCCL itself on GPU machines.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collective_test_support.hpp"

namespace baton_test {
namespace {

constexpr uint64_t kCount = 64;  // elements per rank

// Records one collective of `op` on `type` with `reduce` into `cb` (recording), from src to dst
// (each holding kCount elements per rank of a group of `ranks`).
Result recordOne(CommandBuffer cb, Communicator c, const std::string& op, Buffer src, Buffer dst,
                 ElementType type, ReduceOp reduce) {
  if (op == "allReduce") return cb.allReduce(c, src, 0, dst, 0, kCount, type, reduce);
  if (op == "reduce") return cb.reduce(c, src, 0, dst, 0, kCount, type, reduce, 0);
  if (op == "reduceScatter") return cb.reduceScatter(c, src, 0, dst, 0, kCount, type, reduce);
  if (op == "allGather") return cb.allGather(c, src, 0, dst, 0, kCount, type);
  if (op == "broadcast") return cb.broadcast(c, src, 0, dst, 0, kCount, type, 0);
  ADD_FAILURE() << "no such operation in this test: " << op;
  return Result::ErrorInvalidArgument;
}

// The exported test hook of the emulated driver (tests/cuda/fake/devices.cpp), or null.
using SetComputeCapability = int (*)(int device, int major, int minor);
SetComputeCapability fakeSetComputeCapability(BackendKind kind) {
  const char* path =
      std::getenv(kind == BackendKind::Hip ? "BATON_RCCL_LIBRARY" : "BATON_NCCL_LIBRARY");
  void* module = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return module ? reinterpret_cast<SetComputeCapability>(
                      dlsym(module, "batonFakeCudaSetComputeCapability"))
                : nullptr;
}

class CollectiveRefusal : public CollectiveTest {
 protected:
  // Whether NCCL's rules are known to apply: the emulated NCCL follows them, and the CUDA backend
  // loads NCCL. Under HIP names a real RCCL may be loaded, whose own rules baton does not know:
  // there a call that is not refused must then run correctly.
  bool ncclRules() const {
    return GetParam() == BackendKind::Cuda || fakeNcclStats(GetParam()) != nullptr;
  }
  // Records in a new command buffer of rank `r`: the command buffer (begun), kept by the fixture.
  CommandBuffer begun(size_t r) {
    CommandBuffer cb;
    EXPECT_OK(ranks_[r].device->createCommandBuffer(testCommandBufferInfo(), &cb));
    commandBuffers_.emplace_back(cb);
    EXPECT_OK(cb.begin());
    return cb;
  }
  // Submits `cb` (ended) to rank r's comm queue and waits: the wait's result.
  Result runAndWaitResult(size_t r, CommandBuffer cb) {
    Semaphore done = semaphore("done");
    Result res = submitOne(ranks_[r].comm, cb, done);
    if (res != Result::Success) return res;
    return done.wait(1, kLongNs);
  }
};

class CollectiveRefusalOneRank : public CollectiveRefusal {
 protected:
  void SetUp() override {
    minDevices_ = 1;
    CollectiveTest::SetUp();
  }
};

// NCCL 2.24 and later: with one rank a collective does not run NCCL's reduction kernels (the
// input is copied, or scaled for avg), and that path has no float8 kernel for avg: the call
// returns ncclInvalidArgument (NCCL 2.28.3 and 2.28.9 on the H100 and H200). Refused when
// recorded, for each reducing call and both float8 types; the same calls with sum, and avg on
// float16, are recorded and run, one rank's result being its input.
TEST_P(CollectiveRefusalOneRank, TheAverageOfFloat8IsRefusedWhenRecorded) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(1));
  if (support_.version < 22400) GTEST_SKIP() << "NCCL before 2.24 has no float8 types";
  BufferCreateInfo info;
  info.size = kCount * 2;
  UniqueBuffer src, dst, out;
  ASSERT_OK(ranks_[0].device->createBuffer(info, src.put()));
  ASSERT_OK(ranks_[0].device->createBuffer(info, dst.put()));
  info.memory = MemoryKind::HostPinned;
  ASSERT_OK(ranks_[0].device->createBuffer(info, out.put()));
  for (ElementType type : {ElementType::Float8E4M3, ElementType::Float8E5M2}) {
    const uint64_t bytes = kCount * elementSize(type);
    std::vector<double> values(kCount);
    for (uint64_t i = 0; i < kCount; ++i) values[i] = static_cast<double>(1 + i % 5);
    const std::vector<uint8_t> encoded = encodeAll(type, values);
    for (const char* op : {"allReduce", "reduce", "reduceScatter"}) {
      SCOPED_TRACE(std::string(op) + " " + elementTypeName(type));
      CommandBuffer cb = begun(0);
      ASSERT_OK(cb.updateBuffer(*src, 0, bytes, encoded.data()));
      ASSERT_OK(cb.fillBuffer(*dst, 0, kCount * 2, 0));
      const Result avg = recordOne(cb, comm(0), op, *src, *dst, type, ReduceOp::Avg);
      const std::string message = lastErrorMessage();
      if (avg == Result::ErrorNotSupported || ncclRules()) {
        ASSERT_EQ(avg, Result::ErrorNotSupported) << "NCCL refuses it at the call: " << message;
        const std::string what = std::string(op) + " avg of " + elementTypeName(type);
        EXPECT_TRUE(containsText(message, what)) << message;
        EXPECT_TRUE(containsText(message, "NCCL")) << message;
        EXPECT_TRUE(containsText(message, "one rank")) << message;
        EXPECT_TRUE(containsText(message, "communicator 'test'")) << message;
        // A rejected call records nothing: the recording goes on, and what follows runs.
        ASSERT_OK(recordOne(cb, comm(0), op, *src, *dst, type, ReduceOp::Sum));
      }
      ASSERT_OK(cb.copyBuffer(*dst, 0, *out, 0, bytes));
      ASSERT_OK(cb.end());
      ASSERT_OK(runAndWaitResult(0, cb)) << lastErrorMessage();
      void* p = nullptr;
      ASSERT_OK(out->map(&p));
      for (uint64_t i = 0; i < kCount; ++i)
        ASSERT_EQ(decode(type, static_cast<const uint8_t*>(p) + i * elementSize(type)), values[i])
            << "element " << i;
    }
  }
  // Avg on float16 with one rank is NCCL's scaling kernel: recorded and run.
  CommandBuffer cb = begun(0);
  EXPECT_OK(recordOne(cb, comm(0), "allReduce", *src, *dst, ElementType::Float16, ReduceOp::Avg));
  ASSERT_OK(cb.end());
  EXPECT_OK(runAndWaitResult(0, cb)) << lastErrorMessage();
  CommunicatorState state;
  ASSERT_OK(comm(0).getState(&state));
  EXPECT_EQ(state, CommunicatorState::Ready);
}

// The float8 types exist from NCCL 2.24 (the registration 'collectives-fake-cuda-nccl-2.23' runs
// this with the emulated NCCL reporting 2.23.4): before, every call on them is refused when
// recorded, naming the version; from 2.24 the same calls are recorded.
TEST_P(CollectiveRefusalOneRank, TheFloat8TypesNeedTheLibraryVersionThatHasThem) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(1));
  if (const char* forced = std::getenv("BATON_FAKE_NCCL_VERSION")) {
    ASSERT_EQ(support_.version, static_cast<uint32_t>(std::atoi(forced)))
        << "the emulated NCCL reports the version it is given";
  }
  BufferCreateInfo info;
  info.size = kCount;
  UniqueBuffer buf;
  ASSERT_OK(ranks_[0].device->createBuffer(info, buf.put()));
  const bool old = support_.version < 22400;
  if (old && !ncclRules()) GTEST_SKIP() << "a library other than NCCL (its own rules)";
  for (ElementType type : {ElementType::Float8E4M3, ElementType::Float8E5M2}) {
    for (const char* op : {"allReduce", "allGather", "broadcast"}) {
      SCOPED_TRACE(std::string(op) + " " + elementTypeName(type));
      CommandBuffer cb = begun(0);
      const Result r = recordOne(cb, comm(0), op, *buf, *buf, type, ReduceOp::Sum);
      if (old) {
        EXPECT_EQ(r, Result::ErrorNotSupported);
        EXPECT_TRUE(containsText(lastErrorMessage(), "no float8 types before 2.24"))
            << lastErrorMessage();
        EXPECT_TRUE(containsText(lastErrorMessage(), elementTypeName(type))) << lastErrorMessage();
      } else {
        EXPECT_OK(r);
      }
      ASSERT_OK(cb.end());
    }
  }
  // Other types are recorded whatever the version.
  CommandBuffer cb = begun(0);
  EXPECT_OK(recordOne(cb, comm(0), "allReduce", *buf, *buf, ElementType::Int8, ReduceOp::Sum));
  ASSERT_OK(cb.end());
  EXPECT_OK(runAndWaitResult(0, cb)) << lastErrorMessage();
}

// NCCL reduces float8 only when every rank's GPU has compute capability 9.0 or later (the
// communicator's lowest). A rank on an older GPU is refused when it records a float8 reduction;
// a rank whose own GPU qualifies cannot know its peer's, so the library refuses its call when the
// submission runs: the submission's signal fails with the library's error, and the communicator
// stays ready and usable (with BATON_NCCL_BLOCKING_CALLS=0 the library keeps the error on its
// non-blocking communicator, which then fails). Staged on the emulated driver, whose devices'
// compute capabilities a test sets; a real machine would need GPUs of two generations.
TEST_P(CollectiveRefusal, Float8ReductionsOnAGroupWithAGpuBelowSm90) {
  SetComputeCapability setCapability = fakeSetComputeCapability(GetParam());
  if (!setCapability)
    GTEST_SKIP() << "needs the emulated driver (batonFakeCudaSetComputeCapability) for a GPU "
                    "below compute capability 9.0";
  ASSERT_EQ(setCapability(1, 8, 0), 0);
  struct Restore {
    SetComputeCapability set;
    ~Restore() { (void)set(1, 9, 0); }
  } restore{setCapability};
  // The properties of an instance are read when it is made: a new one sees device 1 at 8.0.
  ranks_.clear();
  instance_.reset();
  ASSERT_OK(createInstance(sink_.instanceInfo(), instance_.put()));
  ASSERT_NO_FATAL_FAILURE(findPhysicals(GetParam()));
  ASSERT_GE(physicals_.size(), 2u);
  PhysicalDeviceProperties second;
  ASSERT_OK(physicals_[1].getProperties(&second));
  ASSERT_EQ(second.computeMajor, 8u) << "the hook reaches the device's properties";
  // A short timeout: a call the library did not refuse would stall (rank 1 never joins it).
  ASSERT_NO_FATAL_FAILURE(makeRanks(2, 2000 * kMs));

  std::vector<Buffer> buf;
  for (size_t r = 0; r < 2; ++r) buf.push_back(deviceBuffer(r, kCount * 4 * 2));
  const ElementType f8 = ElementType::Float8E4M3;
  // Rank 1 knows its own GPU: refused when recorded; a float8 broadcast (no reduction) is not.
  {
    CommandBuffer cb = begun(1);
    EXPECT_EQ(recordOne(cb, comm(1), "allReduce", buf[1], buf[1], f8, ReduceOp::Sum),
              Result::ErrorNotSupported);
    const std::string m = lastErrorMessage();
    EXPECT_TRUE(containsText(m, "allReduce sum of float8e4m3")) << m;
    EXPECT_TRUE(containsText(m, "compute capability 8.0")) << m;
    EXPECT_TRUE(containsText(m, "NCCL")) << m;
    EXPECT_OK(recordOne(cb, comm(1), "broadcast", buf[1], buf[1], f8, ReduceOp::Sum));
    ASSERT_OK(cb.end());
  }
  // Rank 0's GPU qualifies: recorded; the library refuses the call when the submission runs.
  {
    CommandBuffer cb = begun(0);
    ASSERT_OK(recordOne(cb, comm(0), "allReduce", buf[0], buf[0], f8, ReduceOp::Sum));
    ASSERT_OK(cb.end());
    EXPECT_EQ(runAndWaitResult(0, cb), Result::ErrorSemaphoreFailed);
    const std::string m = lastErrorMessage();
    EXPECT_TRUE(containsText(m, "ncclInvalidArgument")) << m;
    EXPECT_TRUE(containsText(m, "sm90")) << m << " (the library's own words)";
  }
  const char* mode = std::getenv("BATON_NCCL_BLOCKING_CALLS");
  const bool blockingCalls = !(mode && std::string(mode) == "0");
  CommunicatorState state;
  ASSERT_OK(comm(0).getState(&state));
  if (!blockingCalls) {
    EXPECT_EQ(state, CommunicatorState::Failed)
        << "a non-blocking communicator keeps the library's error";
    return;
  }
  EXPECT_EQ(state, CommunicatorState::Ready) << "a refused call does not fail the communicator";
  // Both ranks then run a float32 allReduce on the same communicators.
  const std::vector<double> in0(kCount, 1.0), in1(kCount, 2.0);
  std::vector<Semaphore> done;
  for (size_t r = 0; r < 2; ++r) {
    done.push_back(semaphore("float32 done"));
    const std::vector<uint8_t> bytes = encodeAll(ElementType::Float32, r ? in1 : in0);
    ASSERT_OK(submit(r,
                     [&](CommandBuffer cb) {
                       Result res = cb.updateBuffer(buf[r], 0, bytes.size(), bytes.data());
                       if (res != Result::Success) return res;
                       return cb.allReduce(comm(r), buf[r], 0, buf[r], 0, kCount,
                                           ElementType::Float32, ReduceOp::Sum);
                     },
                     {}, {{done[r], 1}}));
  }
  for (size_t r = 0; r < 2; ++r) ASSERT_OK(done[r].wait(1, kLongNs)) << "rank " << r;
  for (size_t r = 0; r < 2; ++r) {
    const std::vector<uint8_t> got = download(r, buf[r], kCount * 4);
    for (uint64_t i = 0; i < kCount; ++i)
      ASSERT_EQ(decode(ElementType::Float32, &got[i * 4]), 3.0) << "rank " << r << " " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(, CollectiveRefusal,
                         ::testing::Values(BackendKind::Cuda, BackendKind::Hip),
                         CollectiveParamName());
INSTANTIATE_TEST_SUITE_P(, CollectiveRefusalOneRank,
                         ::testing::Values(BackendKind::Cuda, BackendKind::Hip),
                         CollectiveParamName());

}  // namespace
}  // namespace baton_test
