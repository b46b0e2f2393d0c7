// core::SpinBudget (api/src/spin_budget.hpp): how long the issuing thread and host waits on
// host-published values poll before they sleep. The rules, step by step; then a semaphore's
// budget seen through host waits whose values another thread publishes long after the wait began
// (a frame's end): the waits stop spinning the whole default.
#include "spin_budget.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <baton/baton.hpp>
#include <chrono>
#include <thread>

#include "handle_table.hpp"
#include "semaphore.hpp"

namespace {

using baton::core::SpinBudget;
using baton::core::SpinLimits;

constexpr SpinLimits kLimits{64'000, 4'000, 2, 3};

TEST(SpinBudgetTest, StartsAtTheMaximum) {
  SpinBudget b(kLimits);
  EXPECT_EQ(b.ns(), 64'000u);
}

TEST(SpinBudgetTest, ShrinksByHalvesAfterTheAllowedMissesDownToTheFloor) {
  SpinBudget b(kLimits);
  b.timedOut();
  b.timedOut();
  EXPECT_EQ(b.ns(), 64'000u) << "two misses are allowed before it shrinks";
  b.timedOut();
  EXPECT_EQ(b.ns(), 32'000u);
  b.timedOut();
  EXPECT_EQ(b.ns(), 16'000u);
  b.timedOut();  // the third miss below the maximum: the next spin is a probe
  EXPECT_EQ(b.ns(), 64'000u) << "a full spin probes whether gaps became short again";
  b.timedOut();  // the probe missed too
  EXPECT_EQ(b.ns(), 4'000u);
  b.timedOut();
  EXPECT_EQ(b.ns(), 4'000u) << "never below the floor";
}

TEST(SpinBudgetTest, ACaughtGapGrowsItToTwiceTheGap) {
  SpinBudget b(kLimits);
  for (int i = 0; i < 6; ++i) b.timedOut();
  ASSERT_EQ(b.ns(), 4'000u);
  b.caught(3'000);
  EXPECT_EQ(b.ns(), 6'000u);
  b.caught(1'000);
  EXPECT_EQ(b.ns(), 6'000u) << "a shorter gap does not shrink it";
  b.caught(50'000);
  EXPECT_EQ(b.ns(), 64'000u) << "never above the maximum";
}

TEST(SpinBudgetTest, AProbeThatCatchesAGapGrowsItBack) {
  SpinBudget b(kLimits);
  for (int i = 0; i < 5; ++i) b.timedOut();
  ASSERT_EQ(b.ns(), 64'000u) << "a probe is due";
  b.caught(20'000);
  EXPECT_EQ(b.ns(), 40'000u);
  b.timedOut();
  EXPECT_EQ(b.ns(), 40'000u) << "a catch of at least the floor reset the misses";
}

// A host thread publishes each value 30 ms after the main thread began to wait for it, as a
// frame's end comes long after the frame's host wait began. Each wait's poll runs out (it is at
// most kHostWaitSpinDefaultNs), so after a few waits the semaphore's budget is below the default:
// such waits no longer burn the whole default spin. Before the budget, every one of them did.
TEST(HostPublishedSpinTest, WaitsForLateValuesStopSpinningTheWholeDefault) {
  baton::UniqueInstance instance;
  ASSERT_EQ(baton::createInstance({}, instance.put()), baton::Result::Success);
  baton::UniqueSemaphore semaphore;
  baton::SemaphoreCreateInfo info;
  info.debugName = "late";
  ASSERT_EQ(instance->createSemaphore(info, semaphore.put()), baton::Result::Success);
  baton::core::Status st;
  baton::core::Ref<baton::core::Semaphore> core = baton::core::lookupAs<baton::core::Semaphore>(
      semaphore->raw(), baton::core::ObjectType::Semaphore, "semaphore", &st);
  ASSERT_TRUE(core) << st.message();
  ASSERT_EQ(core->hostPublishedSpinNs(), baton::kHostWaitSpinDefaultNs);

  constexpr uint64_t kWaits = 12;
  std::atomic<uint64_t> waiting{0};
  std::thread publisher([&] {
    for (uint64_t v = 1; v <= kWaits; ++v) {
      while (waiting.load() < v) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      ASSERT_EQ(semaphore->signal(v), baton::Result::Success);
    }
  });
  for (uint64_t v = 1; v <= kWaits; ++v) {
    waiting.store(v);
    ASSERT_EQ(semaphore->wait(v, UINT64_MAX), baton::Result::Success);
  }
  publisher.join();
  EXPECT_LT(core->hostPublishedSpinNs(), baton::kHostWaitSpinDefaultNs)
      << "12 waits whose values came 30 ms late still spin the whole default";
}

}  // namespace
