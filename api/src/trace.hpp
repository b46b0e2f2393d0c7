// The timeline trace: what baton's queues, threads and semaphores did, as a Chrome trace-event JSON
// file that the Perfetto UI (ui.perfetto.dev) and chrome://tracing open, and that
// tools/baton-trace-render draws as an SVG.
//
// Enabling. BATON_TRACE=<path> in the environment, or InstanceCreateInfo::tracePath, starts a
// trace session when an instance is created while none runs (the environment wins over the
// option). The file is written when the last live instance is destroyed, at process exit, and on
// flush(). A session started by the option ends at that write (a later instance with a path starts
// a new one); one started by BATON_TRACE lasts until the process exits, each write holding
// everything since it began. start()/stop() run a session explicitly (benchmarks, tests).
//
// Format (trace_json.cpp writes it): {"traceEvents": [...], "displayTimeUnit": "ns",
// "otherData": {...}}; every event has ph, ts (µs since the session began, CLOCK_MONOTONIC, ns
// resolution), pid and tid. Tracks:
//   - process "host threads (<program> <pid>)" (the real pid): one track per thread that did
//     something (tid: the OS thread id), named after the thread (baton's own are baton-issue,
//     baton-complete, baton-host, baton-bridge, and for collectives baton-caller and baton-watch).
//     Slices: "submit" (X, the core submit call, args: queue and submission ids), "wait" and
//     "waitIdle" (B/E, host waits: entries, mode, result), "host call #N" and "native #N" (B/E,
//     where the callback ran; "library call #N", the device's collective caller thread
//     enqueueing submission N's collectives), "signal" (X, a host signal), "issue #N" (X, a stream
//     queue's driver calls for submission N). Instants (i): "semaphore failed" (reason), "device
//     lost" and "communicator failed" (global, reason).
//   - process "baton queues": per queue a track named after its label ("queue 0 of device #1
//     (host)") with one slice per submission, "#N" (X), from when it started executing —
//     host queues: exactly; stream queues: as observed, max(issued, the previous submission's
//     completion, the completion of the signals it waited for GPU-side) — to its completion as
//     observed (on stream queues, or when a thread first saw one of its signal values reached);
//     args: id, queue, waits and signals ({semaphore, name, value}), submitted_us, released_us,
//     issued_us, completed_us, held, status ("ok", "failed", "in flight" when the file was
//     written) and error. A submission with collectives has, inside its slice, one slice per
//     collective ("allReduce float32 x 1024", cat "collective"; args: what (communicator, rank,
//     op, type, count) and bytes). A second
//     track, "<label> · held", has a slice "#N held" (X) for each submission the scheduler held,
//     from when it reached the head of the queue to its release. A failed submission also gets
//     an instant "#N failed" on the first track.
//   - flows (s, then f with bp "e", cat "dependency"): from the end of the slice of the
//     submission (or the host "signal" slice) whose signal released a wait, to the waiting
//     submission — the end of its held slice (its release) when the scheduler saw the value
//     reached; the start of its execution slice when it never was held, or when its queue waited
//     GPU-side on the recorded signal — or to the end of the host wait. Both ends carry args:
//     semaphore, name, waited (the wait's value), signalled (the value that released it, >=
//     waited), from and to (submission ids; from 0 for a host signal, to 0 for a host wait).
//     The signal that released a wait: for a wait met GPU-side, the recorded signal with the
//     smallest value >= it published before the release; otherwise the first value >= it that
//     the semaphore reached. A value that no traced submission or host signal gave (a Vulkan
//     timeline's, forwarded by the interop bridge; a signal submitted before the session) gets
//     a short "signal ... (external)" slice where it was reached, for its arrows. Waits already
//     met when submit() was called are not recorded (the submission never waited).
//   - metadata (M): process_name, thread_name, thread_sort_index.
//
// Cost. Off: every hook is inline, and costs one relaxed atomic load (on()) or a test of a field
// the caller holds anyway (Submission::traceId, 0 when not traced) and a predictable branch. On:
// a record is appended to the calling thread's buffer (its own lock, which only the writer ever
// contends; no global lock per event) with a CLOCK_MONOTONIC timestamp; the JSON is built only
// when the file is written. Each thread keeps at most kMaxRecordsPerThread records per session;
// beyond that, records are dropped and counted (otherData.dropped_records).
//
// With NVTX3's headers (found next to cuda.h: BATON_TRACE_NVTX), a traced session also emits
// NVTX ranges on the calling thread (host calls, native callbacks, host waits, waitIdle) and
// marks (failures, device loss), which Nsight Systems shows when it injects its tool; NVTX3 is
// header-only and loads that tool at run time.
//
// Threads: every hook may run on any thread, with any baton lock held: it takes the calling
// thread's buffer lock (and, on the thread's first record, the session lock to register the
// buffer), nothing else, and never calls back into baton. Session control (instanceCreated,
// instanceDestroyed, start, stop, flush, pause) takes the session lock; the file is written under
// it, on the thread that destroyed the last instance (or called stop/flush, or exits).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "backend.hpp"
#include "status.hpp"

namespace baton::core {

class Queue;
class Semaphore;
class Device;
struct HostWaitEntry;

namespace trace {

// Whether a session runs. Relaxed: a hook that races with the start or end of a session may
// record or not; the session's generation (trace.cpp) keeps records of different sessions apart.
inline std::atomic<bool> gOn{false};
inline bool on() noexcept { return gOn.load(std::memory_order_relaxed); }

constexpr size_t kMaxRecordsPerThread = size_t{1} << 20;

// ---- sessions (trace.cpp) ------------------------------------------------------------------

// An instance is being created with InstanceCreateInfo::tracePath (may be null): starts a session
// from BATON_TRACE or that path when none runs. Counts live instances.
void instanceCreated(const char* tracePath) noexcept;
// An instance object is gone: when it was the last, writes the file (and ends a session started
// by an instance option).
void instanceDestroyed() noexcept;
// Starts a session writing to `path` (false when one already runs, or `path` is empty).
bool start(const std::string& path);
// Writes the file and ends the session.
Status stop();
// Writes everything recorded so far to the session's file; the session goes on.
Status flush();
// The session's file, "" when none runs.
std::string path();
// Stops (true) or resumes (false) recording while the session goes on, so that a benchmark can
// compare its figures with the hooks on and off in one run (cuda_bench --trace). Nothing when no
// session runs.
void pause(bool paused);

// ---- hooks: the out-of-line parts (trace.cpp) -----------------------------------------------

namespace detail {
uint64_t submitted(Queue& queue, Submission& sub) noexcept;
void submitEnd(uint64_t firstId, uint32_t count) noexcept;
void released(const Submission& sub) noexcept;
void mark(uint32_t kind, uint64_t id) noexcept;
void failed(uint64_t id, const Status& why) noexcept;
void callBegin(uint32_t kind, uint64_t id) noexcept;
void callEnd(uint32_t kind, uint64_t id) noexcept;
void hostWaitBegin(const std::vector<HostWaitEntry>& entries, WaitMode mode) noexcept;
void hostWaitEnd(Result result) noexcept;
void waitIdleBegin(const std::string& label) noexcept;
void waitIdleEnd(Result result) noexcept;
void hostSignal(const Semaphore& s, uint64_t value, uint64_t beginNs) noexcept;
void reached(const Semaphore& s, uint64_t value) noexcept;
void published(const Semaphore& s, uint64_t value) noexcept;
void semaphoreFailed(const Semaphore& s, Result code, const std::string& reason) noexcept;
void deviceLost(const std::string& label, const std::string& reason) noexcept;
void collective(uint64_t id, uint64_t bytes, const std::string& what) noexcept;
void communicatorFailed(const std::string& reason) noexcept;
void span(uint32_t kind, uint64_t id, uint64_t beginNs, uint64_t count) noexcept;
enum MarkKind : uint32_t { kIssueBegin, kIssued, kCompleted };
}  // namespace detail

// ---- hooks ----------------------------------------------------------------------------------

// The core submit (api_queue.cpp): gives `sub` its trace id and records its queue, waits and
// signals; returns the id (0 when off). submitEnd closes the "submit" slice of `count`
// submissions that began with id `firstId` (nothing when 0).
inline uint64_t submitted(Queue& queue, Submission& sub) {
  if (!on()) [[likely]]
    return 0;
  return detail::submitted(queue, sub);
}
inline void submitEnd(uint64_t firstId, uint32_t count) {
  if (firstId) [[unlikely]]
    detail::submitEnd(firstId, count);
}
// The scheduler hands `sub` to its backend (queue.cpp): the waits left in it are those met by a
// recorded signal (GPU-side) or an imported semaphore; the others were reached.
inline void released(const Submission& sub) {
  if (sub.traceId) [[unlikely]]
    detail::released(sub);
}
// The backend began issuing the submission (stream: its driver calls; host: not used).
inline void issueBegin(uint64_t id) {
  if (id) [[unlikely]]
    detail::mark(detail::kIssueBegin, id);
}
// The backend issued the submission: stream queues made its driver calls; host queues start
// executing it (its waits for recorded device signals met).
inline void issued(uint64_t id) {
  if (id) [[unlikely]]
    detail::mark(detail::kIssued, id);
}
// The backend observed the submission complete (successfully or not: failed() says which).
inline void completed(uint64_t id) {
  if (id) [[unlikely]]
    detail::mark(detail::kCompleted, id);
}
// The submission's signals failed with `why` (failSignals).
inline void failed(uint64_t id, const Status& why) {
  if (id) [[unlikely]]
    detail::failed(id, why);
}
// What runs on a thread inside a submission (callBegin/callEnd): a host call, a native callback,
// or a collective library's calls (impl/stream/collectives.cpp: the device's caller thread
// enqueueing a group; its slice is "library call #N").
enum CallKind : uint32_t { kHostCall = 0, kNativeCall = 1, kLibraryCall = 2 };
// A call of `kind` for submission `id` runs on this thread.
inline void callBegin(CallKind kind, uint64_t id) {
  if (id) [[unlikely]]
    detail::callBegin(kind, id);
}
inline void callEnd(CallKind kind, uint64_t id) {
  if (id) [[unlikely]]
    detail::callEnd(kind, id);
}
// How one of baton's threads waited (span): what the stream backend's threads did between
// their work, so that a trace shows where a round trip's latency went. Slices "<thread>: <what>"
// (cat "thread") on the thread's track; `id` the submission the wait was for, or 0.
enum SpanKind : uint32_t {
  kCompletionSpin,    // the completion thread polled the oldest record's event until it completed
  kCompletionDriver,  // ... slept in the driver on it (a blocking-sync event)
  kCompletionPoll,    // ... parked between polls, or gave up its spin to look at its inbox
  kCompletionLazy,    // ... parked lazily (nothing needed its records, or none in flight)
  kCompletionIdle,    // ... slept until a push woke it (idle)
  kIssueSleep,        // the issuing thread slept until a submission woke it
  kCallerSleep,       // a collective caller thread slept until a group was posted
  kCallerWait,        // the issuing thread waited for the caller's group to return
  kCompletionNext,    // the completion thread polled its inbox after collectives
  // Not waits, but work that a trace shows the same way (graph command buffers; `count` the
  // commands they cover):
  kGraphLaunch,  // the issuing thread launched a graph of submission `id`
  kGraphBuild,   // CommandBuffer::end built (or updated) a recording's graphs, on its thread; or
                 // a graph with collectives was built at its first launch (submission `id`)
};
// A span of `kind` from beginNs (nowNs()) until now, on this thread; `count` shown with it when
// not 0.
inline void span(SpanKind kind, uint64_t id, uint64_t beginNs, uint64_t count = 0) {
  if (on()) [[unlikely]]
    detail::span(kind, id, beginNs, count);
}

// A host signal of `s` to `value` succeeded; it began at beginNs (nowNs()).
inline void hostSignal(const Semaphore& s, uint64_t value, uint64_t beginNs) {
  if (on()) [[unlikely]]
    detail::hostSignal(s, value, beginNs);
}
// The value of `s` rose to `value` (under its lock, so a semaphore's records are in value order).
inline void reached(const Semaphore& s, uint64_t value) {
  if (on()) [[unlikely]]
    detail::reached(s, value);
}
// A recorded device signal of `value` was attached to `s` (Semaphore::addTimepoint).
inline void published(const Semaphore& s, uint64_t value) {
  if (on()) [[unlikely]]
    detail::published(s, value);
}
// `s` failed (its first failure).
inline void semaphoreFailed(const Semaphore& s, Result code, const std::string& reason) {
  if (on()) [[unlikely]]
    detail::semaphoreFailed(s, code, reason);
}
// A device was marked lost.
inline void deviceLost(const std::string& label, const std::string& reason) {
  if (on()) [[unlikely]]
    detail::deviceLost(label, reason);
}

// Submission `id` (traced) runs a collective: `what` says which (communicator, rank, op, type,
// count); `bytes` is what this rank sends. A slice inside the submission's on its queue's track.
inline void collective(uint64_t id, uint64_t bytes, const std::string& what) {
  if (id) [[unlikely]]
    detail::collective(id, bytes, what);
}
// A communicator failed (an instant, global: every queue that used it is affected).
inline void communicatorFailed(const std::string& reason) {
  if (on()) [[unlikely]]
    detail::communicatorFailed(reason);
}

// A host wait (hostWait) as a B/E pair on the calling thread.
class HostWaitSlice {
 public:
  HostWaitSlice(const std::vector<HostWaitEntry>& entries, WaitMode mode) {
    if (on()) [[unlikely]] {
      active_ = true;
      detail::hostWaitBegin(entries, mode);
    }
  }
  ~HostWaitSlice() {
    if (active_) [[unlikely]]
      detail::hostWaitEnd(result_);
  }
  HostWaitSlice(const HostWaitSlice&) = delete;
  HostWaitSlice& operator=(const HostWaitSlice&) = delete;
  void setResult(Result r) noexcept { result_ = r; }

 private:
  bool active_ = false;
  Result result_ = Result::Success;
};

// Queue::waitIdle / Device::waitIdle as a B/E pair on the calling thread.
class WaitIdleSlice {
 public:
  explicit WaitIdleSlice(const std::string& label) {
    if (on()) [[unlikely]] {
      active_ = true;
      detail::waitIdleBegin(label);
    }
  }
  ~WaitIdleSlice() {
    if (active_) [[unlikely]]
      detail::waitIdleEnd(result_);
  }
  WaitIdleSlice(const WaitIdleSlice&) = delete;
  WaitIdleSlice& operator=(const WaitIdleSlice&) = delete;
  void setResult(Result r) noexcept { result_ = r; }

 private:
  bool active_ = false;
  Result result_ = Result::Success;
};

}  // namespace trace
}  // namespace baton::core
