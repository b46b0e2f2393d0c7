// The fake driver's streams, events and host functions (fake_cuda.hpp: behaviours 1-9 and 12).
// A CUstream is a fake_cuda::Stream*; a CUevent an Event* holding the Mark of its last record.
#include "fake_cuda.hpp"

using fake_cuda::gCounters;
using fake_cuda::Mark;
using fake_cuda::Stream;
using fake_cuda::tCurrent;

namespace {

struct Event {
  unsigned flags = 0;
  std::mutex mutex;
  std::shared_ptr<Mark> mark;  // null: never recorded (an empty set of work)

  std::shared_ptr<Mark> current() {
    std::lock_guard<std::mutex> lock(mutex);
    return mark;
  }
};

Event* event(CUevent e) { return reinterpret_cast<Event*>(e); }

}  // namespace

extern "C" {

// ---- streams ------------------------------------------------------------------------------------

// Like the real driver, calls that create objects need a current context: a backend that forgets
// to make its context current on some thread fails here too, not only on a GPU.
CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int) {
  FAKE_CUDA_ENTRY("cuStreamCreate");
  if (!stream) return CUDA_ERROR_INVALID_VALUE;
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  *stream = reinterpret_cast<CUstream>(fake_cuda::createStream(tCurrent));
  return CUDA_SUCCESS;
}
// Returns at once; the stream's pending work still runs (behaviour 9).
CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  FAKE_CUDA_ENTRY("cuStreamDestroy");
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  fake_cuda::destroyStream(reinterpret_cast<Stream*>(stream));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  FAKE_CUDA_ENTRY("cuStreamSynchronize");
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  if (fake_cuda::capturing(*s)) {  // G6
    fake_cuda::invalidateCapture(*s);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  uint64_t position;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    position = s->enqueued;
  }
  if (fake_cuda::waitFor(*s, position, false))
    gCounters.streamSyncBlocked.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamQuery(CUstream stream) {
  FAKE_CUDA_ENTRY("cuStreamQuery");
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  if (fake_cuda::capturing(*s)) {  // G6
    fake_cuda::invalidateCapture(*s);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  return s->done == s->enqueued ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
// The wait is for the work the event captured when this call is made (behaviour 5).
CUresult CUDAAPI cuStreamWaitEvent(CUstream stream, CUevent e, unsigned int) {
  FAKE_CUDA_ENTRY("cuStreamWaitEvent");
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  if (fake_cuda::capturing(*s)) {  // G6
    fake_cuda::invalidateCapture(*s);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  std::shared_ptr<Mark> mark = event(e)->current();
  if (!mark) return CUDA_SUCCESS;  // never recorded: nothing to wait for
  fake_cuda::enqueue(*s, [mark = std::move(mark)] {
    if (fake_cuda::waitFor(*mark->stream, mark->position, false))
      gCounters.streamWaitsBlocked.fetch_add(1, std::memory_order_relaxed);
  });
  return CUDA_SUCCESS;
}

// ---- events -------------------------------------------------------------------------------------

CUresult CUDAAPI cuEventCreate(CUevent* e, unsigned int flags) {
  FAKE_CUDA_ENTRY("cuEventCreate");
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  if (!tCurrent) return CUDA_ERROR_INVALID_CONTEXT;
  auto* ev = new Event();
  ev->flags = flags;
  *e = reinterpret_cast<CUevent>(ev);
  gCounters.eventsLive.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}
// A pending record still completes: the stream's op and its waiters hold the mark (behaviour 9).
CUresult CUDAAPI cuEventDestroy(CUevent e) {
  FAKE_CUDA_ENTRY("cuEventDestroy");
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  delete event(e);
  gCounters.eventsLive.fetch_sub(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}
// Captures the stream's position now (behaviour 2).
CUresult CUDAAPI cuEventRecord(CUevent e, CUstream stream) {
  FAKE_CUDA_ENTRY("cuEventRecord");
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  if (fake_cuda::capturing(*s)) {  // G6
    fake_cuda::invalidateCapture(*s);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  std::shared_ptr<Mark> mark = fake_cuda::record(*s);
  Event* ev = event(e);
  std::lock_guard<std::mutex> lock(ev->mutex);
  ev->mark = std::move(mark);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventQuery(CUevent e) {
  FAKE_CUDA_ENTRY("cuEventQuery");
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  std::shared_ptr<Mark> mark = event(e)->current();
  if (!mark || fake_cuda::complete(*mark)) return CUDA_SUCCESS;
  gCounters.eventQueryNotReady.fetch_add(1, std::memory_order_relaxed);
  return CUDA_ERROR_NOT_READY;
}
// Blocking-sync events sleep at once; others spin up to 20 µs first (behaviour 4).
CUresult CUDAAPI cuEventSynchronize(CUevent e) {
  FAKE_CUDA_ENTRY("cuEventSynchronize");
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  Event* ev = event(e);
  std::shared_ptr<Mark> mark = ev->current();
  if (!mark) return CUDA_SUCCESS;
  const bool spin = !(ev->flags & CU_EVENT_BLOCKING_SYNC);
  if (fake_cuda::waitFor(*mark->stream, mark->position, spin))
    gCounters.eventSyncBlocked.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}
// As the real driver: events never recorded, or created without timing, are invalid handles here;
// a record still pending answers NOT_READY (behaviour 12).
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  FAKE_CUDA_ENTRY("cuEventElapsedTime");
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (!start || !end) return CUDA_ERROR_INVALID_HANDLE;
  Event* a = event(start);
  Event* b = event(end);
  std::shared_ptr<Mark> ma = a->current(), mb = b->current();
  if (!ma || !mb || ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!fake_cuda::complete(*ma) || !fake_cuda::complete(*mb)) return CUDA_ERROR_NOT_READY;
  const int64_t t0 = ma->ns.load(std::memory_order_relaxed);
  const int64_t t1 = mb->ns.load(std::memory_order_relaxed);
  *ms = static_cast<float>(t1 - t0) / 1e6f;
  return CUDA_SUCCESS;
}

// ---- host functions -----------------------------------------------------------------------------

// Runs on the stream's worker, in stream order, with the host-function rule in force
// (behaviours 6 and 7). In sync mode it runs here, before cuLaunchHostFunc returns.
CUresult CUDAAPI cuLaunchHostFunc(CUstream stream, CUhostFn fn, void* userData) {
  FAKE_CUDA_ENTRY("cuLaunchHostFunc");
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  fake_cuda::enqueue(*s, [fn, userData] {
    fake_cuda::tInHostFunction = true;
    fn(userData);
    fake_cuda::tInHostFunction = false;
  });
  return CUDA_SUCCESS;
}

}  // extern "C"
