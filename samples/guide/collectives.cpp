// The guide's "Collectives" (docs/guide.md): one rank of a communicator group, as each process of
// a job runs it — the id handed over through a file, gradients all-reduced on a second queue after
// the compute that produced them, and a dead peer turned into a failed semaphore, then a shrink.
//   guide_collectives --rank R --ranks N --id-file PATH   one rank, in its own process (GPU n)
//   guide_collectives                                     every rank in this process, one thread
//                                                         each (what meson test runs, on the
//                                                         emulated driver's NCCL in CI)
// Exits 77 (a skip), saying why, without two CUDA devices and NCCL. The regions between the
// [name] lines are the guide's code blocks (tests/docs/check_examples.py).
#include <baton/baton.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"

using guide::expect;
using guide::ok;

namespace {

// [id-file]
// Rank 0 makes the group's id and publishes it (written whole, then renamed: a reader never sees
// half of it); the other ranks wait for it. Any channel works: MPI, a key-value store, a socket.
bool shareId(baton::Instance instance, uint32_t rank, const std::string& path,
             baton::CommunicatorId* id) {
  if (rank == 0) {
    if (!ok(instance.createCommunicatorId(baton::BackendKind::Cuda, id))) return false;
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) return false;
    const bool written = std::fwrite(id->bytes, sizeof id->bytes, 1, f) == 1;
    return std::fclose(f) == 0 && written && std::rename(tmp.c_str(), path.c_str()) == 0;
  }
  for (int tries = 0; tries < 6000; ++tries) {  // up to a minute
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const bool read = std::fread(id->bytes, sizeof id->bytes, 1, f) == 1;
      std::fclose(f);
      if (read) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}
// [id-file]

int runRank(baton::Instance instance, baton::PhysicalDevice gpu, uint32_t rank, uint32_t ranks,
            const std::string& idFile) {
  constexpr uint64_t kCount = 1 << 20;  // floats of gradients
  baton::UniqueDevice device;
  baton::Result r = instance.createDevice(gpu, {2, "trainer"}, device.put());
  baton::Queue compute, comm;
  if (ok(r)) r = device->getQueue(0, &compute);
  if (ok(r)) r = device->getQueue(1, &comm);
  baton::UniqueBuffer grads;
  if (ok(r)) r = device->createBuffer({kCount * 4, baton::MemoryKind::Device}, grads.put());
  baton::UniqueSemaphore computed, reduced;
  if (ok(r)) r = instance.createSemaphore({0, "computed"}, computed.put());
  if (ok(r)) r = instance.createSemaphore({0, "reduced"}, reduced.put());
  expect(ok(r), "device, queues, buffer and semaphores");

  // [communicator]
  baton::CommunicatorCreateInfo info;
  info.rank = rank;
  info.rankCount = ranks;
  info.timeoutNs = 5'000'000'000;  // creation, and no progress of a collective: 5 s
  info.debugName = "grads";
  baton::UniqueCommunicator grads_comm;
  if (ok(r) && !shareId(instance, rank, idFile, &info.id)) r = baton::Result::ErrorDriver;
  // Blocks until every rank arrived, at most the timeout.
  if (ok(r)) r = device->createCommunicator(info, grads_comm.put());
  // [communicator]
  expect(ok(r), "createCommunicator");
  if (!ok(r)) return 1;

  // [all-reduce]
  // The compute (a fill stands in for the backward pass) on one queue, the all-reduce of its
  // result on another: the semaphore orders them, here and across ranks, and the all-reduce may
  // be submitted first (wait-before-signal).
  baton::UniqueCommandBuffer reduce, backward;
  r = device->createCommandBuffer(reduce.put());
  if (ok(r)) r = reduce->begin();
  if (ok(r))
    r = reduce->allReduce(*grads_comm, *grads, 0, *grads, 0, kCount, baton::ElementType::Float32,
                          baton::ReduceOp::Avg);
  if (ok(r)) r = reduce->end();
  baton::SemaphoreValue gradsReady{*computed, 1}, gradsReduced{*reduced, 1};
  if (ok(r)) r = comm.submit(baton::SubmitInfo{gradsReady, *reduce, gradsReduced});

  if (ok(r)) r = device->createCommandBuffer(backward.put());
  if (ok(r)) r = backward->begin();
  if (ok(r)) r = backward->fillBuffer(*grads, 0, kCount * 4, 0x3f800000u + rank);  // ~1.0f
  if (ok(r)) r = backward->end();
  if (ok(r)) r = compute.submit(baton::SubmitInfo{{}, *backward, gradsReady});
  // [all-reduce]
  expect(ok(r), "record and submit");

  // [failure]
  // A peer that dies makes this wait return ErrorSemaphoreFailed (never a hang): at once when the
  // library reports it (sockets), after the timeout when it cannot (NVLink). The survivors then
  // shrink the group and go on; the dead ranks are the application's to know (its launcher).
  r = reduced->wait(1, baton::kWaitForever);
  if (r == baton::Result::ErrorSemaphoreFailed) {
    char why[512];
    (void)grads_comm->getFailureReason(why, sizeof why);
    std::printf("rank %u: %s\n", rank, why);  // "...: no progress for 5000 ms (...)"
    const uint32_t dead[] = {ranks - 1};      // say the launcher reported the last rank dead
    baton::UniqueCommunicator survivors;
    if (ok(grads_comm->shrink(dead, survivors.put()))) grads_comm = std::move(survivors);
  }
  // [failure]
  expect(r == baton::Result::Success, "the all-reduce completed");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t rank = 0, ranks = 0;
  std::string idFile = "guide-collectives.id";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rank")) rank = static_cast<uint32_t>(std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--ranks")) ranks = static_cast<uint32_t>(std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--id-file")) idFile = argv[i + 1];
  }
  baton::UniqueInstance instance;
  expect(ok(baton::createInstance({}, instance.put())), "createInstance");
  baton::CollectiveSupport support;
  expect(ok(instance->getCollectiveSupport(baton::BackendKind::Cuda, &support)),
         "getCollectiveSupport");
  std::vector<baton::PhysicalDevice> gpus;
  uint32_t count = 0;
  if (ok(instance->enumeratePhysicalDevices(&count, nullptr))) {
    std::vector<baton::PhysicalDevice> all(count);
    if (ok(instance->enumeratePhysicalDevices(&count, all.data())))
      for (baton::PhysicalDevice p : all) {
        baton::PhysicalDeviceProperties properties;
        if (ok(p.getProperties(&properties)) && properties.backend == baton::BackendKind::Cuda)
          gpus.push_back(p);
      }
  }
  const uint32_t wanted = ranks ? ranks : 2;
  if (!support.available || gpus.size() < (ranks ? rank + 1 : wanted)) {
    std::printf("skipped: %s\n",
                support.available ? "fewer CUDA devices than ranks" : support.reason);
    return 77;
  }
  if (ranks) return runRank(*instance, gpus[rank], rank, ranks, idFile) | guide::failures;
  // Every rank in this process, one thread each.
  std::remove(idFile.c_str());
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < wanted; ++r)
    threads.emplace_back([&, r] { (void)runRank(*instance, gpus[r], r, wanted, idFile); });
  for (std::thread& t : threads) t.join();
  std::remove(idFile.c_str());
  std::printf("%s\n", guide::failures ? "FAILED" : "ok");
  return guide::failures ? 1 : 0;
}
