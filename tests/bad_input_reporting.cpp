// Bad input, how results are reported: two-call enumerations with arrays too small (NotReady,
// not an error), the names of results and backends, the per-thread last error, and errors raised
// on a queue's worker thread reaching the debug callback. The fixture is in bad_input.hpp.
#include <string>
#include <thread>
#include <vector>

#include "bad_input.hpp"

namespace baton_test {
namespace {

// ---------------------------------------------------------------------------------------------
// Enumeration, names and the per-thread last error

TEST_F(BadInputTest, EnumerationWithTooSmallArrays) {
  uint32_t count = 0;
  ASSERT_OK(instance_->enumerateBackends(&count, nullptr));
  EXPECT_EQ(count, baton::kBackendKindCount);
  baton::BackendInfo one;
  uint32_t capacity = 1;
  // Too small is NotReady, not an error; the array is filled as far as it goes.
  EXPECT_EQ(instance_->enumerateBackends(&capacity, &one), Result::NotReady);
  EXPECT_EQ(capacity, 1u);
  EXPECT_EQ(one.kind, baton::BackendKind::Host);
  EXPECT_TRUE(one.compiled);
  EXPECT_TRUE(one.available) << one.reason;
  std::vector<baton::BackendInfo> all(count);
  ASSERT_OK(instance_->enumerateBackends(&count, all.data()));
  for (const baton::BackendInfo& b : all) {
    if (!b.available) {
      EXPECT_NE(b.reason[0], '\0') << baton::backendName(b.kind) << ": no reason";
    }
  }
  uint32_t devices = 0;
  ASSERT_OK(instance_->enumeratePhysicalDevices(&devices, nullptr));
  ASSERT_GE(devices, 1u);
  PhysicalDevice first;
  capacity = 0;
  EXPECT_EQ(instance_->enumeratePhysicalDevices(&capacity, &first), Result::NotReady);
  EXPECT_EQ(capacity, 0u);
}

TEST_F(BadInputTest, ResultAndBackendNames) {
  EXPECT_STREQ(baton::resultName(Result::Success), "Success");
  EXPECT_STREQ(baton::resultName(Result::Timeout), "Timeout");
  EXPECT_STREQ(baton::resultName(Result::ErrorSemaphoreFailed), "ErrorSemaphoreFailed");
  EXPECT_STREQ(baton::resultName(Result::ErrorInvalidState), "ErrorInvalidState");
  EXPECT_STREQ(baton::resultName(static_cast<Result>(-99)), "Result(-99)");
  for (int32_t code = -14; code <= 2; ++code) {
    const char* name = baton::resultName(static_cast<Result>(code));
    ASSERT_NE(name, nullptr);
    EXPECT_EQ(std::string(name).rfind("Result(", 0), std::string::npos)
        << "no name for code " << code;
  }
  EXPECT_FALSE(baton::isError(Result::NotReady));
  EXPECT_FALSE(baton::isError(Result::Timeout));
  EXPECT_TRUE(baton::isError(Result::ErrorDriver));
  EXPECT_STREQ(baton::backendName(baton::BackendKind::Host), "host");
  EXPECT_STREQ(baton::backendName(baton::BackendKind::Cuda), "cuda");
  EXPECT_STREQ(baton::backendName(baton::BackendKind::Hip), "hip");
}

TEST_F(BadInputTest, LastErrorIsPerThread) {
  EXPECT_EQ(Semaphore().signal(1), Result::ErrorInvalidHandle);
  const std::string mine = lastError();
  EXPECT_FALSE(mine.empty());
  std::string theirs = "unset";
  std::thread other([&] { theirs = baton::lastErrorMessage(); });
  other.join();
  EXPECT_EQ(theirs, "") << "a fresh thread has no last error";
  EXPECT_EQ(lastError(), mine);
}

TEST_F(BadInputTest, ErrorsOfWorkerThreadsReachTheCallback) {
  // A host call failing on a queue's worker thread is reported through the debug callback,
  // not only through the failed semaphore.
  auto out = makeSemaphore(0, "worker-failure");
  baton::UniqueCommandBuffer cb;
  ASSERT_OK(deviceA_->createCommandBuffer(cb.put()));
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->hostCall([](void*) { return Result::ErrorOutOfHostMemory; }, nullptr));
  ASSERT_OK(cb->end());
  const CommandBuffer handle = *cb;
  const SemaphoreValue signal{*out, 1};
  SubmitInfo info;
  info.commandBuffers = handle;
  info.signals = signal;
  sink_.clear();
  ASSERT_OK(queueA_.submit(info));
  EXPECT_EQ(out->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastError(), "ErrorOutOfHostMemory")) << lastError();
  EXPECT_TRUE(sink_.has(MessageSeverity::Error, "ErrorOutOfHostMemory")) << sink_.dump();
}

}  // namespace
}  // namespace baton_test
