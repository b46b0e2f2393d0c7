#include "watchdog.hpp"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <utility>
#include <vector>

#include "clock.hpp"

namespace baton::core {

namespace {

// The exit gate. The watchdog's checks and the release thread call into drivers (a deferred free,
// an unregistration); once the process exits, the driver libraries' own static state is being
// destroyed, and such a call can crash. An exit handler (registered with the first watch or
// release, so after the driver was loaded: it runs before the driver's static destructors)
// closes the gate, waiting for a call in progress (at most kExitWaitMs: one stuck in the driver
// does not hold the exit); from then on nothing runs and what was pending is left to the exit.
constexpr int kExitWaitMs = 200;
std::shared_timed_mutex gExitMutex;
std::atomic<bool> gExiting{false};
std::once_flag gExitOnce;
void closeAtExit() {
  std::call_once(gExitOnce, [] {
    std::atexit([] {
      const bool locked = gExitMutex.try_lock_for(std::chrono::milliseconds(kExitWaitMs));
      gExiting.store(true, std::memory_order_release);
      if (locked) gExitMutex.unlock();
    });
  });
}
// Parks the calling (background) thread for good: the process is exiting.
[[noreturn]] void parkForExit() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

struct Entry {
  std::function<bool(uint64_t)> check;
  uint64_t periodNs = 0;
  uint64_t dueNs = 0;
};

// Never destroyed: its thread may run until the process exits. A forked child gets a new one
// (the parent's lock may have been held at the fork, and its thread does not exist there).
struct State {
  std::mutex mutex;
  std::condition_variable work;
  std::vector<Entry> entries;  // mutex
  bool started = false;        // mutex
  void run();
};

State* gState = nullptr;
std::once_flag gOnce;

State& state() {
  std::call_once(gOnce, [] {
    gState = new State;
    pthread_atfork(nullptr, nullptr, [] { gState = new State; });  // the old one is abandoned
  });
  return *gState;
}

void State::run() {
  std::vector<Entry> due;
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    if (entries.empty()) {
      work.wait(lock);
      continue;
    }
    const uint64_t now = nowNs();
    uint64_t next = UINT64_MAX;
    for (size_t i = 0; i < entries.size();) {
      if (entries[i].dueNs <= now) {
        due.push_back(std::move(entries[i]));
        entries[i] = std::move(entries.back());
        entries.pop_back();
      } else {
        next = std::min(next, entries[i].dueNs);
        ++i;
      }
    }
    if (due.empty()) {
      work.wait_for(lock, std::chrono::nanoseconds(next - now));
      continue;
    }
    lock.unlock();
    std::vector<Entry> keep;
    {
      std::shared_lock<std::shared_timed_mutex> gate(gExitMutex);
      if (gExiting.load(std::memory_order_acquire)) {
        new std::vector<Entry>(std::move(due));  // left to the exit, never destroyed
        gate.unlock();
        parkForExit();
      }
      for (Entry& e : due) {
        if (!e.check(now)) continue;  // dropped: destroyed below, outside the lock
        e.dueNs = now + e.periodNs;
        keep.push_back(std::move(e));
      }
      due.clear();
    }
    lock.lock();
    for (Entry& e : keep) entries.push_back(std::move(e));
  }
}

// The release thread's queue. Never destroyed, like State.
struct Releases {
  std::mutex mutex;
  std::condition_variable work;
  std::vector<std::function<void()>> queue;  // mutex
  bool started = false;                      // mutex
  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      work.wait(lock, [&] { return !queue.empty(); });
      std::vector<std::function<void()>> batch;
      batch.swap(queue);
      lock.unlock();
      {
        std::shared_lock<std::shared_timed_mutex> gate(gExitMutex);
        if (gExiting.load(std::memory_order_acquire)) {
          new std::vector<std::function<void()>>(std::move(batch));  // left to the exit
          gate.unlock();
          parkForExit();
        }
        for (std::function<void()>& f : batch) f();
        batch.clear();
      }
      lock.lock();
    }
  }
};
Releases* gReleases = nullptr;
std::once_flag gReleasesOnce;

}  // namespace

void Watchdog::releaseLater(std::function<void()> release) {
  closeAtExit();
  std::call_once(gReleasesOnce, [] {
    gReleases = new Releases;
    pthread_atfork(nullptr, nullptr, [] { gReleases = new Releases; });
  });
  Releases& r = *gReleases;
  std::lock_guard<std::mutex> lock(r.mutex);
  r.queue.push_back(std::move(release));
  if (!r.started) {
    r.started = true;
    Releases* self = &r;
    std::thread t([self] { self->run(); });
    pthread_setname_np(t.native_handle(), "baton-release");
    t.detach();
  }
  r.work.notify_one();
}

void Watchdog::watch(std::function<bool(uint64_t nowNs)> check, uint64_t periodNs) {
  closeAtExit();
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.entries.push_back({std::move(check), periodNs, nowNs() + periodNs});
  if (!s.started) {
    s.started = true;
    State* self = &s;
    std::thread t([self] { self->run(); });
    pthread_setname_np(t.native_handle(), "baton-watch");  // for profilers, the trace
    t.detach();
  }
  s.work.notify_one();
}

}  // namespace baton::core
