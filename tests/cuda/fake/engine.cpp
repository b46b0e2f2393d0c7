// The fake driver's engine (fake_cuda.hpp says what it models): configuration, the counters, the
// host-function rule, and the streams — in async mode one in-order worker thread each — with the
// recorded positions events and waits refer to.
//
// Threads. A stream's worker takes one op at a time from `ops` (under the stream's mutex), runs
// it without the lock, then raises `done` and wakes whoever waits for a position. A wait op
// (cuStreamWaitEvent) blocks its worker on the other stream's `progress`; a host function runs
// on the worker with tInHostFunction set. Streams are owned by the registry: a destroyed stream
// moves to `retired` until its worker has drained its ops and exited, and is joined (and freed,
// once no mark refers to it) by a later create or destroy, or when the module unloads.
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fake_cuda.hpp"

namespace fake_cuda {

Counters gCounters;
thread_local bool tInHostFunction FAKE_CUDA_TLS = false;
thread_local CUcontext tCurrent FAKE_CUDA_TLS = nullptr;
Context gContexts[16] = {{0}, {1}, {2},  {3},  {4},  {5},  {6},  {7},
                         {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}};

namespace {

bool envFlag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

// The streams of every context. Never destroyed: workers still running at exit may touch it.
struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<Stream>> live;
  std::vector<std::shared_ptr<Stream>> retired;  // destroyed, worker not joined yet
  std::shared_ptr<Stream> nullStreams[16];       // per context, created on first use
};
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

// Paused streams (batonFakeCudaPause): workers hold their next op until resumed, as a GPU busy
// with long work would.
std::mutex gPauseMutex;
std::condition_variable gPauseCv;
bool gPaused = false;

void waitWhilePaused() {
  std::unique_lock<std::mutex> lock(gPauseMutex);
  gPauseCv.wait(lock, [] { return !gPaused; });
}

void runWorker(Stream* s) {
  // Named, so that a test counting a process's threads can tell the driver's from baton's.
  pthread_setname_np(pthread_self(), kWorkerName);
  const auto delay = std::chrono::microseconds(config().delayUs);
  for (;;) {
    Stream::Op op;
    {
      std::unique_lock<std::mutex> lock(s->mutex);
      s->work.wait(lock, [&] { return !s->ops.empty() || s->stop; });
      if (s->ops.empty()) break;
      op = std::move(s->ops.front());
      s->ops.pop_front();
    }
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    waitWhilePaused();
    op();
    op = nullptr;  // what the op holds (marks, staged data) goes before the position is reached
    gCounters.opsExecuted.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      ++s->done;
      s->doneAcquire.store(s->done, std::memory_order_release);
    }
    s->progress.notify_all();
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  s->exited = true;
}

// Joins the workers of destroyed streams that have exited. Called with the registry locked.
void reapLocked(Registry& r) {
  for (size_t i = 0; i < r.retired.size();) {
    Stream& s = *r.retired[i];
    bool exited;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      exited = s.exited;
    }
    if (!exited) {
      ++i;
      continue;
    }
    if (s.worker.joinable()) s.worker.join();
    r.retired[i] = std::move(r.retired.back());
    r.retired.pop_back();
  }
}

std::shared_ptr<Stream> makeStream(CUcontext context) {
  auto s = std::make_shared<Stream>();
  s->context = context;
  if (config().async) s->worker = std::thread(runWorker, s.get());
  return s;
}

// At unload (process exit): the summary, then the workers: joined where they have exited (a
// finished thread never joined is a leak to ThreadSanitizer), detached where they still wait.
__attribute__((destructor)) void atUnload() {
  const Config& c = config();
  const uint64_t violations = gCounters.hostFunctionViolations.load();
  if (c.stats || violations) {
    BatonFakeCudaStats st{};
    batonFakeCudaStats(&st);
    std::fprintf(stderr,
                 "fake CUDA (%s, delay %u us): %llu stream ops; cuEventQuery NOT_READY %llu; "
                 "cuEventSynchronize waited %llu; stream waits held up %llu; synchronizations "
                 "waited %llu; %llu driver calls from inside host functions\n",
                 c.async ? "async" : "sync", c.delayUs,
                 static_cast<unsigned long long>(st.opsExecuted),
                 static_cast<unsigned long long>(st.eventQueryNotReady),
                 static_cast<unsigned long long>(st.eventSyncBlocked),
                 static_cast<unsigned long long>(st.streamWaitsBlocked),
                 static_cast<unsigned long long>(st.streamSyncBlocked),
                 static_cast<unsigned long long>(violations));
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  reapLocked(r);
  auto detach = [](std::shared_ptr<Stream>& s) {
    if (s && s->worker.joinable()) s->worker.detach();
  };
  for (auto& s : r.retired) detach(s);
  for (auto& s : r.live) detach(s);
  for (auto& s : r.nullStreams) detach(s);
}

}  // namespace

const Config& config() {
  static const Config c = [] {
    Config k;
    if (const char* m = std::getenv("BATON_FAKE_CUDA_MODE")) {
      if (std::strcmp(m, "sync") == 0) {
        k.async = false;
      } else if (*m && std::strcmp(m, "async") != 0) {
        std::fprintf(stderr, "fake CUDA: BATON_FAKE_CUDA_MODE=%s: expected async or sync\n", m);
        std::abort();
      }
    }
    if (const char* d = std::getenv("BATON_FAKE_CUDA_DELAY_US"))
      k.delayUs = static_cast<uint32_t>(std::strtoul(d, nullptr, 10));
    if (const char* n = std::getenv("BATON_FAKE_CUDA_DEVICES")) k.devices = std::atoi(n);
    if (k.devices < 0) k.devices = 0;
    if (k.devices > 16) k.devices = 16;
    k.strict = envFlag("BATON_FAKE_CUDA_STRICT");
    k.stats = envFlag("BATON_FAKE_CUDA_STATS");
    k.memOps64 = !envFlag("BATON_FAKE_CUDA_NO_MEMOPS64");
    k.shareableAllocations = envFlag("BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS");
    return k;
  }();
  return c;
}

CUresult hostFunctionViolation(const char* entry) {
  const uint64_t n = gCounters.hostFunctionViolations.fetch_add(1) + 1;
  if (n <= 10 || config().strict)
    std::fprintf(stderr,
                 "fake CUDA: %s called from inside a host function (the driver forbids CUDA calls "
                 "there): CUDA_ERROR_NOT_PERMITTED\n",
                 entry);
  if (config().strict) std::abort();
  return CUDA_ERROR_NOT_PERMITTED;
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Stream* resolve(CUstream handle) {
  if (handle != nullptr && handle != CU_STREAM_LEGACY && handle != CU_STREAM_PER_THREAD)
    return reinterpret_cast<Stream*>(handle);
  if (!tCurrent) return nullptr;
  const int ordinal = reinterpret_cast<Context*>(tCurrent)->ordinal;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.nullStreams[ordinal]) r.nullStreams[ordinal] = makeStream(tCurrent);
  return r.nullStreams[ordinal].get();
}

Stream* createStream(CUcontext context) {
  std::shared_ptr<Stream> s = makeStream(context);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  reapLocked(r);
  r.live.push_back(s);
  gCounters.streamsLive.fetch_add(1, std::memory_order_relaxed);
  return s.get();
}

void destroyStream(Stream* stream) {
  {
    std::lock_guard<std::mutex> lock(stream->mutex);
    stream->stop = true;
    stream->exited = stream->exited || !stream->worker.joinable();
  }
  stream->work.notify_one();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < r.live.size(); ++i) {
    if (r.live[i].get() != stream) continue;
    r.retired.push_back(std::move(r.live[i]));
    r.live[i] = std::move(r.live.back());
    r.live.pop_back();
    gCounters.streamsLive.fetch_sub(1, std::memory_order_relaxed);
    break;
  }
  reapLocked(r);
}

uint64_t enqueue(Stream& s, Stream::Op op) {
  if (s.capturing.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.capture) {  // behaviour G5: a node of the capture, not run
      captureLocked(s, std::move(op));
      return s.enqueued;
    }
  }
  if (!config().async) {
    op();
    gCounters.opsExecuted.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(s.mutex);
    s.done = ++s.enqueued;
    s.doneAcquire.store(s.done, std::memory_order_release);
    return s.enqueued;
  }
  uint64_t position;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.ops.push_back(std::move(op));
    position = ++s.enqueued;
  }
  s.work.notify_one();
  return position;
}

std::shared_ptr<Mark> record(Stream& s) {
  auto mark = std::make_shared<Mark>();
  mark->stream = s.shared_from_this();
  // The op holds the mark only weakly: a mark (and its stream) must not keep itself alive.
  std::weak_ptr<Mark> weak = mark;
  mark->position = enqueue(s, [weak] {
    if (std::shared_ptr<Mark> m = weak.lock()) m->ns.store(nowNs(), std::memory_order_relaxed);
  });
  return mark;
}

bool complete(const Mark& mark) {
  return mark.stream->doneAcquire.load(std::memory_order_acquire) >= mark.position;
}

bool waitFor(Stream& s, uint64_t position, bool spin) {
  if (s.doneAcquire.load(std::memory_order_acquire) >= position) return false;
  if (spin) {
    const int64_t until = nowNs() + 20000;
    while (nowNs() < until) {
      std::this_thread::yield();
      if (s.doneAcquire.load(std::memory_order_acquire) >= position) return true;
    }
  }
  std::unique_lock<std::mutex> lock(s.mutex);
  s.progress.wait(lock, [&] { return s.done >= position; });
  return true;
}

bool synchronizeContext(CUcontext context, bool* capturing) {
  std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> targets;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto add = [&](const std::shared_ptr<Stream>& s) {
      if (!s || s->context != context) return;
      std::lock_guard<std::mutex> l(s->mutex);
      if (s->capture) {  // nothing of it runs; cuCtxSynchronize ends it (behaviour G6)
        if (capturing) {
          s->captureInvalidated = true;
          *capturing = true;
        }
        return;
      }
      targets.emplace_back(s, s->enqueued);
    };
    for (auto& s : r.live) add(s);
    for (auto& s : r.retired) add(s);
    for (auto& s : r.nullStreams) add(s);
  }
  bool waited = false;
  for (auto& [s, position] : targets) waited = waitFor(*s, position, false) || waited;
  return waited;
}

bool pause(bool paused) {
  if (!config().async) return false;  // ops run on the calling thread: nothing to hold
  {
    std::lock_guard<std::mutex> lock(gPauseMutex);
    gPaused = paused;
  }
  gPauseCv.notify_all();
  return true;
}

}  // namespace fake_cuda

// Holds (1) or resumes (0) every stream's next operation, as a GPU busy with long work would;
// returns 0 in sync mode, where operations run on the calling thread.
extern "C" __attribute__((visibility("default"))) int batonFakeCudaPause(int paused) {
  return fake_cuda::pause(paused != 0) ? 1 : 0;
}

extern "C" __attribute__((visibility("default"))) void batonFakeCudaStats(BatonFakeCudaStats* out) {
  using fake_cuda::gCounters;
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  out->hostFunctionViolations = get(gCounters.hostFunctionViolations);
  out->opsExecuted = get(gCounters.opsExecuted);
  out->eventQueryNotReady = get(gCounters.eventQueryNotReady);
  out->eventSyncBlocked = get(gCounters.eventSyncBlocked);
  out->streamWaitsBlocked = get(gCounters.streamWaitsBlocked);
  out->streamSyncBlocked = get(gCounters.streamSyncBlocked);
  out->streamsLive = get(gCounters.streamsLive);
  out->eventsLive = get(gCounters.eventsLive);
  out->async = fake_cuda::config().async ? 1 : 0;
  out->delayUs = fake_cuda::config().delayUs;
  out->allocationsLive = get(gCounters.allocationsLive);
  out->graphsLive = get(gCounters.graphsLive);
  out->execsLive = get(gCounters.execsLive);
  out->graphLaunches = get(gCounters.graphLaunches);
  out->execUpdates = get(gCounters.execUpdates);
  out->execUpdatesRefused = get(gCounters.execUpdatesRefused);
  out->opsCaptured = get(gCounters.opsCaptured);
  out->valueWaitsBlocked = get(gCounters.valueWaitsBlocked);
  out->valueWaitsLost = get(gCounters.valueWaitsLost);
  out->externalSemaphoresLive = get(gCounters.externalSemaphoresLive);
  out->externalWaitsBlocked = get(gCounters.externalWaitsBlocked);
  out->externalSemaphoresDestroyedInUse = get(gCounters.externalSemaphoresDestroyedInUse);
}
