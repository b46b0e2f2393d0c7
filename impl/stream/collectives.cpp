// The collective engine of the stream backends; collectives.hpp says how it fits together.
#include "collectives.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <thread>

#include "clock.hpp"
#include "collective_library.hpp"
#include "cpu.hpp"
#include "notifier.hpp"
#include "report.hpp"
#include "trace.hpp"

namespace baton::stream {
namespace {

using core::error;
using core::format;
using core::Status;

std::atomic<bool> gRevokeDisabled{false};

// How often the watch looks at the communicators with collectives in flight. Over sockets NCCL
// reports a dead peer within ~1 ms (DESIGN §4), so a short period keeps the death-to-wake time
// close to the library's own; a look is one ncclCommGetAsyncError and one or two event queries.
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

// One group's stretch of a communicator's work on a stream: events recorded before and after it,
// and the claim of the submission it belongs to.
struct Ticket : core::Object {
  Ref<CollectiveClaim> claim;
  void* start = nullptr;
  void* end = nullptr;
  uint64_t startedNs = 0;  // when the watch first saw `start` complete; 0 before
};

class StreamCommunicator;

// The watch: one thread per process, started with the first collective, looking every
// kWatchPeriodNs at each communicator that has tickets (StreamCommunicator::check).
class Watch {
 public:
  static Watch& get() {
    static Watch* watch = new Watch;  // never destroyed: its thread may run until exit
    return *watch;
  }
  void add(Ref<StreamCommunicator> comm);

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable work_;
  std::vector<Ref<StreamCommunicator>> active_;
  bool started_ = false;
};

class StreamCommunicator final : public core::CommunicatorImpl {
 public:
  StreamCommunicator(const CollectiveLibrary& lib, const CollectiveDevice& dev, std::string name,
                     uint64_t timeoutNs, ncclComm_t comm)
      : lib(lib),
        driver(*dev.driver),
        context(dev.context),
        device(dev.device),
        timeoutNs(timeoutNs),
        keepDevice_(dev.device),
        comm_(comm) {
    label = std::move(name);
    int r = 0, n = 0;
    (void)BATON_NCCL(lib, ncclCommUserRank, comm, &r);
    (void)BATON_NCCL(lib, ncclCommCount, comm, &n);
    rank = static_cast<uint32_t>(r);
    rankCount = static_cast<uint32_t>(n);
  }
  ~StreamCommunicator() override { (void)destroy(); }

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
  // the communicator (the handle's, or the device's shutdown): the watch may hold the object
  // longer, and must not be the thread that drops a device's last reference (its destruction
  // joins threads and releases the context; ThreadSanitizer saw the emulated driver's streams
  // freed there without order against their workers).
  Status destroy() override {
    Ref<core::Device> last;  // declared first: dropped after the lock and the context scope
    std::lock_guard<std::mutex> lock(call);
    if (!comm_) return Status();
    ncclComm_t comm = comm_;
    ContextScope scope(driver, context, ContextScope::kRelease, "destroying a communicator");
    Status st = end(comm);
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
    last = std::move(keepDevice_);
    return st;
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
  ncclComm_t comm() const noexcept { return comm_; }
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

  // Hands a ticket to the watch.
  void addTicket(Ref<Ticket> ticket) {
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(watchMutex_);
      tickets_.push_back(std::move(ticket));
      if (!watched_) wake = watched_ = true;
    }
    if (wake) Watch::get().add(Ref<StreamCommunicator>(this));
  }

  // Fails the communicator (once): its in-flight submissions' signals fail with the reason, then
  // its stuck operations are ended where the library can (ncclCommRevoke). Without locks held.
  void fail(const std::string& what) {
    if (!markFailed(what)) return;
    failTickets();
    endStuck();
  }

  // ---- the watch's side ----

  // One look: retires completed tickets, times the oldest started one, asks the library for an
  // asynchronous error. Returns false when nothing is left to watch (the watch then drops it).
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
      if (lock.owns_lock() && comm_) {
        ncclResult_t r = BATON_NCCL(lib, ncclCommGetAsyncError, comm_, &async);
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
    *out = Ref<core::CommunicatorImpl>::adopt(
        new StreamCommunicator(lib, dev, newLabel, timeoutNs, made));
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
    if (!lib.sym.ncclCommRevoke || gRevokeDisabled.load(std::memory_order_relaxed)) return;
    std::lock_guard<std::mutex> lock(call);
    if (!comm_ || stuckEnded_ || enqueueStuck_) return;
    ContextScope scope(driver, context, ContextScope::kRelease, "revoking a failed communicator");
    ncclResult_t r = BATON_NCCL(lib, ncclCommRevoke, comm_, NCCL_REVOKE_DEFAULT);
    // ~0.5 s on the H200s (DESIGN §4), whatever the communicator's timeout: at least 10 s.
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

  Ref<core::Device> keepDevice_;  // the context lives as long as the device's shared state
  ncclComm_t comm_;               // null once destroyed (call)
  bool stuckEnded_ = false;       // revoked or shrunk with NCCL_SHRINK_ABORT (call)
  bool enqueueStuck_ = false;     // an enqueue never left ncclInProgress (call)
  mutable std::mutex stateMutex_;
  std::atomic<bool> failed_{false};
  std::string reason_;  // stateMutex_
  std::mutex watchMutex_;
  std::deque<Ref<Ticket>> tickets_;  // in stream order (watchMutex_)
  std::vector<void*> freeEvents_;    // watchMutex_
  bool watched_ = false;             // in the watch's list (watchMutex_)
};

void Watch::add(Ref<StreamCommunicator> comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  active_.push_back(std::move(comm));
  if (!started_) {
    started_ = true;
    std::thread([this] { run(); }).detach();
  }
  work_.notify_one();
}

void Watch::run() {
  std::vector<Ref<StreamCommunicator>> looking;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [&] { return !active_.empty(); });
      looking = active_;
    }
    const uint64_t now = core::nowNs();
    for (Ref<StreamCommunicator>& c : looking) {
      if (c->check(now)) continue;
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = std::find(active_.begin(), active_.end(), c);
      if (it != active_.end()) active_.erase(it);
    }
    looking.clear();  // the last references may go here, outside mutex_
    std::this_thread::sleep_for(std::chrono::nanoseconds(kWatchPeriodNs));
  }
}

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
  out->clear();
  for (size_t i = 0; i < devices.size(); ++i)
    out->push_back(Ref<core::CommunicatorImpl>::adopt(
        new StreamCommunicator(lib, devices[i], setups[i].label, setups[i].timeoutNs, comms[i])));
  return Status();
}

Status enqueueCollectives(const core::Command* commands, size_t count, const DriverTable& d,
                          void* stream, CollectiveClaim& claim, const std::string& queueLabel,
                          uint64_t traceId) {
  // The group's communicators, each once, locked in address order (two queues may issue groups
  // over the same pair).
  std::vector<StreamCommunicator*> comms;
  for (size_t i = 0; i < count; ++i) {
    auto* c = static_cast<StreamCommunicator*>(commands[i].communicator->impl.get());
    if (std::find(comms.begin(), comms.end(), c) == comms.end()) comms.push_back(c);
  }
  std::sort(comms.begin(), comms.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (StreamCommunicator* c : comms) locks.emplace_back(c->call);
  const CollectiveLibrary& lib = comms[0]->lib;
  for (StreamCommunicator* c : comms) {
    std::string reason;
    if (c->failed(&reason))
      return error(Result::ErrorInvalidState, "%s failed: %s", c->label.c_str(), reason.c_str());
    BATON_TRY(c->live());
  }
  // Events around the group, per communicator: the watch times each one's stretch.
  std::vector<Ref<Ticket>> tickets;
  auto giveBack = [&] {
    for (size_t i = 0; i < tickets.size(); ++i) {
      if (tickets[i]->start) comms[i]->giveEvent(tickets[i]->start);
      if (tickets[i]->end) comms[i]->giveEvent(tickets[i]->end);
    }
  };
  for (StreamCommunicator* c : comms) {
    Ref<Ticket> t = core::makeRef<Ticket>();
    t->claim = Ref<CollectiveClaim>(&claim);
    tickets.push_back(t);
    Status st = c->takeEvent(&t->start);
    if (st.ok()) st = c->takeEvent(&t->end);
    if (st.ok()) st = d.eventRecord(t->start, stream);
    if (!st.ok()) {
      giveBack();
      return st;
    }
  }
  Status st = ncclStatus(lib, BATON_NCCL(lib, ncclGroupStart), "ncclGroupStart");
  if (!st.ok()) {
    giveBack();
    return st;
  }
  for (size_t i = 0; i < count && st.ok(); ++i) {
    const core::Command& c = commands[i];
    ncclComm_t comm = static_cast<StreamCommunicator*>(c.communicator->impl.get())->comm();
    const ncclDataType_t type = ncclType(c.elementType);
    const uint64_t esize = elementSize(c.elementType);
    const size_t n = c.size;
    const auto src =
        c.src ? reinterpret_cast<const void*>(c.src->allocation.deviceAddress + c.srcOffset)
              : nullptr;
    void* dst =
        c.dst ? reinterpret_cast<void*>(c.dst->allocation.deviceAddress + c.dstOffset) : nullptr;
    const int peer = static_cast<int>(c.peer);
    auto* s = static_cast<cudaStream_t>(stream);
    ncclResult_t r = ncclSuccess;
    const char* api = "";
    switch (c.collective) {
      case core::CollectiveOp::AllReduce:
        api = "ncclAllReduce";
        r = BATON_NCCL(lib, ncclAllReduce, src, dst, n, type, ncclOp(c.reduceOp), comm, s);
        break;
      case core::CollectiveOp::Broadcast:
        api = "ncclBroadcast";
        r = BATON_NCCL(lib, ncclBroadcast, src, dst, n, type, peer, comm, s);
        break;
      case core::CollectiveOp::Reduce:
        api = "ncclReduce";
        r = BATON_NCCL(lib, ncclReduce, src, dst, n, type, ncclOp(c.reduceOp), peer, comm, s);
        break;
      case core::CollectiveOp::AllGather:
        api = "ncclAllGather";
        r = BATON_NCCL(lib, ncclAllGather, src, dst, n, type, comm, s);
        break;
      case core::CollectiveOp::ReduceScatter:
        api = "ncclReduceScatter";
        r = BATON_NCCL(lib, ncclReduceScatter, src, dst, n, type, ncclOp(c.reduceOp), comm, s);
        break;
      case core::CollectiveOp::AllToAll: {
        const int ranks = static_cast<int>(c.communicator->rankCount);
        if (lib.sym.ncclAlltoAll) {
          api = "ncclAlltoAll";
          r = BATON_NCCL(lib, ncclAlltoAll, src, dst, n, type, comm, s);
          break;
        }
        // Before NCCL 2.28: the same as a send and a receive per peer, in this group.
        api = "ncclSend/ncclRecv (all-to-all)";
        const uint64_t slot = n * esize;
        for (int p = 0; p < ranks && r == ncclSuccess; ++p) {
          r = BATON_NCCL(lib, ncclSend, static_cast<const char*>(src) + p * slot, n, type, p, comm,
                         s);
          if (r == ncclSuccess)
            r = BATON_NCCL(lib, ncclRecv, static_cast<char*>(dst) + p * slot, n, type, p, comm, s);
        }
        break;
      }
      case core::CollectiveOp::Send:
        api = "ncclSend";
        r = BATON_NCCL(lib, ncclSend, src, n, type, peer, comm, s);
        break;
      case core::CollectiveOp::Recv:
        api = "ncclRecv";
        r = BATON_NCCL(lib, ncclRecv, dst, n, type, peer, comm, s);
        break;
    }
    if (traceId) {
      const uint64_t sent = c.collective == core::CollectiveOp::Recv ? 0
                            : c.collective == core::CollectiveOp::AllToAll
                                ? n * esize * c.communicator->rankCount
                                : n * esize;
      core::trace::collective(
          traceId, sent,
          format("%s: %s %s x %zu", c.communicator->label.c_str(),
                 core::collectiveOpName(c.collective), elementTypeName(c.elementType), n));
    }
    if (r != ncclSuccess && r != ncclInProgress)
      st = ncclStatus(lib, r, api, comm)
               .context(
                   format("%s on %s", core::collectiveOpName(c.collective), queueLabel.c_str()));
  }
  // Always closed, also after a failed call: the group must end on this thread.
  ncclResult_t r = BATON_NCCL(lib, ncclGroupEnd);
  if (st.ok() && r != ncclSuccess && r != ncclInProgress) st = ncclStatus(lib, r, "ncclGroupEnd");
  // Non-blocking communicators: each must leave ncclInProgress before the next call on it and
  // before anything is recorded behind its work on the stream. One that does not, or reports an
  // error, is unusable: it fails (its earlier submissions too) once the locks are let go.
  std::vector<std::pair<StreamCommunicator*, std::string>> broken;
  for (StreamCommunicator* c : comms) {
    ncclResult_t state = settle(lib, c->comm(), c->deadline());
    if (state == ncclSuccess) continue;
    // In progress past the timeout: NCCL sets up a communicator's connections at its first
    // collectives, which needs every peer's part: one that never comes leaves the enqueue itself
    // unfinished (seen on the H100s; a stuck kernel comes only once connections exist). Then no
    // operation reached the stream, and ncclCommRevoke is not tried (it did not return there):
    // destroy() aborts the communicator.
    if (state == ncclInProgress) c->markEnqueueStuck();
    broken.emplace_back(
        c, state == ncclInProgress
               ? format("no progress for %llu ms: the library did not finish enqueueing a "
                        "collective (a peer never connected: a rank died, stalled, or did not "
                        "submit its part)",
                        static_cast<unsigned long long>(ms(c->timeoutNs)))
               : ncclResultText(lib, state));
    if (st.ok())
      st = error(Result::ErrorSemaphoreFailed, "%s: %s", c->label.c_str(),
                 broken.back().second.c_str());
  }
  for (size_t i = 0; i < comms.size(); ++i) {
    Status rs = d.eventRecord(tickets[i]->end, stream);
    if (!rs.ok() && st.ok()) st = rs;
  }
  if (!st.ok()) {
    // What was enqueued may still run: its events are released (the driver frees an event whose
    // record is pending once it completed), not reused.
    for (const Ref<Ticket>& t : tickets) {
      (void)d.eventDestroy(t->start);
      (void)d.eventDestroy(t->end);
    }
    locks.clear();
    for (auto& [c, what] : broken) c->fail(what);
    return st;
  }
  for (size_t i = 0; i < comms.size(); ++i) comms[i]->addTicket(std::move(tickets[i]));
  return Status();
}

void setRevokeDisabledForTests(bool disabled) {
  gRevokeDisabled.store(disabled, std::memory_order_relaxed);
}

}  // namespace baton::stream
