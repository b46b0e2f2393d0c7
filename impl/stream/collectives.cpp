// The collective engine of the stream backends; collectives.hpp says how it fits together.
#include "collectives.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>
#include <unordered_map>

#include "clock.hpp"
#include "collective_library.hpp"
#include "cpu.hpp"
#include "notifier.hpp"
#include "report.hpp"
#include "trace.hpp"
#include "watchdog.hpp"

namespace baton::stream {
namespace {

using core::error;
using core::format;
using core::Status;

std::atomic<bool> gRevokeDisabled{false};
std::atomic<bool> gInProcessGraphCaptureAllowed{false};

// How often the watchdog looks at the communicators with collectives in flight. Over sockets NCCL
// reports a dead peer within about a millisecond (docs/performance.md, 'Measurements behind design
// choices'), so a short period keeps the death-to-wake time close to the library's own; a look is
// one ncclCommGetAsyncError and one or two event queries.
constexpr uint64_t kWatchPeriodNs = 2'000'000;

uint64_t ms(uint64_t ns) { return ns / 1'000'000; }

// Polls `poll` (an ncclResult_t, ncclInProgress while the operation runs) until it is done or
// `deadlineNs` passed: spins briefly, then yields, then sleeps 50 µs between polls. Returns the
// last result (ncclInProgress on timeout).
template <class Poll>
ncclResult_t pollDone(Poll&& poll, uint64_t deadlineNs) {
  for (uint32_t round = 0;; ++round) {
    ncclResult_t r = poll();
    if (r != ncclInProgress) return r;
    if (core::nowNs() >= deadlineNs) return ncclInProgress;
    if (round < 64) {
      core::cpuRelax();
    } else if (round < 1024) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

// A non-blocking communicator's state after a call: ncclSuccess, an error, or ncclInProgress when
// the deadline passed first.
ncclResult_t settle(const CollectiveLibrary& lib, ncclComm_t comm, uint64_t deadlineNs) {
  return pollDone(
      [&] {
        ncclResult_t state = ncclSuccess;
        ncclResult_t r = BATON_NCCL(lib, ncclCommGetAsyncError, comm, &state);
        return r != ncclSuccess ? r : state;
      },
      deadlineNs);
}

ncclConfig_t nonBlocking() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Whether collectives go through blocking communicators (see collectives.hpp): yes, unless
// BATON_NCCL_BLOCKING_CALLS=0 (then every call is on the non-blocking communicator, as before:
// NCCL's own thread per group, ~60 µs more per group on the H200s). Read once.
bool blockingCallsEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("BATON_NCCL_BLOCKING_CALLS");
    return !(v && v[0] == '0' && v[1] == '\0');
  }();
  return enabled;
}

// One library call of a group, as plain values: the caller thread reads no command.
struct CallArgs {
  core::CollectiveOp op = core::CollectiveOp::AllReduce;
  const void* src = nullptr;
  void* dst = nullptr;
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t reduce = ncclSum;
  int peer = 0;   // root, or the peer of a send or receive
  int ranks = 0;  // the communicator's
  uint64_t elementSize = 0;
  ncclComm_t comm = nullptr;
};

// Makes one call of a group (all-to-all without ncclAlltoAll: a send and a receive per peer);
// *api names it.
ncclResult_t issueCall(const CollectiveLibrary& lib, const CallArgs& c, cudaStream_t s,
                       const char** api) {
  switch (c.op) {
    case core::CollectiveOp::AllReduce:
      *api = "ncclAllReduce";
      return BATON_NCCL(lib, ncclAllReduce, c.src, c.dst, c.count, c.type, c.reduce, c.comm, s);
    case core::CollectiveOp::Broadcast:
      *api = "ncclBroadcast";
      return BATON_NCCL(lib, ncclBroadcast, c.src, c.dst, c.count, c.type, c.peer, c.comm, s);
    case core::CollectiveOp::Reduce:
      *api = "ncclReduce";
      return BATON_NCCL(lib, ncclReduce, c.src, c.dst, c.count, c.type, c.reduce, c.peer, c.comm,
                        s);
    case core::CollectiveOp::AllGather:
      *api = "ncclAllGather";
      return BATON_NCCL(lib, ncclAllGather, c.src, c.dst, c.count, c.type, c.comm, s);
    case core::CollectiveOp::ReduceScatter:
      *api = "ncclReduceScatter";
      return BATON_NCCL(lib, ncclReduceScatter, c.src, c.dst, c.count, c.type, c.reduce, c.comm, s);
    case core::CollectiveOp::AllToAll: {
      if (lib.sym.ncclAlltoAll) {
        *api = "ncclAlltoAll";
        return BATON_NCCL(lib, ncclAlltoAll, c.src, c.dst, c.count, c.type, c.comm, s);
      }
      // Before NCCL 2.28: the same as a send and a receive per peer, in this group.
      *api = "ncclSend/ncclRecv (all-to-all)";
      const uint64_t slot = c.count * c.elementSize;
      ncclResult_t r = ncclSuccess;
      for (int p = 0; p < c.ranks && r == ncclSuccess; ++p) {
        r = BATON_NCCL(lib, ncclSend, static_cast<const char*>(c.src) + p * slot, c.count, c.type,
                       p, c.comm, s);
        if (r == ncclSuccess)
          r = BATON_NCCL(lib, ncclRecv, static_cast<char*>(c.dst) + p * slot, c.count, c.type, p,
                         c.comm, s);
      }
      return r;
    }
    case core::CollectiveOp::Send:
      *api = "ncclSend";
      return BATON_NCCL(lib, ncclSend, c.src, c.count, c.type, c.peer, c.comm, s);
    case core::CollectiveOp::Recv:
      *api = "ncclRecv";
      return BATON_NCCL(lib, ncclRecv, c.dst, c.count, c.type, c.peer, c.comm, s);
  }
  *api = "?";
  return ncclInvalidArgument;
}

// A group of calls as one library group: ncclGroupStart, the calls, ncclGroupEnd (always, also
// after a failed call: the group must end on the thread that started it). `first`/`firstAt`/
// `firstApi`: the first failed call; `end`: ncclGroupEnd's result.
struct GroupCall {
  ncclResult_t first = ncclSuccess;
  size_t firstAt = 0;
  const char* firstApi = "";
  // The library's own words for `first` (ncclGetLastError), read on the thread that made the
  // call: the emulated NCCL keeps them per thread, and a later call may replace them.
  std::string firstText;
  ncclResult_t start = ncclSuccess;
  ncclResult_t end = ncclSuccess;
};
GroupCall callGroup(const CollectiveLibrary& lib, const std::vector<CallArgs>& calls,
                    cudaStream_t stream) {
  GroupCall g;
  g.start = BATON_NCCL(lib, ncclGroupStart);
  if (g.start != ncclSuccess) return g;
  for (size_t i = 0; i < calls.size(); ++i) {
    const char* api = "";
    ncclResult_t r = issueCall(lib, calls[i], stream, &api);
    if (r != ncclSuccess && r != ncclInProgress) {
      g.first = r;
      g.firstAt = i;
      g.firstApi = api;
      const char* text = lib.sym.ncclGetLastError ? lib.sym.ncclGetLastError(calls[i].comm) : "";
      g.firstText = text ? text : "";
      break;
    }
  }
  g.end = BATON_NCCL(lib, ncclGroupEnd);
  return g;
}

// A ready communicator's rank and rank count, as the library says (a split's or shrink's new
// numbering); an error names the call.
Status queryRank(const CollectiveLibrary& lib, ncclComm_t comm, uint32_t* rank, uint32_t* count) {
  int r = -1, n = 0;
  BATON_TRY(ncclStatus(lib, BATON_NCCL(lib, ncclCommUserRank, comm, &r), "ncclCommUserRank", comm));
  BATON_TRY(ncclStatus(lib, BATON_NCCL(lib, ncclCommCount, comm, &n), "ncclCommCount", comm));
  if (r < 0 || n <= 0 || r >= n)
    return error(Result::ErrorDriver, "the library reports rank %d of %d for a new communicator", r,
                 n);
  *rank = static_cast<uint32_t>(r);
  *count = static_cast<uint32_t>(n);
  return Status();
}

// Splits each ready non-blocking communicator of `comms` (ranks of one group in this process)
// into the blocking one its collective calls use (color 0, keyed by rank: the same ranks), as one
// library group: the split runs as a non-blocking call of the parent, bounded by `timeoutNs`.
// `calls` receives them (nulls with BATON_NCCL_BLOCKING_CALLS=0). On a failure nothing is left.
Status makeCallComms(const CollectiveLibrary& lib, const std::vector<CollectiveDevice>& devices,
                     const std::vector<ncclComm_t>& comms, uint64_t timeoutNs,
                     std::vector<ncclComm_t>* calls) {
  calls->assign(comms.size(), nullptr);
  if (!blockingCallsEnabled()) return Status();
  // The library's thread writes each new communicator once it is initialised; after a timeout
  // it may still do so: the slots are then left to it.
  auto* made = new ncclComm_t[comms.size()]();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  Status st;
  const bool group = comms.size() > 1;
  if (group) st = ncclStatus(lib, BATON_NCCL(lib, ncclGroupStart), "ncclGroupStart");
  for (size_t i = 0; i < comms.size() && st.ok(); ++i) {
    ContextScope scope(*devices[i].driver, devices[i].context);
    st = scope.status();
    if (!st.ok()) break;
    uint32_t rank = 0, count = 0;
    st = queryRank(lib, comms[i], &rank, &count);
    if (!st.ok()) break;
    ncclResult_t r =
        BATON_NCCL(lib, ncclCommSplit, comms[i], 0, static_cast<int>(rank), &made[i], &config);
    if (r != ncclSuccess && r != ncclInProgress)
      st = ncclStatus(lib, r, "ncclCommSplit (the communicator of the calls)", comms[i]);
  }
  if (group) {
    ncclResult_t r = BATON_NCCL(lib, ncclGroupEnd);
    if (st.ok() && r != ncclSuccess && r != ncclInProgress) st = ncclStatus(lib, r, "ncclGroupEnd");
  }
  const uint64_t deadline = core::nowNs() + timeoutNs;
  bool timedOut = false;
  for (size_t i = 0; i < comms.size() && st.ok(); ++i) {
    ContextScope scope(*devices[i].driver, devices[i].context);
    ncclResult_t r = settle(lib, comms[i], deadline);
    if (r == ncclSuccess)
      r = pollDone(
          [&] {
            ncclComm_t c = __atomic_load_n(&made[i], __ATOMIC_ACQUIRE);
            if (!c) return ncclInProgress;
            ncclResult_t state = ncclSuccess;
            ncclResult_t q = BATON_NCCL(lib, ncclCommGetAsyncError, c, &state);
            return q != ncclSuccess ? q : state;
          },
          deadline);
    if (r == ncclInProgress) {
      timedOut = true;
      st = error(Result::ErrorDriver,
                 "the blocking communicator of the collective calls was not ready within %llu ms "
                 "(a rank did not take part in its split)",
                 static_cast<unsigned long long>(ms(timeoutNs)));
    } else if (r != ncclSuccess) {
      st = ncclStatus(lib, r, "ncclCommSplit (the communicator of the calls)", comms[i]);
    }
  }
  if (!st.ok()) {
    for (size_t i = 0; i < comms.size(); ++i)
      if (ncclComm_t c = __atomic_load_n(&made[i], __ATOMIC_ACQUIRE)) {
        ContextScope scope(*devices[i].driver, devices[i].context, ContextScope::kRelease,
                           "aborting a communicator that did not initialise");
        (void)BATON_NCCL(lib, ncclCommAbort, c);
      }
    if (!timedOut) delete[] made;
    return st;
  }
  calls->assign(made, made + comms.size());
  delete[] made;
  return Status();
}

// One group's stretch of a communicator's work on a stream: events recorded before and after it,
// and the claim of the submission it belongs to.
struct Ticket : core::Object {
  Ref<CollectiveClaim> claim;
  void* start = nullptr;
  void* end = nullptr;
  uint64_t startedNs = 0;  // when the watchdog first saw `start` complete; 0 before
};

class StreamCommunicator;

class StreamCommunicator final : public core::CommunicatorImpl {
 public:
  // `comm`: the non-blocking communicator (made, split, shrunk); `calls`: the blocking one split
  // from it for the collective calls, or null (BATON_NCCL_BLOCKING_CALLS=0: calls on `comm`).
  // `rank` of `count`: the library's (queryRank). `localPeers`: other ranks of it may be in this
  // process (made together by createCommunicators, or split or shrunk from such a one).
  StreamCommunicator(const CollectiveLibrary& lib, const CollectiveDevice& dev, std::string name,
                     uint64_t timeoutNs, ncclComm_t comm, ncclComm_t calls, uint32_t rank,
                     uint32_t count, bool localPeers)
      : lib(lib),
        localPeers(localPeers && count > 1),
        driver(*dev.driver),
        context(dev.context),
        device(dev.device),
        timeoutNs(timeoutNs),
        computeMajor_(dev.device->physical()->properties.computeMajor),
        computeMinor_(dev.device->physical()->properties.computeMinor),
        keepDevice_(dev.device),
        comm_(comm),
        calls_(calls),
        blocking_(calls != nullptr) {
    label = std::move(name);
    this->rank = rank;
    rankCount = count;
  }
  ~StreamCommunicator() override { (void)destroy(); }

  Status supports(core::CollectiveOp op, ElementType type, ReduceOp reduce) const override {
    CollectiveCallShape call;
    call.op = op;
    call.type = type;
    call.reduce = reduce;
    call.rankCount = rankCount;
    call.computeMajor = computeMajor_;
    call.computeMinor = computeMinor_;
    return checkSupported(lib, call);
  }

  bool failed(std::string* reason) const override {
    if (!failed_.load(std::memory_order_acquire)) {
      if (reason) reason->clear();
      return false;
    }
    if (reason) {
      std::lock_guard<std::mutex> lock(stateMutex_);
      *reason = reason_;
    }
    return true;
  }

  Status split(int32_t color, int32_t key, const std::string& newLabel,
               Ref<core::CommunicatorImpl>* out) override {
    std::lock_guard<std::mutex> lock(call);
    BATON_TRY(live());
    ContextScope scope(driver, context);
    BATON_TRY(scope.status());
    ncclConfig_t config = nonBlocking();
    ncclComm_t made = nullptr;
    ncclResult_t r = BATON_NCCL(lib, ncclCommSplit, comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color,
                                key, &made, &config);
    if (r == ncclInProgress || r == ncclSuccess) r = settle(lib, comm_, deadline());
    return adopt(r, "ncclCommSplit", made, newLabel, color < 0, out);
  }

  Status shrink(const std::vector<int>& excluded, const std::string& newLabel,
                Ref<core::CommunicatorImpl>* out) override {
    if (!lib.sym.ncclCommShrink)
      return error(Result::ErrorNotSupported,
                   "%s %d.%d.%d (%s) has no ncclCommShrink (NCCL 2.27 or later has it)", lib.name,
                   lib.version / 10000, lib.version % 10000 / 100, lib.version % 100,
                   lib.path.c_str());
    std::lock_guard<std::mutex> lock(call);
    BATON_TRY(live());
    ContextScope scope(driver, context);
    BATON_TRY(scope.status());
    ncclConfig_t config = nonBlocking();
    ncclComm_t made = nullptr;
    std::vector<int> list = excluded;
    // The library refuses a shrink while the parent's last operation is in progress (a revoke
    // finishing: ~0.5 s on the H200s): let it settle first.
    (void)settle(lib, comm_, deadline());
    // A failed communicator's stuck operations are ended first (NCCL_SHRINK_ABORT); after a
    // revoke there are none left, and the flag is then harmless.
    const int flags = failed(nullptr) ? NCCL_SHRINK_ABORT : NCCL_SHRINK_DEFAULT;
    ncclResult_t r = BATON_NCCL(lib, ncclCommShrink, comm_, list.data(),
                                static_cast<int>(list.size()), &made, &config, flags);
    if (flags == NCCL_SHRINK_ABORT) stuckEnded_ = true;
    // Non-blocking: the library's own thread writes the new communicator to `made` once the
    // survivors have met (NCCL keeps *newcomm null until then). The parent's state cannot say
    // when: a failed parent reports its error throughout.
    if (r == ncclInProgress || r == ncclSuccess) {
      const uint64_t until = deadline();
      while (!__atomic_load_n(&made, __ATOMIC_ACQUIRE) && core::nowNs() < until)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      r = ncclSuccess;
    }
    return adopt(r, "ncclCommShrink", __atomic_load_n(&made, __ATOMIC_ACQUIRE), newLabel, false,
                 out);
  }

  // Also releases its events and its reference to the device, here, on the thread that destroys
  // the communicator (the handle's, or the device's shutdown): the watchdog may hold the object
  // longer, and must not be the thread that drops a device's last reference (its destruction
  // joins threads and releases the context; ThreadSanitizer saw the emulated driver's streams
  // freed there without order against their workers).
  Status destroy() override {
    Ref<core::Device> last;  // declared first: dropped after the lock and the context scope
    std::lock_guard<std::mutex> lock(call);
    if (!comm_) return Status();
    ncclComm_t comm = comm_;
    ContextScope scope(driver, context, ContextScope::kRelease, "destroying a communicator");
    dropCaptured("destroyed");
    Status st = endCalls();
    Status s = end(comm);
    if (st.ok()) st = s;
    comm_ = nullptr;
    {
      // The stretches still watched ended with the communicator (finalized or aborted): their
      // events go, with the free ones (the driver frees an event whose record is pending once it
      // completed).
      std::lock_guard<std::mutex> watch(watchMutex_);
      for (const Ref<Ticket>& t : tickets_) {
        (void)driver.eventDestroy(t->start);
        (void)driver.eventDestroy(t->end);
      }
      tickets_.clear();
      for (void* e : freeEvents_) (void)driver.eventDestroy(e);
      freeEvents_.clear();
    }
    // Not under a call that never returned: it may still capture on it.
    if (captureStream_ && inCall_.load(std::memory_order_acquire) == 0)
      (void)driver.streamDestroy(captureStream_);
    captureStream_ = nullptr;
    last = std::move(keepDevice_);
    return st;
  }

  // Ends the blocking communicator of the calls (`call` held): destroyed once its collectives
  // completed (within the timeout), aborted when the communicator failed or they did not; while
  // a call on it has not returned (aborting it would free it under that call), left to that call:
  // the caller thread aborts it when the call returns (callReturned).
  Status endCalls() {
    if (!calls_) return Status();
    ncclComm_t calls = calls_;
    calls_ = nullptr;
    {
      std::lock_guard<std::mutex> lock(orphanMutex_);
      if (inCall_.load(std::memory_order_acquire) > 0) {
        orphan_ = calls;
        core::message(device->instance(), MessageSeverity::Warning,
                      label +
                          ": destroyed while a collective call had not returned from the library: "
                          "its blocking communicator is aborted when that call returns");
        return Status();
      }
    }
    if (!failed(nullptr) && !collectivesDone(deadline()))
      failLocked(format("destroyed while its collectives could not complete within %llu ms",
                        static_cast<unsigned long long>(ms(timeoutNs))));
    if (failed(nullptr))
      return ncclStatus(lib, BATON_NCCL(lib, ncclCommAbort, calls), "ncclCommAbort");
    return ncclStatus(lib, BATON_NCCL(lib, ncclCommDestroy, calls), "ncclCommDestroy");
  }

  // Whether the stretches handed to the watchdog completed by `deadlineNs` (polls their events).
  bool collectivesDone(uint64_t deadlineNs) {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(watchMutex_);
        bool all = true;
        for (const Ref<Ticket>& t : tickets_)
          if (driver.eventQuery(t->end).code() == Result::NotReady) {
            all = false;
            break;
          }
        if (all) return true;
      }
      if (core::nowNs() >= deadlineNs) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  // Finalizes (healthy) or aborts (failed, or finalize past the timeout) the library's
  // communicator; `call` held.
  Status end(ncclComm_t comm) {
    Status st;
    bool abort = failed(nullptr);
    if (!abort) {
      // Finalize flushes what was issued, which needs the other ranks: bounded by the timeout.
      ncclResult_t r = BATON_NCCL(lib, ncclCommFinalize, comm);
      if (r == ncclSuccess || r == ncclInProgress) r = settle(lib, comm, deadline());
      if (r == ncclInProgress) {
        failLocked(format("destroyed while its collectives could not complete within %llu ms",
                          static_cast<unsigned long long>(ms(timeoutNs))));
        abort = true;
      } else if (r != ncclSuccess) {
        st = ncclStatus(lib, r, "ncclCommFinalize", comm);
        failLocked("destroyed after " + ncclResultText(lib, r));
        abort = true;
      }
    }
    if (abort) {
      Status s = ncclStatus(lib, BATON_NCCL(lib, ncclCommAbort, comm), "ncclCommAbort");
      if (st.ok()) st = s;
    } else {
      st = ncclStatus(lib, BATON_NCCL(lib, ncclCommDestroy, comm), "ncclCommDestroy");
    }
    return st;
  }

  // ---- the issuing side (enqueueCollectives), with `call` held ----

  Status live() const {
    if (!comm_) return error(Result::ErrorInvalidState, "%s was destroyed", label.c_str());
    return Status();
  }
  // The communicator the collective calls go to (the blocking one where there is one).
  ncclComm_t callComm() const noexcept { return blocking_ ? calls_ : comm_; }
  bool blockingCalls() const noexcept { return blocking_; }
  // Calls on the blocking communicator that have not returned (GroupJob): while one has not,
  // nothing may end that communicator. Raised by the issuing thread (call held), lowered by the
  // caller thread (callReturned).
  std::atomic<int> inCall_{0};
  // The caller thread, once a call on the blocking communicator returned: the last one to return
  // after destroy() left that communicator behind aborts it (never under `call`, which the issuing
  // thread holds while it waits for the caller).
  void callReturned() {
    ncclComm_t orphan = nullptr;
    {
      std::lock_guard<std::mutex> lock(orphanMutex_);
      if (inCall_.fetch_sub(1, std::memory_order_acq_rel) == 1) std::swap(orphan, orphan_);
    }
    if (!orphan) return;
    ContextScope scope(driver, context, ContextScope::kRelease,
                       "aborting a communicator whose call returned after its destroy");
    dropCaptured("destroyed");
    (void)BATON_NCCL(lib, ncclCommAbort, orphan);
  }
  // An enqueue never finished (enqueueCollectives): no revoke, destroy() aborts.
  void markEnqueueStuck() noexcept { enqueueStuck_ = true; }
  uint64_t deadline() const noexcept {
    const uint64_t now = core::nowNs();
    return timeoutNs > UINT64_MAX - now ? UINT64_MAX : now + timeoutNs;
  }

  Status takeEvent(void** event) {
    {
      std::lock_guard<std::mutex> lock(watchMutex_);
      if (!freeEvents_.empty()) {
        *event = freeEvents_.back();
        freeEvents_.pop_back();
        return Status();
      }
    }
    return driver.eventCreate(event, false);
  }
  void giveEvent(void* event) {
    std::lock_guard<std::mutex> lock(watchMutex_);
    freeEvents_.push_back(event);
  }

  // The stream its collective groups are captured on, made at the first capture; `call` held.
  Status captureStream(void** out) {
    if (!captureStream_)
      BATON_TRY(
          driver.streamCreate(&captureStream_).context("creating the capture stream of " + label));
    *out = captureStream_;
    return Status();
  }
  // A capture's end failed twice: the stream may still capture, and is replaced; `call` held.
  void captureStreamBroken() {
    (void)driver.streamDestroy(captureStream_);
    captureStream_ = nullptr;
  }
  // Keeps an executable graph that captured this communicator's collectives, to drop it before
  // the library communicator ends (CapturedExec). Forgets the dropped ones.
  void hold(Ref<CapturedExec> exec) {
    std::vector<Ref<CapturedExec>> gone;  // released after the lock: a last reference locks its
                                          // own mutex, which a launch holds while it takes ours
    std::lock_guard<std::mutex> lock(capturedMutex_);
    for (Ref<CapturedExec>& e : captured_)
      if (e->dropped()) gone.push_back(std::move(e));
    captured_.erase(std::remove_if(captured_.begin(), captured_.end(),
                                   [](const Ref<CapturedExec>& e) { return !e; }),
                    captured_.end());
    captured_.push_back(std::move(exec));
  }
  // Drops every executable graph holding this communicator's collectives (`why`: what ended it).
  void dropCaptured(const std::string& why) {
    std::vector<Ref<CapturedExec>> all;
    {
      std::lock_guard<std::mutex> lock(capturedMutex_);
      all.swap(captured_);
    }
    for (const Ref<CapturedExec>& e : all) e->drop(label + " " + why);
  }

  // Hands a ticket to the watchdog.
  void addTicket(Ref<Ticket> ticket) {
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(watchMutex_);
      tickets_.push_back(std::move(ticket));
      if (!watched_) wake = watched_ = true;
    }
    // The watchdog looks every kWatchPeriodNs at a communicator that has tickets (check()).
    if (wake)
      core::Watchdog::watch(
          [comm = Ref<StreamCommunicator>(this)](uint64_t now) { return comm->check(now); },
          kWatchPeriodNs);
  }

  // Fails the communicator (once): its in-flight submissions' signals fail with the reason, then
  // its stuck operations are ended where the library can (ncclCommRevoke). Without locks held.
  void fail(const std::string& what) {
    if (!markFailed(what)) return;
    failTickets();
    endStuck();
  }

  // ---- the watchdog's side ----

  // One look: retires completed tickets, times the oldest started one, asks the library for an
  // asynchronous error. Returns false when nothing is left to watch (the watchdog then drops it).
  bool check(uint64_t now) {
    bool stalled = false;
    {
      std::lock_guard<std::mutex> lock(watchMutex_);
      if (tickets_.empty()) {
        watched_ = false;
        return false;
      }
      ContextScope scope(driver, context);
      if (!scope.ok()) return true;  // tried again at the next look
      const bool failedNow = failed(nullptr);
      while (!tickets_.empty()) {
        Ticket& t = *tickets_.front();
        Status s = driver.eventQuery(t.end);
        if (s.code() == Result::NotReady) {
          if (failedNow) break;  // stuck until revoked, shrunk or destroyed: nothing to time
          if (driver.eventQuery(t.start).ok()) {
            if (t.startedNs == 0)
              t.startedNs = now;
            else if (now - t.startedNs > timeoutNs)
              stalled = true;
          }
          break;
        }
        // Completed; or an error, which is the device's loss (the completion threads fail the
        // records): either way the stretch is over.
        if (s.ok()) {
          freeEvents_.push_back(t.start);
          freeEvents_.push_back(t.end);
        } else {
          (void)driver.eventDestroy(t.start);
          (void)driver.eventDestroy(t.end);
        }
        tickets_.pop_front();
      }
      if (tickets_.empty()) {
        watched_ = false;
        return false;
      }
    }
    if (failed(nullptr)) return true;
    ncclResult_t async = ncclSuccess;
    {
      // Never waits for an issuing thread that is in a call on this communicator.
      std::unique_lock<std::mutex> lock(call, std::try_to_lock);
      if (lock.owns_lock() && comm_ && callComm()) {
        ncclResult_t r = BATON_NCCL(lib, ncclCommGetAsyncError, callComm(), &async);
        if (r != ncclSuccess) async = r;
      }
    }
    if (async != ncclSuccess && async != ncclInProgress) {
      const char* last = lib.sym.ncclGetLastError(nullptr);
      fail(ncclResultText(lib, async) + (last && *last ? std::string(": ") + last : std::string()));
    } else if (stalled) {
      fail(
          format("no progress for %llu ms (a collective started and did not complete: a rank "
                 "died, stalled, or did not submit its part)",
                 static_cast<unsigned long long>(ms(timeoutNs))));
    }
    return true;
  }

  // With `call` held (destroy): fails the communicator without ending stuck operations (the
  // caller aborts).
  void failLocked(const std::string& what) {
    if (markFailed(what)) failTickets();
  }

  const CollectiveLibrary& lib;
  const bool localPeers;  // other ranks of it may be in this process (constructor)
  const DriverTable& driver;
  void* const context;
  core::Device* const device;
  const uint64_t timeoutNs;
  std::mutex call;  // one library call at a time on comm_ (NCCL requires it per communicator)

 private:
  // Builds the communicator a split or shrink made: waits for it to be initialised.
  Status adopt(ncclResult_t r, const char* api, ncclComm_t made, const std::string& newLabel,
               bool noColor, Ref<core::CommunicatorImpl>* out) {
    if (r != ncclSuccess && r != ncclInProgress) {
      if (made) (void)BATON_NCCL(lib, ncclCommAbort, made);
      return ncclStatus(lib, r, api, comm_);
    }
    if (!made) {
      if (noColor) return Status();
      return error(Result::ErrorDriver,
                   "%s: no new communicator within %llu ms (the other survivors did not call it, "
                   "or the library failed: %s)",
                   api, static_cast<unsigned long long>(ms(timeoutNs)),
                   lib.sym.ncclGetLastError(nullptr));
    }
    r = settle(lib, made, deadline());
    if (r != ncclSuccess) {
      Status st = r == ncclInProgress
                      ? error(Result::ErrorDriver,
                              "%s: the new communicator was not ready within %llu ms (ranks did "
                              "not arrive)",
                              api, static_cast<unsigned long long>(ms(timeoutNs)))
                      : ncclStatus(lib, r, api, made);
      (void)BATON_NCCL(lib, ncclCommAbort, made);
      return st;
    }
    CollectiveDevice dev{&driver, context, device};
    uint32_t newRank = 0, newCount = 0;
    Status st = queryRank(lib, made, &newRank, &newCount);
    std::vector<ncclComm_t> calls;
    if (st.ok()) st = makeCallComms(lib, {dev}, {made}, timeoutNs, &calls);
    if (!st.ok()) {
      (void)BATON_NCCL(lib, ncclCommAbort, made);
      return st.context(std::string(api));
    }
    *out = Ref<core::CommunicatorImpl>::adopt(new StreamCommunicator(
        lib, dev, newLabel, timeoutNs, made, calls[0], newRank, newCount, localPeers));
    return Status();
  }

  bool markFailed(const std::string& what) {
    const std::string reason = label + ": " + what;
    {
      std::lock_guard<std::mutex> lock(stateMutex_);
      if (failed_.load(std::memory_order_relaxed)) return false;
      reason_ = reason;
      failed_.store(true, std::memory_order_release);
    }
    core::trace::communicatorFailed(reason);
    core::message(device->instance(), MessageSeverity::Error, reason);
    return true;
  }

  void failTickets() {
    std::vector<Ref<CollectiveClaim>> claims;
    {
      std::lock_guard<std::mutex> lock(watchMutex_);
      for (const Ref<Ticket>& t : tickets_) claims.push_back(t->claim);
    }
    std::string reason;
    failed(&reason);
    const Status why(Result::ErrorSemaphoreFailed, reason);
    core::Notifier::Scope scope;  // waiters are released once, after all failed
    for (const Ref<CollectiveClaim>& c : claims) c->fail(why);
  }

  void endStuck() {
    {
      std::string reason;
      failed(&reason);
      dropCaptured("failed (" + reason + ")");
    }
    if (blocking_) {
      // The calls' own communicator: aborted at once, with any library (the non-blocking one,
      // which ran no collective, stays for shrink and split). Not while a call on it has not
      // returned: destroy() leaves it to the library then.
      std::lock_guard<std::mutex> lock(call);
      if (!calls_ || inCall_.load(std::memory_order_acquire) > 0) return;
      ContextScope scope(driver, context, ContextScope::kRelease, "aborting a failed communicator");
      ncclResult_t r = BATON_NCCL(lib, ncclCommAbort, calls_);
      calls_ = nullptr;
      if (r != ncclSuccess)
        core::message(
            device->instance(), MessageSeverity::Warning,
            label + ": ncclCommAbort of its failed collectives: " + ncclResultText(lib, r));
      return;
    }
    if (!lib.sym.ncclCommRevoke || gRevokeDisabled.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(call);
    if (!comm_ || stuckEnded_ || enqueueStuck_) return;
    ContextScope scope(driver, context, ContextScope::kRelease, "revoking a failed communicator");
    ncclResult_t r = BATON_NCCL(lib, ncclCommRevoke, comm_, NCCL_REVOKE_DEFAULT);
    // About half a second on the H200s (docs/performance.md, 'Measurements behind design choices'),
    // whatever the communicator's timeout: at least 10 s.
    const uint64_t now = core::nowNs();
    if (r == ncclSuccess || r == ncclInProgress)
      r = settle(lib, comm_, std::max<uint64_t>(deadline(), now + 10'000'000'000ull));
    stuckEnded_ = true;
    if (r != ncclSuccess)
      core::message(device->instance(), MessageSeverity::Warning,
                    label + ": ncclCommRevoke did not end its operations: " +
                        (r == ncclInProgress ? std::string("still in progress after the timeout")
                                             : ncclResultText(lib, r)));
  }

  // This rank's GPU, for supports().
  const uint32_t computeMajor_, computeMinor_;

  Ref<core::Device> keepDevice_;  // the context lives as long as the device's shared state
  ncclComm_t comm_;               // null once destroyed (call)
  ncclComm_t calls_;              // the blocking one; null once ended (call)
  std::mutex orphanMutex_;        // orphan_, and inCall_'s last decrement against destroy()
  ncclComm_t orphan_ = nullptr;   // calls_ left by destroy() to a call not yet returned
  const bool blocking_;           // collective calls go to calls_ (made with one)
  bool stuckEnded_ = false;       // revoked or shrunk with NCCL_SHRINK_ABORT (call)
  bool enqueueStuck_ = false;     // an enqueue never left ncclInProgress (call)
  mutable std::mutex stateMutex_;
  std::atomic<bool> failed_{false};
  std::string reason_;  // stateMutex_
  std::mutex watchMutex_;
  std::deque<Ref<Ticket>> tickets_;  // in stream order (watchMutex_)
  std::vector<void*> freeEvents_;    // watchMutex_
  bool watched_ = false;             // in the watchdog's list (watchMutex_)
  void* captureStream_ = nullptr;    // call
  std::mutex capturedMutex_;
  std::vector<Ref<CapturedExec>> captured_;  // capturedMutex_
};

// A group of calls on blocking communicators, run by a Caller.
struct GroupJob {
  const CollectiveLibrary* lib = nullptr;
  const DriverTable* driver = nullptr;
  void* context = nullptr;
  cudaStream_t stream = nullptr;
  std::vector<CallArgs> calls;
  // Kept while a call is in the library (each one's inCall_ counts it): a call that never
  // returns keeps them, and nothing ends their library communicators under it.
  std::vector<Ref<StreamCommunicator>> comms;
  uint64_t traceId = 0;  // the submission's (trace.hpp): the call is a slice of the caller's track
  Status status;         // the context could not be made current, or the capture failed
  GroupCall result;
  std::atomic<bool> done{false};
  // A capture (launchCollectiveGraph): `stream` captures the group; the graph is handed over
  // through `graph` (kAbandonedGraph once the issuing thread gave up: then whichever side comes
  // second destroys it), and `captureBroken` says the stream may still capture.
  bool capture = false;
  bool captureBroken = false;
  std::atomic<void*> graph{nullptr};
};

// GroupJob::graph once the issuing thread stopped waiting.
void* const kAbandonedGraph = reinterpret_cast<void*>(uintptr_t{1});

// Captures a group of calls on `stream` (ncclGroupStart ... ncclGroupEnd between the begin and the
// end of a capture, on this thread); `settle` runs before the end (non-blocking communicators
// finish enqueueing on the library's thread). *graph receives the captured graph (the caller's),
// null on a failure; *broken is set when the stream may still capture (its end failed twice).
Status captureGroup(const DriverTable& d, const CollectiveLibrary& lib,
                    const std::vector<CallArgs>& calls, cudaStream_t stream,
                    const std::function<void()>& settle, GroupCall* g, void** graph, bool* broken) {
  *graph = nullptr;
  BATON_TRY(d.streamBeginCapture(stream).context("starting the capture of collectives"));
  *g = callGroup(lib, calls, stream);
  if (settle) settle();
  void* made = nullptr;
  Status st = endCapture(d, stream, &made, broken);
  if (!st.ok()) return st.context("capturing collectives (NCCL under stream capture)");
  if (!made) return error(Result::ErrorDriver, "capturing collectives gave no graph");
  *graph = made;
  return Status();
}

// The thread of a device that makes its blocking collective calls. A blocking call returns
// once its work is enqueued (µs), but can wait in the library for a peer (connection set-up at a
// communicator's first collectives needs every peer): made on the device's issuing thread, such
// a call would hold every queue of the device for as long as the peer does not come. Here the
// issuing thread waits for it up to the communicator's timeout and then gives up on it; the
// stuck caller is abandoned (its call returns when the peer comes, or never), and the device's
// next group gets a new one. One per device context, made at its first collective, for the
// process's life (parked when idle). Both sides spin briefly before they sleep: a group's
// calls take ~10-20 µs, less than a sleep and a wake-up.
class Caller : public std::enable_shared_from_this<Caller> {
 public:
  static std::shared_ptr<Caller> forContext(void* context) {
    static auto* registry = new Registry;  // never destroyed: its threads may run until exit
    std::lock_guard<std::mutex> lock(registry->mutex);
    std::shared_ptr<Caller>& c = registry->callers[context];
    if (!c) {
      c = std::make_shared<Caller>();
      c->context_ = context;
      c->registry_ = registry;
      std::thread t([self = c] { self->loop(); });
      pthread_setname_np(t.native_handle(), "baton-caller");  // for profilers, the trace
      t.detach();
    }
    return c;
  }

  // Runs `job` on this thread's caller and waits until it returned or `deadlineNs` passed:
  // true when it returned. On a timeout this caller is abandoned.
  bool run(const std::shared_ptr<GroupJob>& job, uint64_t deadlineNs) {
    for (const Ref<StreamCommunicator>& c : job->comms)
      c->inCall_.fetch_add(1, std::memory_order_acq_rel);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = job;
      posted_.store(true, std::memory_order_release);
    }
    work_.notify_one();
    const uint64_t start = core::nowNs();
    while (!job->done.load(std::memory_order_acquire)) {
      const uint64_t now = core::nowNs();
      if (now - start < kWaitSpinNs) {
        core::cpuRelax();
        continue;
      }
      std::unique_lock<std::mutex> lock(mutex_);
      if (job->done.load(std::memory_order_acquire)) break;
      if (now >= deadlineNs) {
        abandon();
        return false;
      }
      const uint64_t until = std::min<uint64_t>(deadlineNs, now + 1'000'000'000ull);
      doneCv_.wait_for(lock, std::chrono::nanoseconds(until - now));
    }
    core::trace::span(core::trace::kCallerWait, job->traceId, start);
    return true;
  }

 private:
  struct Registry {
    std::mutex mutex;
    std::unordered_map<void*, std::shared_ptr<Caller>> callers;
  };
  // The issuing thread waits this long spinning before it sleeps; the caller spins this long for
  // its next job.
  static constexpr uint64_t kWaitSpinNs = 200'000;
  static constexpr uint64_t kNextSpinNs = 50'000;

  // mutex_ held: the next group of this device goes to a new caller; this one ends after its
  // call returns.
  void abandon() {
    abandoned_ = true;
    std::lock_guard<std::mutex> lock(registry_->mutex);
    auto it = registry_->callers.find(context_);
    if (it != registry_->callers.end() && it->second.get() == this) registry_->callers.erase(it);
  }

  void loop() {
    for (;;) {
      const uint64_t start = core::nowNs();
      while (!posted_.load(std::memory_order_acquire) && core::nowNs() - start < kNextSpinNs)
        core::cpuRelax();
      std::shared_ptr<GroupJob> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (!posted_.load(std::memory_order_relaxed)) {
          const uint64_t sleptAt = core::trace::on() ? core::nowNs() : 0;
          work_.wait(lock, [&] { return posted_.load(std::memory_order_relaxed); });
          core::trace::span(core::trace::kCallerSleep, 0, sleptAt);
        }
        job = std::move(job_);
        posted_.store(false, std::memory_order_relaxed);
      }
      {
        ContextScope scope(*job->driver, job->context);
        if (scope.ok()) {
          core::trace::callBegin(core::trace::kLibraryCall, job->traceId);
          if (job->capture) {
            void* graph = nullptr;
            job->status = captureGroup(*job->driver, *job->lib, job->calls, job->stream, nullptr,
                                       &job->result, &graph, &job->captureBroken);
            // Handed over, unless the issuing thread gave up: then it is dropped here, before
            // the communicators can end (a graph holding their collectives would hold that up).
            if (graph && job->graph.exchange(graph) == kAbandonedGraph)
              (void)job->driver->graphDestroy(graph);
          } else {
            job->result = callGroup(*job->lib, job->calls, job->stream);
          }
          core::trace::callEnd(core::trace::kLibraryCall, job->traceId);
        } else
          job->status = scope.status();
      }
      for (const Ref<StreamCommunicator>& c : job->comms) c->callReturned();
      bool abandoned;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        job->done.store(true, std::memory_order_release);
        abandoned = abandoned_;
      }
      doneCv_.notify_all();
      job->comms.clear();
      if (abandoned) return;
    }
  }

  std::mutex mutex_;
  std::condition_variable work_;    // a job was posted
  std::condition_variable doneCv_;  // the job returned
  std::shared_ptr<GroupJob> job_;   // mutex_
  std::atomic<bool> posted_{false};
  bool abandoned_ = false;  // mutex_
  void* context_ = nullptr;
  Registry* registry_ = nullptr;
};

Status unavailable(const CollectiveLibrary& lib) {
  return Status(Result::ErrorNotSupported,
                std::string("collectives are unavailable: ") + lib.reason);
}

// Waits for communicators being initialised; aborts them all on a failure or timeout.
Status settleInit(const CollectiveLibrary& lib, std::vector<ncclComm_t>& comms,
                  const std::vector<CollectiveDevice>& devices, uint64_t timeoutNs) {
  const uint64_t deadline = core::nowNs() + timeoutNs;
  Status st;
  for (size_t i = 0; i < comms.size() && st.ok(); ++i) {
    ContextScope scope(*devices[i].driver, devices[i].context);
    ncclResult_t r = settle(lib, comms[i], deadline);
    if (r == ncclInProgress)
      st = error(Result::ErrorDriver,
                 "the communicator group was not complete within %llu ms: a rank did not arrive "
                 "(its process not started, or given another id or rank count)",
                 static_cast<unsigned long long>(ms(timeoutNs)));
    else if (r != ncclSuccess)
      st = ncclStatus(lib, r, "ncclCommInitRankConfig", comms[i]);
  }
  if (!st.ok())
    for (size_t i = 0; i < comms.size(); ++i)
      if (comms[i]) {
        ContextScope scope(*devices[i].driver, devices[i].context, ContextScope::kRelease,
                           "aborting a communicator that did not initialise");
        (void)BATON_NCCL(lib, ncclCommAbort, comms[i]);
      }
  return st;
}

}  // namespace

CollectiveSupport collectiveSupport(BackendKind backend) {
  const CollectiveLibrary& lib = collectiveLibrary(backend);
  CollectiveSupport s;
  s.backend = backend;
  s.available = lib.loaded;
  if (!lib.loaded) {
    core::copyText(s.reason, sizeof s.reason, lib.reason);
    return s;
  }
  s.version = static_cast<uint32_t>(lib.version);
  core::copyText(s.library, sizeof s.library, lib.path);
  s.canRevoke = lib.sym.ncclCommRevoke != nullptr;
  s.canShrink = lib.sym.ncclCommShrink != nullptr;
  s.blockingCalls = blockingCallsEnabled();
  return s;
}

Status createCommunicatorId(BackendKind backend, CommunicatorId* id) {
  const CollectiveLibrary& lib = collectiveLibrary(backend);
  if (!lib.loaded) return unavailable(lib);
  static_assert(sizeof(ncclUniqueId) == sizeof(CommunicatorId));
  ncclUniqueId unique;
  BATON_TRY(ncclStatus(lib, BATON_NCCL(lib, ncclGetUniqueId, &unique), "ncclGetUniqueId"));
  std::memcpy(id->bytes, unique.internal, sizeof id->bytes);
  return Status();
}

Status createCommunicator(const CollectiveDevice& device, const core::CommunicatorSetup& setup,
                          Ref<core::CommunicatorImpl>* out) {
  std::vector<Ref<core::CommunicatorImpl>> made;
  BATON_TRY(createCommunicators({device}, {setup}, &made));
  *out = std::move(made[0]);
  return Status();
}

Status createCommunicators(const std::vector<CollectiveDevice>& devices,
                           const std::vector<core::CommunicatorSetup>& setups,
                           std::vector<Ref<core::CommunicatorImpl>>* out) {
  const CollectiveLibrary& lib = collectiveLibrary(devices[0].driver->kind);
  if (!lib.loaded) return unavailable(lib);
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  ncclConfig_t config = nonBlocking();
  Status st;
  // One group of init calls, each with its device current: the library initialises them
  // together, so one thread can make every rank of a group (as ncclCommInitAll does).
  const bool group = devices.size() > 1;
  if (group) BATON_TRY(ncclStatus(lib, BATON_NCCL(lib, ncclGroupStart), "ncclGroupStart"));
  for (size_t i = 0; i < devices.size() && st.ok(); ++i) {
    ContextScope scope(*devices[i].driver, devices[i].context);
    st = scope.status();
    if (!st.ok()) break;
    ncclUniqueId id;
    std::memcpy(id.internal, setups[i].id.bytes, sizeof id.internal);
    ncclResult_t r =
        BATON_NCCL(lib, ncclCommInitRankConfig, &comms[i], static_cast<int>(setups[i].rankCount),
                   id, static_cast<int>(setups[i].rank), &config);
    if (r != ncclSuccess && r != ncclInProgress) st = ncclStatus(lib, r, "ncclCommInitRankConfig");
  }
  if (group) {
    ncclResult_t r = BATON_NCCL(lib, ncclGroupEnd);
    if (st.ok() && r != ncclSuccess && r != ncclInProgress) st = ncclStatus(lib, r, "ncclGroupEnd");
  }
  if (st.ok()) {
    st = settleInit(lib, comms, devices, setups[0].timeoutNs);
  } else {
    for (size_t i = 0; i < comms.size(); ++i)
      if (comms[i]) (void)BATON_NCCL(lib, ncclCommAbort, comms[i]);
  }
  if (!st.ok())
    return st.context(setups.size() > 1 ? "creating " + std::to_string(setups.size()) +
                                              " ranks of a communicator group"
                                        : "creating " + setups[0].label);
  std::vector<ncclComm_t> calls;
  st = makeCallComms(lib, devices, comms, setups[0].timeoutNs, &calls);
  if (!st.ok()) {
    for (size_t i = 0; i < comms.size(); ++i) {
      ContextScope scope(*devices[i].driver, devices[i].context, ContextScope::kRelease,
                         "aborting a communicator that did not initialise");
      (void)BATON_NCCL(lib, ncclCommAbort, comms[i]);
    }
    return st.context(setups.size() > 1 ? "creating " + std::to_string(setups.size()) +
                                              " ranks of a communicator group"
                                        : "creating " + setups[0].label);
  }
  out->clear();
  for (size_t i = 0; i < devices.size(); ++i)
    out->push_back(Ref<core::CommunicatorImpl>::adopt(
        new StreamCommunicator(lib, devices[i], setups[i].label, setups[i].timeoutNs, comms[i],
                               calls[i], setups[i].rank, setups[i].rankCount, devices.size() > 1)));
  return Status();
}

namespace {

std::string noProgress(const char* what, uint64_t timeoutNs) {
  return format(
      "no progress for %llu ms: the library did not %s a collective (a peer never "
      "connected: a rank died, stalled, or did not submit its part)",
      static_cast<unsigned long long>(ms(timeoutNs)), what);
}

// What enqueueCollectives and launchCollectiveGraph share: the communicators of the collective
// commands among commands[0, count), each once, locked in address order (two queues may issue
// groups over the same pair) and checked; the calls of a group as plain values; the tickets of
// what is enqueued; and the communicators found broken, failed (their earlier submissions too)
// once the locks are let go.
class Session {
 public:
  Session(const core::Command* commands, size_t count) {
    for (size_t i = 0; i < count; ++i) {
      if (commands[i].kind != core::Command::Kind::Collective) continue;
      auto* c = static_cast<StreamCommunicator*>(commands[i].communicator->impl.get());
      if (std::find(comms_.begin(), comms_.end(), c) == comms_.end()) comms_.push_back(c);
    }
    std::sort(comms_.begin(), comms_.end());
    for (StreamCommunicator* c : comms_) locks_.emplace_back(c->call);
  }

  Status check() {
    blocking_ = comms_[0]->blockingCalls();
    for (StreamCommunicator* c : comms_) {
      std::string reason;
      if (c->failed(&reason))
        return error(Result::ErrorInvalidState, "%s failed: %s", c->label.c_str(), reason.c_str());
      BATON_TRY(c->live());
      if (c->blockingCalls() != blocking_ || !c->callComm())
        return error(Result::ErrorInvalidState, "%s cannot take collective calls now",
                     c->label.c_str());
      deadline_ = std::min(deadline_, c->deadline());
    }
    return Status();
  }

  const CollectiveLibrary& lib() const { return comms_[0]->lib; }
  const std::vector<StreamCommunicator*>& comms() const { return comms_; }

  // Takes two events per communicator and records each one's first on `stream`.
  Status begin(const DriverTable& d, void* stream, CollectiveClaim& claim) {
    for (StreamCommunicator* c : comms_) {
      Ref<Ticket> t = core::makeRef<Ticket>();
      t->claim = Ref<CollectiveClaim>(&claim);
      tickets_.push_back(t);
      Status st = c->takeEvent(&t->start);
      if (st.ok()) st = c->takeEvent(&t->end);
      if (st.ok()) st = d.eventRecord(t->start, stream);
      if (!st.ok()) {
        for (size_t i = 0; i < tickets_.size(); ++i) {
          if (tickets_[i]->start) comms_[i]->giveEvent(tickets_[i]->start);
          if (tickets_[i]->end) comms_[i]->giveEvent(tickets_[i]->end);
        }
        tickets_.clear();
        return st;
      }
    }
    return Status();
  }

  // commands[0, count) (one group) as the library's calls.
  static std::vector<CallArgs> calls(const core::Command* commands, size_t count) {
    std::vector<CallArgs> calls(count);
    for (size_t i = 0; i < count; ++i) {
      const core::Command& c = commands[i];
      CallArgs& a = calls[i];
      a.op = c.collective;
      a.src = c.src ? reinterpret_cast<const void*>(c.src->allocation.deviceAddress + c.srcOffset)
                    : nullptr;
      a.dst =
          c.dst ? reinterpret_cast<void*>(c.dst->allocation.deviceAddress + c.dstOffset) : nullptr;
      a.count = c.size;
      a.type = ncclType(c.elementType);
      a.reduce = ncclOp(c.reduceOp);
      a.peer = static_cast<int>(c.peer);
      a.ranks = static_cast<int>(c.communicator->rankCount);
      a.elementSize = elementSize(c.elementType);
      a.comm = static_cast<StreamCommunicator*>(c.communicator->impl.get())->callComm();
    }
    return calls;
  }

  // Makes the calls of commands[0, count) as one library group on `stream`: on the device's
  // caller thread (blocking calls, waited for up to the deadline: Caller), or here. With
  // `capture`, between the begin and end of a capture of `stream`; *graph receives it.
  Status call(const core::Command* commands, size_t count, const DriverTable& d, void* stream,
              const std::string& queueLabel, uint64_t traceId, bool capture = false,
              void** graph = nullptr) {
    auto* s = static_cast<cudaStream_t>(stream);
    const CollectiveLibrary& lib = this->lib();
    GroupCall g;
    Status st;
    bool broken = false;
    if (blocking_) {
      auto job = std::make_shared<GroupJob>();
      job->lib = &lib;
      job->driver = &d;
      job->context = comms_[0]->context;
      job->stream = s;
      job->traceId = traceId;
      job->calls = calls(commands, count);
      job->capture = capture;
      for (StreamCommunicator* c : comms_) job->comms.push_back(Ref<StreamCommunicator>(c));
      if (!Caller::forContext(comms_[0]->context)->run(job, deadline_)) {
        if (capture) {
          void* late = job->graph.exchange(kAbandonedGraph);
          if (late) (void)d.graphDestroy(late);
        }
        // A blocking call that does not return waits for a peer's part (NCCL sets up a
        // communicator's connections at its first collectives, with every peer): the peer died,
        // stalled or never submitted it. Nothing reached the stream; the call stays in the
        // library (see Caller), and nothing may end the communicator under it.
        for (StreamCommunicator* c : comms_) {
          c->markEnqueueStuck();
          broken_.emplace_back(c, noProgress("return from enqueueing", c->timeoutNs));
        }
        return error(Result::ErrorSemaphoreFailed, "%s: %s", comms_[0]->label.c_str(),
                     broken_[0].second.c_str());
      }
      st = job->status;
      g = job->result;
      broken = job->captureBroken;
      if (capture) *graph = job->graph.exchange(nullptr);
    } else if (capture) {
      st = captureGroup(
          d, lib, calls(commands, count), s, [&] { settleAll(); }, &g, graph, &broken);
    } else {
      g = callGroup(lib, calls(commands, count), s);
    }
    if (broken) comms_[0]->captureStreamBroken();
    if (st.ok() && g.start != ncclSuccess) st = ncclStatus(lib, g.start, "ncclGroupStart");
    if (st.ok() && g.first != ncclSuccess) {
      const core::Command& c = commands[g.firstAt];
      ncclComm_t comm = static_cast<StreamCommunicator*>(c.communicator->impl.get())->callComm();
      st = ncclStatus(lib, g.first, g.firstApi, comm, g.firstText.c_str())
               .context(
                   format("%s on %s", core::collectiveOpName(c.collective), queueLabel.c_str()));
    }
    if (st.ok() && g.end != ncclSuccess && g.end != ncclInProgress)
      st = ncclStatus(lib, g.end, "ncclGroupEnd");
    settleAll();
    if (st.ok() && !broken_.empty())
      st = error(Result::ErrorSemaphoreFailed, "%s: %s", broken_[0].first->label.c_str(),
                 broken_[0].second.c_str());
    if (!st.ok() && graph && *graph) {
      (void)d.graphDestroy(*graph);
      *graph = nullptr;
    }
    return st;
  }

  // Each communicator must leave ncclInProgress (non-blocking calls; a blocking communicator
  // answers at once) before the next call on it and before anything is recorded behind its work
  // on the stream. One that does not, or reports an error, is unusable.
  void settleAll() {
    if (!broken_.empty()) return;
    for (StreamCommunicator* c : comms_) {
      ncclResult_t state = settle(lib(), c->callComm(), c->deadline());
      if (state == ncclSuccess) continue;
      // In progress past the timeout: as a call that never returns, for the library's thread.
      if (state == ncclInProgress) c->markEnqueueStuck();
      broken_.emplace_back(c, state == ncclInProgress
                                  ? noProgress("finish enqueueing", c->timeoutNs)
                                  : ncclResultText(lib(), state));
    }
  }

  // The timeline trace's record of commands[0, count)'s collectives, for the submission `traceId`.
  static void trace(const core::Command* commands, size_t count, uint64_t traceId) {
    if (!traceId) return;
    for (size_t i = 0; i < count; ++i) {
      const core::Command& c = commands[i];
      if (c.kind != core::Command::Kind::Collective) continue;
      const uint64_t esize = elementSize(c.elementType);
      const uint64_t sent = c.collective == core::CollectiveOp::Recv ? 0
                            : c.collective == core::CollectiveOp::AllToAll
                                ? c.size * esize * c.communicator->rankCount
                                : c.size * esize;
      core::trace::collective(
          traceId, sent,
          format("%s: %s %s x %zu", c.communicator->label.c_str(),
                 core::collectiveOpName(c.collective), elementTypeName(c.elementType), c.size));
    }
  }

  // After what was enqueued between begin() and here (`st`: how that went): records each
  // communicator's second event and hands the tickets to the watchdog; on a failure instead
  // releases the events (what was enqueued may still run: the driver frees an event whose record is
  // pending once it completed) and, with the locks let go, fails the broken communicators.
  Status finish(const DriverTable& d, void* stream, Status st) {
    if (st.ok())
      for (size_t i = 0; i < tickets_.size(); ++i) {
        Status rs = d.eventRecord(tickets_[i]->end, stream);
        if (!rs.ok() && st.ok()) st = rs;
      }
    if (!st.ok()) {
      for (const Ref<Ticket>& t : tickets_) {
        (void)d.eventDestroy(t->start);
        (void)d.eventDestroy(t->end);
      }
      locks_.clear();
      for (auto& [c, what] : broken_) c->fail(what);
      return st;
    }
    for (size_t i = 0; i < comms_.size(); ++i) comms_[i]->addTicket(std::move(tickets_[i]));
    return Status();
  }

 private:
  std::vector<StreamCommunicator*> comms_;
  std::vector<std::unique_lock<std::mutex>> locks_;
  std::vector<Ref<Ticket>> tickets_;
  std::vector<std::pair<StreamCommunicator*, std::string>> broken_;
  uint64_t deadline_ = UINT64_MAX;
  bool blocking_ = true;
};

}  // namespace

void CapturedExec::drop(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex);
  if (dropped_.load(std::memory_order_relaxed)) return;
  dropped_.store(true, std::memory_order_release);
  ended = why;
  if (!exec) return;
  ContextScope scope(driver_, context_, ContextScope::kRelease,
                     "destroying an executable graph that holds collectives");
  (void)driver_.graphExecDestroy(exec);
  exec = nullptr;
}

Status enqueueCollectives(const core::Command* commands, size_t count, const DriverTable& d,
                          void* stream, CollectiveClaim& claim, const std::string& queueLabel,
                          uint64_t traceId) {
  Session s(commands, count);
  BATON_TRY(s.check());
  // Events around the group, per communicator: the watchdog times each one's stretch.
  BATON_TRY(s.begin(d, stream, claim));
  Status st = s.call(commands, count, d, stream, queueLabel, traceId);
  if (st.ok()) Session::trace(commands, count, traceId);
  return s.finish(d, stream, std::move(st));
}

Status launchCollectiveGraph(const core::Command* commands, size_t count, CapturedExec& held,
                             const DriverTable& d, void* stream, CollectiveClaim& claim,
                             const std::string& queueLabel, uint64_t traceId,
                             const std::function<Status(const CaptureGroup&, void**)>& build,
                             const std::function<Status(void*)>& launch) {
  Session s(commands, count);
  BATON_TRY(s.check());
  Status st;
  {
    std::lock_guard<std::mutex> lock(held.mutex);
    if (held.dropped())
      return error(Result::ErrorInvalidState,
                   "a graph command buffer whose collectives were captured on a communicator "
                   "that ended cannot run again (%s): record it again",
                   held.ended.c_str());
    if (!held.exec) {
      // The first launch: the groups are captured now, on the issuing side, where a call that
      // waits for its peers (NCCL connects at a communicator's first collectives) is bounded by
      // the timeout and holds up neither the recording thread nor the other ranks' recordings.
      CaptureGroup capture = [&](const core::Command* group, size_t n, void** graph) {
        void* captureStream = nullptr;
        BATON_TRY(s.comms()[0]->captureStream(&captureStream));
        return s.call(group, n, d, captureStream, queueLabel, traceId, true, graph);
      };
      void* exec = nullptr;
      st = build(capture, &exec);
      if (st.ok()) {
        held.exec = exec;
        for (StreamCommunicator* c : s.comms()) c->hold(Ref<CapturedExec>(&held));
      }
    }
    if (st.ok()) st = s.begin(d, stream, claim);
    if (st.ok()) st = launch(held.exec);
  }
  if (st.ok()) Session::trace(commands, count, traceId);
  return s.finish(d, stream, std::move(st));
}

Status checkGraphCapture(const core::Command* commands, size_t count, size_t firstIndex) {
  if (gInProcessGraphCaptureAllowed.load(std::memory_order_relaxed)) return Status();
  for (size_t i = 0; i < count; ++i) {
    if (commands[i].kind != core::Command::Kind::Collective) continue;
    auto* c = static_cast<StreamCommunicator*>(commands[i].communicator->impl.get());
    if (!c->localPeers || !c->blockingCalls()) continue;
    return error(Result::ErrorNotSupported,
                 "command %zu: %s has other ranks in this process, and NCCL does not capture "
                 "their collectives into a graph with blocking calls (on two H200s, NCCL 2.28 "
                 "invalidated the capture and the devices were lost): record them in a replayed "
                 "command buffer, drive one GPU per process, or set BATON_NCCL_BLOCKING_CALLS=0",
                 firstIndex + i, c->label.c_str());
  }
  return Status();
}

void setInProcessGraphCaptureAllowedForTests(bool allowed) {
  gInProcessGraphCaptureAllowed.store(allowed, std::memory_order_relaxed);
}

DriverFaults* collectiveFaultsForTests() { return &collectiveFaults(); }

void setRevokeDisabledForTests(bool disabled) {
  gRevokeDisabled.store(disabled, std::memory_order_relaxed);
}

}  // namespace baton::stream
