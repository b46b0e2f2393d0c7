// Conformance: randomized multi-thread stress of host signals, host waits and queue submissions
// with waits and signals on several queues, checked against a reference model.
//
// The model keeps every semaphore single-producer so that its final value is known exactly:
//   - host[t] is signalled only by thread t, from the host, with values 1, 2, 3, ...;
//   - queued[t] is signalled only by submissions of thread t, all to queue t % n, with values
//     1, 2, 3, ... in submission order.
// Submissions wait on random semaphores of any thread:
//   - on host[x] for values up to 2 beyond what x has signalled (wait-before-signal); the final
//     drain signals every host semaphore up to the largest value anyone waited for, so these
//     waits are always eventually met;
//   - on queued[x] only for values whose signal x has already submitted. Every submission thus
//     depends on host signals and earlier submissions only, so there is no cycle: a hang is a
//     bug, not the test's doing.
// Host waits always carry a timeout (0 or short): a host thread never blocks for good, so the
// host signals the queues depend on always come. After the threads finish, every semaphore must
// reach its model value within a long timeout (no deadlock, no lost signal), every host call must
// have run exactly once per submission that recorded it, and no value ever went backwards.
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "backend_fixture.hpp"

namespace baton_test {
namespace {

using baton::Result;
using baton::SemaphoreValue;
using baton::WaitMode;

class StressTest : public BackendTest {};

// Records the first unexpected outcome of any thread (gtest assertions from many threads at
// this rate would flood the log).
class FirstError {
 public:
  void record(const std::string& what) {
    count_++;
    std::lock_guard<std::mutex> lock(mutex_);
    if (first_.empty()) first_ = what;
  }
  uint64_t count() const { return count_.load(); }
  std::string first() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return first_;
  }

 private:
  std::atomic<uint64_t> count_{0};
  mutable std::mutex mutex_;
  std::string first_;
};

void atomicMax(std::atomic<uint64_t>& target, uint64_t value) {
  uint64_t current = target.load();
  while (current < value && !target.compare_exchange_weak(current, value)) {
  }
}

Result countCall(void* userData) {
  static_cast<std::atomic<uint64_t>*>(userData)->fetch_add(1, std::memory_order_relaxed);
  return Result::Success;
}

TEST_P(StressTest, RandomizedWaitsAndSignalsMatchTheModel) {
  const uint64_t totalOps = envUint("BATON_STRESS_OPS", 100000);
  const uint64_t seed = envUint("BATON_STRESS_SEED", 20261122);
  constexpr unsigned kThreads = 8;
  const uint64_t opsPerThread = (totalOps + kThreads - 1) / kThreads;
  RecordProperty("ops", std::to_string(opsPerThread * kThreads));
  RecordProperty("seed", std::to_string(seed));

  struct PerThread {
    baton::UniqueSemaphore host;
    baton::UniqueSemaphore queued;
    baton::UniqueCommandBuffer counter;        // one host call: executed++
    std::atomic<uint64_t> hostSignalled{0};    // last value host-signalled (after the call)
    std::atomic<uint64_t> maxHostWaited{0};    // largest value a submission waits for on host
    std::atomic<uint64_t> queuedPlanned{0};    // last queued value about to be submitted
    std::atomic<uint64_t> queuedSubmitted{0};  // last queued value whose submit returned
    std::atomic<uint64_t> executed{0};         // host calls run by this thread's submissions
    uint64_t counterSubmissions = 0;           // submissions that carried `counter`
  };
  std::vector<std::unique_ptr<PerThread>> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    auto p = std::make_unique<PerThread>();
    p->host = makeSemaphore();
    p->queued = makeSemaphore();
    PerThread* raw = p.get();
    p->counter = makeCommandBuffer(
        [&](baton::CommandBuffer c) { EXPECT_OK(c.hostCall(countCall, &raw->executed)); });
    threads.push_back(std::move(p));
  }
  ASSERT_FALSE(HasFailure());

  FirstError errors;
  std::atomic<uint64_t> opsDone{0}, hostWaitSuccesses{0}, submits{0}, waitBeforeSignal{0};
  const auto start = Clock::now();

  auto body = [&](unsigned t) {
    std::mt19937_64 rng(seed * 7919 + t);
    PerThread& me = *threads[t];
    const baton::Queue q = queue(t);
    uint64_t hostNext = 0;
    uint64_t queuedNext = 0;
    // Last value this thread observed per semaphore: values must never go backwards.
    std::vector<uint64_t> seenHost(kThreads, 0), seenQueued(kThreads, 0);

    auto pick = [&](unsigned n) { return static_cast<unsigned>(rng() % n); };
    auto check = [&](Result got, std::initializer_list<Result> allowed, const char* what) {
      for (Result a : allowed)
        if (got == a) return true;
      errors.record(std::string(what) + " returned " + baton::resultName(got) + ": " + lastError());
      return false;
    };

    for (uint64_t op = 0; op < opsPerThread; ++op) {
      const unsigned r = pick(100);
      if (r < 25) {
        // Host signal of our own semaphore.
        ++hostNext;
        check(me.host->signal(hostNext), {Result::Success}, "host signal");
        me.hostSignalled.store(hostNext);
      } else if (r < 45) {
        // Host wait on 1-3 random semaphores, ALL or ANY, polling or with a short timeout.
        std::vector<SemaphoreValue> waits;
        bool knownReached = true;  // every entry known reached before the wait
        bool anyKnownReached = false;
        const unsigned entries = 1 + pick(3);
        for (unsigned e = 0; e < entries; ++e) {
          PerThread& x = *threads[pick(kThreads)];
          const bool onHost = pick(2) == 0;
          uint64_t v;
          bool reached;
          if (onHost) {
            const uint64_t signalled = x.hostSignalled.load();
            v = signalled + pick(3);
            reached = v <= signalled;
          } else {
            const uint64_t submitted = x.queuedSubmitted.load();
            v = submitted == 0 ? 0 : submitted - pick(2);
            reached = v == 0;
          }
          knownReached = knownReached && reached;
          anyKnownReached = anyKnownReached || reached;
          waits.push_back({onHost ? *x.host : *x.queued, v});
        }
        const WaitMode mode = pick(2) ? WaitMode::All : WaitMode::Any;
        const uint64_t timeout = pick(8) == 0 ? 200 * kUs : 0;
        const Result got = instance().waitSemaphores(waits, mode, timeout);
        const bool mustSucceed = mode == WaitMode::All ? knownReached : anyKnownReached;
        if (mustSucceed) {
          if (check(got, {Result::Success}, "host wait on reached values")) hostWaitSuccesses++;
        } else if (check(got, {Result::Success, Result::Timeout}, "host wait") &&
                   got == Result::Success) {
          hostWaitSuccesses++;
          // A successful wait means the values are there now.
          size_t satisfied = 0;
          for (const SemaphoreValue& w : waits) {
            uint64_t value = 0;
            if (check(w.semaphore.getValue(&value), {Result::Success}, "getValue") &&
                value >= w.value)
              ++satisfied;
          }
          if (mode == WaitMode::All ? satisfied != waits.size() : satisfied == 0)
            errors.record("a successful host wait found its values unreached");
        }
      } else if (r < 55) {
        // Query: monotonic, and never above what the model allows.
        const unsigned xi = pick(kThreads);
        PerThread& x = *threads[xi];
        const bool onHost = pick(2) == 0;
        uint64_t value = 0;
        if (!check((onHost ? *x.host : *x.queued).getValue(&value), {Result::Success}, "getValue"))
          continue;
        uint64_t& seen = onHost ? seenHost[xi] : seenQueued[xi];
        if (value < seen) errors.record("a semaphore value went backwards");
        seen = value;
        // Read the bound after the value: a value can only have been signalled once planned.
        const uint64_t bound =
            onHost ? (&x == &me ? hostNext : x.hostSignalled.load() + 1) : x.queuedPlanned.load();
        if (value > bound) errors.record("a semaphore value above anything signalled");
      } else {
        // Submit to our queue: 0-3 waits, optionally the counter command buffer, one signal.
        std::vector<SemaphoreValue> waits;
        const unsigned nWaits = pick(4);
        for (unsigned e = 0; e < nWaits; ++e) {
          PerThread& x = *threads[pick(kThreads)];
          if (pick(2) == 0) {
            const uint64_t v = x.hostSignalled.load() + pick(3);
            atomicMax(x.maxHostWaited, v);  // before the submit: the drain must cover it
            if (v > x.hostSignalled.load()) waitBeforeSignal++;
            waits.push_back({*x.host, v});
          } else {
            const uint64_t submitted = x.queuedSubmitted.load();
            waits.push_back({*x.queued, submitted == 0 ? 0 : submitted - pick(2)});
          }
        }
        std::vector<baton::CommandBuffer> cbs;
        if (pick(10) < 3) {
          cbs.push_back(*me.counter);
          me.counterSubmissions++;
        }
        ++queuedNext;
        me.queuedPlanned.store(queuedNext);
        std::vector<SemaphoreValue> signals{{*me.queued, queuedNext}};
        if (check(submit(q, waits, cbs, signals), {Result::Success}, "submit")) {
          me.queuedSubmitted.store(queuedNext);
          submits++;
        }
      }
      opsDone++;
    }
  };

  std::vector<std::thread> workers;
  for (unsigned t = 0; t < kThreads; ++t) workers.emplace_back(body, t);
  for (auto& w : workers) w.join();
  const double runSeconds = secondsSince(start);

  // Drain: bring every host semaphore up to the largest value anyone waited for.
  std::vector<uint64_t> expectedHost(kThreads);
  for (unsigned t = 0; t < kThreads; ++t) {
    PerThread& x = *threads[t];
    const uint64_t signalled = x.hostSignalled.load();
    expectedHost[t] = std::max(signalled, x.maxHostWaited.load());
    if (expectedHost[t] > signalled) {
      EXPECT_OK(x.host->signal(expectedHost[t]));
    }
  }
  // Every queued signal must arrive: a timeout here is a deadlock or a lost signal.
  for (unsigned t = 0; t < kThreads; ++t) {
    PerThread& x = *threads[t];
    EXPECT_OK(x.queued->wait(x.queuedSubmitted.load(), 60'000 * kMs))
        << "thread " << t << ": queued semaphore never reached " << x.queuedSubmitted.load();
  }
  EXPECT_OK(device().waitIdle(60'000 * kMs));

  EXPECT_EQ(errors.count(), 0u) << "first: " << errors.first();
  EXPECT_EQ(opsDone.load(), opsPerThread * kThreads);
  EXPECT_GE(opsDone.load(), totalOps);
  for (unsigned t = 0; t < kThreads; ++t) {
    PerThread& x = *threads[t];
    uint64_t value = 0;
    ASSERT_OK(x.host->getValue(&value));
    EXPECT_EQ(value, expectedHost[t]) << "host semaphore of thread " << t;
    ASSERT_OK(x.queued->getValue(&value));
    EXPECT_EQ(value, x.queuedSubmitted.load()) << "queued semaphore of thread " << t;
    EXPECT_EQ(x.executed.load(), x.counterSubmissions) << "host calls of thread " << t;
  }
  std::printf(
      "[ stress   ] %s: %llu ops (%llu submits, %llu wait-before-signal waits, %llu "
      "successful host waits) in %.2f s, seed %llu\n",
      baton::backendName(backend()), static_cast<unsigned long long>(opsDone.load()),
      static_cast<unsigned long long>(submits.load()),
      static_cast<unsigned long long>(waitBeforeSignal.load()),
      static_cast<unsigned long long>(hostWaitSuccesses.load()), runSeconds,
      static_cast<unsigned long long>(seed));
}

TEST_P(StressTest, PingPongAcrossQueuesFromTwoSubmitters) {
  // Two threads submit independently: thread A to queue 0 waits s >= 2k and signals 2k+1,
  // thread B to queue 1 waits s >= 2k+1 and signals 2k+2. Neither coordinates with the other,
  // so most submissions are wait-before-signal; the queues ping-pong through one semaphore.
  const uint64_t rounds = std::max<uint64_t>(1000, envUint("BATON_STRESS_OPS", 100000) / 20);
  auto s = makeSemaphore();
  std::atomic<uint64_t> failures{0};
  auto submitter = [&](uint32_t q, uint64_t first) {
    for (uint64_t k = 0; k < rounds; ++k) {
      const uint64_t wait = 2 * k + first, signal = wait + 1;
      if (submit(queue(q), {{*s, wait}}, {}, {{*s, signal}}) != Result::Success) failures++;
    }
  };
  const auto start = Clock::now();
  std::thread a(submitter, 0, 0), b(submitter, 1, 1);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_OK(s->wait(2 * rounds, 60'000 * kMs));
  uint64_t value = 0;
  ASSERT_OK(s->getValue(&value));
  EXPECT_EQ(value, 2 * rounds);
  std::printf("[ stress   ] %s: %llu ping-pong rounds in %.2f s\n", baton::backendName(backend()),
              static_cast<unsigned long long>(rounds), secondsSince(start));
}

TEST_P(StressTest, ConcurrentFailuresAndSignalsNeverHang) {
  // Chains across queues whose roots are either signalled or failed by racing host threads:
  // every chain end must be decided (reached or failed), consistently with its root.
  constexpr int kChains = 200;
  constexpr int kHops = 4;
  std::vector<std::vector<baton::UniqueSemaphore>> chains;
  for (int c = 0; c < kChains; ++c) {
    chains.push_back(makeSemaphores(kHops + 1));
    for (int h = 1; h <= kHops; ++h)
      ASSERT_OK(submit(queue(static_cast<uint32_t>(c + h)), {{*chains[c][h - 1], 1}}, {},
                       {{*chains[c][h], 1}}));
  }
  std::vector<std::thread> racers;
  for (int t = 0; t < 4; ++t)
    racers.emplace_back([&, t] {
      for (int c = t; c < kChains; c += 4) {
        // Even chains are signalled, odd ones failed.
        if (c % 2 == 0) {
          EXPECT_OK(chains[c][0]->signal(1));
        } else {
          EXPECT_OK(chains[c][0]->fail("racing failure"));
        }
      }
    });
  for (auto& r : racers) r.join();
  for (int c = 0; c < kChains; ++c) {
    const Result got = chains[c][kHops]->wait(1, 60'000 * kMs);
    EXPECT_EQ(got, c % 2 == 0 ? Result::Success : Result::ErrorSemaphoreFailed) << "chain " << c;
  }
  EXPECT_OK(device().waitIdle(60'000 * kMs));
}

BATON_INSTANTIATE_FOR_BACKENDS(StressTest);

}  // namespace
}  // namespace baton_test
