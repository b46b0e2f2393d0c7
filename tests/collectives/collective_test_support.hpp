// What the collective tests share: the fixture (ranks of one process on the devices of one
// backend), element encoding for every ElementType, and a one-call "record, submit, signal".
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backend_fixture.hpp"
#include "test_support.hpp"

namespace baton_test {

using namespace baton;

// ---- element encoding (host side) ----------------------------------------------------------

// A small float format: `mbits` mantissa bits, exponent bias `bias`; `ieee`: the all-ones
// exponent is infinity/NaN (float16, bfloat16, e5m2), else it holds normal values (e4m3).
inline uint32_t encodeMini(double v, int ebits, int mbits, int bias) {
  uint32_t sign = 0;
  if (v < 0) {
    sign = 1u << (ebits + mbits);
    v = -v;
  }
  if (v == 0) return sign;
  int e = static_cast<int>(std::floor(std::log2(v)));
  if (e + bias <= 0) {  // subnormal
    const double m = v / std::ldexp(1.0, 1 - bias - mbits);
    return sign | static_cast<uint32_t>(std::nearbyint(m));
  }
  double frac = v / std::ldexp(1.0, e) - 1.0;
  uint32_t m = static_cast<uint32_t>(std::nearbyint(frac * (1u << mbits)));
  if (m == (1u << mbits)) {
    m = 0;
    ++e;
  }
  return sign | (static_cast<uint32_t>(e + bias) << mbits) | m;
}
inline double decodeMini(uint32_t bits, int ebits, int mbits, int bias) {
  const bool negative = (bits >> (ebits + mbits)) & 1;
  const uint32_t e = (bits >> mbits) & ((1u << ebits) - 1);
  const uint32_t m = bits & ((1u << mbits) - 1);
  double v =
      e == 0 ? std::ldexp(static_cast<double>(m), 1 - bias - mbits)
             : std::ldexp(1.0 + static_cast<double>(m) / (1u << mbits), static_cast<int>(e) - bias);
  return negative ? -v : v;
}

// Writes `v` (exactly representable in `type`) at p.
inline void encode(ElementType type, double v, void* p) {
  switch (type) {
    case ElementType::Int8: *static_cast<int8_t*>(p) = static_cast<int8_t>(v); break;
    case ElementType::Uint8: *static_cast<uint8_t*>(p) = static_cast<uint8_t>(v); break;
    case ElementType::Int32: *static_cast<int32_t*>(p) = static_cast<int32_t>(v); break;
    case ElementType::Uint32: *static_cast<uint32_t*>(p) = static_cast<uint32_t>(v); break;
    case ElementType::Int64: *static_cast<int64_t*>(p) = static_cast<int64_t>(v); break;
    case ElementType::Uint64: *static_cast<uint64_t*>(p) = static_cast<uint64_t>(v); break;
    case ElementType::Float32: *static_cast<float*>(p) = static_cast<float>(v); break;
    case ElementType::Float64: *static_cast<double*>(p) = v; break;
    case ElementType::Float16: *static_cast<uint16_t*>(p) = encodeMini(v, 5, 10, 15); break;
    case ElementType::Bfloat16: *static_cast<uint16_t*>(p) = encodeMini(v, 8, 7, 127); break;
    case ElementType::Float8E4M3: *static_cast<uint8_t*>(p) = encodeMini(v, 4, 3, 7); break;
    case ElementType::Float8E5M2: *static_cast<uint8_t*>(p) = encodeMini(v, 5, 2, 15); break;
  }
}
inline double decode(ElementType type, const void* p) {
  switch (type) {
    case ElementType::Int8: return *static_cast<const int8_t*>(p);
    case ElementType::Uint8: return *static_cast<const uint8_t*>(p);
    case ElementType::Int32: return *static_cast<const int32_t*>(p);
    case ElementType::Uint32: return *static_cast<const uint32_t*>(p);
    case ElementType::Int64: return static_cast<double>(*static_cast<const int64_t*>(p));
    case ElementType::Uint64: return static_cast<double>(*static_cast<const uint64_t*>(p));
    case ElementType::Float32: return *static_cast<const float*>(p);
    case ElementType::Float64: return *static_cast<const double*>(p);
    case ElementType::Float16: return decodeMini(*static_cast<const uint16_t*>(p), 5, 10, 15);
    case ElementType::Bfloat16: return decodeMini(*static_cast<const uint16_t*>(p), 8, 7, 127);
    case ElementType::Float8E4M3: return decodeMini(*static_cast<const uint8_t*>(p), 4, 3, 7);
    case ElementType::Float8E5M2: return decodeMini(*static_cast<const uint8_t*>(p), 5, 2, 15);
  }
  return 0;
}

inline std::vector<uint8_t> encodeAll(ElementType type, const std::vector<double>& values) {
  std::vector<uint8_t> bytes(values.size() * elementSize(type));
  for (size_t i = 0; i < values.size(); ++i) encode(type, values[i], &bytes[i * elementSize(type)]);
  return bytes;
}

inline const ElementType kAllTypes[] = {
    ElementType::Int8,    ElementType::Uint8,    ElementType::Int32,      ElementType::Uint32,
    ElementType::Int64,   ElementType::Uint64,   ElementType::Float16,    ElementType::Float32,
    ElementType::Float64, ElementType::Bfloat16, ElementType::Float8E4M3, ElementType::Float8E5M2};

// ---- the fixture ------------------------------------------------------------------------------

// One rank of the process's group: its device, a queue per use, and its communicator.
struct Rank {
  UniqueDevice device;
  Queue compute, comm;  // queue 0 and queue 1
  UniqueCommunicator communicator;
};

// Ranks on the devices of one backend (CUDA or HIP) in this process. Skips, with the reason, when
// the backend, two devices or the collective library are absent — fails instead where
// BATON_TEST_REQUIRE_COLLECTIVES=1 (the registrations on the fake driver set it).
class CollectiveTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    ASSERT_OK(createInstance(sink_.instanceInfo(), instance_.put()));
    const BackendKind kind = GetParam();
    const bool required = std::getenv("BATON_TEST_REQUIRE_COLLECTIVES") &&
                          std::string(std::getenv("BATON_TEST_REQUIRE_COLLECTIVES")) == "1" &&
                          backendRequired(kind);
    CollectiveSupport support;
    ASSERT_OK(instance_->getCollectiveSupport(kind, &support));
    uint32_t count = 0;
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, nullptr));
    std::vector<PhysicalDevice> all(count);
    ASSERT_OK(instance_->enumeratePhysicalDevices(&count, all.data()));
    for (PhysicalDevice p : all) {
      PhysicalDeviceProperties props;
      ASSERT_OK(p.getProperties(&props));
      if (props.backend == kind) physicals_.push_back(p);
    }
    std::string absent;
    if (!support.available)
      absent = std::string(backendName(kind)) + " collectives unavailable: " + support.reason;
    else if (physicals_.size() < 2)
      absent = std::string(backendName(kind)) + ": " + std::to_string(physicals_.size()) +
               " device(s); the collective tests need 2 (BATON_FAKE_CUDA_DEVICES=3 on the fake)";
    if (!absent.empty()) {
      if (required) FAIL() << absent << " (required here: BATON_TEST_REQUIRE_COLLECTIVES=1)";
      GTEST_SKIP() << absent;
    }
    support_ = support;
  }

  // `n` ranks (n <= devices), made with createCommunicators; timeout in ns (0: default).
  void makeRanks(size_t n, uint64_t timeoutNs = 0) {
    ASSERT_LE(n, physicals_.size()) << "not enough devices";
    std::vector<Device> devices;
    for (size_t i = 0; i < n; ++i) {
      Rank r;
      DeviceCreateInfo info;
      info.queueCount = 2;
      ASSERT_OK(instance_->createDevice(physicals_[i], info, r.device.put()));
      ASSERT_OK(r.device->getQueue(0, &r.compute));
      ASSERT_OK(r.device->getQueue(1, &r.comm));
      devices.push_back(*r.device);
      ranks_.push_back(std::move(r));
    }
    std::vector<Communicator> comms(n);
    CommunicatorGroupCreateInfo info;
    info.timeoutNs = timeoutNs;
    info.debugName = "test";
    ASSERT_OK(instance_->createCommunicators(devices, info, comms.data()));
    for (size_t i = 0; i < n; ++i) ranks_[i].communicator.reset(comms[i]);
  }

  Buffer deviceBuffer(size_t rank, uint64_t bytes) {
    Buffer b;
    BufferCreateInfo info;
    info.size = bytes;
    EXPECT_OK(ranks_[rank].device->createBuffer(info, &b));
    buffers_.emplace_back(b);
    return b;
  }
  Buffer pinnedBuffer(size_t rank, uint64_t bytes) {
    Buffer b;
    BufferCreateInfo info;
    info.size = bytes;
    info.memory = MemoryKind::HostPinned;
    EXPECT_OK(ranks_[rank].device->createBuffer(info, &b));
    buffers_.emplace_back(b);
    return b;
  }
  // Writes `bytes` into b at offset 0, synchronously.
  void upload(size_t rank, Buffer b, const std::vector<uint8_t>& bytes) {
    for (size_t at = 0; at < bytes.size(); at += kMaxUpdateSize) {
      const uint64_t n = std::min<uint64_t>(kMaxUpdateSize, bytes.size() - at);
      runAndWait(rank, [&](CommandBuffer cb) { return cb.updateBuffer(b, at, n, &bytes[at]); });
    }
  }
  // Reads `bytes` bytes of b through a pinned staging buffer.
  std::vector<uint8_t> download(size_t rank, Buffer b, uint64_t bytes) {
    Buffer staging = pinnedBuffer(rank, bytes);
    runAndWait(rank, [&](CommandBuffer cb) { return cb.copyBuffer(b, 0, staging, 0, bytes); });
    void* p = nullptr;
    EXPECT_OK(staging.map(&p));
    std::vector<uint8_t> out(bytes);
    if (p) std::memcpy(out.data(), p, bytes);
    return out;
  }

  // Records with `record`, submits to `queue` (default: the rank's comm queue) with `waits`,
  // signalling `signal`.
  Result submit(size_t rank, const std::function<Result(CommandBuffer)>& record,
                std::vector<SemaphoreValue> waits, std::vector<SemaphoreValue> signals,
                Queue queue = Queue()) {
    CommandBuffer cb;
    Result r = ranks_[rank].device->createCommandBuffer(&cb);
    if (r != Result::Success) return r;
    commandBuffers_.emplace_back(cb);
    EXPECT_OK(cb.begin());
    r = record(cb);
    if (r != Result::Success) return r;
    EXPECT_OK(cb.end());
    SubmitInfo info;
    info.waits = waits;
    info.commandBuffers = Span<const CommandBuffer>(&cb, 1);
    info.signals = signals;
    return (queue ? queue : ranks_[rank].comm).submit(info);
  }
  void runAndWait(size_t rank, const std::function<Result(CommandBuffer)>& record) {
    Semaphore s = semaphore();
    ASSERT_OK(submit(rank, record, {}, {{s, 1}}, ranks_[rank].compute));
    ASSERT_OK(s.wait(1, kLongNs));
  }
  Semaphore semaphore(const char* name = nullptr) {
    Semaphore s;
    SemaphoreCreateInfo info;
    info.debugName = name;
    EXPECT_OK(instance_->createSemaphore(info, &s));
    semaphores_.emplace_back(s);
    return s;
  }
  Communicator comm(size_t rank) const { return *ranks_[rank].communicator; }

  MessageSink sink_;
  UniqueInstance instance_;
  CollectiveSupport support_;
  std::vector<PhysicalDevice> physicals_;
  // Destroyed in reverse: the objects of the ranks' devices first, then the ranks (each its
  // communicator before its device).
  std::vector<Rank> ranks_;
  std::vector<UniqueSemaphore> semaphores_;
  std::vector<UniqueCommandBuffer> commandBuffers_;
  std::vector<UniqueBuffer> buffers_;
};

struct CollectiveParamName {
  std::string operator()(const ::testing::TestParamInfo<BackendKind>& info) const {
    return backendName(info.param);
  }
};

}  // namespace baton_test
