// CUDA-only tests. The tests CUDA shares with HIP are written once in tests/stream/stream_tests.cpp
// and run here on CUDA through cuda_hooks.cpp (StreamBackendTest.<test>/cuda); this file holds what
// only CUDA has: its compute capability and arch naming, and a runtime-API kernel (nvcc, <<<>>>)
// launched through native() in the primary context. Each test skips, with the reason, without a
// CUDA device.
#include "stream_test_support.hpp"

#if defined(BATON_TEST_RUNTIME_KERNEL)
extern "C" int batonTestAddOne(void* stream, unsigned long long data, unsigned count);
#endif

namespace baton_test {
namespace {

using baton::MemoryKind;
using baton::Result;

class CudaTest : public StreamBackendTest {};

TEST_P(CudaTest, PhysicalDeviceProperties) {
  for (const baton::PhysicalDeviceProperties& p : gpuProps_) {
    EXPECT_GE(p.computeMajor, 7u);
    char arch[64];
    std::snprintf(arch, sizeof arch, "sm_%u%u", p.computeMajor, p.computeMinor);
    EXPECT_STREQ(p.arch, arch);
  }
}

#if defined(BATON_TEST_RUNTIME_KERNEL)
struct AddOne {
  uint64_t address;
  unsigned count;
  static Result run(const baton::NativeQueue& q, void* user) {
    auto* self = static_cast<AddOne*>(user);
    return batonTestAddOne(q.stream, self->address, self->count) == 0 ? Result::Success
                                                                      : Result::ErrorDriver;
  }
};
#endif

// A kernel compiled by nvcc and launched with <<<>>> (runtime API) inside a native callback: it
// runs in the primary context on baton's stream, ordered after the fill and before the signal.
TEST_P(CudaTest, RuntimeApiKernelThroughNative) {
  BATON_REQUIRE_KERNELS();
#if !defined(BATON_TEST_RUNTIME_KERNEL)
  GTEST_SKIP() << "built without nvcc (or without cudart_static): no runtime-API test kernel";
#else
  const unsigned count = 1 << 16;
  auto data = makeBuffer(count * 4, MemoryKind::Device);
  auto out = makeBuffer(count * 4, MemoryKind::HostPinned);
  AddOne add{0, count};
  ASSERT_OK(data->getDeviceAddress(&add.address));
  auto s = makeSemaphore("runtime-kernel");
  auto cb = makeCommands([&](baton::CommandBuffer c) {
    EXPECT_OK(c.fillBuffer(*data, 0, count * 4, 41));
    // Capturable (a launch on the given stream): in the -graph runs both kernels are captured
    // into the graph command buffer at end() and replayed by the submission.
    EXPECT_OK(c.native(&AddOne::run, &add, baton::kNativeCapturable));
    EXPECT_OK(c.native(&AddOne::run, &add, baton::kNativeCapturable));
    EXPECT_OK(c.copyBuffer(*data, 0, *out, 0, count * 4));
  });
  ASSERT_OK(submit(queue(2), {}, {*cb}, {{*s, 1}}));
  ASSERT_OK(s->wait(1, kLongNs));
  auto* words = map<uint32_t>(*out);
  for (unsigned i = 0; i < count; i += 97) ASSERT_EQ(words[i], 43u) << i;
  EXPECT_EQ(words[count - 1], 43u);
#endif
}

INSTANTIATE_TEST_SUITE_P(, CudaTest, ::testing::Values(baton::BackendKind::Cuda),
                         BackendParamName());

}  // namespace
}  // namespace baton_test
