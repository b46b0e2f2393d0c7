// The timeline trace's sessions and recording hooks (trace.hpp says what is recorded and what it
// costs; trace_json.cpp turns the records into the JSON).
//
// Threads and locks: each thread appends to its own Buffer under the buffer's lock, which only
// the writer of the file ever takes besides it. Session::mutex guards the session's state and
// the list of buffers; it is taken to start, write or end a session and when a thread makes its
// buffer, never per record. Session and buffers are never freed (hooks may run while the process
// exits); buffers of threads that have exited are dropped when a session ends.
#include "trace.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "objects.hpp"
#include "semaphore.hpp"
#include "trace_records.hpp"

#if BATON_TRACE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace baton::core::trace {
namespace {

struct Buffer {
  Mutex mutex;
  uint64_t generation = 0;  // the session its records belong to
  uint32_t tid = 0;
  std::string name;
  bool alive = true;  // the thread has not exited (under Session::mutex)
  std::vector<Record> records;
  std::vector<std::string> strings;
  std::unordered_set<uint64_t> namedSemaphores, namedQueues;  // named in this session
  // Keys found in namedSemaphores lately, and the last queue named: most records name the same
  // few, and a hash lookup per operand was a measurable share of a traced submit.
  uint64_t recentSemaphores[16] = {};
  uint32_t lastQueue = 0;
  uint64_t dropped = 0;
};

struct Session {
  std::mutex mutex;
  std::vector<Buffer*> buffers;
  std::string path;
  bool fromEnvironment = false;
  bool atexitRegistered = false;
  int liveInstances = 0;
  uint64_t t0 = 0;
  // Bumped when a session starts and when it ends: a buffer whose records belong to another
  // generation is cleared before it takes a new one, and is left out of a write.
  std::atomic<uint64_t> generation{0};
};

Session& session() {
  static Session* s = new Session;  // never destroyed: see the file comment
  return *s;
}

std::atomic<uint64_t> gNextSubmission{0};
std::atomic<uint32_t> gNextQueueTrack{0};

// The thread's buffer, through a trivial pointer in the initial-exec TLS model (notifier.cpp).
thread_local Buffer* tBuffer __attribute__((tls_model("initial-exec"))) = nullptr;
// Set once the thread's BufferOwner is destroyed: hooks that run later on it record nothing.
thread_local bool tGone __attribute__((tls_model("initial-exec"))) = false;

struct BufferOwner {
  Buffer* buffer = nullptr;
  ~BufferOwner() {
    tBuffer = nullptr;
    tGone = true;
    std::lock_guard<std::mutex> lock(session().mutex);
    buffer->alive = false;
  }
};

[[gnu::noinline]] Buffer& makeBuffer() {
  thread_local BufferOwner owner;
  auto* b = new Buffer;
  b->tid = static_cast<uint32_t>(syscall(SYS_gettid));
  char name[64] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) == 0) b->name = name;
  {
    std::lock_guard<std::mutex> lock(session().mutex);
    session().buffers.push_back(b);
  }
  owner.buffer = b;
  tBuffer = b;
  return *b;
}

// Runs `f(buffer)` with the calling thread's buffer locked and belonging to the current session.
template <class F>
void withBuffer(F&& f) {
  Buffer* b = tBuffer;
  if (!b) [[unlikely]] {
    if (tGone) return;
    b = &makeBuffer();
  }
  std::lock_guard<Mutex> lock(b->mutex);
  const uint64_t generation = session().generation.load(std::memory_order_acquire);
  if (b->generation != generation) {
    b->records.clear();
    b->strings.clear();
    b->namedSemaphores.clear();
    b->namedQueues.clear();
    std::fill(std::begin(b->recentSemaphores), std::end(b->recentSemaphores), 0);
    b->lastQueue = 0;
    b->dropped = 0;
    b->generation = generation;
  }
  f(*b);
}

// Whether `n` more records fit; counts them dropped when not.
bool room(Buffer& b, size_t n) {
  if (b.records.size() + n <= kMaxRecordsPerThread) [[likely]]
    return true;
  b.dropped += n;
  return false;
}

uint64_t addString(Buffer& b, std::string text) {
  b.strings.push_back(std::move(text));
  return b.strings.size() - 1;
}

void push(Buffer& b, RecordKind kind, uint64_t ts, uint64_t a, uint64_t bv = 0, uint64_t c = 0,
          uint32_t small = 0) {
  b.records.push_back(Record{ts, a, bv, c, kind, small});
}

// How records name a semaphore: its handle (never reused), or its address when it has none.
uint64_t keyOf(const Semaphore& s) {
  return s.handle() ? s.handle() : static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&s));
}

// Records the semaphore's name once per thread and session; returns its key.
uint64_t nameSemaphore(Buffer& b, const Semaphore& s, uint64_t ts) {
  const uint64_t key = keyOf(s);
  uint64_t& recent = b.recentSemaphores[(key ^ (key >> 17) ^ (key >> 32)) & 15];
  if (recent == key) return key;
  if (b.namedSemaphores.insert(key).second)
    push(b, RecordKind::SemaphoreName, ts, key, 0, addString(b, s.name()));
  recent = key;
  return key;
}

#if BATON_TRACE_NVTX
// NVTX initialises itself lazily on the first call from whichever thread makes it, swapping its
// function pointers without synchronisation (ThreadSanitizer reports the race between a host
// call's range and a host wait's). Every call goes through one std::call_once of
// nvtxInitialize instead: its completion happens before every later call on every thread, and
// its fast path is one acquire load (only while a trace is recorded).
std::once_flag gNvtxOnce;
void nvtxReady() {
  std::call_once(gNvtxOnce, [] { nvtxInitialize(nullptr); });
}
void nvtxBegin(const std::string& text) {
  nvtxReady();
  nvtxRangePushA(text.c_str());
}
void nvtxEnd() {
  nvtxReady();
  nvtxRangePop();
}
void nvtxNote(const std::string& text) {
  nvtxReady();
  nvtxMarkA(text.c_str());
}
#else
void nvtxBegin(const std::string&) {}
void nvtxEnd() {}
void nvtxNote(const std::string&) {}
#endif

// ---- sessions -------------------------------------------------------------------------------

void exitHandler();

void startLocked(Session& s, const std::string& path, bool fromEnvironment) {
  s.path = path;
  s.fromEnvironment = fromEnvironment;
  s.t0 = nowNs();
  s.generation.fetch_add(1, std::memory_order_acq_rel);
  if (!s.atexitRegistered) {
    s.atexitRegistered = true;
    std::atexit(exitHandler);
  }
  gOn.store(true, std::memory_order_release);
}

Status writeLocked(Session& s) {
  Snapshot snap;
  snap.t0 = s.t0;
  snap.pid = static_cast<uint32_t>(getpid());
  if (FILE* f = std::fopen("/proc/self/comm", "r")) {
    char comm[64] = {};
    if (std::fgets(comm, sizeof comm, f)) snap.processName = comm;
    std::fclose(f);
    while (!snap.processName.empty() && snap.processName.back() == '\n')
      snap.processName.pop_back();
  }
  const uint64_t generation = s.generation.load(std::memory_order_acquire);
  for (Buffer* b : s.buffers) {
    ThreadRecords t;
    {
      std::lock_guard<Mutex> lock(b->mutex);
      if (b->generation != generation || (b->records.empty() && !b->dropped)) continue;
      t.records = b->records;
      t.strings = b->strings;
      t.dropped = b->dropped;
    }
    t.tid = b->tid;
    t.name = b->name;
    // The thread's current name when it is still there (named after it made its buffer).
    if (b->alive) {
      char path[64];
      std::snprintf(path, sizeof path, "/proc/self/task/%u/comm", b->tid);
      if (FILE* f = std::fopen(path, "r")) {
        char comm[64] = {};
        if (std::fgets(comm, sizeof comm, f)) {
          t.name = comm;
          while (!t.name.empty() && t.name.back() == '\n') t.name.pop_back();
        }
        std::fclose(f);
      }
    }
    snap.threads.push_back(std::move(t));
  }
  std::string json = toJson(snap);
  FILE* f = std::fopen(s.path.c_str(), "w");
  if (!f)
    return error(Result::ErrorInvalidArgument, "cannot open the trace file '%s': %s",
                 s.path.c_str(), std::strerror(errno));
  const bool written = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed)
    return error(Result::ErrorInvalidArgument, "cannot write the trace file '%s': %s",
                 s.path.c_str(), std::strerror(errno));
  return Status();
}

void endLocked(Session& s) {
  gOn.store(false, std::memory_order_release);
  s.generation.fetch_add(1, std::memory_order_acq_rel);
  s.path.clear();
  s.fromEnvironment = false;
  // Buffers of threads that have exited hold nothing of a later session: drop them.
  std::vector<Buffer*> kept;
  for (Buffer* b : s.buffers) {
    if (b->alive)
      kept.push_back(b);
    else
      delete b;
  }
  s.buffers.swap(kept);
}

// Writes a failure to stderr: the trace was asked for, and nobody else can be told (the last
// instance is gone, or the process is exiting).
void reportWriteFailure(const Status& st) {
  if (!st.ok()) std::fprintf(stderr, "baton: trace not written: %s\n", st.message().c_str());
}

void exitHandler() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.path.empty()) reportWriteFailure(writeLocked(s));
}

}  // namespace

void instanceCreated(const char* tracePath) noexcept {
  try {
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.liveInstances;
    if (!s.path.empty()) return;  // a session runs
    const char* env = std::getenv("BATON_TRACE");
    if (env && *env)
      startLocked(s, env, true);
    else if (tracePath && *tracePath)
      startLocked(s, tracePath, false);
  } catch (...) {
    // Tracing is best effort: out of memory here leaves it off.
  }
}

void instanceDestroyed() noexcept {
  try {
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (--s.liveInstances > 0 || s.path.empty()) return;
    reportWriteFailure(writeLocked(s));
    if (!s.fromEnvironment) endLocked(s);
  } catch (...) {
  }
}

bool start(const std::string& path) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.path.empty() || path.empty()) return false;
  startLocked(s, path, false);
  return true;
}

Status stop() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.path.empty()) return Status(Result::ErrorInvalidState, "no trace session runs");
  Status st = writeLocked(s);
  endLocked(s);
  return st;
}

Status flush() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.path.empty()) return Status(Result::ErrorInvalidState, "no trace session runs");
  return writeLocked(s);
}

std::string path() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.path;
}

void pause(bool paused) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.path.empty()) gOn.store(!paused, std::memory_order_release);
}

// ---- hooks ----------------------------------------------------------------------------------

namespace detail {

uint64_t submitted(Queue& queue, Submission& sub) noexcept {
  try {
    const uint64_t id = gNextSubmission.fetch_add(1, std::memory_order_relaxed) + 1;
    sub.traceId = id;
    uint32_t track = queue.traceTrack.load(std::memory_order_relaxed);
    if (!track) {
      const uint32_t fresh = gNextQueueTrack.fetch_add(1, std::memory_order_relaxed) + 1;
      track = queue.traceTrack.compare_exchange_strong(track, fresh) ? fresh : track;
    }
    withBuffer([&](Buffer& b) {
      const size_t n = 1 + sub.waits.size() + sub.signals.size();
      if (!room(b, n + 1 + 2 * n)) return;  // with the names it may add
      const uint64_t ts = nowNs();
      if (b.lastQueue != track && b.namedQueues.insert(track).second)
        push(b, RecordKind::QueueName, ts, track, static_cast<uint64_t>(queue.device()->backend()),
             addString(b, queue.label()));
      b.lastQueue = track;
      for (const Submission::Wait& w : sub.waits) nameSemaphore(b, *w.semaphore, ts);
      for (const Submission::Signal& s : sub.signals) nameSemaphore(b, *s.semaphore, ts);
      push(b, RecordKind::Submitted, ts, id, track, sub.signals.size(),
           static_cast<uint32_t>(sub.waits.size()));
      for (const Submission::Wait& w : sub.waits)
        push(b, RecordKind::Operand, ts, keyOf(*w.semaphore), w.value);
      for (const Submission::Signal& s : sub.signals)
        push(b, RecordKind::Operand, ts, keyOf(*s.semaphore), s.value);
    });
    return id;
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
  return 0;
}

void submitEnd(uint64_t firstId, uint32_t count) noexcept {
  try {
    if (!on()) return;
    withBuffer([&](Buffer& b) {
      if (room(b, 1)) push(b, RecordKind::SubmitEnd, nowNs(), firstId, count);
    });
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void released(const Submission& sub) noexcept {
  try {
    if (!on()) return;
    withBuffer([&](Buffer& b) {
      if (!room(b, 1 + sub.waits.size())) return;
      const uint64_t ts = nowNs();
      push(b, RecordKind::Released, ts, sub.traceId, 0, 0, static_cast<uint32_t>(sub.waits.size()));
      for (const Submission::Wait& w : sub.waits)
        push(b, RecordKind::Operand, ts, keyOf(*w.semaphore), w.value);
    });
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void mark(uint32_t kind, uint64_t id) noexcept {
  try {
    if (!on()) return;
    static constexpr RecordKind kKinds[] = {RecordKind::IssueBegin, RecordKind::Issued,
                                            RecordKind::Completed};
    withBuffer([&](Buffer& b) {
      if (room(b, 1)) push(b, kKinds[kind], nowNs(), id);
    });
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void failed(uint64_t id, const Status& why) noexcept {
  try {
    if (!on()) return;
    withBuffer([&](Buffer& b) {
      if (room(b, 1))
        push(b, RecordKind::Failed, nowNs(), id, static_cast<uint64_t>(why.code()),
             addString(b, why.message()));
    });
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void callBegin(uint32_t kind, uint64_t id) noexcept {
  try {
    if (!on()) return;
    withBuffer([&](Buffer& b) {
      if (room(b, 2)) push(b, RecordKind::CallBegin, nowNs(), id, 0, 0, kind);
    });
    nvtxBegin(format("baton %s #%llu",
                     kind == kNativeCall    ? "native callback"
                     : kind == kLibraryCall ? "library call"
                                            : "host call",
                     static_cast<unsigned long long>(id)));
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void callEnd(uint32_t kind, uint64_t id) noexcept {
  try {
    // Recorded whenever its begin may have been (room for both was asked for): B/E stay balanced
    // unless a session ended in between (the writer drops an E without its B).
    if (!on()) return;
    withBuffer([&](Buffer& b) { push(b, RecordKind::CallEnd, nowNs(), id, 0, 0, kind); });
    nvtxEnd();
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void hostWaitBegin(const std::vector<HostWaitEntry>& entries, WaitMode mode) noexcept {
  try {
    withBuffer([&](Buffer& b) {
      if (!room(b, 2 + 2 * entries.size())) return;
      const uint64_t ts = nowNs();
      for (const HostWaitEntry& e : entries) nameSemaphore(b, *e.semaphore, ts);
      push(b, RecordKind::HostWaitBegin, ts, 0, entries.size(), 0, static_cast<uint32_t>(mode));
      for (const HostWaitEntry& e : entries)
        push(b, RecordKind::Operand, ts, keyOf(*e.semaphore), e.value);
    });
    nvtxBegin("baton host wait");
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void hostWaitEnd(Result result) noexcept {
  try {
    withBuffer([&](Buffer& b) {
      push(b, RecordKind::HostWaitEnd, nowNs(), 0, static_cast<uint64_t>(result));
    });
    nvtxEnd();
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void waitIdleBegin(const std::string& label) noexcept {
  try {
    withBuffer([&](Buffer& b) {
      if (room(b, 2)) push(b, RecordKind::WaitIdleBegin, nowNs(), 0, 0, addString(b, label));
    });
    nvtxBegin("baton waitIdle " + label);
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void waitIdleEnd(Result result) noexcept {
  try {
    withBuffer([&](Buffer& b) {
      push(b, RecordKind::WaitIdleEnd, nowNs(), 0, static_cast<uint64_t>(result));
    });
    nvtxEnd();
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void span(uint32_t kind, uint64_t id, uint64_t beginNs, uint64_t count) noexcept {
  try {
    withBuffer([&](Buffer& b) {
      if (room(b, 1)) push(b, RecordKind::Span, nowNs(), id, count, beginNs, kind);
    });
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void hostSignal(const Semaphore& s, uint64_t value, uint64_t beginNs) noexcept {
  try {
    withBuffer([&](Buffer& b) {
      if (!room(b, 2)) return;
      const uint64_t ts = nowNs();
      push(b, RecordKind::HostSignal, ts, nameSemaphore(b, s, ts), value, beginNs);
    });
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void reached(const Semaphore& s, uint64_t value) noexcept {
  try {
    withBuffer([&](Buffer& b) {
      if (!room(b, 2)) return;
      const uint64_t ts = nowNs();
      push(b, RecordKind::Reached, ts, nameSemaphore(b, s, ts), value);
    });
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void published(const Semaphore& s, uint64_t value) noexcept {
  try {
    withBuffer([&](Buffer& b) {
      if (!room(b, 2)) return;
      const uint64_t ts = nowNs();
      push(b, RecordKind::Published, ts, nameSemaphore(b, s, ts), value);
    });
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void semaphoreFailed(const Semaphore& s, Result code, const std::string& reason) noexcept {
  try {
    withBuffer([&](Buffer& b) {
      if (!room(b, 2)) return;
      const uint64_t ts = nowNs();
      push(b, RecordKind::SemaphoreFailed, ts, nameSemaphore(b, s, ts), static_cast<uint64_t>(code),
           addString(b, reason));
    });
    nvtxNote("baton semaphore '" + s.name() + "' failed: " + reason);
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void deviceLost(const std::string& label, const std::string& reason) noexcept {
  try {
    withBuffer([&](Buffer& b) {
      if (room(b, 1))
        push(b, RecordKind::DeviceLost, nowNs(), 0, 0, addString(b, label + ": " + reason));
    });
    nvtxNote("baton " + label + " lost: " + reason);
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void collective(uint64_t id, uint64_t bytes, const std::string& what) noexcept {
  try {
    if (!on()) return;
    withBuffer([&](Buffer& b) {
      if (room(b, 1)) push(b, RecordKind::Collective, nowNs(), id, bytes, addString(b, what));
    });
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

void communicatorFailed(const std::string& reason) noexcept {
  try {
    withBuffer([&](Buffer& b) {
      if (room(b, 1)) push(b, RecordKind::CommunicatorFailed, nowNs(), 0, 0, addString(b, reason));
    });
    nvtxNote("baton communicator failed: " + reason);
  } catch (...) {
    // Tracing is best effort: out of memory loses this record, nothing else.
  }
}

}  // namespace detail
}  // namespace baton::core::trace
