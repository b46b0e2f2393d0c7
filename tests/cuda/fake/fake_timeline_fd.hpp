// The fake CUDA driver's "Vulkan timeline semaphore" descriptor (fake_cuda.hpp, behaviour E1):
// what its cuImportExternalSemaphore accepts as a CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_
// SEMAPHORE_FD handle, since it cannot import a real Vulkan driver's. A memfd of one page that
// begins with this header. A test plays the Vulkan process with it: it makes one, passes the
// descriptor on, and signals (a release store of the value) and waits (acquire loads) on the
// mapped word, as a Vulkan host signal and wait would. Header-only, with no CUDA types, so that
// programs which never load the fake (a peer process) can use it.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <thread>

namespace fake_cuda {

inline constexpr uint64_t kTimelineFdMagic = 0x646674656b6146ull;  // "Faketfd"
inline constexpr size_t kTimelineFdBytes = 4096;

struct TimelineFdPage {
  uint64_t magic;
  uint64_t value;  // the timeline's value; read and written atomically
};

// A new descriptor (close-on-exec unless `inheritable`) of a timeline at `initial`, or -1.
inline int createTimelineFd(uint64_t initial, bool inheritable = false) {
  int fd = memfd_create("fake-vulkan-timeline", inheritable ? 0 : MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ftruncate(fd, kTimelineFdBytes) != 0) {
    close(fd);
    return -1;
  }
  void* p = mmap(nullptr, kTimelineFdBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return -1;
  }
  auto* page = static_cast<TimelineFdPage*>(p);
  page->value = initial;
  __atomic_store_n(&page->magic, kTimelineFdMagic, __ATOMIC_RELEASE);
  munmap(p, kTimelineFdBytes);
  return fd;
}

// The timeline of a descriptor, mapped; null if it is not one.
inline TimelineFdPage* mapTimelineFd(int fd) {
  void* p = mmap(nullptr, kTimelineFdBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* page = static_cast<TimelineFdPage*>(p);
  if (__atomic_load_n(&page->magic, __ATOMIC_ACQUIRE) != kTimelineFdMagic) {
    munmap(p, kTimelineFdBytes);
    return nullptr;
  }
  return page;
}

inline void unmapTimelineFd(TimelineFdPage* page) { munmap(page, kTimelineFdBytes); }

inline uint64_t timelineValue(const TimelineFdPage* page) {
  return __atomic_load_n(&page->value, __ATOMIC_ACQUIRE);
}
// A signal: the value is set, as vkSignalSemaphore sets it.
inline void signalTimeline(TimelineFdPage* page, uint64_t value) {
  __atomic_store_n(&page->value, value, __ATOMIC_RELEASE);
}
// A host wait for at least `value`, polling every 50 µs; false after `timeoutNs`.
inline bool waitTimeline(const TimelineFdPage* page, uint64_t value, uint64_t timeoutNs) {
  auto end = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeoutNs);
  while (timelineValue(page) < value) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}

}  // namespace fake_cuda
