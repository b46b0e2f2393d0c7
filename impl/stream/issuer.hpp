// Issuer: the driver calls of one submission on its queue's stream (GPU-side waits, commands, host
// calls, the completion event) and the publication of its signals, with the suspension and
// resumption of a submission around its host calls.
//
// Threads: the device's issuing thread (IssueThread::serve), or a submitting thread that issues
// directly (StreamQueue::finishDirect), with the queue's issueMutex held and the device's context
// current (useContext: a submission that would run without it fails); the completion thread only
// builds hostCallFailure's status.
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "backend.hpp"
#include "device_shared.hpp"
#include "graphs.hpp"
#include "host_calls.hpp"
#include "issue_ring.hpp"
#include "objects.hpp"
#include "queue_shared.hpp"
#include "semaphore.hpp"
#include "stream_counters.hpp"
#include "stream_driver.hpp"
#include "stream_interop.hpp"
#include "stream_timepoint.hpp"
#include "trace.hpp"

namespace baton::stream {
namespace {

// Enqueues submissions on a queue's stream, in queue order, on the device's issuing thread
// (IssueThread) with QueueShared::issueMutex held.
//
// Host calls and the commands after them: "commands after a failed host call do not run" cannot
// be decided when the host call is enqueued, so a submission with GPU commands (or native
// callbacks) after a host call is suspended there: the host call and an event behind it are
// enqueued, the rest of the submission waits in QueueShared::continuation (and later
// submissions of the queue in `deferred`), and the completion thread resumes it once the event
// completes — with the rest of its commands, or with its signals failed. This costs a host
// round trip, only for such submissions; a host call at the end of a submission costs none.
class Issuer {
 public:
  // `contextCurrent`: whether the device's context is current on the calling thread (the
  // issuing thread's DeviceIssuer::contextCurrent, or a direct issue's ContextScope). `timed`:
  // count the submissions started and time the driver calls (the issuing thread, while
  // setIssueTiming is on).
  Issuer(QueueShared& q, bool* contextCurrent, bool timed = false)
      : q_(q), d_(q.driver), current_(contextCurrent), timed_(timed) {}
  // Only for hostCallFailure (the completion thread).
  explicit Issuer(QueueShared& q) : q_(q), d_(q.driver), current_(nullptr) {}

  void start(Issue&& e) {
    core::trace::issueBegin(e.submission->traceId);
    if (timed_) [[unlikely]]
      Counters::add(kIssueTimed, 1);
    Record rec;
    rec.submission = std::move(e.submission);
    rec.published = std::move(e.timepoint);
    rec.hostCallCount = e.hostCalls;
    rec.hostPublish = e.hostPublish;
    rec.urgent = e.urgent;
    rec.externalWaits = e.gated;
    rec.externalSignals = e.externalSignals;
    rec.number = e.number;
    if (q_.coreDevice->lost()) {
      failUnrecorded(rec, q_.coreDevice->lostStatus());
      return;
    }
    if (Status st = useContext(); !st.ok()) {  // nothing enqueued yet
      failUnrecorded(rec, st);
      return;
    }
    bool waitFailed = false;
    rec.ops += static_cast<uint32_t>(rec.submission->waits.size());
    Status st = enqueueWaits(*rec.submission, &waitFailed);
    // The waited timepoints stay with the submission until it completes (their events stay out
    // of the pool that long): dropping them here would write to cache lines that other threads
    // use, on the issuing path.
    if (!st.ok()) {  // nothing enqueued yet
      failUnrecorded(rec, st, /*issuing=*/!waitFailed);
      return;
    }
    proceed(std::move(rec));
  }

  // The suspension record completed: the host calls before it ran.
  void resume() {
    Record rec = std::move(*q_.continuation);
    q_.continuation.reset();
    core::trace::issueBegin(rec.submission->traceId);
    int32_t failed = rec.hostCalls->firstError.load(std::memory_order_acquire);
    if (failed != 0) {
      finish(std::move(rec), hostCallFailure(failed));  // the rest does not run
      return;
    }
    if (q_.coreDevice->lost()) {  // the rest is not enqueued on a lost device (failAll)
      finish(std::move(rec), q_.coreDevice->lostStatus());
      return;
    }
    if (Status st = useContext(); !st.ok()) {
      finish(std::move(rec), st);  // the rest does not run; what ran is tracked by the record
      return;
    }
    proceed(std::move(rec));
  }

  // Whether `e` can be issued now without waiting: every timepoint it waits for GPU-side is
  // recorded (the device's issuing thread must not wait for a signal it has yet to record
  // itself), and the stream is not over kMaxOpsInFlight.
  bool ready(const Issue& e) {
    for (const core::Submission::Wait& w : e.submission->waits) {
      if (!w.timepoint) continue;
      auto* tp = static_cast<const StreamTimepoint*>(w.timepoint.get());
      // This queue's own: recorded earlier on this thread, in queue order.
      if (tp->stream() != q_.stream && !tp->recorded()) return false;
    }
    return !q_.overOpsLimit();
  }

  // Issues what waited behind a suspended submission, until the next suspension or one that is
  // not ready. Returns false when it stopped at one that is not ready.
  bool drainDeferred() {
    while (!q_.continuation && !q_.deferred.empty()) {
      if (!ready(q_.deferred.front())) return false;
      Issue e = std::move(q_.deferred.front());
      q_.deferred.pop_front();
      start(std::move(e));
    }
    return true;
  }

  Status hostCallFailure(int32_t code) const {
    return core::error(Result::ErrorHostCallFailed, "a hostCall on %s returned %s",
                       q_.label.c_str(), resultName(static_cast<Result>(code)));
  }

 private:
  // The device's context, current on this thread (DeviceIssuer::contextCurrent) unless making it
  // current failed or a native callback changed it: then it is made current again here. When
  // that fails, the submission at hand fails with the driver's error (cuCtxSetCurrent /
  // hipSetDevice), its signals with it, as for any failed driver call; it makes no driver call in
  // another context (which would act on another device). The next submission tries again.
  Status useContext() {
    bool& current = *current_;
    if (current && !tContextReplaced) [[likely]]
      return Status();
    tContextReplaced = false;  // a scope for another device failed to restore ours (ContextScope)
    Status st = d_.setCurrent(q_.device->config.context);
    current = st.ok();
    return st;
  }

  // After user code (a native callback), which may have changed the current context
  // (cudaSetDevice): makes the device's context current again when it is not (or when the
  // thread's current context cannot be read).
  Status reapplyContext() {
    void* now = nullptr;
    if (d_.getCurrent(&now).ok() && now == q_.device->config.context) return Status();
    *current_ = false;
    return useContext();
  }

  void proceed(Record&& rec) {
    bool suspend = false;
    Status st = enqueueWork(rec, &suspend);
    if (st.ok() && suspend) {
      Record marker;
      st = recordEvent(&marker.timepoint);
      if (st.ok()) {
        marker.ops = 1;
        marker.resumes = true;
        marker.urgent = true;
        q_.continuation.emplace(std::move(rec));
        q_.push(std::move(marker));
        return;
      }
    }
    finish(std::move(rec), std::move(st));
  }

  Status recordEvent(Ref<StreamTimepoint>* out, bool gated = false) {
    void* event = nullptr;
    BATON_TRY(q_.takeEvent(q_.eventStash, &event));
    Status st = driverCall([&] { return d_.eventRecord(event, q_.stream); });
    if (!st.ok()) {
      q_.device->pool.release(event);
      return st;
    }
    *out = Ref<StreamTimepoint>::adopt(new StreamTimepoint(
        q_.device.get(), q_.waker.get(), q_.coreDevice, event, q_.stream, gated, true));
    return Status();
  }

  // Records the submission's completion event and hands it to the completion thread; `st` is
  // the outcome of enqueueing (an error fails the signals now, but the record still keeps what
  // the already enqueued work uses alive until the event completes).
  void finish(Record&& rec, Status st) {
    core::Submission& sub = *rec.submission;
    core::trace::issued(sub.traceId);
    // Signals go out as timepoints unless the completion thread must publish them (host calls,
    // see below). Only then may imported semaphores be signalled GPU-side, and before the
    // record: when the event completes, the OS semaphore already has the value, so forwarding
    // it from the host (the mirror's onReached, after reach()) finds nothing left to do.
    const bool hostPublish = rec.hostPublish;
    if (st.ok() && !hostPublish && rec.externalSignals) st = signalExternals(sub);
    rec.ops += 1 + static_cast<uint32_t>(sub.signals.size());  // the record (and signals)
    Status rs;
    const bool atRelease = st.ok() && rec.published;  // its timepoint is already published
    if (atRelease) {
      rs = driverCall([&] { return d_.eventRecord(rec.published->event(), q_.stream); });
      if (rs.ok()) rec.timepoint = std::move(rec.published);
    } else {
      rs = recordEvent(&rec.timepoint, rec.externalWaits);
    }
    if (!rs.ok()) {
      // Nothing can track the enqueued work: wait for the stream so that what it uses outlives
      // it (only after a driver error, in practice a lost device).
      if (!d_.streamSynchronize(q_.stream).ok())
        keepForDriver(std::move(rec.hostCalls));  // failAll
      for (const core::Allocation& a : rec.freeAfter) q_.device->freeAllocation(a);
      failUnrecorded(rec, st.ok() ? rs : st);
      return;
    }
    if (!st.ok()) {
      if (rec.collectives.take()) fail(sub, st);  // else a communicator failure failed them
      q_.dropRelease(rec.published, hostPublish, st);
      rec.signalsDone = true;
    } else if (hostPublish) {
      // With host calls, the signals are NOT published as timepoints: a GPU-side waiter would
      // run as soon as the event completes, even when a host call failed and the signals must
      // fail. The completion thread reaches (or fails) them once the event completed and the
      // host calls' results are known; waiters are then released from the host. Records behind
      // such a one follow it, to keep the queue's signal order (see hostPublished).
      rec.hostPublished = true;
      rec.urgent = true;
    } else if (atRelease) {
      rec.timepoint->markRecorded();  // waiters may use the event now
    } else {
      // No event could be had at release: publish the signals as GPU-waitable timepoints now.
      // Queues waiting for these values are released when this thread's Notifier scope closes.
      if (!sub.signals.empty()) Counters::add(kPublishedLate, 1);
      for (core::Submission::Signal& s : sub.signals) {
        s.semaphore->addTimepoint(s.value, rec.timepoint);
        if (q_.promptReach(s)) rec.urgent = true;
      }
    }
    q_.push(std::move(rec));
  }

  // Signals, in stream order, the external counterparts of the submission's signal semaphores
  // that this queue's device signals GPU-side (ExternalTimeline::onDevice).
  Status signalExternals(core::Submission& sub) {
    for (core::Submission::Signal& s : sub.signals) {
      for (const Ref<core::ExternalTimeline>& x : s.semaphore->externals()) {
        core::DeviceTimeline* t = x->onDevice(q_.coreDevice->handle);
        if (!t) continue;
        BATON_TRY(t->enqueueSignal(q_.stream, s.value)
                      .context(core::format("%s signalling semaphore '%s' = %llu", q_.label.c_str(),
                                            s.semaphore->name().c_str(),
                                            static_cast<unsigned long long>(s.value))));
        x->onDeviceSignal(s.value);
      }
    }
    return Status();
  }

  // *waitFailed: the error is a waited signal that failed (its semaphore says why).
  Status enqueueWaits(core::Submission& sub, bool* waitFailed) {
    for (core::Submission::Wait& w : sub.waits) {
      if (w.external) {
        // Nothing recorded covers the value yet: wait for the external counterpart, which
        // whoever signals the value signals too (the other API or process, or baton forwarding).
        BATON_TRY(w.external->enqueueWait(q_.stream, w.value)
                      .context(core::format("%s waiting for semaphore '%s' >= %llu",
                                            q_.label.c_str(), w.semaphore->name().c_str(),
                                            static_cast<unsigned long long>(w.value))));
        continue;
      }
      if (!w.timepoint) continue;  // the scheduler removes reached waits; defensive
      auto* tp = static_cast<StreamTimepoint*>(w.timepoint.get());
      // Published at release, maybe before its event was recorded: ready() saw it recorded or
      // abandoned, or it is this queue's own, recorded earlier on this thread in queue order.
      // So this never waits (a wait here for a signal this thread has yet to record would never
      // end); kept for the order of the loads.
      if (!tp->recorded()) BATON_TRY(tp->waitRecorded(Deadline::never()));
      Status outcome;
      if (tp->done(&outcome)) {
        if (outcome.code() == Result::ErrorSemaphoreFailed) {  // abandoned
          *waitFailed = true;
          return core::failedWait(q_.label, w, Result::ErrorSemaphoreFailed);
        }
        if (!outcome.ok())
          return outcome.context(core::format("%s waiting for semaphore '%s' >= %llu",
                                              q_.label.c_str(), w.semaphore->name().c_str(),
                                              static_cast<unsigned long long>(w.value)));
        continue;  // completed: nothing to wait for
      }
      if (tp->stream() == q_.stream) continue;  // recorded earlier on this in-order stream
      BATON_TRY(driverCall([&] { return d_.streamWaitEvent(q_.stream, tp->event()); }));
    }
    return Status();
  }

  static Status unbacked() {
    return Status(Result::ErrorInvalidState,
                  "a command used a buffer whose queue-ordered allocation had not run (or that "
                  "was already freed): order it after the alloca's signal");
  }

  // The command at the current position (moved past finished command lists), or null at the
  // end of the submission.
  static const core::Command* current(Record& rec) {
    const auto& lists = rec.submission->commandLists;
    while (rec.nextList < lists.size() && rec.nextCommand >= lists[rec.nextList]->commands.size()) {
      ++rec.nextList;
      rec.nextCommand = 0;
    }
    return rec.nextList < lists.size() ? &lists[rec.nextList]->commands[rec.nextCommand] : nullptr;
  }

  Status enqueueWork(Record& rec, bool* suspend) {
    core::Submission& sub = *rec.submission;
    switch (sub.kind) {
      case core::Submission::Kind::Alloca: {
        core::Buffer& b = *sub.buffer;
        core::Allocation a;
        a.size = b.info.size;
        if (b.info.memory == MemoryKind::HostPinned) {
          // Pinned host memory has no stream-ordered allocator; allocating it here is still in
          // queue order (after the waits, before the signals) and never waits for the GPU.
          BATON_TRY(d_.hostAlloc(&a.host, &a.deviceAddress, a.size));
          a.native = tagOf(MemoryTag::HostPinned);
        } else {
          if (!q_.device->config.memoryPool)
            return Status(Result::ErrorNotSupported, q_.label + " has no memory pool");
          BATON_TRY(
              d_.memAllocAsync(&a.deviceAddress, a.size, q_.device->config.memoryPool, q_.stream));
          a.native = tagOf(MemoryTag::StreamOrdered);
        }
        b.allocation = a;
        b.backed.store(true, std::memory_order_release);
        return Status();
      }
      case core::Submission::Kind::Dealloca: {
        core::Buffer& b = *sub.buffer;
        if (!b.backed.exchange(false, std::memory_order_acq_rel)) return Status();
        if (tagOf(b.allocation) == MemoryTag::StreamOrdered) {
          Status st = d_.memFreeAsync(b.allocation.deviceAddress, q_.stream);
          if (st.ok()) [[likely]]
            return st;
          // The queue-ordered free failed (cuMemFreeAsync / hipFreeAsync). The handle is gone
          // either way (deallocaBuffer returned Success when it queued this), so the memory is
          // baton's to release: a call that failed did not free it (after a sticky error the
          // context is dead, and the synchronous free below fails harmlessly), so it is freed
          // as memory of createBuffer is, with the synchronous free once the work ordered before
          // it has completed (the record's event, or the stream drained). The signals fail with
          // the error, which names the call.
          rec.freeAfter.push_back(b.allocation);
          return st;
        }
        rec.freeAfter.push_back(b.allocation);  // freed once the work before it completed
        return Status();
      }
      case core::Submission::Kind::Commands: break;
    }

    if (!rec.hostCalls && rec.hostCallCount) {  // counted at release
      rec.hostCalls = std::make_unique<HostCalls>();
      rec.hostCalls->calls.reserve(rec.hostCallCount);
      rec.hostCalls->total = rec.hostCallCount;
      rec.hostCalls->waker = q_.waker;
      rec.hostCalls->queue = q_.weak_from_this();
      rec.hostCalls->device = q_.coreDevice;
      rec.hostCalls->queueIndex = q_.index;
      rec.hostCalls->traceId = sub.traceId;
    }

    // Whether the run of consecutive host calls being enqueued has one whose error fails the
    // submission (then what follows waits for the run's results).
    bool fallibleRun = false;
    while (const core::Command* next = current(rec)) {
      // A graph command list: launch the segment that starts here, if any (graphs.hpp).
      if (core::Object* program = rec.submission->commandLists[rec.nextList]->program.get())
          [[unlikely]] {
        if (GraphSegment* seg = static_cast<GraphProgram*>(program)->segmentAt(rec.nextCommand)) {
          BATON_TRY(launchSegment(rec, *static_cast<GraphProgram*>(program), *seg));
          // Work after the segment's host calls waits for their results, as below.
          if (seg->suspends && current(rec)) {
            *suspend = true;
            return Status();
          }
          continue;
        }
      }
      const core::Command& c = *next;
      ++rec.nextCommand;
      ++rec.ops;
      if (!c.buffersBacked()) return unbacked();
      switch (c.kind) {
        case core::Command::Kind::CopyBufferToImage:
        case core::Command::Kind::CopyImageToBuffer:
          BATON_TRY(forEachImageCopy(c, [&](const ImageCopy& copy) {
            return driverCall([&] { return d_.memcpyImageAsync(copy, q_.stream); });
          }));
          break;
        case core::Command::Kind::Copy:
          BATON_TRY(driverCall([&] {
            return d_.memcpyAsync(c.dst->allocation.deviceAddress + c.dstOffset,
                                  c.src->allocation.deviceAddress + c.srcOffset, c.size, q_.stream);
          }));
          break;
        case core::Command::Kind::Fill:
          BATON_TRY(driverCall([&] {
            return d_.memsetD32Async(c.dst->allocation.deviceAddress + c.dstOffset, c.pattern,
                                     c.size / 4, q_.stream);
          }));
          break;
        case core::Command::Kind::Update:
          // The data lives in the command list, which the record keeps until the event
          // completes. Updates are at most kMaxUpdateSize (64 KiB): the driver stages pageable
          // copies that small without waiting for the stream.
          BATON_TRY(driverCall([&] {
            return d_.memcpyHtoDAsync(c.dst->allocation.deviceAddress + c.dstOffset, c.data.data(),
                                      c.size, q_.stream);
          }));
          break;
        case core::Command::Kind::HostCall: {
          const bool infallible = c.flags & kHostCallInfallible;
          rec.hostCalls->calls.push_back(
              {rec.hostCalls.get(), c.hostCallback, c.userData, infallible});
          BATON_TRY(
              d_.launchHostFunc(q_.stream, &HostCalls::trampoline, &rec.hostCalls->calls.back()));
          // Consecutive host calls go together (the trampoline skips those after a failure);
          // anything else after a host call that may fail waits for its result.
          fallibleRun |= !infallible;
          const core::Command* after = current(rec);
          if (after && after->kind != core::Command::Kind::HostCall) {
            if (fallibleRun) {
              *suspend = true;
              return Status();
            }
          }
          break;
        }
        case core::Command::Kind::Native: {
          // In queue order, on the issuing thread: what the callback enqueues on the stream runs
          // after the waits and before the signals. A failure stops the rest of the submission.
          NativeQueue nq;
          nq.backend = d_.kind;
          nq.stream = q_.stream;
          nq.deviceOrdinal = q_.device->config.ordinal;
          nq.queueIndex = q_.index;
          Result r;
          {
            core::CallbackScope running(q_.coreDevice, q_.index, core::CallbackScope::kNative,
                                        sub.traceId);
            r = c.nativeCallback(nq, c.userData);
          }
          // The callback may have switched contexts (cudaSetDevice): what this thread does next
          // runs in the device's context, or not at all (a failure fails the rest of this
          // submission, and the next one tries again).
          Status current = reapplyContext();
          if (isError(r))
            return core::error(Result::ErrorHostCallFailed, "a native callback on %s returned %s",
                               q_.label.c_str(), resultName(r));
          BATON_TRY(current.context("after a native callback on " + q_.label));
          break;
        }
        case core::Command::Kind::Collective: {
          // This command and the collective commands right after it in its list: one group.
          const std::vector<core::Command>& list =
              rec.submission->commandLists[rec.nextList]->commands;
          const size_t first = rec.nextCommand - 1;
          size_t end = rec.nextCommand;
          while (end < list.size() && list[end].kind == core::Command::Kind::Collective) ++end;
          for (size_t i = rec.nextCommand; i < end; ++i)
            if (!list[i].buffersBacked()) return unbacked();
          rec.ops += static_cast<uint32_t>(end - rec.nextCommand);
          rec.nextCommand = end;
          if (!rec.collectives)
            rec.collectives.reset(core::makeRef<CollectiveClaim>(rec.submission.get()));
          BATON_TRY(driverCall([&] {
            return enqueueCollectives(&list[first], end - first, d_, q_.stream,
                                      *rec.collectives.get(), q_.label, sub.traceId);
          }));
          break;
        }
      }
    }
    return Status();
  }

  // Launches a graph segment of `program` on the stream: its commands [first, end) of the current
  // list. A segment of collectives goes through the collective engine (its communicators
  // checked, its graph built at the first launch, the watch's tickets around the launch).
  Status launchSegment(Record& rec, GraphProgram& program, GraphSegment& seg) {
    const core::CommandList& cl = *rec.submission->commandLists[rec.nextList];
    const std::vector<core::Command>& list = cl.commands;
    for (uint32_t i = seg.first; i < seg.end; ++i)
      if (!list[i].buffersBacked()) return unbacked();
    rec.nextCommand = seg.end;
    ++rec.ops;
    const uint64_t traceId = rec.submission->traceId;
    const uint64_t traceBegin = traceId ? core::nowNs() : 0;
    Status st;
    if (seg.captured) [[unlikely]] {
      if (!rec.collectives)
        rec.collectives.reset(core::makeRef<CollectiveClaim>(rec.submission.get()));
      st = launchCollectiveGraph(
          &list[seg.first], seg.end - seg.first, *seg.captured, d_, q_.stream,
          *rec.collectives.get(), q_.label, traceId,
          [&](const CaptureGroup& capture, void** exec) {
            // Built here at its first launch (graphs.hpp): a slice on this thread's track.
            const uint64_t built = traceId ? core::nowNs() : 0;
            Status b = buildCapturedSegment(program.device(), cl, seg, capture, exec);
            if (built)
              core::trace::span(core::trace::kGraphBuild, traceId, built, seg.end - seg.first);
            return b;
          },
          [&](void* exec) { return launchExec(rec, seg, list, exec); });
    } else {
      st = launchExec(rec, seg, list, seg.exec);
    }
    BATON_TRY(std::move(st));
    Counters::add(kGraphLaunches, 1);
    if (traceBegin)
      core::trace::span(core::trace::kGraphLaunch, traceId, traceBegin, seg.end - seg.first);
    return Status();
  }

  // Launches `exec`, the executable graph of `seg`. The launch's host-call entries go to the
  // segment's host nodes first (launch order, graphs.hpp).
  Status launchExec(Record& rec, GraphSegment& seg, const std::vector<core::Command>& list,
                    void* exec) {
    const size_t hosts = seg.hostNodes.size();
    std::lock_guard<std::mutex> lock(seg.launchMutex);
    for (size_t k = 0; k < hosts; ++k) {
      HostNode& node = *seg.hostNodes[k];
      const core::Command& c = list[node.command];
      rec.hostCalls->calls.push_back(
          {rec.hostCalls.get(), c.hostCallback, c.userData, (c.flags & kHostCallInfallible) != 0});
      std::lock_guard<std::mutex> nodeLock(node.mutex);
      node.pending.push_back(&rec.hostCalls->calls.back());
    }
    Status st = driverCall([&] { return d_.graphLaunch(exec, q_.stream); });
    if (!st.ok()) {  // nothing of it runs: take the entries back
      for (size_t k = 0; k < hosts; ++k) {
        HostNode& node = *seg.hostNodes[k];
        std::lock_guard<std::mutex> nodeLock(node.mutex);
        node.pending.pop_back();
        rec.hostCalls->calls.pop_back();
      }
    }
    return st;
  }

  void fail(core::Submission& sub, Status st) {
    if (st.code() == Result::ErrorDeviceLost) q_.deferLost(st.message());
    core::failSignals(sub, st.context("issuing a submission on " + q_.label));
  }

  // Fails a submission that has no record (nothing of it is in flight), lets go of it (`rec` is
  // left empty) and counts it done.
  // `issuing`: the error arose in issuing it (named so in the reason), rather than in a wait.
  void failUnrecorded(Record& rec, Status st, bool issuing = true) {
    if (!rec.collectives.take()) {
      // A communicator failure failed the signals already.
    } else if (issuing) {
      fail(*rec.submission, st);
    } else {
      core::failSignals(*rec.submission, st);
    }
    q_.dropRelease(rec.published, rec.hostPublish, st);
    // Released before it is counted, as the completion thread releases its records: once it is
    // counted, waitIdle may report the queue idle and its caller destroy what the submission
    // holds, and Semaphore::destroy reports a semaphore still referenced as in use. The release
    // can take long: the last reference to a dealloca's buffer frees it with the driver's
    // synchronous free, which waits for the device's streams (cuMemFree, hipFree). Counted first,
    // the fault sweep saw the destroy fail after device loss, when this thread fails what it
    // takes from then on.
    { Record gone = std::move(rec); }
    q_.submissionsDone(1);
  }

  // A driver call, timed into Stats::issueDriverNs when timed_.
  template <class Call>
  Status driverCall(Call&& call) {
    if (!timed_) [[likely]]
      return call();
    const uint64_t start = core::nowNs();
    Status st = call();
    Counters::add(kIssueDriverNs, core::nowNs() - start);
    Counters::add(kIssueDriverCalls, 1);
    return st;
  }

  QueueShared& q_;
  const DriverTable& d_;
  bool* current_;
  const bool timed_ = false;
};

}  // namespace
}  // namespace baton::stream
