#include "shared_timeline.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "external_timeline.hpp"
#include "handle_table.hpp"
#include "objects.hpp"
#include "semaphore.hpp"
#include "watchdog.hpp"

namespace baton::core {

uint64_t processStartTime(int pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  int field = 2;
  for (; *p && field < 22; ++p)
    if (*p == ' ') ++field;
  return std::strtoull(p, nullptr, 10);
}

namespace {

constexpr uint64_t kMagic = kSharedTimelineMagic;
constexpr uint32_t kVersion = 2;
constexpr uint64_t kPageSize = 4096;
// Written into the value word when the timeline fails: releases every GPU-side wait for a value
// up to kSharedValueLimit, under the drivers' cyclic comparison ((int64_t)(word - value) >= 0) as
// under a plain one. (~0 would not: cyclically it is below every small value.)
constexpr uint64_t kFailedMarker = uint64_t{1} << 62;
constexpr uint32_t kMaxPeers = 32;
// How long the watcher sleeps on the page's futex before it looks whether it is still wanted.
constexpr uint64_t kWatcherNapNs = 20'000'000;

enum PeerState : uint32_t { kFree = 0, kClaiming, kLive, kReaping };
enum FailState : uint32_t { kNotFailed = 0, kFailing, kFailed };

// One process holding the timeline. The fields other than `state` are written by the process
// that claimed the slot (and by a survivor reaping it, with state kReaping).
struct Peer {
  // Held by the process's watcher thread while it holds the timeline: a robust, process-shared
  // mutex, so that the kernel marks it owner-dead as soon as that thread exits, early in the
  // process's exit (before a GPU context is torn down, which took 40-70 ms on the H100 before
  // the process's pidfd reported the exit). Initialised by the claimer.
  pthread_mutex_t alive;
  std::atomic<uint32_t> state;
  std::atomic<uint32_t> holders;  // handles of it in that process (one fd imported twice: 2)
  std::atomic<int32_t> pid;
  std::atomic<uint64_t> startTime;   // /proc/<pid>/stat's starttime: a recycled pid differs
  std::atomic<uint64_t> signalling;  // the highest value it submitted a signal of
  std::atomic<uint64_t> waitingFor;  // the highest value one of its waiters waited for
};

// The shared page. Zero-filled by ftruncate; lock-free atomics of 4 and 8 bytes are
// address-free, so every process may map it anywhere.
struct Page {
  uint64_t magic;
  uint32_t version;
  uint32_t size;
  alignas(64) std::atomic<uint64_t> value;  // the word GPU-side waits and writes use
  alignas(64) std::atomic<uint32_t> wake;   // bumped when the value rises or it fails: the futex
  std::atomic<uint32_t> sleepers;           // watchers asleep on `wake`
  std::atomic<uint32_t> failState;
  std::atomic<int32_t> failCode;
  std::atomic<int32_t> failPid;
  std::atomic<uint64_t> failedAt;  // the value when it failed
  char reason[1024];               // written before failState becomes kFailed
  alignas(64) Peer peers[kMaxPeers];
};
static_assert(sizeof(Page) <= kPageSize, "the shared page holds the whole state");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "atomics in shared memory");

void sharedFutexWait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeoutNs) {
  timespec ts{static_cast<time_t>(timeoutNs / 1'000'000'000),
              static_cast<long>(timeoutNs % 1'000'000'000)};
  // Not FUTEX_PRIVATE: the waker is another process.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}
void sharedFutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void atomicMax(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_acq_rel)) {
  }
}

int pidfdOpen(int pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

class SharedTimeline final : public ExternalTimeline {
 public:
  SharedTimeline(int fd, Page* page) : fd_(fd), page_(page) {
    selfPid_ = getpid();
    selfStart_ = processStartTime(selfPid_);
  }
  ~SharedTimeline() override {
    for (PeerWatch& w : watches_)
      if (w.pidfd >= 0) close(w.pidfd);
    munmap(page_, kPageSize);
    close(fd_);
  }

  int fd() const noexcept { return fd_; }

  // Claims this process's slot, brings the semaphore to the page's state, starts the watcher
  // and the watchdog's checks.
  Status attach(Semaphore* semaphore) {
    BATON_TRY(claimSlot());
    semaphore_ = semaphore;
    pull(*semaphore);
    try {
      watcher_ = std::thread([this] { watch(); });
    } catch (const std::exception&) {
      releaseSlot();
      return Status(Result::ErrorOutOfHostMemory,
                    "no thread could be started to watch a shared "
                    "semaphore");
    }
    pthread_setname_np(watcher_.native_handle(), "baton-shared");
    Watchdog::watch([self = Ref<SharedTimeline>(this)](uint64_t) { return self->check(); },
                    kPeerCheckPeriodNs);
    return Status();
  }

  // ExternalTimeline
  Kind kind() const noexcept override { return Kind::Shared; }

  void onReached(Semaphore&, uint64_t value) override { raise(value); }

  void onFailed(Semaphore& semaphore) override {
    Status why = semaphore.failure();
    publishFailure(why.code(), semaphore.failureReason(), selfPid_);
  }

  void detach() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (detached_) return;
      detached_ = true;
      semaphore_ = nullptr;
    }
    demand_.store(1, std::memory_order_seq_cst);
    sharedFutexWakeAll(&demand_);
    sharedFutexWakeAll(&page_->wake);  // the watcher may sleep there
    if (watcher_.joinable()) {
      if (watcher_.get_id() == std::this_thread::get_id())
        watcher_.detach();
      else
        watcher_.join();
    }
    releaseSlot();
  }

  DeviceTimeline* onDevice(uint64_t deviceHandle) noexcept override {
    std::lock_guard<std::mutex> lock(devicesMutex_);
    for (const DeviceEntry& e : devices_)
      if (e.handle == deviceHandle) return e.timeline.get();
    // First asked for this device: register the page with it (once; a device without 64-bit
    // stream memory operations gets none, and its queues wait on the host).
    Ref<DeviceTimeline> timeline;
    Status st;
    Ref<Object> object = HandleTable::get().lookup(deviceHandle, ObjectType::Device, "device", &st);
    if (object) {
      auto* device = static_cast<Device*>(object.get());
      if (device->impl())
        (void)device->impl()->importSharedWord(fd_, kPageSize, offsetof(Page, value), deviceHandle,
                                               &timeline);
    }
    devices_.push_back({deviceHandle, timeline});
    return devices_.back().timeline.get();
  }

  void onSignalSubmitted(uint64_t value) override { atomicMax(self().signalling, value); }

  void onWaitLinked(uint64_t value) override {
    atomicMax(self().waitingFor, value);
    if (demand_.load(std::memory_order_relaxed) == 0) {
      demand_.store(1, std::memory_order_seq_cst);
      sharedFutexWakeAll(&demand_);
    }
  }

  void refresh(Semaphore& semaphore) override { pull(semaphore); }

 private:
  struct DeviceEntry {
    uint64_t handle;
    Ref<DeviceTimeline> timeline;  // null: that device waits on the host
  };
  // The watchdog's view of another process's slot.
  struct PeerWatch {
    int32_t pid = 0;
    uint64_t startTime = 0;
    int pidfd = -1;
  };

  Peer& self() noexcept { return page_->peers[slot_]; }

  Status claimSlot() {
    // The same process may hold the timeline through several handles: one slot, counted.
    for (uint32_t i = 0; i < kMaxPeers; ++i) {
      Peer& p = page_->peers[i];
      if (p.state.load(std::memory_order_acquire) == kLive &&
          p.pid.load(std::memory_order_relaxed) == selfPid_ &&
          p.startTime.load(std::memory_order_relaxed) == selfStart_) {
        p.holders.fetch_add(1, std::memory_order_acq_rel);
        slot_ = i;
        return Status();
      }
    }
    for (uint32_t i = 0; i < kMaxPeers; ++i) {
      Peer& p = page_->peers[i];
      uint32_t expected = kFree;
      if (!p.state.compare_exchange_strong(expected, kClaiming, std::memory_order_acq_rel))
        continue;
      pthread_mutexattr_t attr;
      pthread_mutexattr_init(&attr);
      pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
      pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
      pthread_mutex_init(&p.alive, &attr);
      pthread_mutexattr_destroy(&attr);
      p.pid.store(selfPid_, std::memory_order_relaxed);
      p.startTime.store(selfStart_, std::memory_order_relaxed);
      p.signalling.store(0, std::memory_order_relaxed);
      p.waitingFor.store(0, std::memory_order_relaxed);
      p.holders.store(1, std::memory_order_relaxed);
      p.state.store(kLive, std::memory_order_release);
      slot_ = i;
      return Status();
    }
    return error(Result::ErrorOutOfHostMemory,
                 "a shared semaphore is held by at most %u processes at once", kMaxPeers);
  }

  void releaseSlot() {
    Peer& p = self();
    if (p.holders.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    // Nothing of this process is pending any more (a handle destroyed with pending work failed
    // the timeline first): the slot goes back.
    p.signalling.store(0, std::memory_order_relaxed);
    p.waitingFor.store(0, std::memory_order_relaxed);
    p.state.store(kFree, std::memory_order_release);
  }

  // The page's value, or its value when it failed.
  uint64_t pageValue() const noexcept {
    uint64_t v = page_->value.load(std::memory_order_acquire);
    return v >= kFailedMarker ? page_->failedAt.load(std::memory_order_acquire) : v;
  }

  // Raises the page's value to `value` (never lowers it) and wakes the peers' watchers. Values a
  // queue wrote GPU-side are already there, but nobody was woken for them: so every value this
  // process reaches above the last one it woke for wakes them.
  void raise(uint64_t value) {
    uint64_t cur = page_->value.load(std::memory_order_relaxed);
    while (cur < value && cur < kFailedMarker &&
           !page_->value.compare_exchange_weak(cur, value, std::memory_order_acq_rel)) {
    }
    uint64_t woken = woken_.load(std::memory_order_relaxed);
    if (value <= woken) return;
    atomicMax(woken_, value);
    wakePeers();
  }

  void wakePeers() {
    page_->wake.fetch_add(1, std::memory_order_seq_cst);
    if (page_->sleepers.load(std::memory_order_seq_cst) != 0) sharedFutexWakeAll(&page_->wake);
  }

  // Writes the failure record once (the first failure, in any process, stays), then the marker
  // that releases every GPU-side wait. `pid`: the process where it failed, 0 when a death failed
  // it (the reason names the process).
  void publishFailure(Result code, const std::string& reason, int pid) {
    uint32_t expected = kNotFailed;
    if (!page_->failState.compare_exchange_strong(expected, kFailing, std::memory_order_acq_rel))
      return;
    page_->failCode.store(static_cast<int32_t>(code), std::memory_order_relaxed);
    page_->failPid.store(pid, std::memory_order_relaxed);
    uint64_t v = page_->value.load(std::memory_order_acquire);
    page_->failedAt.store(v < kFailedMarker ? v : 0, std::memory_order_relaxed);
    size_t n = std::min(reason.size(), sizeof page_->reason - 1);
    std::memcpy(page_->reason, reason.data(), n);
    page_->reason[n] = '\0';
    page_->failState.store(kFailed, std::memory_order_release);
    page_->value.store(kFailedMarker, std::memory_order_release);
    wakePeers();
  }

  // Brings `semaphore` to the page's state: its failure, else its value.
  void pull(Semaphore& semaphore) {
    if (page_->failState.load(std::memory_order_acquire) == kFailed) {
      if (semaphore.failed()) return;
      const int pid = page_->failPid.load(std::memory_order_relaxed);
      auto code = static_cast<Result>(page_->failCode.load(std::memory_order_relaxed));
      if (code != Result::ErrorDeviceLost) code = Result::ErrorSemaphoreFailed;
      std::string root(page_->reason, strnlen(page_->reason, sizeof page_->reason));
      if (pid == selfPid_ || pid == 0) {
        semaphore.fail(code, root, root);
      } else {
        semaphore.fail(code, format("it failed in process %d: %s", pid, root.c_str()), root);
      }
      return;
    }
    uint64_t v = page_->value.load(std::memory_order_acquire);
    if (v < kFailedMarker && v > semaphore.current()) semaphore.reach(v);
  }

  // The watcher thread: while something in this process waits on the semaphore, sleeps on the
  // page's futex and brings the semaphore up to what the peers publish.
  void watch() {
    // Holds this process's `alive` mutex for as long as the thread runs. Another handle of the
    // same process may hold it already (then this one does not, and tries once); otherwise a
    // peer's brief look at it may hold it for an instant (then this retries, about 1 ms).
    bool holding = false;
    const int attempts = self().holders.load(std::memory_order_acquire) > 1 ? 1 : 50;
    for (int tries = 0; tries < attempts && !holding; ++tries) {
      const int r = pthread_mutex_trylock(&self().alive);
      if (r == EOWNERDEAD) pthread_mutex_consistent(&self().alive);
      holding = r == 0 || r == EOWNERDEAD;
      if (!holding) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    struct Release {
      pthread_mutex_t* m;
      bool held;
      ~Release() {
        if (held) pthread_mutex_unlock(m);
      }
    } release{&self().alive, holding};
    for (;;) {
      uint32_t d = demand_.load(std::memory_order_seq_cst);
      if (d == 0) {
        sharedFutexWait(&demand_, 0, kWatcherNapNs);
        std::lock_guard<std::mutex> lock(mutex_);
        if (detached_) return;
        continue;
      }
      demand_.store(0, std::memory_order_seq_cst);
      for (;;) {
        const uint32_t seq = page_->wake.load(std::memory_order_seq_cst);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (detached_) return;
          pull(*semaphore_);
          if (!semaphore_->hasWaiters() || semaphore_->failed()) break;
        }
        page_->sleepers.fetch_add(1, std::memory_order_seq_cst);
        if (page_->wake.load(std::memory_order_seq_cst) == seq)
          sharedFutexWait(&page_->wake, seq, kWatcherNapNs);
        page_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
      }
    }
  }

  // The watchdog's check: the page's failure, the marker, and the other processes' liveness.
  bool check() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (detached_) return false;
      pull(*semaphore_);
    }
    if (page_->failState.load(std::memory_order_acquire) == kFailed) {
      // A GPU-side write that completed after the failure may have overwritten the marker.
      if (page_->value.load(std::memory_order_acquire) < kFailedMarker) {
        page_->value.store(kFailedMarker, std::memory_order_release);
        wakePeers();
      }
      return true;
    }
    for (uint32_t i = 0; i < kMaxPeers; ++i) {
      if (i == slot_) continue;
      Peer& p = page_->peers[i];
      if (p.state.load(std::memory_order_acquire) != kLive) continue;
      if (!alive(i, p)) reap(p);
    }
    return true;
  }

  // Whether the process in slot `i` lives: its watcher's robust mutex is not owner-dead, and,
  // when no watcher holds it, its pidfd (opened when the slot's process is first seen, and
  // checked against its start time so that a recycled pid is not mistaken for it) is not
  // readable.
  bool alive(uint32_t i, Peer& p) {
    // First the robust mutex its watcher holds: owner-dead as soon as that thread exited.
    const int r = pthread_mutex_trylock(&p.alive);
    if (r == EOWNERDEAD) {
      pthread_mutex_consistent(&p.alive);
      pthread_mutex_unlock(&p.alive);
      return false;
    }
    if (r == EBUSY) return true;
    if (r == 0) pthread_mutex_unlock(&p.alive);
    // Nobody holds it (a watcher about to take it, or one that left): the pidfd decides.
    PeerWatch& w = watches_[i];
    const int32_t pid = p.pid.load(std::memory_order_relaxed);
    const uint64_t start = p.startTime.load(std::memory_order_relaxed);
    if (w.pid != pid || w.startTime != start || w.pidfd < 0) {
      if (w.pidfd >= 0) close(w.pidfd);
      w = PeerWatch{pid, start, pidfdOpen(pid)};
      if (w.pidfd < 0) return errno != ESRCH;            // ESRCH: gone; another error: cannot tell
      if (processStartTime(pid) != start) return false;  // the pid is another process's now
    }
    pollfd pfd{w.pidfd, POLLIN, 0};
    return poll(&pfd, 1, 0) == 0;
  }

  // A process died holding the timeline. With a signal of a value above the current one submitted,
  // or with waits for such values pending anywhere, nothing may ever signal what is waited for: the
  // timeline fails. Otherwise its slot is given back.
  void reap(Peer& p) {
    uint32_t expected = kLive;
    if (!p.state.compare_exchange_strong(expected, kReaping, std::memory_order_acq_rel)) return;
    const int pid = p.pid.load(std::memory_order_relaxed);
    const uint64_t current = pageValue();
    const uint64_t signalling = p.signalling.load(std::memory_order_acquire);
    uint64_t waited = 0;
    for (Peer& q : page_->peers)
      if (q.state.load(std::memory_order_acquire) != kFree)
        waited = std::max(waited, q.waitingFor.load(std::memory_order_acquire));
    if (signalling > current) {
      publishFailure(Result::ErrorSemaphoreFailed,
                     format("process %d exited with a signal of value %llu submitted and not "
                            "reached (the value was %llu)",
                            pid, static_cast<unsigned long long>(signalling),
                            static_cast<unsigned long long>(current)),
                     0);
    } else if (waited > current) {
      publishFailure(Result::ErrorSemaphoreFailed,
                     format("process %d exited while waits for value %llu were pending (the "
                            "value was %llu)",
                            pid, static_cast<unsigned long long>(waited),
                            static_cast<unsigned long long>(current)),
                     0);
    }
    p.signalling.store(0, std::memory_order_relaxed);
    p.waitingFor.store(0, std::memory_order_relaxed);
    p.holders.store(0, std::memory_order_relaxed);
    p.state.store(kFree, std::memory_order_release);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!detached_) pull(*semaphore_);
  }

  const int fd_;
  Page* const page_;
  int selfPid_ = 0;
  uint64_t selfStart_ = 0;
  uint32_t slot_ = 0;
  std::atomic<uint64_t> woken_{0};  // the highest value this process woke the peers for

  std::mutex mutex_;  // guards semaphore_ against detach
  Semaphore* semaphore_ = nullptr;
  bool detached_ = false;
  std::atomic<uint32_t> demand_{0};  // something here waits: the watcher watches (a futex word)
  std::thread watcher_;

  std::mutex devicesMutex_;
  std::vector<DeviceEntry> devices_;

  PeerWatch watches_[kMaxPeers];  // the watchdog's thread only
};

// Validates and maps a page; takes `fd` (closes it on failure).
Status mapPage(int fd, Page** out) {
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return error(Result::ErrorInvalidArgument, "the descriptor cannot be examined: %s",
                 std::strerror(e));
  }
  const int seals = fcntl(fd, F_GET_SEALS);
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != kPageSize || seals < 0 ||
      (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
    close(fd);
    return error(Result::ErrorInvalidArgument,
                 "the descriptor is not a shared semaphore's (Semaphore::exportFd makes those)");
  }
  void* m = mmap(nullptr, kPageSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    const int e = errno;
    close(fd);
    return error(Result::ErrorInvalidArgument, "the shared semaphore's page cannot be mapped: %s",
                 std::strerror(e));
  }
  *out = static_cast<Page*>(m);
  return Status();
}

Status attachPage(Semaphore& semaphore, int fd, Page* page) {
  Ref<SharedTimeline> t = makeRef<SharedTimeline>(fd, page);  // owns fd and page from here
  semaphore.addExternal(t);
  return t->attach(&semaphore);
}

}  // namespace

Status makeShareable(Semaphore& semaphore) {
  const uint64_t initial = semaphore.current();
  if (initial > kSharedValueLimit)
    return error(Result::ErrorInvalidArgument,
                 "a shared semaphore's values stay at or below 2^62 - 1; the initial value is %llu",
                 static_cast<unsigned long long>(initial));
  int fd = memfd_create("baton-shared-semaphore", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return error(Result::ErrorOutOfHostMemory, "memfd_create for a shared semaphore failed: %s",
                 std::strerror(errno));
  if (ftruncate(fd, kPageSize) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int e = errno;
    close(fd);
    return error(Result::ErrorOutOfHostMemory, "preparing a shared semaphore's page failed: %s",
                 std::strerror(e));
  }
  Page* page = nullptr;
  BATON_TRY(mapPage(fd, &page));
  page->version = kVersion;
  page->size = static_cast<uint32_t>(kPageSize);
  page->value.store(initial, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(page->magic).store(kMagic, std::memory_order_release);
  return attachPage(semaphore, fd, page);
}

Status attachShared(Semaphore& semaphore, int fd) {
  if (fd < 0)
    return error(Result::ErrorInvalidArgument, "the descriptor %d is not a valid descriptor", fd);
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0)
    return error(Result::ErrorInvalidArgument, "the descriptor %d is not open: %s", fd,
                 std::strerror(errno));
  Page* page = nullptr;
  BATON_TRY(mapPage(own, &page));
  if (std::atomic_ref<uint64_t>(page->magic).load(std::memory_order_acquire) != kMagic ||
      page->version != kVersion || page->size != kPageSize) {
    munmap(page, kPageSize);
    close(own);
    return error(Result::ErrorInvalidArgument,
                 "the descriptor is not a shared semaphore's page of this baton version");
  }
  return attachPage(semaphore, own, page);
}

Status exportShared(Semaphore& semaphore, int* fd) {
  auto* t = static_cast<SharedTimeline*>(semaphore.external(ExternalTimeline::Kind::Shared));
  if (!t)
    return error(Result::ErrorInvalidArgument,
                 "semaphore '%s' is not shareable (create it with kSemaphoreShareable)",
                 semaphore.name().c_str());
  int out = fcntl(t->fd(), F_DUPFD_CLOEXEC, 0);
  if (out < 0)
    return error(Result::ErrorOutOfHostMemory, "duplicating the descriptor failed: %s",
                 std::strerror(errno));
  *fd = out;
  return Status();
}

bool isShared(const Semaphore& semaphore) noexcept {
  return semaphore.hasExternals() && semaphore.external(ExternalTimeline::Kind::Shared) != nullptr;
}

}  // namespace baton::core
