// IssueThread: the body of a device's issuing thread, one per device (StreamDevice starts it),
// which makes the driver calls of every queue's submissions.
//
// Threads: it runs on its own thread only. In turn for each queue registered with its
// DeviceIssuer, it takes released submissions in order and enqueues them with an Issuer, holding
// the queue's issueMutex; it hands the records to the queues' completion threads in batches, and
// sleeps on DeviceIssuer::parker when it has nothing to do, after a spin whose length adapts to
// the gaps between its work (SpinBudget).
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "clock.hpp"
#include "cpu.hpp"
#include "device_shared.hpp"
#include "issuer.hpp"
#include "notifier.hpp"
#include "queue_shared.hpp"
#include "spin_budget.hpp"
#include "stream_tuning.hpp"
#include "trace.hpp"

namespace baton::stream {
namespace {

// How long the issuing thread polls for work after it runs out, before it sleeps until a
// submission wakes it: a core::SpinBudget (spin_budget.hpp says how it adapts) between
// kIssueSpinNs and kIssueSpinMinNs (stream_tuning.hpp says why both, and what was measured). Its
// gaps run from the moment the thread ran out of work to the next work. Fewer than
// kIssueSpinMisses misses before it shrinks change nothing: the gaps of submit_micro's ping-pong
// (host waits between batches) and of frame_bench's frame straddle kIssueSpinNs (on the H100, up
// to a third of them longer), and a rule that shrank after two misses made the short gaps after
// them sleep too: in frame_bench the issuing thread then slept about twice as often, for no CPU
// saved per frame. A sleeping issuing thread's wake-up is why a gap that ended in one says
// nothing (docs/performance.md has the wake-up latencies).
constexpr core::SpinLimits kIssueSpinLimits{kIssueSpinNs, kIssueSpinMinNs, kIssueSpinMisses,
                                            kIssueSpinProbeEvery};

// Takes released submissions from the rings of a device's queues, each queue in order, and enqueues
// them (Issuer); also resumes suspended submissions once the completion thread saw their host calls
// run. The driver calls of a submission (and its native callbacks) run here, not on the thread that
// submitted it, which only pays for the scheduler and the hand-off. A queue whose next submission
// waits for a signal not yet recorded (by another device's issuing thread), or whose stream holds
// kMaxOpsInFlight operations, is passed over until that changes; the other queues go on.
class IssueThread {
 public:
  IssueThread(std::shared_ptr<DeviceIssuer> issuer, std::shared_ptr<DeviceShared> device)
      : issuer_(std::move(issuer)), device_(std::move(device)) {}

  void run() {
    InternalThreadScope internal;
    // The device's context stays current on this thread. A failure here is not the end of it:
    // the first submission tries again, and fails with the error if it fails again
    // (Issuer::useContext).
    issuer_->contextCurrent = device_->driver.setCurrent(device_->config.context).ok();
    // idleSince: when the current spin began; gapSince: when the thread last ran out of work
    // (across spins and sleeps, until work comes); gapSlept: a spin of this gap timed out.
    uint64_t idleSince = 0, gapSince = 0, version = ~uint64_t{0};
    bool gapSlept = false;
    std::vector<std::shared_ptr<QueueShared>> queues;
    for (;;) {
      if (issuer_->version.load(std::memory_order_acquire) != version) {
        std::lock_guard<core::Mutex> lock(issuer_->mutex);
        version = issuer_->version.load(std::memory_order_relaxed);
        queues = issuer_->queues;
      }
      bool worked = false, waiting = false;
      // The gap ends where the pass that finds work begins, not after that work. The clock is
      // read only in a gap (a pass during work reads it when it needs it: passNow).
      passNow_ = gapSince != 0 ? core::nowNs() : 0;
      for (const std::shared_ptr<QueueShared>& q : queues) serve(*q, &worked, &waiting);
      if (worked) {
        if (gapSince != 0 && !gapSlept) spin_.caught(passNow_ - gapSince);
        idleSince = gapSince = 0;
        gapSlept = false;
        continue;
      }
      // Out of work: hand every record over before polling or sleeping. The outboxes are
      // written by this thread only.
      for (const std::shared_ptr<QueueShared>& q : queues) {
        if (!q->outboxFilled.load(std::memory_order_relaxed)) continue;
        std::lock_guard<core::Mutex> lock(q->issueMutex);
        q->flushOutbox();
      }
      if (issuer_->stop.load(std::memory_order_acquire) && queues.empty()) return;
      // Poll a while (SpinBudget), then sleep until a post, a resume request, room on a stream,
      // or a queue's end wakes it; a signal of another device is polled for.
      const uint64_t now = core::nowNs();
      if (idleSince == 0) idleSince = now;
      if (gapSince == 0) gapSince = now;
      if (now - idleSince < spin_.ns()) {
        if (now - idleSince < kSpinBeforeYieldNs)
          for (int i = 0; i < 16; ++i) core::cpuRelax();
        else
          std::this_thread::yield();  // leave the core to runnable threads meanwhile
        continue;
      }
      spin_.timedOut();
      gapSlept = true;
      issuer_->idle.store(true, std::memory_order_seq_cst);
      bool work = issuer_->stop.load(std::memory_order_seq_cst) ||
                  issuer_->version.load(std::memory_order_seq_cst) != version;
      for (const std::shared_ptr<QueueShared>& q : queues)
        work |= q->issueWork() || q->stop.load(std::memory_order_seq_cst);
      if (!work) {
        const uint64_t sleptAt = core::trace::on() ? core::nowNs() : 0;
        issuer_->parker.park(Deadline::never());
        core::trace::span(core::trace::kIssueSleep, 0, sleptAt);
      } else if (waiting) {
        issuer_->parker.park(Deadline::after(kPollMinNs));
      }
      issuer_->idle.store(false, std::memory_order_seq_cst);
      idleSince = 0;
    }
  }

 private:
  // One pass over a queue: resume, deferred submissions, then released ones, as long as they
  // are ready; then the queue's end, when it is going.
  void serve(QueueShared& q, bool* worked, bool* waiting) {
    const bool timed = gIssueTiming.load(std::memory_order_relaxed);
    const uint64_t passStart = timed ? core::nowNs() : 0;
    const bool resume = q.resumePending.load(std::memory_order_acquire);
    Issue* next = q.peekIssue();
    bool issued = false;
    if (next || resume || q.suspended) {
      core::Notifier::Scope scope;  // declared first: it drains after the lock is released
      std::lock_guard<core::Mutex> lock(q.issueMutex);
      Issuer issuer(q, &issuer_->contextCurrent, timed);
      if (resume && q.resumePending.exchange(false, std::memory_order_acq_rel)) {
        if (q.continuation) issuer.resume();
        issued = true;
      }
      if (!q.continuation && !q.deferred.empty()) {
        size_t before = q.deferred.size();
        if (!issuer.drainDeferred()) *waiting = true;
        issued |= q.deferred.size() != before;
      }
      for (size_t n = 0; next && n < kIssueBurst; ++n, next = q.peekIssue()) {
        const bool behind = q.continuation || !q.deferred.empty();
        if (!behind && !issuer.ready(*next)) {
          *waiting = true;
          break;
        }
        Issue e;
        q.popIssue(&e);
        q.ring.prefetchNext();
        if (behind)
          q.deferred.push_back(std::move(e));  // behind a suspended submission, in order
        else
          issuer.start(std::move(e));
        issued = true;
      }
      q.suspended = q.continuation || !q.deferred.empty();
      if (issued) *worked = true;
    }
    // Records go to the completion thread in batches (kOutboxBatch), at the latest after
    // kOutboxMaxAgeNs (also while other queues keep this thread busy), at once while a host thread
    // sleeps until that thread observes a completion (it may need one of them), and all of them
    // when this thread runs out of work (run). The outbox is filled by this thread only (a
    // submitting thread that issues directly may flush it, under issueMutex: outboxFilled). The age
    // is looked at in every pass that issued nothing for the queue, and in every kAgeCheckPasses-th
    // one that did: a clock read per pass was a measurable share of this thread's time in the live
    // ping-pong on the H100 (docs/performance.md, 'Measurements behind design choices').
    if (q.outboxFilled.load(std::memory_order_relaxed) &&
        (q.waker->sleepers.load(std::memory_order_relaxed) != 0 ||
         ((!issued || ++q.issuedPasses % kAgeCheckPasses == 0) &&
          passNow() - q.outboxSince.load(std::memory_order_relaxed) >= kOutboxMaxAgeNs))) {
      std::lock_guard<core::Mutex> lock(q.issueMutex);
      q.flushOutbox();
    }
    if (timed && issued) [[unlikely]]
      Counters::add(kIssueBusyNs, core::nowNs() - passStart);
    if (q.stop.load(std::memory_order_acquire) && !q.drained.load(std::memory_order_relaxed) &&
        finished(q)) {
      unregister(q);
      *worked = true;  // the queue list changed
    }
  }

  // Nothing is left to issue: no suspended submission (the completion thread would ask to
  // resume it) and nothing deferred or posted.
  static bool finished(QueueShared& q) {
    std::lock_guard<core::Mutex> lock(q.issueMutex);
    q.flushOutbox();
    return !q.continuation && q.deferred.empty() && !q.issueWork();
  }

  void unregister(QueueShared& q) {
    issuer_->remove(&q);
    q.drained.store(true, std::memory_order_seq_cst);
    q.drainedParker.unpark();
  }

  // The time, read once per pass over the queues and only when needed.
  uint64_t passNow() {
    if (passNow_ == 0) passNow_ = core::nowNs();
    return passNow_;
  }

  std::shared_ptr<DeviceIssuer> issuer_;
  std::shared_ptr<DeviceShared> device_;
  uint64_t passNow_ = 0;
  core::SpinBudget spin_{kIssueSpinLimits};
};

}  // namespace
}  // namespace baton::stream
