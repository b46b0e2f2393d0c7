// The fake driver's stream memory operations (fake_cuda.hpp: behaviour M3): cuStreamWaitValue32,
// cuStreamWaitValue64, cuStreamWriteValue32 and cuStreamWriteValue64, exported under the _v2
// names cuda.h maps them to, as ops of the stream like any other.
//
// A wait polls its word on the stream's worker, so it holds up only that stream's later work, and
// sees any writer: another stream, the host, or another process mapping the same memory (a
// memfd page registered with cuMemHostRegister, a cuMemMap of an imported allocation). The word
// is read with acquire loads and written with release stores, so what a writer did before its
// write is visible to the work after a wait it releases (the default write's memory barrier).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "fake_cuda.hpp"

using fake_cuda::gCounters;
using fake_cuda::Stream;

namespace {

constexpr unsigned kWaitOps = 0x3;  // GEQ, EQ, AND, NOR: the low two bits

bool satisfied(uint64_t current, uint64_t value, unsigned op, bool wide) {
  switch (op) {
    case CU_STREAM_WAIT_VALUE_GEQ:  // cyclic: the difference, as a signed number, is >= 0
      return wide ? static_cast<int64_t>(current - value) >= 0
                  : static_cast<int32_t>(static_cast<uint32_t>(current) -
                                         static_cast<uint32_t>(value)) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ: return current == value;
    case CU_STREAM_WAIT_VALUE_AND: return (current & value) != 0;
    default:  // CU_STREAM_WAIT_VALUE_NOR
      return wide ? ~(current | value) != 0 : static_cast<uint32_t>(~(current | value)) != 0;
  }
}

uint64_t load(uintptr_t address, bool wide) {
  return wide ? __atomic_load_n(reinterpret_cast<uint64_t*>(address), __ATOMIC_ACQUIRE)
              : __atomic_load_n(reinterpret_cast<uint32_t*>(address), __ATOMIC_ACQUIRE);
}

// The checks every operation makes at the call, with the driver's answers (measured on the H100,
// driver 580): an address outside every allocation, registration and accessible mapping, or not
// aligned to the word, is CUDA_ERROR_INVALID_VALUE.
CUresult resolve(CUstream stream, CUdeviceptr address, bool wide, Stream** out) {
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  const size_t bytes = wide ? 8 : 4;
  fake_cuda::AddressRange r;
  if (address % bytes != 0 || !fake_cuda::findRange(address, bytes, &r) || !r.accessible)
    return CUDA_ERROR_INVALID_VALUE;
  *out = s;
  return CUDA_SUCCESS;
}

CUresult waitValue(const char* entry, CUstream stream, CUdeviceptr address, uint64_t value,
                   unsigned flags, bool wide) {
  // CU_STREAM_WAIT_VALUE_FLUSH needs CAN_FLUSH_REMOTE_WRITES, which the fake (like the H100)
  // does not report: CUDA_ERROR_NOT_SUPPORTED, as measured; other unknown bits INVALID_VALUE.
  if (flags & CU_STREAM_WAIT_VALUE_FLUSH) return CUDA_ERROR_NOT_SUPPORTED;
  if (flags & ~kWaitOps) return CUDA_ERROR_INVALID_VALUE;
  Stream* s = nullptr;
  if (CUresult r = resolve(stream, address, wide, &s)) return r;
  const unsigned op = flags & kWaitOps;
  fake_cuda::enqueue(*s, [entry, address, value, op, wide] {
    const size_t bytes = wide ? 8 : 4;
    const bool blocked = fake_cuda::pollUntil([&] {
      uint64_t current = 0;
      if (!fake_cuda::withLiveRange(address, bytes, [&] { current = load(address, wide); })) {
        fake_cuda::memoryOpLostItsRange(entry, address);
        return fake_cuda::Poll::Abandon;
      }
      return satisfied(current, value, op, wide) ? fake_cuda::Poll::Met : fake_cuda::Poll::Unmet;
    });
    if (blocked) gCounters.valueWaitsBlocked.fetch_add(1, std::memory_order_relaxed);
  });
  return CUDA_SUCCESS;
}

CUresult writeValue(const char* entry, CUstream stream, CUdeviceptr address, uint64_t value,
                    unsigned flags, bool wide) {
  // CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER: "not supported in the v2 API" (cuda.h), and the
  // H100's _v2 entry points answer CUDA_ERROR_INVALID_VALUE for it.
  if (flags != CU_STREAM_WRITE_VALUE_DEFAULT) return CUDA_ERROR_INVALID_VALUE;
  Stream* s = nullptr;
  if (CUresult r = resolve(stream, address, wide, &s)) return r;
  fake_cuda::enqueue(*s, [entry, address, value, wide] {
    const bool live = fake_cuda::withLiveRange(address, wide ? 8 : 4, [&] {
      if (wide)
        __atomic_store_n(reinterpret_cast<uint64_t*>(address), value, __ATOMIC_RELEASE);
      else
        __atomic_store_n(reinterpret_cast<uint32_t*>(address), static_cast<uint32_t>(value),
                         __ATOMIC_RELEASE);
    });
    if (!live) fake_cuda::memoryOpLostItsRange(entry, address);
  });
  return CUDA_SUCCESS;
}

}  // namespace

bool fake_cuda::pollUntil(const std::function<Poll()>& check) {
  // Spin, yielding, for this long after the first unmet check; then sleep in steps that double
  // from kFirstSleepNs up to kMaxSleepNs, so that a wait pending for long costs about 5,000
  // wake-ups a second and releases at most that late.
  constexpr int64_t kSpinNs = 20000;
  constexpr int64_t kFirstSleepNs = 10000;
  constexpr int64_t kMaxSleepNs = 200000;
  bool blocked = false;
  int64_t spinUntil = 0, sleepNs = kFirstSleepNs;
  for (;;) {
    if (check() != Poll::Unmet) return blocked;
    if (!blocked) {
      blocked = true;
      spinUntil = nowNs() + kSpinNs;
    }
    if (nowNs() < spinUntil) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(std::chrono::nanoseconds(sleepNs));
    sleepNs = std::min(sleepNs * 2, kMaxSleepNs);
  }
}

void fake_cuda::memoryOpLostItsRange(const char* entry, uintptr_t address) {
  const uint64_t n = gCounters.valueWaitsLost.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n <= 10 || config().strict)
    std::fprintf(stderr,
                 "fake CUDA: %s on %p: the memory was freed, unmapped or unregistered while the "
                 "operation was pending (on a GPU: undefined); it ends without reading or "
                 "writing\n",
                 entry, reinterpret_cast<void*>(address));
  if (config().strict) std::abort();
}

extern "C" {

CUresult CUDAAPI cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                     unsigned int flags) {
  FAKE_CUDA_ENTRY("cuStreamWaitValue32");
  return waitValue("cuStreamWaitValue32", stream, addr, value, flags, false);
}
CUresult CUDAAPI cuStreamWaitValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                     unsigned int flags) {
  FAKE_CUDA_ENTRY("cuStreamWaitValue64");
  if (!fake_cuda::config().memOps64) return CUDA_ERROR_NOT_SUPPORTED;
  return waitValue("cuStreamWaitValue64", stream, addr, value, flags, true);
}
CUresult CUDAAPI cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                      unsigned int flags) {
  FAKE_CUDA_ENTRY("cuStreamWriteValue32");
  return writeValue("cuStreamWriteValue32", stream, addr, value, flags, false);
}
CUresult CUDAAPI cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
                                      unsigned int flags) {
  FAKE_CUDA_ENTRY("cuStreamWriteValue64");
  if (!fake_cuda::config().memOps64) return CUDA_ERROR_NOT_SUPPORTED;
  return writeValue("cuStreamWriteValue64", stream, addr, value, flags, true);
}

}  // extern "C"
