#include "watchdog.hpp"

#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "clock.hpp"

namespace baton::core {

namespace {

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
    for (Entry& e : due) {
      if (!e.check(now)) continue;  // dropped: destroyed below, outside the lock
      e.dueNs = now + e.periodNs;
      keep.push_back(std::move(e));
    }
    due.clear();
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
      for (std::function<void()>& f : batch) f();
      batch.clear();
      lock.lock();
    }
  }
};
Releases* gReleases = nullptr;
std::once_flag gReleasesOnce;

}  // namespace

void Watchdog::releaseLater(std::function<void()> release) {
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
