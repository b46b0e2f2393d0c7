// The time and size constants of the stream machinery, each with the measurement or the limit
// behind it: the spins, polls and sleeps of host waiters and of the completion and issuing
// threads, and the sizes of the batches, stashes and rings between them. They are kept together
// because they trade off against one another (a thread that spins less is woken more). Constants
// only: no state, no threads.
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "baton/device.hpp"    // kHostWaitSpinDefaultNs
#include "stream_backend.hpp"  // IssueMode

namespace baton::stream {
namespace {

// A host wait spins on the event this long before it sleeps, unless Device::setHostWaitSpin
// says otherwise (DeviceShared::hostWaitSpinNs). An event query sees a completed record ~0.35 µs
// after the GPU passes it, while a sleeping waiter needs a wake-up by the completion thread,
// which itself sleeps in the driver (interrupt-driven, 67-125 µs after the GPU on the H100) or
// polls at most kUrgentPollMaxNs apart (see sleepOnOldest). 50 µs covers short GPU work at full
// speed and costs a waiter of a long frame (ms) almost nothing.
constexpr uint64_t kHostWaitSpinNs = baton::kHostWaitSpinDefaultNs;
// A wait told to spin for longer than the default (kHostWaitSpinForever included) yields its core
// between event queries after the first kHostWaitSpinYieldAfterNs: other runnable threads (the
// GPU's producers among them) then run, and the waiter still sees the event within a scheduler
// round when the machine is not oversubscribed.
constexpr uint64_t kHostWaitSpinYieldAfterNs = 5'000;
// The completion thread spins this long on the oldest event before it sleeps: a short spin
// catches back-to-back small submissions without a sleep/wake per record, and bounds what a
// queue that is always busy with long work burns.
constexpr uint64_t kCompletionSpinNs = 10'000;
// On a record with collectives the thread spins as long as the device's host waits do
// (Completion::look), in stretches of at most this long between looks at its inbox.
constexpr uint64_t kCompletionLongSpinNs = 2'000'000;
// Its queries during that spin are this far apart: the driver serialises a query of an event
// with other threads' calls that use the same event, and the event a completion thread watches
// is what other queues' issuing threads wait for. On the H100, a second thread querying the
// waited event back to back made each cuStreamWaitEvent + cuEventRecord pair 2.3x slower
// (0.61 -> 1.41 us), with 16 pauses between queries 1.6x, every 20 us not measurably.
constexpr uint64_t kCompletionQueryGapNs = 2'000;
// A record with collectives has its signals published by this thread, not as timepoints: no
// other thread uses its event, so the thread queries it back to back (a few pauses apart). With
// the 2 µs gap the latency of a small all-reduce carried ~1 µs of it on average.
constexpr uint64_t kCompletionPrivateQueryGapNs = 100;
// After it published records with collectives and has nothing left in flight, the thread polls
// its inbox this long before it parks: a collective is often followed by the next one within
// microseconds (a loop of them, each waited for), whose push then costs no wake-up (a futex
// syscall on the issuing thread and a thread to schedule before the GPU finishes). As long as a
// collective caller thread spins for its next group (collectives.cpp).
constexpr uint64_t kCompletionNextSpinNs = 50'000;
// While something needs completions observed (Waker::needed, urgent records) but the thread
// cannot sleep in the driver, it polls, with a backoff from 20 µs to 50 µs. Sleeping in the
// driver needs a blocking-sync event behind the oldest record (blocking-sync pool events cost
// 17.4 µs per record on the H100, plain ones 0.57 µs), so it is done only when the oldest record
// is the last work on the stream (see sleepOnOldest).
constexpr uint64_t kPollMinNs = 20'000;
constexpr uint64_t kUrgentPollMaxNs = 50'000;
// When nothing needs them, completions are looked for lazily (Waker): after kLookRecords new
// records, or at the latest kLazyLookMinNs after the last look that found some, backing off to
// kLazyLookMaxNs while looks find nothing. A look is one event query when everything completed
// (Completion::countCompleted). The records hold events, semaphores and buffers until looked at,
// so these bound what a queue holds on to: kLookRecords records plus what the GPU has not run.
// Host waiters, semaphore queries and other backends' queues do not depend on them: they query
// the events themselves, or make the thread watch (Waker::needed).
constexpr size_t kLookRecords = 64;
constexpr uint64_t kLazyLookMinNs = 1'000'000;
constexpr uint64_t kLazyLookMaxNs = 16'000'000;
// With nothing in flight, the completion thread keeps parking lazily this long (pushes do not
// wake it) before it sleeps until a push wakes it: a queue that works every frame then costs its
// submitters no wake-up (a syscall, and a thread to schedule), and an idle one costs nothing.
constexpr uint64_t kIdleAfterNs = 200'000'000;
// Free events a queue takes from its device's pool at once (QueueShared::eventStash).
constexpr size_t kEventStash = 16;
// Records an issuing thread hands to its completion thread at once while it has more to issue
// (QueueShared::push), and the longest it keeps fewer (IssueThread::serve); it hands over what
// it has whenever it runs out of work. A hand-off takes the completion thread's inbox lock and
// that thread then takes the records: handed over per submission, the inbox's cache lines
// moved between the two threads at every submission.
constexpr size_t kOutboxBatch = 32;
constexpr uint64_t kOutboxMaxAgeNs = 100'000;
// A thread that issues directly retires its queue's completed records itself
// (Completion::retireOnSubmit) once this many wait in the queue's inbox, and then whenever half
// as many more arrived. BATON_STREAM_RETIRE_ON_SUBMIT=0 leaves them all to the completion
// threads (for comparison).
constexpr uint32_t kRetireBatch = 32;
inline bool retireOnSubmitFromEnv() {
  const char* v = std::getenv("BATON_STREAM_RETIRE_ON_SUBMIT");
  return !(v && v[0] == '0');
}
const bool gRetireOnSubmit = retireOnSubmitFromEnv();
// Of the issuing thread's passes that issue for a queue, every kAgeCheckPasses-th looks at the
// age of its outbox (the others hand it over by size); passes that issue nothing always look.
constexpr uint64_t kAgeCheckPasses = 8;
// Driver operations (waits, commands, records) a queue may have on its stream before its issuing
// thread stops issuing for it until some complete (QueueShared::overOpsLimit). The driver blocks
// the enqueuing thread when a stream holds some thousands (seen on the H100 test machine:
// docs/architecture.md, 'Wait-before-signal and deferred submissions'); below that, the device's
// other queues keep being issued while one waits.
constexpr uint64_t kMaxOpsInFlight = 1024;
// Submissions the issuing thread takes from one queue before it looks at the next.
constexpr size_t kIssueBurst = 32;
// Released submissions a queue's issue ring holds (IssueRing). A user thread that finds it full
// waits for the issuing thread, as it would wait in the driver for a full stream; baton's own
// threads never wait: they queue behind the ring instead.
constexpr uint64_t kIssueRingCapacity = 1024;
// The issuing thread polls its ring after its last work before it sleeps until a submission
// wakes it: bursts of submissions then cost their submitter no wake-up (a futex syscall) and wait
// for no thread to be scheduled; on the H100 test machine a sleeping issuing thread took about
// 25-150 µs to run again after the wake. How long it polls adapts to the gaps it sees
// (SpinBudget in issue_thread.hpp), between these two. kIssueSpinNs: the longest, and the start.
// kIssueSpinMinNs: the shortest, kept for a submitter whose gaps are all longer: about what a
// wake-up costs the submitter alone (2-5 µs), so that a spin that finds no work costs at most
// that much more than sleeping at once, while gaps within a burst shorter than it (the issuing
// thread catching up with its submitter) never cost a wake-up. A fixed 50 µs spin cost every
// burst of a bursty submitter the whole spin: submit_micro `bursts` (64 submissions every
// ~400 µs) on the H100, 109-123 µs of issuing-thread CPU per burst, 68-83 µs adaptive (medians
// of three runs, two sessions), with the same one sleep per burst. Where gaps are mostly shorter
// than the spin (bench/cuda/frame_bench: 10-50 µs, 1-30% longer) the budget stays full and
// nothing changes: there the issuing thread is busy most of the frame and its spins cost
// ~5-25 µs per frame.
// kIssueSpinProbeEvery: below the full spin, every this many timed-out spins the next one is a
// full spin, to see whether gaps became short again (a gap that ends in a wake-up cannot say so:
// SpinBudget); in a bursty steady state a full spin every 8 bursts, ~6 µs per burst.
constexpr uint64_t kIssueSpinNs = 50'000;
constexpr uint64_t kIssueSpinMinNs = 5'000;
constexpr uint32_t kIssueSpinProbeEvery = 8;
// Spins in a row that end without work before the budget shrinks (SpinBudget says why not fewer).
constexpr uint32_t kIssueSpinMisses = 4;
// StreamQueue::startDirect: a submission that finds the issuing thread asleep and its queue not
// known idle goes to the issuing thread, waking it, when the previous such submission of the queue
// came less than this long before (a burst: the direct issue of each costs the submitting thread
// several times the hand-off, docs/performance.md, cuda_bench parts), and is issued directly
// otherwise. The issuing thread's longest spin: submissions that come faster than that keep the
// thread, once woken, catching them without sleeping again, so each further one costs only the
// hand-off; slower ones would find it asleep again, each paying a wake-up, and go direct instead.
constexpr uint64_t kDirectBurstGapNs = kIssueSpinNs;
// A waiter for a signal that is published but not yet recorded (StreamTimepoint::waitRecorded)
// spins this long before it sleeps: recording is a driver call already under way on another
// thread, well under a microsecond unless the driver throttles it.
constexpr uint64_t kRecordSpinNs = 20'000;
// Spins poll with a pause instruction this long, then yield the core between polls: on a machine
// with fewer free cores than busy threads, the thread being waited for may need it.
constexpr uint64_t kSpinBeforeYieldNs = 5'000;
// Direct issue (StreamQueue::startDirect): a submitting thread makes the driver calls of a
// submission that nothing holds back, instead of handing it to the device's issuing thread. The
// hand-off pays when it overlaps the driver calls with the submitter's next submissions; a
// submitter that submits once and then waits (or works on the host) gains nothing from it and pays
// its latency: on the H100, "naive" submit + wait was faster issued directly, while in a stream of
// submissions the issuing thread was the faster one, for the live ping-pong and for the caller's
// submit (cuda_bench; the figures: docs/performance.md, 'Measurements behind design choices'). So
// by default (IssueMode::WhenIdle) a submission is issued directly when every earlier submission of
// its queue is known to have completed (Waker::seenDone: a host wait or query saw the newest one's
// event complete, or the completion thread retired it), and the issuing thread holds nothing of the
// queue: a submit after a host wait, or on a queue that has been idle; within a stream of
// submissions, or while the queue's GPU work runs (or nobody looked), they go to the issuing
// thread, and the check is one load. BATON_STREAM_DIRECT_ISSUE=1 issues every such submission
// directly, =0 none. setIssueMode (stream_backend.hpp) switches it at run time, so that the
// benchmarks compare the designs in one process.
// Other conditions were tried on the H100 while choosing: a gap since the queue's previous submit
// sent a mix of bench/cuda/frame_bench's submissions direct and slowed its frame; an event query of
// the newest record as the idle check left naive slower; the gap and the check above together made
// the caller's submit dearer (a clock read and the issuing thread's cache lines touched on every
// submit). The same section of docs/performance.md has their figures.
// A submission of graph command buffers only (StreamQueue::light) is issued directly in a stream of
// submissions too: its driver calls are its waits, one launch per segment and one event record, so
// the hand-off saves the submitter little, while a second thread making them doubled the frame's
// CPU: in frame_bench's graph frame through the issuing thread, the submitting thread spins in its
// host wait while the issuing thread works; issued directly, the process CPU is about that of
// hand-written CUDA graphs, at about the same frame time (the figures: docs/performance.md,
// 'Measurements behind design choices').
inline IssueMode issueModeFromEnv() {
  const char* v = std::getenv("BATON_STREAM_DIRECT_ISSUE");
  if (!v || !v[0]) return IssueMode::WhenIdle;
  return v[0] == '0' ? IssueMode::IssuingThread : IssueMode::Direct;
}
std::atomic<IssueMode> gIssueMode{issueModeFromEnv()};

}  // namespace
}  // namespace baton::stream
