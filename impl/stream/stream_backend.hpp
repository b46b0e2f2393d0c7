// The stream/event machinery shared by the CUDA and HIP backends (docs/architecture.md), written
// once and parameterised by a DriverTable (stream_driver.hpp).
//
// How a submission runs on an in-order stream (one per queue):
//   - release (on the submitting or releasing thread, in queue order): attach a Timepoint on a
//     pooled event to every signal semaphore — from then on, queues of the same backend that
//     wait for those values are released by the core scheduler and wait GPU-side too, with no
//     host round trip — and post the submission to the queue's ring;
//   - issue (one thread per device, each queue in order): wait GPU-side for each waited
//     timepoint (streamWaitEvent, once it is recorded: a queue whose next submission waits for a
//     signal another device has not recorded yet is passed over meanwhile), enqueue the
//     commands, record the event, and hand it to the queue's completion thread. The submitting
//     thread pays for the scheduler and the hand-off, not for the driver calls; hand-offs between
//     queues of a device make their driver calls on one thread;
//   - completion (one thread per queue): observes the events in order, publishes the signalled
//     values (Semaphore::reach, so that values advance with no host waiter: host queues, mirrored
//     Vulkan semaphores and other backends see them), recycles events, asks the issuing thread to
//     resume submissions suspended on host calls, and turns sticky driver errors into device
//     loss. It makes no driver call that could wait for the GPU.
// Host calls: their signals are not GPU-waitable (a failed host call must fail them, after a GPU
// waiter would already have run); the completion thread publishes them once the host calls ran,
// and GPU work after a host call in the same submission waits for its result (suspension).
// Host waits wait on the Timepoint itself: a 50 µs spin on the event, then a sleep that the
// completion thread ends; while a host thread sleeps, that thread sleeps in the driver
// (interrupt-driven) when the oldest record is the stream's last work, and polls at most 50 µs
// apart otherwise; when nothing needs completions, it looks for them lazily (completion.hpp,
// Waker in stream_timepoint.hpp) and no thread polls.
//
// The files, one piece of machinery each, roughly in the order a submission meets them. The
// driver's own costs behind their choices are in docs/performance.md ('Measured primitives', the
// H100: driver 580, CUDA 13), the figures behind the choices themselves in its 'Measurements behind
// design choices'. The parts are headers that only stream_backend.cpp includes: the machinery is
// one translation unit, with internal linkage, so that the compiler inlines across the parts
// (stream_backend.cpp says why).
//   stream_driver.hpp     the driver table CUDA and HIP fill; ContextScope
//   stream_backend.cpp    createDevice, stats(); the translation unit
//   stream_device.hpp     StreamDevice (the core::DeviceImpl)
//   stream_queue.hpp      StreamQueue (the core::QueueImpl): release, on the submitting thread
//   issue_ring.hpp        Issue and IssueRing (release -> issue), Record (issue -> completion)
//   issue_thread.hpp      IssueThread: the device's issuing thread
//   issuer.hpp            Issuer: the driver calls of one submission, suspension at host calls
//   host_calls.hpp        a submission's host callbacks and the driver's trampoline for them
//   completion.hpp        Completion: a queue's completion thread
//   queue_shared.hpp      QueueShared: a queue's state that all of the above share; DeviceIssuer
//   stream_timepoint.hpp  StreamTimepoint (a recorded signal) and Waker (host waiters' wake-ups)
//   event_pool.hpp        EventPool: a device's recycled events
//   device_shared.hpp     DeviceShared: a device's state that outlives it; MemoryTag
//   graphs.hpp            graph command buffers: the graphs end() builds, their host nodes
//   stream_interop.hpp    imported semaphores and memory (native interop)
//   shared_memory.hpp     memory shared with other processes (VMM descriptors, IPC handles)
//   stream_tuning.hpp     the spin, poll, batch and ring constants
//   stream_counters.hpp   the counters behind stats()
// Beside the machinery, what the backends share about their driver libraries:
//   driver_library.hpp    dlopen with the BATON_*_DRIVER override, symbol lookup, fault injection
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "backend.hpp"
#include "collectives.hpp"
#include "stream_driver.hpp"

namespace baton::stream {

struct DeviceConfig {
  const DriverTable* driver = nullptr;
  void* context = nullptr;     // made current around every driver call for this device
  int32_t ordinal = 0;         // NativeQueue::deviceOrdinal
  void* memoryPool = nullptr;  // for queue-ordered allocation; null when unsupported
  // Whether pooled events are created blocking-sync (the completion thread then sleeps in
  // eventSynchronize on them directly) or not (it sleeps on a blocking-sync event recorded
  // behind the last of them on the queue's stream). Off by default: on the H100 recording a
  // blocking-sync event cost 17.4 µs against 0.57 µs for a plain one (bench/cuda).
  bool blockingSyncEvents = false;
  // Called once, on whichever thread drops the last reference to the device's shared state
  // (events, streams and timepoints gone): releases the context and the memory pool.
  std::function<void()> release;
};

// Creates the backend half of `device` on the driver described by `config`.
std::unique_ptr<core::DeviceImpl> createDevice(core::Device& device, DeviceConfig config);

// Backend::createCommunicators for devices made by createDevice (collectives.hpp).
core::Status createCommunicators(const std::vector<core::DeviceImpl*>& devices,
                                 const std::vector<core::CommunicatorSetup>& setups,
                                 std::vector<Ref<core::CommunicatorImpl>>* out);

// What the CUDA and HIP backends share besides their devices: the collective library of their
// kind (NCCL, RCCL; collectives.hpp).
class StreamBackend : public core::Backend {
 public:
  CollectiveSupport collectiveSupport() override { return stream::collectiveSupport(kind()); }
  core::Status createCommunicatorId(CommunicatorId* id) override {
    return stream::createCommunicatorId(kind(), id);
  }
  core::Status createCommunicators(const std::vector<core::DeviceImpl*>& devices,
                                   const std::vector<core::CommunicatorSetup>& setups,
                                   std::vector<Ref<core::CommunicatorImpl>>* out) override {
    return stream::createCommunicators(devices, setups, out);
  }
};

// Process-wide counters over every device of every stream backend: benchmarks print them to show
// that the event pool and the in-flight bookkeeping stay bounded in steady state.
struct Stats {
  uint64_t eventsCreated = 0;    // live driver events (in the pools or in use)
  uint64_t eventsInUse = 0;      // held by live timepoints
  uint64_t timepointsLive = 0;   // timepoint objects alive
  uint64_t recordsInFlight = 0;  // issued submissions not yet observed complete
  uint64_t recordsIssued = 0;    // records the issuing threads enqueued so far (only grows)
  // Submissions whose signals were attached to their semaphores only after the issuing thread
  // recorded the event, because no event could be had at release (a driver error): other
  // queues then wait for the issuing thread before they are released (only grows).
  uint64_t timepointsPublishedLate = 0;
  // Released submissions issued by the thread that submitted them (direct issue), and those
  // posted to a device's issuing thread (only grow).
  uint64_t directIssued = 0;
  uint64_t postedToIssuer = 0;
  // Of the direct issues, those made after the submitting thread found the issuing thread
  // asleep and its query of the queue's newest record found it complete (StreamQueue::
  // startDirect): a queue that ran dry without anyone observing it.
  uint64_t directAfterQuery = 0;
  // Submissions that the issue mode let a submitting thread issue directly but went to the
  // issuing thread: because that thread held some of the queue (posted work not yet taken, its
  // issue lock, a suspended or deferred submission), or because a wait's signal was not yet
  // recorded or the stream was full (only grow).
  uint64_t directBehind = 0;
  uint64_t directNotReady = 0;
  // Submissions that would have been issued directly after a query of the queue (see
  // directAfterQuery) but came within kDirectBurstGapNs of the previous such one: a burst, handed
  // to the issuing thread (only grows).
  uint64_t directInBurst = 0;
  // Times a completion thread parked with records in flight that nothing needed (it looks
  // lazily, see impl/stream/completion.hpp), and the looks for completed records, its own and
  // those of direct issuers retiring their records (only grow).
  uint64_t lazyParks = 0;
  uint64_t completionLooks = 0;
  // Times a completion thread parked until a submission's host calls had run, instead of
  // watching its events (only grows).
  uint64_t hostCallParks = 0;
  // Records that were to be published by the host, behind a submission with host calls, and were
  // published as timepoints of their events once nothing with host calls was ahead (only grows).
  uint64_t republished = 0;
  // Records retired by the threads that issued them directly (IssueMode), rather than by their
  // queues' completion threads (impl/stream/completion.hpp, retireOnSubmit; only grows).
  uint64_t retiredOnSubmit = 0;
  // Host waits on a recorded device signal (StreamTimepoint::wait) that spun on its event, and
  // host waits that slept until a queue's completion thread woke them: after a spin that ended
  // first (Device::setHostWaitSpin), at once with a spin of 0, or on a signal that cannot be
  // queried (behind host calls). Only grow.
  uint64_t hostWaitSpins = 0;
  uint64_t hostWaitSleeps = 0;
  // Graph command buffers (only grow): executable graphs instantiated at end(), those updated
  // in place instead (an idle one of the same shape from an earlier recording of the command
  // buffer), updates the driver refused (a new one was instantiated then), and graph launches.
  uint64_t graphInstantiations = 0;
  uint64_t graphUpdates = 0;
  uint64_t graphUpdatesRefused = 0;
  uint64_t graphLaunches = 0;
  // Only while setIssueTiming(true), and only on the devices' issuing threads (only grow):
  // submissions they started, the time spent in their passes over a queue that issued something
  // (taking the submissions, the bookkeeping, the driver calls, handing the records over), and
  // the driver calls among that time (GPU-side waits, commands, event records; native callbacks
  // and host-call launches excluded) with the time spent in them. Each timed span costs two clock
  // reads (steady_clock), which the figures include.
  uint64_t issueTimed = 0;
  uint64_t issueBusyNs = 0;
  uint64_t issueDriverCalls = 0;
  uint64_t issueDriverNs = 0;
};
Stats stats() noexcept;

// Makes the devices' issuing threads time their work into Stats::issueTimed and the fields after
// it, from their next pass over their queues; off by default. For benchmarks: it shows what an
// issuing thread spends per submission in driver calls and in the rest. Thread safe.
void setIssueTiming(bool on) noexcept;

// How submissions reach the driver, process-wide (for benchmarks and tests comparing the designs
// in one process; BATON_STREAM_DIRECT_ISSUE sets the default, see stream_tuning.hpp): a
// submission that nothing holds back is issued by the submitting thread never (IssuingThread:
// always by the device's issuing thread), when its queue's earlier submissions are all known to
// have completed or it submits graph command buffers only (WhenIdle, the default), or always
// (Direct). Takes effect for submissions made after the call. Thread safe.
enum class IssueMode { IssuingThread, WhenIdle, Direct };
void setIssueMode(IssueMode mode) noexcept;
// Back to what the environment says (the defaults).
void resetIssueMode() noexcept;
// The mode in effect.
IssueMode issueMode() noexcept;

// The kernel thread ids (gettid) of the stream backends' own threads that run now: the devices'
// issuing threads and the queues' completion threads. For benchmarks that attribute CPU time by
// thread: a thread that a driver starts from one of them inherits its name. Thread safe.
std::vector<int> threadIds();

}  // namespace baton::stream
