// Conformance: public calls made from inside baton's own callbacks: a host call and a native
// callback, on every backend. Each call gets a defined result; calls that would wait for the
// callback's own work (waitIdle of its queue or device, destroying its device or instance) are
// refused at once with ErrorInvalidState and change nothing; everything else is honoured. In every
// case the submission running the callback still reaches its signal: no signal is lost, nothing
// deadlocks.
#include <chrono>
#include <functional>
#include <string>

#include "backend_fixture.hpp"

namespace baton_test {
namespace {

using baton::Result;

enum class Via { HostCall, Native };

struct Reentry {
  std::function<Result()> call;
  Result result = Result::Success;
  std::string message;  // lastErrorMessage() right after the call, on the callback's thread
  double seconds = 0;   // how long the call took
  int runs = 0;
};

Result runReentry(void* user) {
  auto* r = static_cast<Reentry*>(user);
  auto start = Clock::now();
  r->result = r->call();
  r->seconds = secondsSince(start);
  r->message = baton::lastErrorMessage();
  ++r->runs;
  return Result::Success;
}
Result runReentryNative(const baton::NativeQueue&, void* user) { return runReentry(user); }

class ReentrancyTest : public BackendTest {
 protected:
  // Runs `call` from a callback (of kind `via`) of a submission on queue(0) that signals `done` to
  // 1, waits for that signal, and returns what the call returned.
  Reentry run(Via via, std::function<Result()> call) {
    Reentry r;
    r.call = std::move(call);
    auto done = makeSemaphore(0, "reentry-done");
    // Native callbacks that call baton are not capturable: replayed.
    auto cb = via == Via::HostCall ? makeCommandBuffer([&](baton::CommandBuffer c) {
      EXPECT_OK(c.hostCall(&runReentry, &r));
    })
                                   : makeReplayCommandBuffer([&](baton::CommandBuffer c) {
                                       EXPECT_OK(c.native(&runReentryNative, &r));
                                     });
    EXPECT_OK(submit(queue(0), {}, {*cb}, {{*done, 1}}));
    EXPECT_OK(done->wait(1, kLongNs)) << "the submission that made the call lost its signal";
    EXPECT_EQ(r.runs, 1);
    return r;
  }

  // What must hold for a refused call: ErrorInvalidState at once, naming the operation and why.
  static void expectRefused(const Reentry& r, const char* operation) {
    EXPECT_EQ(r.result, Result::ErrorInvalidState) << r.message;
    EXPECT_TRUE(containsText(r.message, operation)) << r.message;
    EXPECT_TRUE(containsText(r.message, "would wait for that callback's own work")) << r.message;
    EXPECT_LT(r.seconds, 1.0) << "refused, but not at once";
  }
};

// ---- refused: waiting for the callback's own work ------------------------------------------

TEST_P(ReentrancyTest, DestroyingItsOwnDeviceIsRefusedAndLosesNoSignal) {
  for (Via via : {Via::HostCall, Via::Native}) {
    baton::Device d = device();
    Reentry r = run(via, [d] { return d.destroy(); });
    expectRefused(r, "Device::destroy");
    // The device is still there and works.
    baton::Queue q;
    EXPECT_OK(d.getQueue(0, &q));
    EXPECT_OK(d.waitIdle(kLongNs));
  }
}

TEST_P(ReentrancyTest, DestroyingItsInstanceIsRefused) {
  for (Via via : {Via::HostCall, Via::Native}) {
    baton::Instance i = instance();
    expectRefused(run(via, [i] { return i.destroy(); }), "Instance::destroy");
    uint32_t count = 0;
    EXPECT_OK(i.enumerateBackends(&count, nullptr)) << "the instance must still be valid";
  }
}

TEST_P(ReentrancyTest, WaitIdleOfItsQueueOrDeviceIsRefusedAtOnce) {
  for (Via via : {Via::HostCall, Via::Native}) {
    baton::Queue own = queue(0), other = queue(1);
    baton::Device d = device();
    expectRefused(run(via, [own] { return own.waitIdle(baton::kWaitForever); }), "Queue::waitIdle");
    // Another queue of the same device: on GPU backends the thread running the callback is the
    // one that issues that queue's work too, so it is refused on every backend alike.
    expectRefused(run(via, [other] { return other.waitIdle(baton::kWaitForever); }),
                  "Queue::waitIdle");
    expectRefused(run(via, [d] { return d.waitIdle(baton::kWaitForever); }), "Device::waitIdle");
  }
}

// ---- honoured -------------------------------------------------------------------------------

TEST_P(ReentrancyTest, SignalFailQueryAndWaitOnOtherSemaphores) {
  for (Via via : {Via::HostCall, Via::Native}) {
    auto a = makeSemaphore(0, "signalled-inside"), b = makeSemaphore(0, "failed-inside"),
         c = makeSemaphore(5, "queried-inside");
    baton::Semaphore sa = *a, sb = *b, sc = *c;
    EXPECT_OK(run(via, [sa] { return sa.signal(3); }).result);
    uint64_t v = 0;
    EXPECT_OK(a->getValue(&v));
    EXPECT_EQ(v, 3u);
    EXPECT_OK(run(via, [sb] { return sb.fail("failed from a callback"); }).result);
    EXPECT_EQ(b->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
    uint64_t seen = 0;
    EXPECT_OK(run(via, [sc, &seen] { return sc.getValue(&seen); }).result);
    EXPECT_EQ(seen, 5u);
    // Waits: met at once, a poll of an unmet value, and a bounded wait that times out.
    EXPECT_OK(run(via, [sc] { return sc.wait(5, baton::kWaitForever); }).result);
    EXPECT_EQ(run(via, [sc] { return sc.wait(6, 0); }).result, Result::Timeout);
    Reentry bounded = run(via, [sc] { return sc.wait(6, 5 * kMs); });
    EXPECT_EQ(bounded.result, Result::Timeout);
    EXPECT_GE(bounded.seconds, 0.004);
  }
}

TEST_P(ReentrancyTest, SubmitsToItsOwnAndAnotherQueue) {
  for (Via via : {Via::HostCall, Via::Native}) {
    auto own = makeSemaphore(0, "own-queue"), other = makeSemaphore(0, "other-queue");
    baton::Semaphore so = *own, st = *other;
    baton::Queue q0 = queue(0), q1 = queue(1);
    EXPECT_OK(run(via, [so, q0] {
                baton::SemaphoreValue signal{so, 1};
                return q0.submit(baton::SubmitInfo{{}, {}, signal});
              }).result);
    EXPECT_OK(run(via, [st, q1] {
                baton::SemaphoreValue signal{st, 1};
                return q1.submit(baton::SubmitInfo{{}, {}, signal});
              }).result);
    EXPECT_OK(own->wait(1, kLongNs));
    EXPECT_OK(other->wait(1, kLongNs));
  }
}

TEST_P(ReentrancyTest, CreatesAndDestroysSemaphoresAndCommandBuffers) {
  for (Via via : {Via::HostCall, Via::Native}) {
    baton::Instance i = instance();
    baton::Device d = device();
    EXPECT_OK(run(via, [i] {
                baton::Semaphore s;
                Result r = i.createSemaphore({}, &s);
                if (r != Result::Success) return r;
                return s.destroy();
              }).result);
    EXPECT_OK(run(via, [d] {
                baton::CommandBuffer cb;
                Result r = d.createCommandBuffer(&cb);
                if (r != Result::Success) return r;
                return cb.destroy();
              }).result);
  }
}

// The command buffer that holds the callback is destroyed by it: the submission keeps what it
// runs, so the rest of it still runs and its signal is reached.
TEST_P(ReentrancyTest, DestroysTheCommandBufferItRunsFrom) {
  for (Via via : {Via::HostCall, Via::Native}) {
    Reentry r;
    auto done = makeSemaphore(0, "after-self-destroy");
    auto buffer = makeBuffer(64);
    baton::CommandBuffer cb;
    ASSERT_OK(device().createCommandBuffer(&cb));
    ASSERT_OK(cb.begin());
    r.call = [cb] { return cb.destroy(); };
    if (via == Via::HostCall)
      ASSERT_OK(cb.hostCall(&runReentry, &r));
    else
      ASSERT_OK(cb.native(&runReentryNative, &r));
    ASSERT_OK(cb.fillBuffer(*buffer, 0, 64, 0x5E1F));
    ASSERT_OK(cb.end());
    ASSERT_OK(submit(queue(0), {}, {cb}, {{*done, 1}}));
    ASSERT_OK(done->wait(1, kLongNs));
    EXPECT_OK(r.result) << r.message;
    EXPECT_EQ(map<uint32_t>(*buffer)[15], 0x5E1Fu) << "the commands after the callback ran";
    EXPECT_EQ(cb.destroy(), Result::ErrorInvalidHandle);
  }
}

TEST_P(ReentrancyTest, QueueOrderedAllocationFromACallback) {
  for (Via via : {Via::HostCall, Via::Native}) {
    auto allocated = makeSemaphore(0, "allocated"), freed = makeSemaphore(0, "freed");
    baton::Semaphore sa = *allocated, sf = *freed;
    baton::Queue q = queue(1);
    baton::Buffer b;
    EXPECT_OK(run(via, [&b, q, sa] {
                baton::BufferCreateInfo info;
                info.size = 256;
                baton::SemaphoreValue signal{sa, 1};
                return q.allocaBuffer({}, info, signal, &b);
              }).result);
    ASSERT_OK(allocated->wait(1, kLongNs));
    EXPECT_OK(run(via, [b, q, sa, sf] {
                baton::SemaphoreValue wait{sa, 1}, signal{sf, 1};
                return q.deallocaBuffer(wait, b, signal);
              }).result);
    ASSERT_OK(freed->wait(1, kLongNs));
  }
}

BATON_INSTANTIATE_FOR_BACKENDS(ReentrancyTest);

}  // namespace
}  // namespace baton_test
