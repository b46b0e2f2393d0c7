// A sampling profiler for one thread, for machines without perf (the GPU test machine has no
// hardware counters in its VM): a POSIX timer on the calling thread's CPU clock delivers SIGPROF,
// whose handler records the interrupted instruction address. stop() writes the process's memory
// map and the addresses to a file that bench/symbolize.py turns into a table of functions and
// source lines (addr2line). Used by submit_micro (SAMPLE=<file>).
//
// Samples arrive at the kernel's timer granularity of the thread's CPU time (a few ms), so runs
// of several seconds are needed. Not thread safe: one sampler per process, started and stopped by
// the sampled thread.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace sampler {

inline constexpr size_t kMaxSamples = 1 << 20;
inline uintptr_t gPcs[kMaxSamples];
inline volatile size_t gCount = 0;
inline timer_t gTimer;
inline bool gStarted = false;

inline void onSignal(int, siginfo_t*, void* context) {
  size_t n = gCount;
  if (n < kMaxSamples) {
#if defined(__x86_64__)
    gPcs[n] = static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    gPcs[n] = static_cast<ucontext_t*>(context)->uc_mcontext.pc;
#endif
    gCount = n + 1;
  }
}

// Starts sampling the calling thread every `intervalNs` of its CPU time.
inline bool start(long intervalNs = 20'000) {
  struct sigaction sa {};
  sa.sa_sigaction = onSignal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  clockid_t clock;
  if (pthread_getcpuclockid(pthread_self(), &clock) != 0) return false;
  sigevent ev{};
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = SIGPROF;
  ev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (timer_create(clock, &ev, &gTimer) != 0) return false;
  itimerspec its{};
  its.it_interval.tv_nsec = intervalNs;
  its.it_value.tv_nsec = intervalNs;
  gStarted = timer_settime(gTimer, 0, &its, nullptr) == 0;
  if (!gStarted) timer_delete(gTimer);
  return gStarted;
}

// Stops sampling and writes "M <maps line>" and "P <hex address>" lines to `path`; nothing when
// start() failed.
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
    std::fprintf(out, "P %lx\n", static_cast<unsigned long>(gPcs[i]));
  std::fclose(out);
  std::printf("sampler: %zu samples written to %s\n", static_cast<size_t>(gCount), path);
}

}  // namespace sampler
