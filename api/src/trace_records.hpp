// What the timeline trace's hooks record (trace.cpp) and what the JSON writer reads
// (trace_json.cpp): fixed-size records in per-thread buffers, each thread's in the order it made
// them, and the strings some of them refer to. Internal to the trace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace baton::core::trace {

enum class RecordKind : uint32_t {
  Submitted,        // a: submission id, b: queue track, small: waits, c: signals (Operands follow)
  Operand,          // a: semaphore key, b: value
  SubmitEnd,        // a: first submission id, b: how many the call submitted
  Released,         // a: id, small: waits left in it (Operands follow)
  IssueBegin,       // a: id
  Issued,           // a: id
  Completed,        // a: id
  Failed,           // a: id, b: Result, c: string (reason)
  CallBegin,        // a: id, small: trace::CallKind (host call, native callback, library call)
  CallEnd,          // a: id, small: as CallBegin
  HostWaitBegin,    // small: WaitMode, b: entries (Operands follow)
  HostWaitEnd,      // b: Result
  WaitIdleBegin,    // c: string (queue or device label)
  WaitIdleEnd,      // b: Result
  HostSignal,       // a: semaphore key, b: value, c: when the call began (ns); ts: when it ended
  Reached,          // a: semaphore key, b: value
  Published,        // a: semaphore key, b: value
  SemaphoreFailed,  // a: semaphore key, b: Result, c: string (reason)
  DeviceLost,       // c: string ("<label>: <reason>")
  SemaphoreName,    // a: semaphore key, c: string
  QueueName,        // a: queue track, b: BackendKind, c: string (label)
  Collective,       // a: submission id, b: bytes, c: string (what)
  CommunicatorFailed,  // c: string (reason)
  Span,                // small: trace::SpanKind, a: submission id or 0, c: when it began (ns)
};

struct Record {
  uint64_t ts;  // CLOCK_MONOTONIC ns (core::nowNs)
  uint64_t a, b, c;
  RecordKind kind;
  uint32_t small;
};

// One thread's records of a session.
struct ThreadRecords {
  uint32_t tid = 0;  // the OS thread id
  std::string name;  // the thread's name
  std::vector<Record> records;
  std::vector<std::string> strings;
  uint64_t dropped = 0;
};

// Everything a session recorded, as the JSON writer gets it.
struct Snapshot {
  uint64_t t0 = 0;  // the session's start (ns): ts 0
  uint32_t pid = 0;
  std::string processName;
  std::vector<ThreadRecords> threads;
};

// The Chrome trace-event JSON of a snapshot (the format of trace.hpp).
std::string toJson(const Snapshot& snapshot);

}  // namespace baton::core::trace
