// The process-wide counters behind stats() (stream_backend.hpp): events, timepoints and records
// of every device of every stream backend, which benchmarks print to show that the event pool and
// the in-flight bookkeeping stay bounded.
//
// Threads: every thread of the machinery counts (submitting, issuing and completion threads, and
// whichever thread drops a timepoint), each in a block of its own (Counters::add: a plain load and
// store, no lock, no shared cache line); stats() sums the blocks under the registry's mutex.
// gEventsCreated is one shared atomic: the pools create and destroy events rarely (EventPool).
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace baton::stream {
namespace {

// What stats() reports. Events in use, timepoints and records in flight are each counted as two
// sums that only grow (what was taken or made, what was returned or finished), and every thread
// counts in a block of its own: a plain load and store of its own cache line, where shared counters
// moved their cache line between the submitting, issuing and completion threads on every
// submission. stats() sums the blocks of live threads and what exited threads left.
enum Counter : size_t {
  kEventsTaken,     // from a pool
  kEventsReturned,  // to a pool
  kTimepointsMade,
  kTimepointsGone,
  kRecordsPushed,  // to a completion thread
  kRecordsFinished,
  kPublishedLate,     // see Stats::timepointsPublishedLate
  kDirectIssued,      // submissions issued by their submitting thread (see Stats::directIssued)
  kDirectAfterQuery,  // of those, after a query found the queue ran dry (Stats::directAfterQuery)
  kPosted,            // submissions posted to an issuing thread
  kDirectBehind,      // not issued directly: the issuing thread holds some of the queue
  kDirectNotReady,    // not issued directly: a wait not yet recorded, or the stream full
  kDirectInBurst,     // not issued directly: one of a burst to a queue that runs dry as fed
  kLazyParks,         // completion threads parked with records in flight that nothing needed
  kCompletionLooks,   // looks for completed records (completion threads, retireOnSubmit)
  kHostCallParks,     // completion threads parked until host calls ran (Completion::awaitHostCalls)
  kRepublished,       // host-published records turned into timepoints (publishBehindHostCalls)
  kRetiredOnSubmit,   // records retired by direct issuers (Completion::retireOnSubmit)
  kHostWaitSpins,     // host waits on a recorded event that spun on it (StreamTimepoint::wait)
  kHostWaitSleeps,    // host waits on an event that slept until a completion thread woke them
  // Graph command buffers (graphs.hpp; see Stats::graphInstantiations).
  kGraphInstantiations,
  kGraphUpdates,
  kGraphUpdatesRefused,
  kGraphLaunches,
  // Issue timing (setIssueTiming; see Stats::issueTimed): counted by the issuing threads only.
  kIssueTimed,        // submissions started
  kIssueBusyNs,       // in passes over a queue that issued
  kIssueDriverCalls,  // waits, commands and event records
  kIssueDriverNs,     // in those calls
  kCounterCount
};

class Counters {
 public:
  static void add(Counter c, uint64_t n) noexcept {
    Block* b = tBlock_;
    if (!b) [[unlikely]]
      b = attach();
    if (!b) {  // the thread's block is gone (thread exit): count in the shared sums
      registry().exited[c].fetch_add(n, std::memory_order_relaxed);
      return;
    }
    b->v[c].store(b->v[c].load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  // Every counter, returned ones read before taken ones (under one lock, so no block is folded
  // meanwhile): a retirement counted here had its issue counted before it.
  static void sum(uint64_t out[kCounterCount]) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (size_t pass = 0; pass < 2; ++pass) {
      for (size_t c = 0; c < kCounterCount; ++c) {
        const bool retired = c == kEventsReturned || c == kTimepointsGone || c == kRecordsFinished;
        if (retired != (pass == 0)) continue;
        uint64_t total = r.exited[c].load(std::memory_order_seq_cst);
        for (Block* b : r.live) total += b->v[c].load(std::memory_order_seq_cst);
        out[c] = total;
      }
    }
  }

 private:
  struct Block {
    std::atomic<uint64_t> v[kCounterCount] = {};
  };
  struct Registry {
    std::mutex mutex;
    std::vector<Block*> live;
    std::atomic<uint64_t> exited[kCounterCount] = {};
  };
  // Never destroyed: threads may count after static destructors ran.
  static Registry& registry() {
    static Registry* r = new Registry;
    return *r;
  }
  struct Owner {
    alignas(64) Block block;
    Owner() {
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      r.live.push_back(&block);
    }
    ~Owner() {
      tBlock_ = nullptr;
      tGone_ = true;
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      for (size_t c = 0; c < kCounterCount; ++c)
        r.exited[c].fetch_add(block.v[c].load(std::memory_order_relaxed),
                              std::memory_order_relaxed);
      r.live.erase(std::find(r.live.begin(), r.live.end(), &block));
    }
  };
  [[gnu::noinline]] static Block* attach() noexcept {
    if (tGone_) return nullptr;
    thread_local Owner owner;
    tBlock_ = &owner.block;
    return tBlock_;
  }
  // Through a trivial pointer in the initial-exec TLS model, as core::Recycled does.
  static inline thread_local Block* tBlock_ __attribute__((tls_model("initial-exec"))) = nullptr;
  static inline thread_local bool tGone_ __attribute__((tls_model("initial-exec"))) = false;
};

std::atomic<uint64_t> gEventsCreated{0};

// Whether the devices' issuing threads time their work (setIssueTiming). Read once per pass.
std::atomic<bool> gIssueTiming{false};

}  // namespace
}  // namespace baton::stream
