// The collective engine of the stream backends (baton/communicator.hpp; docs/architecture.md,
// 'Collectives and the watchdog'): communicators made with NCCL or RCCL, collective commands
// enqueued on a queue's stream, and the watchdog that turns a library error or a stall into failed
// semaphores.
//
// How a submission with collectives runs (Issuer, Completion):
//   - its signals are published by the completion thread once its work completed (as with host
//     calls: QueueShared::hostPublished), never as GPU-waitable timepoints — a collective that a
//     dead peer stalls, then ended by ncclCommRevoke or an abort, completes its event without its
//     data, and a GPU-side waiter would run on that;
//   - each run of consecutive collective commands of one command list is one library group,
//     issued for the device's issuing thread (never directly by a submitting thread: with several
//     ranks in one process, a thread that issued rank 0's first collective could wait in the
//     library's connection set-up for rank 1's, which that same thread would issue next), with an
//     event recorded before and after it on the stream for each of its communicators (a Ticket:
//     the watchdog measures progress between them);
//   - the calls go to a blocking library communicator split from the non-blocking one at creation
//     (NCCL runs a non-blocking group from a thread it creates for it, which costs tens of µs
//     more per group: docs/performance.md, 'collectives_bench: collectives (NCCL)'), made by the
//     device's caller thread (collectives.cpp: Caller), which the issuing thread waits for up to
//     the communicator's timeout, so that a call waiting in the library for a peer that never
//     comes holds neither the device's queues nor the application;
//     BATON_NCCL_BLOCKING_CALLS=0 keeps every call on the non-blocking communicator;
//   - a CollectiveClaim decides its signals: the record's owner takes it before publishing or
//     failing them; the watchdog, on a failure, fails them first unless the owner took it.
// The watchdog (one thread per process, while collectives are in flight) polls each communicator
// with tickets: ncclCommGetAsyncError, and whether its oldest started collective made progress
// within the communicator's timeout. On an error or a stall the communicator fails: its tickets'
// claims fail their submissions' signals (with a reason naming the communicator, the rank and the
// error), then the stuck operations end: the blocking communicator of the calls is aborted (any
// library; the queue moves on, and the non-blocking one stays for shrink). With non-blocking calls
// only, ncclCommRevoke ends them where the library has it; without it they stay stuck until the
// application shrinks (NCCL_SHRINK_ABORT) or destroys (abort) the communicator.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "baton/communicator.hpp"
#include "driver_library.hpp"
#include "object.hpp"
#include "objects.hpp"
#include "status.hpp"
#include "stream_driver.hpp"

namespace baton::stream {

using core::Ref;

// Whether the stream backend of `backend` has a collective library (loads it on first use).
CollectiveSupport collectiveSupport(BackendKind backend);
core::Status createCommunicatorId(BackendKind backend, CommunicatorId* id);

// A device of the stream machinery, as the collective engine needs it.
struct CollectiveDevice {
  const DriverTable* driver = nullptr;
  void* context = nullptr;
  core::Device* device = nullptr;  // the core device: messages go to its instance; the
                                   // communicator keeps it (and so the context) alive
};
core::Status createCommunicator(const CollectiveDevice& device,
                                const core::CommunicatorSetup& setup,
                                Ref<core::CommunicatorImpl>* out);
// A whole group in this process, one rank per device, with one group of init calls.
core::Status createCommunicators(const std::vector<CollectiveDevice>& devices,
                                 const std::vector<core::CommunicatorSetup>& setups,
                                 std::vector<Ref<core::CommunicatorImpl>>* out);

// Who decides the signals of a submission with collectives: its record's owner (the issuing
// thread, the completion thread, a retiring submitting thread) or the watchdog. Thread safe.
class CollectiveClaim : public core::Object {
 public:
  explicit CollectiveClaim(core::Submission* submission) : submission_(submission) {}
  // The owner, before it reaches or fails the signals, and before the submission is destroyed:
  // true when the signals are still its to decide, false when the watchdog failed them already.
  // Idempotent; after it the claim no longer touches the submission.
  bool take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ == State::Open) state_ = State::Taken;
    submission_ = nullptr;
    return state_ == State::Taken;
  }
  // The watchdog: fails the submission's signals with `why`, unless the owner took the claim.
  void fail(const core::Status& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ != State::Open) return;
    state_ = State::Failed;
    core::failSignals(*submission_, why);
    submission_ = nullptr;
  }

 private:
  enum class State { Open, Taken, Failed };
  std::mutex mutex_;
  core::Submission* submission_;
  State state_ = State::Open;
};

// A record's claim, taken when the record lets it go (moved-from records hold none), so that no
// path that destroys a submission can leave the watchdog a dangling pointer.
class ClaimRef {
 public:
  ClaimRef() noexcept = default;
  ClaimRef(ClaimRef&& o) noexcept : ref_(std::move(o.ref_)) {}
  ClaimRef& operator=(ClaimRef&& o) noexcept {
    if (this != &o) {
      release();
      ref_ = std::move(o.ref_);
    }
    return *this;
  }
  ~ClaimRef() { release(); }
  explicit operator bool() const noexcept { return static_cast<bool>(ref_); }
  CollectiveClaim* get() const noexcept { return ref_.get(); }
  void reset(Ref<CollectiveClaim> ref) {
    release();
    ref_ = std::move(ref);
  }
  // CollectiveClaim::take, or true without a claim.
  bool take() const { return !ref_ || ref_->take(); }

 private:
  void release() {
    if (ref_) (void)ref_->take();
    ref_ = nullptr;
  }
  Ref<CollectiveClaim> ref_;
};

// Enqueues commands[0, count) — consecutive Collective commands of one command list, all of
// communicators of the device whose context is current — as one library group on `stream`, and
// hands their tickets to the watchdog. `claim` is the submission's (made by the caller).
// `queueLabel` names the queue in messages; `traceId` is the submission's in the timeline trace
// (0: not traced). Returns the library's error, or ErrorInvalidState when a communicator failed.
core::Status enqueueCollectives(const core::Command* commands, size_t count, const DriverTable& d,
                                void* stream, CollectiveClaim& claim, const std::string& queueLabel,
                                uint64_t traceId);

// The executable graph of a graph command buffer's segment that holds captured collectives
// (graphs.hpp). NCCL ends a communicator (ncclCommDestroy, ncclCommAbort) only once every graph
// holding its captured collectives is destroyed (2.26 and later; before, it freed what they use),
// so each communicator it captured keeps it and releases it first: then the segment cannot be
// launched again. Thread safe: `mutex` guards `exec` and `ended`.
class CapturedExec : public core::Object {
 public:
  CapturedExec(const DriverTable& d, void* context) : driver_(d), context_(context) {}
  ~CapturedExec() override { drop("its command buffer was recorded again or destroyed"); }
  // Destroys the executable graph (the driver frees it once its launches completed); `why` says
  // what ended it, for the error of a later launch. Idempotent.
  void drop(const std::string& why);
  // Dropped (a hint: exact under `mutex`).
  bool dropped() const noexcept { return dropped_.load(std::memory_order_acquire); }

  std::mutex mutex;
  void* exec = nullptr;  // null before the first launch built it, and once released
  std::string ended;     // why it was released; empty while it was not

 private:
  const DriverTable& driver_;
  void* context_;
  std::atomic<bool> dropped_{false};
};

// Captures a run of consecutive collective commands (one library group) into a graph.
using CaptureGroup =
    std::function<core::Status(const core::Command* group, size_t count, void** graph)>;

// Issues a graph segment of collective commands, commands[0, count) (one library group): locks
// their communicators (each once, in address order) and checks that none failed or ended; builds
// the executable graph if `held` has none yet (`build`, which captures the group through the
// CaptureGroup it is given: the library calls run on the device's caller thread, up to the
// communicators' timeout, as enqueueCollectives's), and registers it with each communicator;
// records each communicator's ticket events around `launch` (the watchdog times the launch, which
// holds the collectives only).
// Returns the library's or driver's error; ErrorInvalidState when a communicator failed or ended,
// or `held` was released.
core::Status launchCollectiveGraph(
    const core::Command* commands, size_t count, CapturedExec& held, const DriverTable& d,
    void* stream, CollectiveClaim& claim, const std::string& queueLabel, uint64_t traceId,
    const std::function<core::Status(const CaptureGroup& capture, void** exec)>& build,
    const std::function<core::Status(void* exec)>& launch);

// Whether the collectives of commands[0, count), the list's from `firstIndex` (for the message),
// may be captured into a graph (end() of a graph command buffer): ErrorNotSupported, saying why,
// when one's communicator has other ranks in this process (made together by createCommunicators, or
// split or shrunk from such a communicator) and takes blocking calls. On two H200s, NCCL 2.28.3
// and 2.28.9 invalidated such a capture and the devices were lost at their next operations; with
// one rank per process, or with non-blocking calls (BATON_NCCL_BLOCKING_CALLS=0), the same captures
// ran.
core::Status checkGraphCapture(const core::Command* commands, size_t count, size_t firstIndex);

// Tests: make the engine behave as with a library without ncclCommRevoke (NCCL 2.28.3), or as
// the loaded library does again. Thread safe.
void setRevokeDisabledForTests(bool disabled);
// Tests: let checkGraphCapture accept ranks of one process with blocking calls (the emulated
// NCCL captures them), or refuse them again. Thread safe.
void setInProcessGraphCaptureAllowedForTests(bool allowed);
// Tests: the fault injection at the collective library's wrapper (BATON_NCCL), or null where
// baton was built without nccl.h. Thread safe (DriverFaults).
DriverFaults* collectiveFaultsForTests();

}  // namespace baton::stream
