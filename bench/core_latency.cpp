// core_latency: how long a cache line takes to move between two CPUs of this machine, for every
// pair. Two threads, pinned to CPUs i and j, hand an atomic counter back and forth; the time per
// hand-over is one one-way transfer of its cache line.
//
// Every figure of baton's stream backends that involves more than one thread (the issuing thread,
// the completion threads, the frame's raw-2t) pays such transfers for each submission: the ring
// slot, the submission, its timepoint, the semaphores it signals. On a machine where they are
// slow, or where their cost depends on which CPUs the scheduler picked, those figures move from
// one run to the next while single-threaded raw ones do not. gpu_run.sh's bench steps print this
// first, so that a run's figures can be read against the machine it ran on.
//
// usage: core_latency [--matrix] [--iters N]
//   prints min / median / max of the one-way time over all pairs of CPUs this process may run on
//   (its affinity mask), and with --matrix the time for every pair (row: the CPU that starts).
// Needs nothing but two CPUs; with fewer it says so and exits 0.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

// Pins the calling thread to `cpu`; a pair measured unpinned would be a figure of whichever CPUs
// the scheduler chose, so a failure ends the program.
void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set)) {
    std::fprintf(stderr, "core_latency: cannot pin a thread to CPU %d: %s\n", cpu,
                 std::strerror(e));
    std::exit(1);
  }
}

// One-way ns between CPUs a (which starts) and b: `iters` round trips of one cache line.
double oneWayNs(int a, int b, int iters) {
  alignas(64) static std::atomic<int> turn;
  turn.store(0, std::memory_order_relaxed);
  std::thread peer([&] {
    pin(b);
    for (int k = 0; k < iters; ++k) {
      while (turn.load(std::memory_order_acquire) != 2 * k + 1) {
      }
      turn.store(2 * k + 2, std::memory_order_release);
    }
  });
  pin(a);
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < iters; ++k) {
    turn.store(2 * k + 1, std::memory_order_release);
    while (turn.load(std::memory_order_acquire) != 2 * k + 2) {
    }
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  peer.join();
  return ns / iters / 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool matrix = false;
  int iters = 20000;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--matrix")) {
      matrix = true;
    } else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) {
      iters = std::max(100, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: core_latency [--matrix] [--iters N]\n");
      return 2;
    }
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    std::perror("sched_getaffinity");
    return 1;
  }
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) {
    std::printf("core_latency: this process may run on %zu CPU: no pair to measure\n", cpus.size());
    return 0;
  }
  const size_t n = cpus.size();
  std::vector<double> cell(n * n, 0), all;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      if (i == j || (!matrix && j < i)) continue;  // the summary needs each pair once
      cell[i * n + j] = oneWayNs(cpus[i], cpus[j], iters);
      all.push_back(cell[i * n + j]);
    }
  std::sort(all.begin(), all.end());
  std::printf(
      "cache line one-way between CPUs (%zu CPUs, %zu pairs, %d round trips each): min %.0f ns, "
      "median %.0f ns, max %.0f ns\n",
      n, all.size(), iters, all.front(), all[all.size() / 2], all.back());
  if (matrix) {
    std::printf("one-way ns; row: the CPU that starts\n     ");
    for (int c : cpus) std::printf("%5d", c);
    std::printf("\n");
    for (size_t i = 0; i < n; ++i) {
      std::printf("%4d ", cpus[i]);
      for (size_t j = 0; j < n; ++j)
        if (i == j)
          std::printf("    -");
        else
          std::printf("%5.0f", cell[i * n + j]);
      std::printf("\n");
    }
  }
  return 0;
}
