// A sampling profiler for one thread (the calling one, or one found by name), for machines without
// perf (the GPU test machine has no hardware counters in its VM): a POSIX timer on the calling
// thread's CPU clock delivers SIGPROF, whose handler records the interrupted instruction address
// and the word at the stack pointer (in a leaf function, its return address). stop() writes the
// process's memory map and the addresses to a file that bench/symbolize.py turns into a table of
// functions and source lines (addr2line). Used by submit_micro (SAMPLE=<file>).
//
// Also the CPU time of every thread of the process by name (ThreadCpu), for the benchmarks'
// "by thread" lines: where a design's CPU goes, without a profiler.
//
// Samples arrive at the kernel's timer granularity of the thread's CPU time (a few ms), so runs
// of several seconds are needed. Not thread safe: one sampler per process, started and stopped by
// one thread.
#pragma once

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sampler {

inline constexpr size_t kMaxSamples = 1 << 20;
inline uintptr_t gPcs[kMaxSamples];
// The word at the stack pointer: in a leaf function (a libc syscall wrapper such as sched_yield,
// or a lock's slow path) it is the return address, which tells who called it.
inline uintptr_t gTops[kMaxSamples];
inline volatile size_t gCount = 0;
inline timer_t gTimer;
inline bool gStarted = false;
// While set, samples are dropped (pause()): a benchmark that profiles one of several phases run
// in turn on the same thread.
inline volatile bool gPaused = false;

inline void onSignal(int, siginfo_t*, void* context) {
  size_t n = gCount;
  if (n < kMaxSamples && !gPaused) {
#if defined(__x86_64__)
    const auto& regs = static_cast<ucontext_t*>(context)->uc_mcontext.gregs;
    gPcs[n] = regs[REG_RIP];
    gTops[n] = *reinterpret_cast<const uintptr_t*>(regs[REG_RSP]);
#elif defined(__aarch64__)
    gPcs[n] = static_cast<ucontext_t*>(context)->uc_mcontext.pc;
    gTops[n] = static_cast<ucontext_t*>(context)->uc_mcontext.regs[30];  // link register
#endif
    gCount = n + 1;
  }
}

// Starts sampling thread `tid` every `intervalNs` of its CPU time, on `clock` (its CPU clock).
inline bool startOn(pid_t tid, clockid_t clock, long intervalNs) {
  struct sigaction sa {};
  sa.sa_sigaction = onSignal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  sigevent ev{};
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = SIGPROF;
  ev._sigev_un._tid = tid;
  if (timer_create(clock, &ev, &gTimer) != 0) return false;
  itimerspec its{};
  its.it_interval.tv_nsec = intervalNs;
  its.it_value.tv_nsec = intervalNs;
  gStarted = timer_settime(gTimer, 0, &its, nullptr) == 0;
  if (!gStarted) timer_delete(gTimer);
  return gStarted;
}

// Drops (true) or keeps (false) the samples that arrive from now on.
inline void pause(bool paused) { gPaused = paused; }

// Starts sampling the calling thread every `intervalNs` of its CPU time.
inline bool start(long intervalNs = 20'000) {
  clockid_t clock;
  if (pthread_getcpuclockid(pthread_self(), &clock) != 0) return false;
  return startOn(static_cast<pid_t>(syscall(SYS_gettid)), clock, intervalNs);
}

// The threads of this process: their ids and names (pthread_setname_np; baton's issuing thread
// is "baton-issue", its completion threads "baton-complete").
struct Thread {
  pid_t tid;
  std::string name;
};
// Optional: the ids of baton's own threads (baton::stream::threadIds), set by a benchmark that
// links the stream machinery. A thread named like one of its threads ("baton-issue",
// "baton-complete") that is not among them was started by a driver from a baton thread, whose name
// it inherited: threads() names it "drv:<name>", so that its CPU is not counted as baton's.
inline std::vector<int> (*gOwnThreadIds)() = nullptr;

inline std::vector<Thread> threads() {
  std::vector<Thread> out;
  std::vector<int> own;
  if (gOwnThreadIds) own = gOwnThreadIds();
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return out;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    char path[300], comm[32] = {};
    std::snprintf(path, sizeof path, "/proc/self/task/%s/comm", entry->d_name);
    FILE* f = std::fopen(path, "r");
    if (!f) continue;
    if (std::fgets(comm, sizeof comm, f)) comm[std::strcspn(comm, "\n")] = 0;
    std::fclose(f);
    const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    std::string name = comm;
    if (gOwnThreadIds && (name == "baton-issue" || name == "baton-complete") &&
        std::find(own.begin(), own.end(), static_cast<int>(tid)) == own.end())
      name = "drv:" + name;
    out.push_back({tid, name});
  }
  closedir(dir);
  return out;
}

// Voluntary context switches of thread `tid` so far (/proc): each is a sleep (futex, or a
// blocking call), where yields and preemptions count as involuntary ones.
inline long voluntarySwitches(pid_t tid) {
  char path[64], line[128];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/status", static_cast<int>(tid));
  FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  long n = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1) break;
  std::fclose(f);
  return n;
}

// The clock of thread `tid`'s CPU time. Linux: made from the thread id, as the kernel defines it
// (CPUCLOCK_SCHED, per thread).
inline clockid_t cpuClock(pid_t tid) {
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 4 | 2);
}

// The CPU time thread `tid` has used, in ns (0 when it is gone).
inline double cpuNs(pid_t tid) {
  timespec ts{};
  if (clock_gettime(cpuClock(tid), &ts) != 0) return 0;
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// Starts sampling the first thread of this process named `name`, on its CPU clock.
inline bool startNamed(const char* name, long intervalNs = 20'000) {
  for (const Thread& t : threads())
    if (t.name == name) return startOn(t.tid, cpuClock(t.tid), intervalNs);
  return false;
}

// CPU time by thread name, summed over a span of a run (several spans may be added up): threads
// of one name are summed (baton's "baton-issue", "baton-complete", "baton-bridge"; a driver's own
// threads, e.g. "cuda-EvtHandlr"; unnamed threads under the process's name). Threads that ended
// during a span are missed.
class ThreadCpu {
 public:
  void begin() { before_ = now(); }
  void end() {
    for (const auto& [name, u] : now()) {
      auto it = before_.find(name);
      Use& sum = sum_[name];
      sum.ns += u.ns - (it == before_.end() ? 0 : it->second.ns);
      sum.sleeps += u.sleeps - (it == before_.end() ? 0 : it->second.sleeps);
    }
  }
  // The sum of the threads whose names start with `prefix`, in ns.
  double ns(const std::string& prefix) const {
    double total = 0;
    for (const auto& [name, u] : sum_)
      if (name.rfind(prefix, 0) == 0) total += u.ns;
    return total;
  }
  // "name 12.3, name 4.5": each thread's µs divided by `per`, largest first, under 0.5 left out;
  // with `sleeps`, each followed by its sleeps (voluntary context switches) divided by `per`:
  // "name 12.3 (0.8)".
  std::string text(double per, bool sleeps = false) const {
    std::vector<std::pair<double, std::string>> v;
    for (const auto& [name, u] : sum_)
      if (u.ns / 1e3 / per >= 0.5) v.emplace_back(u.ns / 1e3 / per, name);
    std::sort(v.rbegin(), v.rend());
    std::string out;
    char buf[128];
    for (const auto& [us, name] : v) {
      std::snprintf(buf, sizeof buf, "%s%s %.1f", out.empty() ? "" : ", ", name.c_str(), us);
      out += buf;
      if (sleeps) {
        std::snprintf(buf, sizeof buf, " (%.2f)", sum_.at(name).sleeps / per);
        out += buf;
      }
    }
    return out;
  }

 private:
  struct Use {
    double ns = 0, sleeps = 0;
  };
  static std::map<std::string, Use> now() {
    std::map<std::string, Use> out;
    for (const Thread& t : threads()) {
      Use& u = out[t.name];
      u.ns += cpuNs(t.tid);
      u.sleeps += static_cast<double>(voluntarySwitches(t.tid));
    }
    return out;
  }
  std::map<std::string, Use> before_, sum_;
};

// Stops sampling and writes "M <maps line>" and "P <hex address> <hex stack word>" lines to `path`;
// nothing when start() failed.
inline void stop(const char* path) {
  if (!gStarted) return;
  gStarted = false;
  itimerspec off{};
  timer_settime(gTimer, 0, &off, nullptr);
  timer_delete(gTimer);
  FILE* out = std::fopen(path, "w");
  if (!out) return;
  if (FILE* maps = std::fopen("/proc/self/maps", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, maps)) std::fprintf(out, "M %s", line);
    std::fclose(maps);
  }
  for (size_t i = 0; i < gCount; ++i)
    std::fprintf(out, "P %lx %lx\n", static_cast<unsigned long>(gPcs[i]),
                 static_cast<unsigned long>(gTops[i]));
  std::fclose(out);
  std::printf("sampler: %zu samples written to %s\n", static_cast<size_t>(gCount), path);
}

}  // namespace sampler
