// The stream/event machinery shared by the CUDA and HIP backends: createDevice and stats()
// (stream_backend.hpp, which also gives the overview), and the one translation unit of all its
// parts. Each part is a header of its own (the list is in stream_backend.hpp), in this file's
// anonymous namespace, and included here only.
//
// One translation unit rather than one per part, so that the compiler sees every call of the hot
// path with internal linkage and inlines as it did when all this was one file (the generated code
// is the same). With a unit per part, the parts' classes need external linkage, their member
// functions become inline functions that every unit may emit, and GCC 12 then stopped inlining
// large ones called once (QueueShared::post, Issuer::enqueueWaits, Issuer::enqueueWork): under
// callgrind on the fake driver (bench/submit_micro cuda covered), both the issuing thread
// (Issuer::start) and the submitting thread (StreamQueue::issue) then ran more instructions per
// submission (docs/performance.md, 'Measurements behind design choices'; docs/architecture.md, 'Why
// impl/stream is one translation unit').
#include "stream_backend.hpp"

#include <cstdint>
#include <memory>
#include <utility>

#include "callback_scope.hpp"
#include "completion.hpp"
#include "device_shared.hpp"
#include "event_pool.hpp"
#include "graphs.hpp"
#include "host_calls.hpp"
#include "issue_ring.hpp"
#include "issue_thread.hpp"
#include "issuer.hpp"
#include "queue_shared.hpp"
#include "shared_memory.hpp"
#include "stream_counters.hpp"
#include "stream_device.hpp"
#include "stream_interop.hpp"
#include "stream_queue.hpp"
#include "stream_timepoint.hpp"
#include "stream_tuning.hpp"

namespace baton::stream {

std::unique_ptr<core::DeviceImpl> createDevice(core::Device& device, DeviceConfig config) {
  auto shared = std::make_shared<DeviceShared>(std::move(config));
  return std::make_unique<StreamDevice>(device, std::move(shared));
}

core::Status createCommunicators(const std::vector<core::DeviceImpl*>& devices,
                                 const std::vector<core::CommunicatorSetup>& setups,
                                 std::vector<Ref<core::CommunicatorImpl>>* out) {
  std::vector<CollectiveDevice> list;
  for (core::DeviceImpl* d : devices)
    list.push_back(static_cast<StreamDevice*>(d)->collectiveDevice());
  return createCommunicators(list, setups, out);
}

Stats stats() noexcept {
  Stats s;
  s.eventsCreated = gEventsCreated.load(std::memory_order_relaxed);
  uint64_t c[kCounterCount];
  Counters::sum(c);
  s.eventsInUse = c[kEventsTaken] - c[kEventsReturned];
  s.timepointsLive = c[kTimepointsMade] - c[kTimepointsGone];
  s.recordsIssued = c[kRecordsPushed];
  s.recordsInFlight = c[kRecordsPushed] - c[kRecordsFinished];
  s.timepointsPublishedLate = c[kPublishedLate];
  s.directIssued = c[kDirectIssued];
  s.directAfterQuery = c[kDirectAfterQuery];
  s.directBehind = c[kDirectBehind];
  s.directNotReady = c[kDirectNotReady];
  s.directInBurst = c[kDirectInBurst];
  s.postedToIssuer = c[kPosted];
  s.lazyParks = c[kLazyParks];
  s.completionLooks = c[kCompletionLooks];
  s.hostCallParks = c[kHostCallParks];
  s.republished = c[kRepublished];
  s.retiredOnSubmit = c[kRetiredOnSubmit];
  s.hostWaitSpins = c[kHostWaitSpins];
  s.hostWaitSleeps = c[kHostWaitSleeps];
  s.graphInstantiations = c[kGraphInstantiations];
  s.graphUpdates = c[kGraphUpdates];
  s.graphUpdatesRefused = c[kGraphUpdatesRefused];
  s.graphLaunches = c[kGraphLaunches];
  s.issueTimed = c[kIssueTimed];
  s.issueBusyNs = c[kIssueBusyNs];
  s.issueDriverCalls = c[kIssueDriverCalls];
  s.issueDriverNs = c[kIssueDriverNs];
  return s;
}

void setIssueTiming(bool on) noexcept { gIssueTiming.store(on, std::memory_order_relaxed); }

void setIssueMode(IssueMode mode) noexcept { gIssueMode.store(mode, std::memory_order_relaxed); }

void resetIssueMode() noexcept { gIssueMode.store(issueModeFromEnv(), std::memory_order_relaxed); }

IssueMode issueMode() noexcept { return gIssueMode.load(std::memory_order_relaxed); }

std::vector<int> threadIds() {
  OwnThreads& own = OwnThreads::get();
  std::lock_guard<std::mutex> lock(own.mutex);
  return own.tids;
}

}  // namespace baton::stream
