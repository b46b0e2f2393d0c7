// The fake driver's external semaphores (fake_cuda.hpp: behaviour E1): cuImportExternalSemaphore
// of the timeline-fd type, with the fake's own descriptor (fake_timeline_fd.hpp) standing in for a
// Vulkan driver's; cuSignalExternalSemaphoresAsync and cuWaitExternalSemaphoresAsync as ops of the
// stream; cuDestroyExternalSemaphore.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "fake_cuda.hpp"
#include "fake_timeline_fd.hpp"

using fake_cuda::gCounters;

namespace {

// An import: the mapped page, kept by the pending ops that use it (so that a destroy under them,
// which the driver forbids and the fake reports, touches no freed memory), and the descriptor the
// driver took.
struct Mapping {
  fake_cuda::TimelineFdPage* page = nullptr;
  int fd = -1;
  ~Mapping() {
    fake_cuda::unmapTimelineFd(page);
    close(fd);
  }
};
struct ExternalSemaphore {
  std::shared_ptr<Mapping> mapping;
};

ExternalSemaphore* fromHandle(CUexternalSemaphore handle) {
  return reinterpret_cast<ExternalSemaphore*>(handle);
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuImportExternalSemaphore(CUexternalSemaphore* out,
                                           const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC* desc) {
  FAKE_CUDA_ENTRY("cuImportExternalSemaphore");
  if (!out || !desc) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_cuda::tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  if (desc->type != CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD)
    return CUDA_ERROR_NOT_SUPPORTED;
  fake_cuda::TimelineFdPage* page = fake_cuda::mapTimelineFd(desc->handle.fd);
  // Not the fake's timeline descriptor: the H100 answers a pipe's so.
  if (!page) return CUDA_ERROR_UNKNOWN;
  auto* s = new ExternalSemaphore;
  s->mapping = std::make_shared<Mapping>();
  s->mapping->page = page;
  s->mapping->fd = desc->handle.fd;  // the driver owns it from here on
  gCounters.externalSemaphoresLive.fetch_add(1, std::memory_order_relaxed);
  *out = reinterpret_cast<CUexternalSemaphore>(s);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDestroyExternalSemaphore(CUexternalSemaphore handle) {
  FAKE_CUDA_ENTRY("cuDestroyExternalSemaphore");
  ExternalSemaphore* s = fromHandle(handle);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  // Ops of a stream still hold the mapping: the object is in use, which the driver forbids.
  if (s->mapping.use_count() > 1) {
    gCounters.externalSemaphoresDestroyedInUse.fetch_add(1, std::memory_order_relaxed);
    std::fprintf(stderr,
                 "fake CUDA: cuDestroyExternalSemaphore of a semaphore with a wait or signal "
                 "pending (on a GPU: undefined)\n");
    if (fake_cuda::config().strict) std::abort();
  }
  delete s;
  gCounters.externalSemaphoresLive.fetch_sub(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuSignalExternalSemaphoresAsync(
    const CUexternalSemaphore* handles, const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* params,
    unsigned int count, CUstream stream) {
  FAKE_CUDA_ENTRY("cuSignalExternalSemaphoresAsync");
  if (!handles || !params) return CUDA_ERROR_INVALID_VALUE;
  fake_cuda::Stream* st = fake_cuda::resolve(stream);
  if (!st) return CUDA_ERROR_INVALID_CONTEXT;
  for (unsigned i = 0; i < count; ++i) {
    ExternalSemaphore* s = fromHandle(handles[i]);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    fake_cuda::enqueue(*st, [mapping = s->mapping, value = params[i].params.fence.value] {
      fake_cuda::signalTimeline(mapping->page, value);
    });
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuWaitExternalSemaphoresAsync(const CUexternalSemaphore* handles,
                                               const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* params,
                                               unsigned int count, CUstream stream) {
  FAKE_CUDA_ENTRY("cuWaitExternalSemaphoresAsync");
  if (!handles || !params) return CUDA_ERROR_INVALID_VALUE;
  fake_cuda::Stream* st = fake_cuda::resolve(stream);
  if (!st) return CUDA_ERROR_INVALID_CONTEXT;
  for (unsigned i = 0; i < count; ++i) {
    ExternalSemaphore* s = fromHandle(handles[i]);
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    fake_cuda::enqueue(*st, [mapping = s->mapping, value = params[i].params.fence.value] {
      bool blocked = fake_cuda::pollUntil([&] {
        return fake_cuda::timelineValue(mapping->page) >= value ? fake_cuda::Poll::Met
                                                                : fake_cuda::Poll::Unmet;
      });
      if (blocked) gCounters.externalWaitsBlocked.fetch_add(1, std::memory_order_relaxed);
    });
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
