// Collectives (baton/communicator.hpp): every op and element type checked against a host
// computation, ordering by timeline semaphores (wait-before-signal across ranks, compute and
// communication on two queues), and failure — a rank that never arrives, a rank that never runs
// its part, a library error — turned into failed semaphores instead of hangs, then shrink.
// Runs on every stream backend present with two or more devices: in CI on the fake driver's NCCL
// emulation (tests/cuda/fake/nccl.cpp) under CUDA and HIP names; on GPU machines on NCCL.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collective_test_support.hpp"
#include "collectives.hpp"
#include "stream_backend.hpp"
#include "trace.hpp"

namespace baton_test {
namespace {

constexpr uint64_t kN = 96;  // elements per rank and slot

// Rank r's input for element i: small integers, exact in every type, different per rank.
double input(size_t r, uint64_t i) { return static_cast<double>(1 + r + (i % 3)); }

std::vector<double> inputs(size_t r, uint64_t count) {
  std::vector<double> v(count);
  for (uint64_t i = 0; i < count; ++i) v[i] = input(r, i);
  return v;
}

class CollectiveOps : public CollectiveTest {
 protected:
  // Runs `record` on every rank's comm queue at once and waits for all.
  void runAll(const std::function<Result(size_t, CommandBuffer)>& record) {
    std::vector<Semaphore> done;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      done.push_back(semaphore());
      ASSERT_OK(submit(r, [&](CommandBuffer cb) { return record(r, cb); }, {}, {{done[r], 1}}));
    }
    for (size_t r = 0; r < ranks_.size(); ++r) ASSERT_OK(done[r].wait(1, kLongNs)) << "rank " << r;
  }
  // Per rank, a device buffer of kN int32 elements holding inputs(r, kN).
  std::vector<Buffer> int32Inputs() {
    std::vector<Buffer> buf;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      buf.push_back(deviceBuffer(r, kN * 4));
      upload(r, buf[r], encodeAll(ElementType::Int32, inputs(r, kN)));
    }
    return buf;
  }
  void expectValues(size_t r, ElementType type, const std::vector<uint8_t>& got,
                    const std::vector<double>& want, const std::string& what) {
    const uint64_t es = elementSize(type);
    ASSERT_EQ(got.size(), want.size() * es);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(decode(type, &got[i * es]), want[i])
          << what << " " << elementTypeName(type) << ", rank " << r << ", element " << i;
  }
};

TEST_P(CollectiveOps, AllReduceSumOfEveryElementType) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2));
  for (ElementType type : kAllTypes) {
    const uint64_t bytes = kN * elementSize(type);
    std::vector<Buffer> src, dst;
    for (size_t r = 0; r < 2; ++r) {
      src.push_back(deviceBuffer(r, bytes));
      dst.push_back(deviceBuffer(r, bytes));
      upload(r, src[r], encodeAll(type, inputs(r, kN)));
    }
    runAll([&](size_t r, CommandBuffer cb) {
      return cb.allReduce(comm(r), src[r], 0, dst[r], 0, kN, type, ReduceOp::Sum);
    });
    std::vector<double> want(kN);
    for (uint64_t i = 0; i < kN; ++i) want[i] = input(0, i) + input(1, i);
    for (size_t r = 0; r < 2; ++r)
      expectValues(r, type, download(r, dst[r], bytes), want, "allReduce sum");
  }
}

TEST_P(CollectiveOps, EveryReduceOpOnFloatAndIntegerTypes) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2));
  for (ElementType type : {ElementType::Float32, ElementType::Int32, ElementType::Bfloat16}) {
    for (ReduceOp op :
         {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg}) {
      const uint64_t bytes = kN * elementSize(type);
      std::vector<Buffer> src, dst;
      for (size_t r = 0; r < 2; ++r) {
        src.push_back(deviceBuffer(r, bytes));
        dst.push_back(deviceBuffer(r, bytes));
        upload(r, src[r], encodeAll(type, inputs(r, kN)));
      }
      runAll([&](size_t r, CommandBuffer cb) {
        return cb.allReduce(comm(r), src[r], 0, dst[r], 0, kN, type, op);
      });
      std::vector<double> want(kN);
      for (uint64_t i = 0; i < kN; ++i) want[i] = reduceHost(op, {input(0, i), input(1, i)}, type);
      for (size_t r = 0; r < 2; ++r)
        expectValues(r, type, download(r, dst[r], bytes), want,
                     std::string("allReduce ") + reduceOpName(op));
    }
  }
}

TEST_P(CollectiveOps, InPlaceAllReduce) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2));
  const ElementType type = ElementType::Float64;
  const uint64_t bytes = kN * 8;
  std::vector<Buffer> buf;
  for (size_t r = 0; r < 2; ++r) {
    buf.push_back(deviceBuffer(r, bytes));
    upload(r, buf[r], encodeAll(type, inputs(r, kN)));
  }
  runAll([&](size_t r, CommandBuffer cb) {
    return cb.allReduce(comm(r), buf[r], 0, buf[r], 0, kN, type, ReduceOp::Max);
  });
  std::vector<double> want(kN);
  for (uint64_t i = 0; i < kN; ++i) want[i] = std::max(input(0, i), input(1, i));
  for (size_t r = 0; r < 2; ++r) expectValues(r, type, download(r, buf[r], bytes), want, "max");
}

TEST_P(CollectiveOps, BroadcastReduceAllGatherReduceScatterAllToAll) {
  const size_t n = std::min<size_t>(3, physicals_.size());
  ASSERT_NO_FATAL_FAILURE(makeRanks(n));
  const ElementType type = ElementType::Int32;
  const uint64_t es = 4, slot = kN * es, all = n * kN;
  std::vector<Buffer> src, wide, dst;
  for (size_t r = 0; r < n; ++r) {
    src.push_back(deviceBuffer(r, slot));
    wide.push_back(deviceBuffer(r, n * slot));
    dst.push_back(deviceBuffer(r, n * slot));
    upload(r, src[r], encodeAll(type, inputs(r, kN)));
    upload(r, wide[r], encodeAll(type, inputs(r * 10, all)));
  }
  // broadcast from the last rank, reduce (sum) to rank 0
  runAll([&](size_t r, CommandBuffer cb) {
    return cb.broadcast(comm(r), src[r], 0, dst[r], 0, kN, type, static_cast<uint32_t>(n - 1));
  });
  for (size_t r = 0; r < n; ++r)
    expectValues(r, type, download(r, dst[r], slot), inputs(n - 1, kN), "broadcast");
  runAll([&](size_t r, CommandBuffer cb) {
    return cb.reduce(comm(r), src[r], 0, dst[r], 0, kN, type, ReduceOp::Sum, 0);
  });
  {
    std::vector<double> want(kN);
    for (uint64_t i = 0; i < kN; ++i)
      for (size_t r = 0; r < n; ++r) want[i] += input(r, i);
    expectValues(0, type, download(0, dst[0], slot), want, "reduce");
  }
  // allGather: slot r of every dst is rank r's src
  runAll([&](size_t r, CommandBuffer cb) {
    return cb.allGather(comm(r), src[r], 0, dst[r], 0, kN, type);
  });
  {
    std::vector<double> want;
    for (size_t r = 0; r < n; ++r) {
      std::vector<double> v = inputs(r, kN);
      want.insert(want.end(), v.begin(), v.end());
    }
    for (size_t r = 0; r < n; ++r)
      expectValues(r, type, download(r, dst[r], n * slot), want, "allGather");
  }
  // reduceScatter: rank r gets the sum of slot r of every wide
  runAll([&](size_t r, CommandBuffer cb) {
    return cb.reduceScatter(comm(r), wide[r], 0, dst[r], 0, kN, type, ReduceOp::Sum);
  });
  for (size_t r = 0; r < n; ++r) {
    std::vector<double> want(kN);
    for (uint64_t i = 0; i < kN; ++i)
      for (size_t q = 0; q < n; ++q) want[i] += input(q * 10, r * kN + i);
    expectValues(r, type, download(r, dst[r], slot), want, "reduceScatter");
  }
  // allToAll: slot p of rank r's wide goes to slot r of rank p's dst
  runAll([&](size_t r, CommandBuffer cb) {
    return cb.allToAll(comm(r), wide[r], 0, dst[r], 0, kN, type);
  });
  for (size_t p = 0; p < n; ++p) {
    std::vector<double> want;
    for (size_t r = 0; r < n; ++r)
      for (uint64_t i = 0; i < kN; ++i) want.push_back(input(r * 10, p * kN + i));
    expectValues(p, type, download(p, dst[p], n * slot), want, "allToAll");
  }
}

TEST_P(CollectiveOps, SendsAndReceivesInOneCommandBufferDoNotDeadlock) {
  const size_t n = std::min<size_t>(3, physicals_.size());
  ASSERT_NO_FATAL_FAILURE(makeRanks(n));
  const ElementType type = ElementType::Float32;
  const uint64_t bytes = kN * 4;
  std::vector<Buffer> src, left, right;
  for (size_t r = 0; r < n; ++r) {
    src.push_back(deviceBuffer(r, bytes));
    left.push_back(deviceBuffer(r, bytes));
    right.push_back(deviceBuffer(r, bytes));
    upload(r, src[r], encodeAll(type, inputs(r, kN)));
  }
  // Every rank sends to both neighbours and receives from both, sends first: a ring exchange that
  // deadlocks unless the command buffer's sends and receives form one group.
  runAll([&](size_t r, CommandBuffer cb) {
    const auto next = static_cast<uint32_t>((r + 1) % n),
               prev = static_cast<uint32_t>((r + n - 1) % n);
    Result res = cb.send(comm(r), src[r], 0, kN, type, next);
    if (res == Result::Success) res = cb.send(comm(r), src[r], 0, kN, type, prev);
    if (res == Result::Success) res = cb.recv(comm(r), left[r], 0, kN, type, prev);
    if (res == Result::Success) res = cb.recv(comm(r), right[r], 0, kN, type, next);
    return res;
  });
  for (size_t r = 0; r < n; ++r) {
    expectValues(r, type, download(r, left[r], bytes), inputs((r + n - 1) % n, kN), "from prev");
    expectValues(r, type, download(r, right[r], bytes), inputs((r + 1) % n, kN), "from next");
  }
}

// A rank's collective submitted before the work it waits for (on another rank, signalled from
// the host last): both ranks complete once the value arrives, with the right data.
TEST_P(CollectiveOps, WaitBeforeSignalAcrossRanks) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2));
  const ElementType type = ElementType::Float32;
  const uint64_t bytes = kN * 4;
  std::vector<Buffer> src, dst;
  for (size_t r = 0; r < 2; ++r) {
    src.push_back(deviceBuffer(r, bytes));
    dst.push_back(deviceBuffer(r, bytes));
  }
  upload(0, src[0], encodeAll(type, inputs(0, kN)));
  Semaphore gate = semaphore("gate"), filled = semaphore("filled");
  Semaphore done0 = semaphore(), done1 = semaphore();
  // rank 1: its allReduce waits for its input, which a later submission writes after `gate`.
  ASSERT_OK(submit(1,
                   [&](CommandBuffer cb) {
                     return cb.allReduce(comm(1), src[1], 0, dst[1], 0, kN, type, ReduceOp::Sum);
                   },
                   {{filled, 1}}, {{done1, 1}}));
  ASSERT_OK(submit(0,
                   [&](CommandBuffer cb) {
                     return cb.allReduce(comm(0), src[0], 0, dst[0], 0, kN, type, ReduceOp::Sum);
                   },
                   {}, {{done0, 1}}));
  const std::vector<uint8_t> in1 = encodeAll(type, inputs(1, kN));
  ASSERT_OK(submit(
      1, [&](CommandBuffer cb) { return cb.updateBuffer(src[1], 0, bytes, in1.data()); },
      {{gate, 1}}, {{filled, 1}}, ranks_[1].compute));
  uint64_t v = 0;
  ASSERT_OK(done0.getValue(&v));
  EXPECT_EQ(v, 0u) << "rank 0's allReduce completed without rank 1's";
  ASSERT_OK(gate.signal(1));
  ASSERT_OK(done0.wait(1, kLongNs));
  ASSERT_OK(done1.wait(1, kLongNs));
  std::vector<double> want(kN);
  for (uint64_t i = 0; i < kN; ++i) want[i] = input(0, i) + input(1, i);
  for (size_t r = 0; r < 2; ++r) expectValues(r, type, download(r, dst[r], bytes), want, "sum");
}

// Compute on one queue, communication on another, across ranks: layer l's "compute" (a fill on
// the compute queue) signals, the comm queue all-reduces layer l while layer l+1 computes, and a
// final step waits for every all-reduce.
TEST_P(CollectiveOps, ComputeAndCommunicationPipelineAcrossQueues) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2));
  constexpr int kLayers = 6;
  const ElementType type = ElementType::Int32;
  const uint64_t bytes = kN * 4;
  std::vector<std::vector<Buffer>> grads(2), sums(2);
  std::vector<Semaphore> computed, reduced;
  for (size_t r = 0; r < 2; ++r) {
    computed.push_back(semaphore("computed"));
    reduced.push_back(semaphore("reduced"));
    for (int l = 0; l < kLayers; ++l) {
      grads[r].push_back(deviceBuffer(r, bytes));
      sums[r].push_back(deviceBuffer(r, bytes));
    }
  }
  for (int l = 0; l < kLayers; ++l)
    for (size_t r = 0; r < 2; ++r) {
      const uint32_t value = static_cast<uint32_t>(10 * l + r + 1);
      ASSERT_OK(submit(
          r, [&](CommandBuffer cb) { return cb.fillBuffer(grads[r][l], 0, bytes, value); }, {},
          {{computed[r], static_cast<uint64_t>(l + 1)}}, ranks_[r].compute));
      ASSERT_OK(submit(r,
                       [&](CommandBuffer cb) {
                         return cb.allReduce(comm(r), grads[r][l], 0, sums[r][l], 0, kN, type,
                                             ReduceOp::Sum);
                       },
                       {{computed[r], static_cast<uint64_t>(l + 1)}},
                       {{reduced[r], static_cast<uint64_t>(l + 1)}}));
    }
  for (size_t r = 0; r < 2; ++r) ASSERT_OK(reduced[r].wait(kLayers, kLongNs));
  for (int l = 0; l < kLayers; ++l) {
    std::vector<double> want(kN, (10 * l + 1) + (10 * l + 2));
    for (size_t r = 0; r < 2; ++r)
      expectValues(r, type, download(r, sums[r][l], bytes), want, "layer " + std::to_string(l));
  }
}

TEST_P(CollectiveOps, SplitByColor) {
  const size_t n = std::min<size_t>(3, physicals_.size());
  ASSERT_NO_FATAL_FAILURE(makeRanks(n));
  std::vector<UniqueCommunicator> parts(n);
  std::vector<std::thread> threads;
  std::vector<Result> results(n);
  // Every rank calls split at once (each blocks until its color's ranks arrived).
  for (size_t r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      const int32_t color = r == 0 ? kSplitNoColor : 7;
      results[r] = comm(r).split(color, static_cast<int32_t>(n - r), parts[r].put());
    });
  for (std::thread& t : threads) t.join();
  for (size_t r = 0; r < n; ++r) ASSERT_EQ(results[r], Result::Success) << "rank " << r;
  EXPECT_FALSE(*parts[0]) << "kSplitNoColor joins no communicator";
  for (size_t r = 1; r < n; ++r) {
    uint32_t rank = 99, count = 0;
    ASSERT_OK(parts[r]->getRank(&rank));
    ASSERT_OK(parts[r]->getRankCount(&count));
    EXPECT_EQ(count, n - 1);
    EXPECT_EQ(rank, n - 1 - r) << "ordered by key (n - r)";
  }
}

// ---- graph command buffers ---------------------------------------------------------------------

// A graph command buffer with a collective between other commands: one graph per rank, built at
// the first submission (the collective captured from the library then), launched again by the
// later ones with new inputs; recorded again with another operator; its communicator destroyed
// while it still exists (NCCL ends a communicator only once the graphs holding its collectives
// are gone: baton drops them first, and a later submission fails with the reason).
TEST_P(CollectiveOps, AGraphCommandBufferCapturesItsCollectivesAtItsFirstSubmission) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2));
  const ElementType type = ElementType::Int32;
  const uint64_t bytes = kN * 4;
  std::vector<Buffer> src, dst, out;
  std::vector<UniqueCommandBuffer> cbs(2);
  CommandBufferCreateInfo graph;
  graph.usage = CommandBufferUsage::Graph;
  auto record = [&](size_t r, ReduceOp op) {
    ASSERT_OK(cbs[r]->begin());
    ASSERT_OK(cbs[r]->fillBuffer(dst[r], 0, bytes, 0));
    ASSERT_OK(cbs[r]->allReduce(comm(r), src[r], 0, dst[r], 0, kN, type, op));
    ASSERT_OK(cbs[r]->copyBuffer(dst[r], 0, out[r], 0, bytes));
    ASSERT_OK(cbs[r]->end());
  };
  for (size_t r = 0; r < 2; ++r) {
    src.push_back(deviceBuffer(r, bytes));
    dst.push_back(deviceBuffer(r, bytes));
    out.push_back(pinnedBuffer(r, bytes));
    ASSERT_OK(ranks_[r].device->createCommandBuffer(graph, cbs[r].put()));
  }
  const baton::stream::Stats before = baton::stream::stats();
  for (size_t r = 0; r < 2; ++r) record(r, ReduceOp::Sum);
  // Three graphs per rank: the fill, the collective (a run of collectives is a graph of its
  // own), built at its first submission, not at end(), and the copy.
  EXPECT_EQ(baton::stream::stats().graphInstantiations - before.graphInstantiations, 4u)
      << "only the fills' and copies' graphs are built at end()";
  // Submits both ranks' command buffers; returns what rank r's `out` holds afterwards.
  auto frame = [&](uint32_t scale) {
    std::vector<Semaphore> done;
    for (size_t r = 0; r < 2; ++r) {
      std::vector<double> in(kN);
      for (uint64_t i = 0; i < kN; ++i) in[i] = input(r, i) * scale;
      // Replayed (not counted among the graphs): update, then the graph behind it.
      const std::vector<uint8_t> data = encodeAll(type, in);
      UniqueCommandBuffer up;
      EXPECT_OK(ranks_[r].device->createCommandBuffer(up.put()));
      EXPECT_OK(up->begin());
      EXPECT_OK(up->updateBuffer(src[r], 0, bytes, data.data()));
      EXPECT_OK(up->end());
      EXPECT_OK(submitOne(ranks_[r].comm, *up, Semaphore()));
      done.push_back(semaphore());
      EXPECT_OK(submitOne(ranks_[r].comm, *cbs[r], done[r]));
    }
    std::vector<Result> results;
    for (size_t r = 0; r < 2; ++r) results.push_back(done[r].wait(1, kLongNs));
    return results;
  };
  auto outputs = [&](size_t r) {
    void* p = nullptr;
    EXPECT_OK(out[r].map(&p));
    std::vector<uint8_t> v(bytes);
    if (p) std::memcpy(v.data(), p, bytes);
    return v;
  };
  for (uint32_t scale : {1u, 2u, 5u}) {
    for (Result res : frame(scale)) ASSERT_OK(res) << "frame x" << scale;
    std::vector<double> want(kN);
    for (uint64_t i = 0; i < kN; ++i) want[i] = (input(0, i) + input(1, i)) * scale;
    for (size_t r = 0; r < 2; ++r)
      expectValues(r, type, outputs(r), want, "graph allReduce x" + std::to_string(scale));
  }
  const baton::stream::Stats run = baton::stream::stats();
  EXPECT_EQ(run.graphInstantiations - before.graphInstantiations, 6u)
      << "the collectives' graphs once per rank, at the first submission";
  EXPECT_GE(run.graphLaunches - before.graphLaunches, 18u);
  FakeNcclStatsFn fake = fakeNcclStats(GetParam());
  FakeNcclStats fs{};
  if (fake) {
    fake(&fs);
    EXPECT_EQ(fs.persistentLive, 2u) << "each rank's graph holds its capture";
  }
  // Recorded again: a new capture at the next submission (the fills' and copies' graphs, idle
  // once the queues are, updated in place).
  for (size_t r = 0; r < 2; ++r) ASSERT_OK(ranks_[r].comm.waitIdle(kLongNs));
  for (size_t r = 0; r < 2; ++r) record(r, ReduceOp::Max);
  for (Result res : frame(3)) ASSERT_OK(res);
  std::vector<double> want(kN);
  for (uint64_t i = 0; i < kN; ++i) want[i] = std::max(input(0, i), input(1, i)) * 3;
  for (size_t r = 0; r < 2; ++r) expectValues(r, type, outputs(r), want, "graph allReduce max");
  EXPECT_EQ(baton::stream::stats().graphInstantiations - run.graphInstantiations, 2u);
  EXPECT_EQ(baton::stream::stats().graphUpdates - run.graphUpdates, 4u);
  // The communicators go while the command buffers stay: no hang, the graphs dropped first.
  const auto start = Clock::now();
  for (Rank& r : ranks_) r.communicator.reset();
  EXPECT_LT(secondsSince(start), 5.0);
  if (fake) {
    fake(&fs);
    EXPECT_EQ(fs.persistentLive, 0u) << "the graphs holding the captures were destroyed";
  }
  for (Result res : frame(1)) EXPECT_EQ(res, Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastErrorMessage(), "was destroyed")) << lastErrorMessage();
}

// One rank on one device (a communicator of one: every collective a copy), for machines with one
// GPU: the library's own capture, graph and teardown paths.
class CollectiveOneRank : public CollectiveOps {
 protected:
  void SetUp() override {
    minDevices_ = 1;
    CollectiveTest::SetUp();
  }
};

// NCCL 2.26 and later end a communicator only once every graph holding its collectives is gone:
// destroying a communicator whose collectives a graph command buffer still holds must not hang
// (baton drops the graph first), and the command buffer then fails with the reason.
TEST_P(CollectiveOneRank, ACommunicatorWhoseCollectivesAGraphHoldsIsDestroyedWithoutAHang) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(1));
  const uint64_t bytes = kN * 4;
  Buffer src = deviceBuffer(0, bytes), dst = deviceBuffer(0, bytes), out = pinnedBuffer(0, bytes);
  upload(0, src, encodeAll(ElementType::Float32, inputs(0, kN)));
  CommandBufferCreateInfo graph;
  graph.usage = CommandBufferUsage::Graph;
  UniqueCommandBuffer cb;
  ASSERT_OK(ranks_[0].device->createCommandBuffer(graph, cb.put()));
  ASSERT_OK(cb->begin());
  ASSERT_OK(cb->fillBuffer(dst, 0, bytes, 0));
  ASSERT_OK(cb->allReduce(comm(0), src, 0, dst, 0, kN, ElementType::Float32, ReduceOp::Sum));
  ASSERT_OK(cb->copyBuffer(dst, 0, out, 0, bytes));
  ASSERT_OK(cb->end());
  auto run = [&] {
    Semaphore done = semaphore();
    EXPECT_OK(submitOne(ranks_[0].comm, *cb, done));
    return done.wait(1, kLongNs);
  };
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(run()) << "submission " << i;
    void* p = nullptr;
    ASSERT_OK(out.map(&p));
    std::vector<uint8_t> got(bytes);
    std::memcpy(got.data(), p, bytes);
    expectValues(0, ElementType::Float32, got, inputs(0, kN), "one-rank allReduce");
  }
  const baton::stream::Stats before = baton::stream::stats();
  ASSERT_OK(ranks_[0].comm.waitIdle(kLongNs));
  const auto start = Clock::now();
  ranks_[0].communicator.reset();
  EXPECT_LT(secondsSince(start), 5.0) << "the graph holding its collectives was dropped first";
  EXPECT_EQ(run(), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(containsText(lastErrorMessage(), "was destroyed")) << lastErrorMessage();
  EXPECT_EQ(baton::stream::stats().graphLaunches - before.graphLaunches, 1u)
      << "the fill's graph, not the collective's";
}

// HIP's hipFree synchronizes the device, and a device synchronization ends a capture in progress
// (the emulated driver's cuCtxSynchronize does, as the H200's did): memory freed while a graph
// command buffer's collective is being captured — its first collective waits in the library for
// the peer's, as NCCL connects then — is freed once the capture ended, and the capture completes.
TEST_P(CollectiveOps, MemoryFreedDuringACaptureIsFreedAfterIt) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2));
  CommandBufferCreateInfo graph;
  graph.usage = CommandBufferUsage::Graph;
  std::vector<Buffer> buf = int32Inputs();
  std::vector<UniqueCommandBuffer> cbs(2);
  std::vector<Semaphore> done;
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_OK(ranks_[r].device->createCommandBuffer(graph, cbs[r].put()));
    ASSERT_OK(cbs[r]->begin());
    ASSERT_OK(
        cbs[r]->allReduce(comm(r), buf[r], 0, buf[r], 0, kN, ElementType::Int32, ReduceOp::Sum));
    ASSERT_OK(cbs[r]->end());
    done.push_back(semaphore());
  }
  UniqueBuffer spare;
  BufferCreateInfo info;
  info.size = 4096;
  ASSERT_OK(ranks_[0].device->createBuffer(info, spare.put()));
  auto submitRank = [&](size_t r) { return submitOne(ranks_[r].comm, *cbs[r], done[r]); };
  ASSERT_OK(submitRank(0));
  // Rank 0's capture is under way, waiting for rank 1 (blocking calls): a free on its device now,
  // from another thread (a free that synchronizes waits for rank 0's collective, launched already
  // with non-blocking calls, until rank 1's part is submitted).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::thread freeing([&] { spare.reset(); });
  EXPECT_OK(submitRank(1));
  freeing.join();
  for (size_t r = 0; r < 2; ++r) ASSERT_OK(done[r].wait(1, kLongNs)) << "rank " << r;
  std::vector<double> want(kN);
  for (uint64_t i = 0; i < kN; ++i) want[i] = input(0, i) + input(1, i);
  for (size_t r = 0; r < 2; ++r)
    expectValues(r, ElementType::Int32, download(r, buf[r], kN * 4), want, "allReduce");
}

// NCCL 2.28 did not capture the collectives of two ranks of one process with blocking calls (two
// H200s: the capture invalidated, then the devices lost): end() refuses such a graph, saying why
// and what to do, and a replayed command buffer runs the same collective. With non-blocking calls
// (the -nonblocking registrations) the graph is accepted and runs.
TEST_P(CollectiveOps, AGraphOfCollectivesOfRanksOfOneProcessIsRefusedWithBlockingCalls) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2));
  baton::stream::setInProcessGraphCaptureAllowedForTests(false);
  const char* calls = std::getenv("BATON_NCCL_BLOCKING_CALLS");
  const bool blocking = !(calls && std::string(calls) == "0");
  std::vector<Buffer> buf = int32Inputs();
  std::vector<UniqueCommandBuffer> cbs(2);
  std::vector<Semaphore> done;
  for (size_t r = 0; r < 2; ++r) {
    CommandBufferCreateInfo info;
    info.usage = CommandBufferUsage::Graph;
    ASSERT_OK(ranks_[r].device->createCommandBuffer(info, cbs[r].put()));
    ASSERT_OK(cbs[r]->begin());
    ASSERT_OK(cbs[r]->fillBuffer(buf[r], kN * 4 - 4, 4, 0));
    ASSERT_OK(
        cbs[r]->allReduce(comm(r), buf[r], 0, buf[r], 0, kN, ElementType::Int32, ReduceOp::Sum));
    const Result ended = cbs[r]->end();
    if (blocking) {
      EXPECT_EQ(ended, Result::ErrorNotSupported) << "rank " << r;
      const std::string why = lastErrorMessage();
      EXPECT_TRUE(containsText(why, "command 1")) << why;
      EXPECT_TRUE(containsText(why, "has other ranks in this process")) << why;
      EXPECT_TRUE(containsText(why, "BATON_NCCL_BLOCKING_CALLS=0")) << why;
      // The same commands replayed.
      cbs[r].reset();
      ASSERT_OK(ranks_[r].device->createCommandBuffer(cbs[r].put()));
      ASSERT_OK(cbs[r]->begin());
      ASSERT_OK(cbs[r]->fillBuffer(buf[r], kN * 4 - 4, 4, 0));
      ASSERT_OK(
          cbs[r]->allReduce(comm(r), buf[r], 0, buf[r], 0, kN, ElementType::Int32, ReduceOp::Sum));
      ASSERT_OK(cbs[r]->end());
    } else {
      ASSERT_OK(ended) << "rank " << r;
    }
    done.push_back(semaphore());
  }
  for (size_t r = 0; r < 2; ++r) ASSERT_OK(submitOne(ranks_[r].comm, *cbs[r], done[r]));
  for (size_t r = 0; r < 2; ++r) ASSERT_OK(done[r].wait(1, kLongNs)) << "rank " << r;
  std::vector<double> want(kN);
  for (uint64_t i = 0; i < kN; ++i) want[i] = i + 1 < kN ? input(0, i) + input(1, i) : 0;
  for (size_t r = 0; r < 2; ++r)
    expectValues(r, ElementType::Int32, download(r, buf[r], kN * 4), want, "allReduce");
}

// ---- failure ------------------------------------------------------------------------------------

// CollectiveSupport::blockingCalls says where the calls go, as BATON_NCCL_BLOCKING_CALLS decides
// (the registrations run both ways): blocking unless it is "0".
TEST_P(CollectiveTest, TheSupportReportSaysWhetherCallsBlock) {
  const char* mode = std::getenv("BATON_NCCL_BLOCKING_CALLS");
  EXPECT_EQ(support_.blockingCalls, !(mode && std::string(mode) == "0"));
  CollectiveSupport host;
  ASSERT_OK(instance_->getCollectiveSupport(BackendKind::Host, &host));
  EXPECT_FALSE(host.blockingCalls) << "no library, no calls";
}

TEST_P(CollectiveTest, ARankThatNeverArrivesFailsCreationAfterTheTimeout) {
  DeviceCreateInfo info;
  UniqueDevice device;
  ASSERT_OK(instance_->createDevice(physicals_[0], info, device.put()));
  CommunicatorCreateInfo ci;
  ASSERT_OK(instance_->createCommunicatorId(GetParam(), &ci.id));
  ci.rank = 0;
  ci.rankCount = 2;  // rank 1 never comes
  ci.timeoutNs = 300 * kMs;
  UniqueCommunicator c;
  const auto start = Clock::now();
  EXPECT_EQ(device->createCommunicator(ci, c.put()), Result::ErrorDriver);
  const double took = secondsSince(start);
  EXPECT_TRUE(containsText(lastErrorMessage(), "did not arrive")) << lastErrorMessage();
  EXPECT_GE(took, 0.25);
  EXPECT_LT(took, 5.0) << "the timeout is 300 ms";
}

class CollectiveFailure : public CollectiveTest {
 protected:
  // Two ranks, 300 ms timeout: a graph command buffer with 600 ms of host work recorded
  // `before` (or after) an allReduce; checks the signals and both communicators.
  void slowWorkAroundAnAllReduce(bool before);
  // Rank `silent` never submits its part of an allReduce the others submit: their signals fail
  // once the communicator's timeout passes with no progress.
  struct Stalled {
    std::vector<Semaphore> done;
    std::vector<Buffer> buf;
  };
  // `warm`: every rank first runs one allReduce together, so that the library's connections
  // exist (NCCL makes them at the first collectives) and the stall is a collective that never
  // completes, as when a rank dies in a loop; without it, the stall is the first collective's
  // enqueue itself, which cannot finish without the peer.
  Stalled stallAllReduce(size_t silent, bool warm = true) {
    Stalled s;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      s.done.push_back(semaphore("allReduce done"));
      s.buf.push_back(deviceBuffer(r, kN * 4));
    }
    if (warm) {
      std::vector<Semaphore> warmed;
      for (size_t r = 0; r < ranks_.size(); ++r) {
        warmed.push_back(semaphore("warm-up done"));
        EXPECT_OK(submit(r,
                         [&](CommandBuffer cb) {
                           return cb.allReduce(comm(r), s.buf[r], 0, s.buf[r], 0, kN,
                                               ElementType::Float32, ReduceOp::Sum);
                         },
                         {}, {{warmed[r], 1}}));
      }
      for (Semaphore w : warmed) EXPECT_OK(w.wait(1, kLongNs));
    }
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (r == silent) continue;
      EXPECT_OK(submit(r,
                       [&](CommandBuffer cb) {
                         return cb.allReduce(comm(r), s.buf[r], 0, s.buf[r], 0, kN,
                                             ElementType::Float32, ReduceOp::Sum);
                       },
                       {}, {{s.done[r], 1}}));
    }
    return s;
  }
};

// A run of collectives in a graph command buffer is a graph of its own: the watch times the
// collectives alone, so that 600 ms of host work recorded before or after them in the same
// command buffer does not count toward a 300 ms timeout (a launch that held it would: a false
// "no progress" and a failed communicator).
void CollectiveFailure::slowWorkAroundAnAllReduce(bool before) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2, 300 * kMs));
  CommandBufferCreateInfo graph;
  graph.usage = CommandBufferUsage::Graph;
  auto slow = [](void*) {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    return Result::Success;
  };
  std::vector<Buffer> buf;
  std::vector<UniqueCommandBuffer> cbs(2);
  std::vector<Semaphore> done;
  for (size_t r = 0; r < 2; ++r) {
    buf.push_back(deviceBuffer(r, kN * 4));
    ASSERT_OK(ranks_[r].device->createCommandBuffer(graph, cbs[r].put()));
    ASSERT_OK(cbs[r]->begin());
    if (before) {
      ASSERT_OK(cbs[r]->hostCall(+slow, nullptr, kHostCallInfallible));
    }
    ASSERT_OK(
        cbs[r]->allReduce(comm(r), buf[r], 0, buf[r], 0, kN, ElementType::Float32, ReduceOp::Sum));
    if (!before) {
      ASSERT_OK(cbs[r]->hostCall(+slow, nullptr, kHostCallInfallible));
    }
    ASSERT_OK(cbs[r]->end());
    done.push_back(semaphore());
  }
  for (size_t r = 0; r < 2; ++r) ASSERT_OK(submitOne(ranks_[r].comm, *cbs[r], done[r]));
  for (size_t r = 0; r < 2; ++r) EXPECT_OK(done[r].wait(1, kLongNs)) << "rank " << r;
  for (size_t r = 0; r < 2; ++r) {
    CommunicatorState state;
    ASSERT_OK(comm(r).getState(&state));
    EXPECT_EQ(state, CommunicatorState::Ready) << "rank " << r;
  }
}

TEST_P(CollectiveFailure, WorkBeforeACollectiveInAGraphDoesNotCountTowardItsTimeout) {
  slowWorkAroundAnAllReduce(true);
}

TEST_P(CollectiveFailure, WorkAfterACollectiveInAGraphDoesNotCountTowardItsTimeout) {
  slowWorkAroundAnAllReduce(false);
}

TEST_P(CollectiveFailure, NoProgressFailsTheSignalsWithinTheTimeoutAndTheQueueMovesOn) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2, 300 * kMs));
  // For the check that the device stays usable, made before the stall: with a collective stuck
  // on the GPU (non-blocking calls, no ncclCommRevoke) a device allocation may wait for it.
  Buffer other = deviceBuffer(0, 16);
  Stalled s = stallAllReduce(1);
  progress("NoProgress: the stall is in place");
  // Behind the stuck collective on the same queue: no collective, no wait on it.
  Semaphore after = semaphore("after"), dependent = semaphore("dependent");
  ASSERT_OK(submit(0, [&](CommandBuffer cb) { return cb.fillBuffer(s.buf[0], 0, 16, 7); }, {},
                   {{after, 1}}));
  // On another queue, waiting for the collective's signal.
  ASSERT_OK(submit(
      0, [&](CommandBuffer cb) { return cb.fillBuffer(s.buf[0], 16, 16, 7); }, {{s.done[0], 1}},
      {{dependent, 1}}, ranks_[0].compute));
  const auto start = Clock::now();
  EXPECT_EQ(s.done[0].wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  progress("NoProgress: the waiter returned");
  const double took = secondsSince(start);
  const std::string reason = lastErrorMessage();
  EXPECT_LT(took, 0.3 + 1.0) << "waiters return within the timeout plus 1 s";
  EXPECT_TRUE(containsText(reason, "no progress for 300 ms")) << reason;
  EXPECT_TRUE(containsText(reason, "communicator 'test' (rank 0 of 2")) << reason;
  EXPECT_EQ(dependent.wait(1, kLongNs), Result::ErrorSemaphoreFailed) << "waits on a failed signal";
  CommunicatorState state;
  ASSERT_OK(comm(0).getState(&state));
  EXPECT_EQ(state, CommunicatorState::Failed);
  char text[512];
  ASSERT_OK(comm(0).getFailureReason(text, sizeof text));
  EXPECT_TRUE(containsText(text, "no progress")) << text;
  // Later collectives on it: refused at record time and at submit time.
  CommandBuffer cb;
  ASSERT_OK(ranks_[0].device->createCommandBuffer(&cb));
  commandBuffers_.emplace_back(cb);
  ASSERT_OK(cb.begin());
  EXPECT_EQ(cb.allReduce(comm(0), s.buf[0], 0, s.buf[0], 0, 4, ElementType::Float32, ReduceOp::Sum),
            Result::ErrorInvalidState);
  EXPECT_TRUE(containsText(lastErrorMessage(), "failed")) << lastErrorMessage();
  if (support_.canRevoke) {
    // The stuck operation was ended (ncclCommRevoke): the queue moved on.
    EXPECT_OK(after.wait(1, kLongNs));
    EXPECT_OK(ranks_[0].comm.waitIdle(kLongNs));
  }
  // The device stays usable: a copy on its other queue runs.
  // (Another buffer: nothing orders this queue's work after the stuck collective's use of its.)
  runAndWait(0, [&](CommandBuffer c) { return c.fillBuffer(other, 0, 16, 1); });
  (void)s.done[1];
}

// The peer never runs even its first collective: the library cannot finish enqueueing ours (it
// makes its connections then), and the timeout fails it just the same.
TEST_P(CollectiveFailure, AFirstCollectiveWhosePeerNeverComesFailsWithinTheTimeout) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2, 300 * kMs));
  Buffer other = deviceBuffer(0, 16);  // before the stall (see the test above)
  Stalled s = stallAllReduce(1, /*warm=*/false);
  const auto start = Clock::now();
  EXPECT_EQ(s.done[0].wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_LT(secondsSince(start), 0.3 + 1.0) << "waiters return within the timeout plus 1 s";
  EXPECT_TRUE(containsText(lastErrorMessage(), "no progress for 300 ms")) << lastErrorMessage();
  // On the emulated NCCL with its connection set-up in the call, the blocking call itself did
  // not return: the issuing thread gave up on the device's caller thread (collectives.cpp).
  const char* connect = std::getenv("BATON_FAKE_NCCL_CONNECT_IN_CALL");
  const char* mode = std::getenv("BATON_NCCL_BLOCKING_CALLS");
  if (connect && std::string(connect) == "1" && !(mode && std::string(mode) == "0")) {
    EXPECT_TRUE(containsText(lastErrorMessage(), "did not return from enqueueing"))
        << lastErrorMessage();
  }
  CommunicatorState state;
  ASSERT_OK(comm(0).getState(&state));
  EXPECT_EQ(state, CommunicatorState::Failed);
  // The device goes on; destroying the communicators (at the end) must not hang.
  // (Another buffer: nothing orders this queue's work after the stuck collective's use of its.)
  runAndWait(0, [&](CommandBuffer c) { return c.fillBuffer(other, 0, 16, 1); });
}

// The timeline trace: a collective is a slice inside its submission's on the queue's track (with
// what and how many bytes), a communicator failure an instant with its reason.
TEST_P(CollectiveFailure, TheTraceShowsCollectivesAndTheFailure) {
  // The process id in the name: meson runs this binary in several tests at once.
  const std::string path = ::testing::TempDir() + "collectives-trace-" + backendName(GetParam()) +
                           "-" + std::to_string(getpid()) + ".json";
  ASSERT_TRUE(baton::core::trace::start(path));
  ASSERT_NO_FATAL_FAILURE(makeRanks(2, 300 * kMs));
  Stalled s = stallAllReduce(1);  // a warm-up allReduce on both ranks, then the stall
  EXPECT_EQ(s.done[0].wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  ASSERT_TRUE(baton::core::trace::stop().ok());
  std::string json;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char chunk[65536];
    for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, f)) > 0;) json.append(chunk, n);
    std::fclose(f);
  }
  std::remove(path.c_str());
  EXPECT_NE(json.find("\"allReduce float32 x 96\""), std::string::npos) << "a collective slice";
  EXPECT_NE(json.find("\"cat\":\"collective\""), std::string::npos);
  EXPECT_NE(json.find("\"bytes\":384"), std::string::npos) << "96 float32";
  EXPECT_NE(json.find("\"communicator failed\""), std::string::npos) << "the failure's instant";
  EXPECT_NE(json.find("no progress for 300 ms"), std::string::npos) << "with its reason";
  // The device's caller thread: named, with its library calls as slices, and the issuing
  // thread's waits for it as spans (blocking calls only).
  const char* mode = std::getenv("BATON_NCCL_BLOCKING_CALLS");
  if (!(mode && std::string(mode) == "0")) {
    EXPECT_NE(json.find("\"baton-caller\""), std::string::npos) << "the caller thread's track";
    EXPECT_NE(json.find("\"library call #"), std::string::npos) << "a library call slice";
    EXPECT_NE(json.find("\"cat\":\"library_call\""), std::string::npos);
    EXPECT_NE(json.find("\"issue: wait for caller #"), std::string::npos) << "the hand-off's span";
  }
}

TEST_P(CollectiveFailure, ALibraryErrorFailsTheSignalsAtOnce) {
  const char* path =
      std::getenv(GetParam() == BackendKind::Hip ? "BATON_RCCL_LIBRARY" : "BATON_NCCL_LIBRARY");
  void* module = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  using Inject = int (*)(void*, int);
  auto inject =
      module ? reinterpret_cast<Inject>(dlsym(module, "batonFakeNcclInjectAsyncError")) : nullptr;
  if (!inject) GTEST_SKIP() << "needs the fake NCCL (batonFakeNcclInjectAsyncError) to inject";
  ASSERT_NO_FATAL_FAILURE(
      makeRanks(2, kLongNs));  // the timeout does not find it: the library's error does
  Stalled s = stallAllReduce(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // ncclRemoteError, as NCCL reports a peer that died over sockets; null: on every live
  // communicator (the test cannot see the library's handles). Rank 1 has nothing in flight.
  ASSERT_EQ(inject(nullptr, 6), 0);
  const auto start = Clock::now();
  EXPECT_EQ(s.done[0].wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_LT(secondsSince(start), 1.0);
  EXPECT_TRUE(containsText(lastErrorMessage(), "ncclRemoteError")) << lastErrorMessage();
}

// The library's fault sweep (as tests/faults does for the drivers): every NCCL call that a small
// workload makes (create a group of communicators, one all-reduce per rank, destroy) fails in
// turn, at its first and its middle occurrence, with ncclSystemError. Each run must return defined
// results, fail rather than hang (every wait returns within a bound), name the library in what
// fails, and leave no communicator of the emulated NCCL behind once the run's communicators are
// destroyed (a blocking communicator left to a call that had not returned is aborted when the
// call returns: given a moment). On the emulated NCCL only: it counts the live communicators.
TEST_P(CollectiveFailure, EveryLibraryCallFailsCleanly) {
  using Stats = FakeNcclStats;
  FakeNcclStatsFn stats = fakeNcclStats(GetParam());
  if (!stats) GTEST_SKIP() << "needs the fake NCCL (batonFakeNcclStats) to count communicators";
  ASSERT_NO_FATAL_FAILURE(makeRanks(2, 300 * kMs));
  for (Rank& r : ranks_) r.communicator.reset();  // the runs make their own
  std::vector<Buffer> bufs = {deviceBuffer(0, kN * 4), deviceBuffer(1, kN * 4)};
  auto live = [&] {
    Stats st{};
    stats(&st);
    return st.communicatorsLive;
  };
  const uint64_t baseline = live();
  constexpr uint64_t kBound = 10'000 * kMs;
  // One run; what went wrong goes to `problems`.
  auto run = [&](std::vector<std::string>* problems) {
    auto library = [&](const char* what, Result r) {
      if (r == Result::Success) return;
      const std::string m = lastErrorMessage();
      if (!containsText(m, "nccl") && !containsText(m, "communicator"))
        problems->push_back(std::string(what) + " failed without naming the library: " + m);
    };
    std::vector<Device> devices = {*ranks_[0].device, *ranks_[1].device};
    Communicator comms[2];
    CommunicatorGroupCreateInfo info;
    info.timeoutNs = 300 * kMs;
    info.debugName = "sweep";
    Result r = instance_->createCommunicators(devices, info, comms);
    library("createCommunicators", r);
    if (r != Result::Success) return;
    std::vector<Semaphore> done;
    for (size_t k = 0; k < 2; ++k) {
      done.push_back(semaphore("sweep done"));
      Result s = submit(k,
                        [&](CommandBuffer cb) {
                          return cb.allReduce(comms[k], bufs[k], 0, bufs[k], 0, kN,
                                              ElementType::Float32, ReduceOp::Sum);
                        },
                        {}, {{done[k], 1}});
      if (s != Result::Success) problems->push_back(std::string("submit: ") + lastErrorMessage());
    }
    for (size_t k = 0; k < 2; ++k) {
      Result w = done[k].wait(1, kBound);
      if (w == Result::Timeout)
        problems->push_back("HANG: rank " + std::to_string(k) + "'s all-reduce");
      else if (w != Result::Success && w != Result::ErrorSemaphoreFailed)
        problems->push_back("wait: " + std::string(resultName(w)));
      else
        library("the all-reduce", w);
    }
    for (Communicator& c : comms) library("Communicator::destroy", c.destroy());
  };
  baton::stream::DriverFaults* wrapper = baton::stream::collectiveFaultsForTests();
  ASSERT_NE(wrapper, nullptr) << "built without nccl.h";
  baton::stream::DriverFaults& faults = *wrapper;
  constexpr int ncclSystemError = 2;  // nccl.h's value (this test builds without the header)
  faults.clear();
  faults.record(true);
  std::vector<std::string> clean;
  run(&clean);
  faults.record(false);
  for (const std::string& p : clean) ADD_FAILURE() << "without faults: " << p;
  ASSERT_TRUE(clean.empty());
  ASSERT_EQ(live(), baseline) << "without faults: communicators of the emulated NCCL left behind";
  const std::vector<baton::stream::CallCount> calls = faults.counts();
  ASSERT_FALSE(calls.empty()) << "no library call went through the wrapper";
  uint64_t runs = 0, fired = 0;
  for (const baton::stream::CallCount& c : calls) {
    std::vector<uint32_t> occurrences = {0};
    if (c.calls > 2) occurrences.push_back(static_cast<uint32_t>(c.calls / 2));
    const std::string api = c.api;
    // Release entry points do their work and then report the error (their object is gone
    // either way), as the driver sweep injects them; so does ncclGroupEnd (a group the calling
    // thread opened must end: failed before the call, the library's group would stay open on
    // the device's caller thread for good).
    const bool release = api.find("Destroy") != std::string::npos ||
                         api.find("Abort") != std::string::npos ||
                         api.find("Finalize") != std::string::npos || api == "ncclGroupEnd";
    for (uint32_t at : occurrences) {
      const std::string label = api + " #" + std::to_string(at);
      faults.clear();
      ASSERT_TRUE(release ? faults.injectAfterCall(c.api, ncclSystemError, at, 1)
                          : faults.inject(c.api, ncclSystemError, at, 1))
          << label;
      std::vector<std::string> problems;
      run(&problems);
      fired += faults.fired();
      faults.clear();
      ++runs;
      for (const std::string& p : problems) ADD_FAILURE() << label << ": " << p;
      // A blocking communicator left to a call that had not returned goes when it returns.
      const auto until = Clock::now() + std::chrono::seconds(5);
      while (live() > baseline && Clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      EXPECT_EQ(live(), baseline) << label << ": communicators of the emulated NCCL left behind";
    }
  }
  std::printf("library fault sweep: %zu entry points, %llu runs, %llu faults fired\n", calls.size(),
              static_cast<unsigned long long>(runs), static_cast<unsigned long long>(fired));
  EXPECT_GT(fired, 0u);
}

TEST_P(CollectiveFailure, SurvivorsShrinkAndTheNextAllReduceIsCorrect) {
  const size_t n = std::min<size_t>(3, physicals_.size());
  for (bool revoke : {true, false}) {
    SCOPED_TRACE(revoke ? "with ncclCommRevoke" : "as without ncclCommRevoke (NCCL 2.28.3)");
    if (!support_.canShrink) GTEST_SKIP() << "the library has no ncclCommShrink";
    baton::stream::setRevokeDisabledForTests(!revoke);
    buffers_.clear();
    commandBuffers_.clear();
    semaphores_.clear();
    ranks_.clear();
    ASSERT_NO_FATAL_FAILURE(makeRanks(n, 300 * kMs));
    const size_t dead = n - 1;
    Stalled s = stallAllReduce(dead);
    Semaphore after = semaphore("after");
    ASSERT_OK(submit(0, [&](CommandBuffer cb) { return cb.fillBuffer(s.buf[0], 0, 16, 7); }, {},
                     {{after, 1}}));
    for (size_t r = 0; r < n; ++r) {
      if (r == dead) continue;
      EXPECT_EQ(s.done[r].wait(1, kLongNs), Result::ErrorSemaphoreFailed);
    }
    // Blocking calls (the default): the calls' own communicator is aborted at once, with any
    // library, and the queue moves on before the shrink. Non-blocking calls
    // (BATON_NCCL_BLOCKING_CALLS=0): revoked where the library can; else stuck until the shrink
    // ends the operation.
    const char* mode = std::getenv("BATON_NCCL_BLOCKING_CALLS");
    const bool blockingCalls = !(mode && std::string(mode) == "0");
    if (blockingCalls) {
      EXPECT_OK(after.wait(1, kLongNs)) << "the abort ended the stuck operation";
    } else if (!revoke) {
      EXPECT_EQ(after.wait(1, 100 * kMs), Result::Timeout);
    }
    std::vector<UniqueCommunicator> next(n);
    std::vector<std::thread> threads;
    std::vector<Result> results(n, Result::Success);
    std::vector<std::string> messages(n);
    const uint32_t excluded[] = {static_cast<uint32_t>(dead)};
    for (size_t r = 0; r < n; ++r)
      if (r != dead)
        threads.emplace_back([&, r] {
          results[r] = comm(r).shrink(excluded, next[r].put());
          messages[r] = lastErrorMessage();
        });
    for (std::thread& t : threads) t.join();
    for (size_t r = 0; r < n; ++r)
      ASSERT_EQ(results[r], Result::Success) << "rank " << r << ": " << messages[r];
    EXPECT_OK(after.wait(1, kLongNs)) << "the shrink ended the stuck operation";
    // The survivors' next allReduce.
    std::vector<Semaphore> done;
    std::vector<Buffer> src, dst;
    for (size_t r = 0; r + 1 < n; ++r) {
      src.push_back(deviceBuffer(r, kN * 4));
      dst.push_back(deviceBuffer(r, kN * 4));
      upload(r, src[r], encodeAll(ElementType::Float32, inputs(r, kN)));
      done.push_back(semaphore());
    }
    for (size_t r = 0; r + 1 < n; ++r)
      ASSERT_OK(submit(r,
                       [&](CommandBuffer cb) {
                         return cb.allReduce(*next[r], src[r], 0, dst[r], 0, kN,
                                             ElementType::Float32, ReduceOp::Sum);
                       },
                       {}, {{done[r], 1}}));
    for (size_t r = 0; r + 1 < n; ++r) {
      ASSERT_OK(done[r].wait(1, kLongNs));
      std::vector<uint8_t> got = download(r, dst[r], kN * 4);
      for (uint64_t i = 0; i < kN; ++i) {
        double want = 0;
        for (size_t q = 0; q + 1 < n; ++q) want += input(q, i);
        ASSERT_EQ(decode(ElementType::Float32, &got[i * 4]), want) << "rank " << r << " " << i;
      }
    }
    next.clear();
  }
  baton::stream::setRevokeDisabledForTests(false);
}

// ---- bad input
// ------------------------------------------------------------------------------------

TEST_P(CollectiveOps, BadInputGetsAClearResult) {
  ASSERT_NO_FATAL_FAILURE(makeRanks(2));
  Buffer small = deviceBuffer(0, 64), big = deviceBuffer(0, 4096), other = deviceBuffer(1, 4096);
  CommandBuffer cb;
  ASSERT_OK(ranks_[0].device->createCommandBuffer(&cb));
  commandBuffers_.emplace_back(cb);
  ASSERT_OK(cb.begin());
  const ElementType f = ElementType::Float32;
  EXPECT_EQ(cb.allReduce(comm(1), big, 0, big, 0, 4, f, ReduceOp::Sum),
            Result::ErrorDeviceMismatch);
  EXPECT_EQ(cb.allReduce(comm(0), other, 0, big, 0, 4, f, ReduceOp::Sum),
            Result::ErrorDeviceMismatch);
  EXPECT_EQ(cb.allReduce(comm(0), small, 0, big, 0, 32, f, ReduceOp::Sum),
            Result::ErrorInvalidArgument)
      << "64 bytes hold 16 floats";
  EXPECT_TRUE(containsText(lastErrorMessage(), "outside")) << lastErrorMessage();
  EXPECT_EQ(cb.allReduce(comm(0), big, 0, big, 0, 0, f, ReduceOp::Sum),
            Result::ErrorInvalidArgument);
  EXPECT_EQ(cb.allReduce(comm(0), big, 0, big, 0, 4, static_cast<ElementType>(99), ReduceOp::Sum),
            Result::ErrorInvalidArgument);
  EXPECT_EQ(cb.allReduce(comm(0), big, 0, big, 0, 4, f, static_cast<ReduceOp>(9)),
            Result::ErrorInvalidArgument);
  EXPECT_EQ(cb.allReduce(comm(0), big, 0, big, 4, 4, f, ReduceOp::Sum),
            Result::ErrorInvalidArgument)
      << "overlapping, not in place";
  EXPECT_EQ(cb.broadcast(comm(0), big, 0, big, 0, 4, f, 2), Result::ErrorInvalidArgument)
      << "root out of range";
  EXPECT_EQ(cb.send(comm(0), big, 0, 4, f, 5), Result::ErrorInvalidArgument);
  EXPECT_EQ(cb.allGather(comm(0), big, 0, big, 0, 1024, f), Result::ErrorInvalidArgument)
      << "dst must hold 2 x 1024 floats";
  EXPECT_EQ(cb.allGather(comm(0), big, 0, big, 0, 8, f), Result::Success)
      << "in place: rank 0's slot is at dst's start";
  EXPECT_EQ(cb.allToAll(comm(0), big, 0, big, 0, 8, f), Result::ErrorInvalidArgument)
      << "all-to-all is never in place";
  EXPECT_EQ(cb.allReduce(Communicator(), big, 0, big, 0, 4, f, ReduceOp::Sum),
            Result::ErrorInvalidHandle);
  ASSERT_OK(cb.end());

  // Creation: out-of-range rank, zero ranks, the same GPU twice, null outputs.
  CommunicatorCreateInfo ci;
  ci.rankCount = 2;
  ci.rank = 2;
  Communicator c;
  EXPECT_EQ(ranks_[0].device->createCommunicator(ci, &c), Result::ErrorInvalidArgument);
  ci.rankCount = 0;
  ci.rank = 0;
  EXPECT_EQ(ranks_[0].device->createCommunicator(ci, &c), Result::ErrorInvalidArgument);
  EXPECT_EQ(ranks_[0].device->createCommunicator(ci, nullptr), Result::ErrorInvalidArgument);
  UniqueDevice twin;
  DeviceCreateInfo di;
  ASSERT_OK(instance_->createDevice(physicals_[0], di, twin.put()));
  Communicator two[2];
  const Device same[] = {*ranks_[0].device, *twin};
  EXPECT_EQ(instance_->createCommunicators(same, CommunicatorGroupCreateInfo(), two),
            Result::ErrorInvalidArgument);
  EXPECT_TRUE(containsText(lastErrorMessage(), "same physical device")) << lastErrorMessage();
  const uint32_t self[] = {0};
  EXPECT_EQ(comm(0).shrink(self, &c), Result::ErrorInvalidArgument) << "a rank excludes itself";
  EXPECT_EQ(comm(0).split(-5, 0, &c), Result::ErrorInvalidArgument);
}

TEST(CollectivesOnTheHost, TheHostBackendHasNoCollectiveEngine) {
  MessageSink sink;
  UniqueInstance instance;
  ASSERT_OK(createInstance(sink.instanceInfo(backendBit(BackendKind::Host)), instance.put()));
  CollectiveSupport support;
  ASSERT_OK(instance->getCollectiveSupport(BackendKind::Host, &support));
  EXPECT_FALSE(support.available);
  EXPECT_TRUE(containsText(support.reason, "no collective engine")) << support.reason;
  CommunicatorId id;
  EXPECT_EQ(instance->createCommunicatorId(BackendKind::Host, &id), Result::ErrorNotSupported);
  uint32_t count = 1;
  PhysicalDevice host;
  ASSERT_NE(instance->enumeratePhysicalDevices(&count, &host), Result::ErrorInvalidArgument);
  UniqueDevice device;
  ASSERT_OK(instance->createDevice(host, DeviceCreateInfo(), device.put()));
  CommunicatorCreateInfo ci;
  ci.rankCount = 1;
  Communicator c;
  EXPECT_EQ(device->createCommunicator(ci, &c), Result::ErrorNotSupported);
  EXPECT_TRUE(containsText(lastErrorMessage(), "no collective engine")) << lastErrorMessage();
  EXPECT_EQ(instance->getCollectiveSupport(static_cast<BackendKind>(7), &support),
            Result::ErrorInvalidArgument);
}

// A GPU backend whose collective library is absent (HIP on Debian 12, which packages no RCCL; CUDA
// without NCCL): ErrorNotSupported with a sentence naming the library and the paths tried.
TEST(CollectivesWithoutALibrary, AGpuBackendWithoutItsLibraryReportsWhy) {
  MessageSink sink;
  UniqueInstance instance;
  ASSERT_OK(createInstance(sink.instanceInfo(), instance.put()));
  bool checked = false;
  for (BackendKind kind : {BackendKind::Cuda, BackendKind::Hip}) {
    BackendInfo infos[kBackendKindCount];
    uint32_t count = kBackendKindCount;
    ASSERT_OK(instance->enumerateBackends(&count, infos));
    CollectiveSupport support;
    ASSERT_OK(instance->getCollectiveSupport(kind, &support));
    if (!infos[static_cast<uint32_t>(kind)].available || support.available) continue;
    checked = true;
    const char* library = kind == BackendKind::Hip ? "RCCL" : "NCCL";
    EXPECT_TRUE(containsText(support.reason, library)) << support.reason;
    EXPECT_TRUE(containsText(support.reason, "tried")) << support.reason;
    CommunicatorId id;
    EXPECT_EQ(instance->createCommunicatorId(kind, &id), Result::ErrorNotSupported);
    EXPECT_TRUE(containsText(lastErrorMessage(), library)) << lastErrorMessage();
  }
  if (!checked) GTEST_SKIP() << "every available GPU backend here has its collective library";
}

INSTANTIATE_TEST_SUITE_P(, CollectiveOps, ::testing::Values(BackendKind::Cuda, BackendKind::Hip),
                         CollectiveParamName());
INSTANTIATE_TEST_SUITE_P(, CollectiveOneRank,
                         ::testing::Values(BackendKind::Cuda, BackendKind::Hip),
                         CollectiveParamName());
INSTANTIATE_TEST_SUITE_P(, CollectiveFailure,
                         ::testing::Values(BackendKind::Cuda, BackendKind::Hip),
                         CollectiveParamName());
INSTANTIATE_TEST_SUITE_P(, CollectiveTest, ::testing::Values(BackendKind::Cuda, BackendKind::Hip),
                         CollectiveParamName());

}  // namespace
}  // namespace baton_test
