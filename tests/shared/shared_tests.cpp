// Semaphores shared across processes (docs/guide.md, 'Across processes'): every test runs once per
// backend and starts real other processes (baton-shared-peer, fork and exec, the descriptor
// inherited) that import the semaphore and play a part. Values must pass both ways, wait-before-
// signal must hold with either side submitted first, failures must reach every process, and a
// process that dies must fail its peers' waits within 100 ms instead of hanging them.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backend_fixture.hpp"
#include "shared_buffer_data.hpp"
#ifdef BATON_SHARED_FAKE_STATS
#include "fake_cuda.hpp"
#endif

namespace {

using namespace baton;
using namespace baton_test;

// A running peer process and what it printed.
struct Peer {
  pid_t pid = -1;
  int out = -1;  // its stdout
  std::string output;

  // Waits for it to exit (up to 20 s, then kills it); returns its exit status, or 128 + the
  // signal that ended it.
  int finish() {
    const auto start = Clock::now();
    int status = 0;
    for (;;) {
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid) break;
      if (secondsSince(start) > 20) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      drain(10);
    }
    drain(0);
    if (out >= 0) close(out);
    out = -1;
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Reads what it printed so far, waiting up to `ms` for the first bytes.
  void drain(int ms) {
    pollfd p{out, POLLIN, 0};
    while (out >= 0 && poll(&p, 1, ms) > 0) {
      char buf[512];
      ssize_t n = read(out, buf, sizeof buf);
      if (n <= 0) break;
      output.append(buf, static_cast<size_t>(n));
      ms = 0;
    }
  }
  // Waits until it printed `text` (up to 20 s).
  bool awaitOutput(const std::string& text) {
    const auto start = Clock::now();
    while (output.find(text) == std::string::npos) {
      if (secondsSince(start) > 20) return false;
      drain(10);
    }
    return true;
  }
};

const char* peerPath() {
  const char* p = std::getenv("BATON_SHARED_PEER");
  return p ? p : "./baton-shared-peer";
}

// Starts baton-shared-peer with `fd` (and `alsoInherited`) inherited, on `backend`, playing `part`
// with `args`.
Peer spawn(BackendKind backend, int fd, const std::string& part,
           const std::vector<std::string>& args = {}, const std::vector<int>& alsoInherited = {}) {
  std::vector<std::string> words = {peerPath(), backendName(backend), std::to_string(fd), part};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  int pipeFds[2];
  if (pipe2(pipeFds, O_CLOEXEC) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec.
    dup2(pipeFds[1], 1);
    fcntl(fd, F_SETFD, 0);  // inherited across exec
    for (int other : alsoInherited) fcntl(other, F_SETFD, 0);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(pipeFds[1]);
  Peer peer;
  peer.pid = pid;
  peer.out = pipeFds[0];
  return peer;
}

// Open descriptors of this process.
size_t openFds() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

#ifdef BATON_SHARED_FAKE_STATS
// A counter of the fake driver (BatonFakeCudaStats, from the module baton loaded for `backend`); -1
// where that is not the fake (the host backend, a real driver) or the fake is not built.
int64_t fakeCounter(BackendKind backend, uint64_t BatonFakeCudaStats::*counter) {
  if (backend == BackendKind::Host) return -1;
  return batonFakeCudaCounter(
      std::getenv(backend == BackendKind::Hip ? "BATON_HIP_DRIVER" : "BATON_CUDA_DRIVER"), counter);
}
#endif

// The fake driver's count of stream value waits that held a stream
// (BatonFakeCudaStats::valueWaitsBlocked); -1 without the fake.
int64_t fakeValueWaitsBlocked(BackendKind backend) {
#ifdef BATON_SHARED_FAKE_STATS
  return fakeCounter(backend, &BatonFakeCudaStats::valueWaitsBlocked);
#else
  (void)backend;
  return -1;
#endif
}

// The fake driver's allocations not yet freed (BatonFakeCudaStats::allocationsLive: cuMemAlloc
// and its kin, and the handles of cuMemCreate and cuMemImportFromShareableHandle); -1 without the
// fake.
int64_t fakeAllocationsLive(BackendKind backend) {
#ifdef BATON_SHARED_FAKE_STATS
  return fakeCounter(backend, &BatonFakeCudaStats::allocationsLive);
#else
  (void)backend;
  return -1;
#endif
}

std::string failureReason(Semaphore s) {
  char reason[1024] = {};
  EXPECT_OK(s.getFailureReason(reason, sizeof reason));
  return reason;
}

class SharedTest : public BackendTest {
 protected:
  UniqueSemaphore makeShared(uint64_t initialValue = 0, const char* name = "shared") {
    SemaphoreCreateInfo info;
    info.initialValue = initialValue;
    info.debugName = name;
    info.flags = kSemaphoreShareable;
    UniqueSemaphore s;
    EXPECT_OK(instance().createSemaphore(info, s.put()));
    return s;
  }
  // A new descriptor of `s` (closed by the test).
  int exportFd(Semaphore s) {
    int fd = -1;
    EXPECT_OK(s.exportFd(&fd));
    EXPECT_GE(fd, 0);
    return fd;
  }
  Peer spawnWith(Semaphore s, const std::string& part, const std::vector<std::string>& args = {}) {
    int fd = exportFd(s);
    Peer p = spawn(backend(), fd, part, args);
    close(fd);
    return p;
  }
};

TEST_P(SharedTest, AHostSignalInAnotherProcessWakesAHostWaitHere) {
  UniqueSemaphore s = makeShared();
  Peer peer = spawnWith(*s, "signal", {"5"});
  const auto start = Clock::now();
  ASSERT_OK(s->wait(5, kLongNs));
  EXPECT_LT(secondsSince(start), 10.0);
  uint64_t v = 0;
  ASSERT_OK(s->getValue(&v));
  EXPECT_EQ(v, 5u);
  EXPECT_EQ(peer.finish(), 0) << peer.output;
}

TEST_P(SharedTest, AHostSignalHereReachesAWaitInAnotherProcess) {
  UniqueSemaphore s = makeShared(1);
  Peer peer = spawnWith(*s, "wait", {"7"});
  usleep(20'000);
  ASSERT_OK(s->signal(7));
  EXPECT_EQ(peer.finish(), 0) << peer.output;
}

// The consumer's submission is made before the producer process even exists.
TEST_P(SharedTest, AQueueWaitsForAValueAnotherProcessSignalsLater) {
  UniqueSemaphore s = makeShared();
  UniqueSemaphore done = makeSemaphore(0, "done");
  ASSERT_OK(submit(queue(0), {{*s, 3}}, {}, {{*done, 1}}));
  EXPECT_EQ(done->wait(1, kShortNs), Result::Timeout);
  Peer peer = spawnWith(*s, "queue-signal", {"3"});
  ASSERT_OK(done->wait(1, kLongNs)) << peer.output;
  EXPECT_EQ(peer.finish(), 0) << peer.output;
  // On the fake driver: the wait was GPU-side (a stream value wait held the stream) unless the
  // driver was told to lack 64-bit stream memory operations (then the host bridged it).
  const int64_t blocked = fakeValueWaitsBlocked(backend());
  if (blocked >= 0) {
    if (std::getenv("BATON_FAKE_CUDA_NO_MEMOPS64"))
      EXPECT_EQ(blocked, 0) << "a device without 64-bit memory operations waits on the host";
    else
      EXPECT_GT(blocked, 0) << "the device waited on the host, not GPU-side";
  }
}

// The other way: the peer's queue waits (wait-before-signal) for a value this process signals
// from a queue.
TEST_P(SharedTest, AnotherProcessWaitsForAValueThisProcessSignalsFromAQueue) {
  UniqueSemaphore s = makeShared();
  Peer peer = spawnWith(*s, "relay", {"2", "4"});
  usleep(20'000);
  ASSERT_OK(submit(queue(0), {}, {}, {{*s, 2}}));
  ASSERT_OK(s->wait(4, kLongNs)) << peer.output;
  EXPECT_EQ(peer.finish(), 0) << peer.output;
}

// A -> B -> A, 50 times: this process's queue signals the odd values after waiting for the even
// ones, the peer's queue the even ones; every hop is a wait-before-signal on the other side.
TEST_P(SharedTest, AChainOfHandOversBetweenTwoProcessesKeepsItsOrder) {
  constexpr uint64_t kRounds = 50;
  UniqueSemaphore s = makeShared();
  Peer peer = spawnWith(*s, "relay-loop", {std::to_string(kRounds)});
  for (uint64_t k = 0; k < kRounds; ++k)
    ASSERT_OK(submit(queue(0), {{*s, 2 * k}}, {}, {{*s, 2 * k + 1}}));
  ASSERT_OK(s->wait(2 * kRounds, kLongNs)) << peer.output;
  uint64_t v = 0;
  ASSERT_OK(s->getValue(&v));
  EXPECT_EQ(v, 2 * kRounds);
  EXPECT_EQ(peer.finish(), 0) << peer.output;
}

TEST_P(SharedTest, HostWaitsMixSharedAndLocalSemaphores) {
  UniqueSemaphore s = makeShared();
  UniqueSemaphore local = makeSemaphore();
  // ANY: the local one comes first.
  ASSERT_OK(local->signal(1));
  ASSERT_OK(instance().waitSemaphores({{*s, 9}, {*local, 1}}, WaitMode::Any, kLongNs));
  // ALL: the shared one comes from the peer.
  Peer peer = spawnWith(*s, "signal", {"9"});
  ASSERT_OK(instance().waitSemaphores({{*s, 9}, {*local, 1}}, WaitMode::All, kLongNs));
  EXPECT_EQ(peer.finish(), 0) << peer.output;
  // ANY where only the shared one is reached.
  UniqueSemaphore never = makeSemaphore();
  ASSERT_OK(instance().waitSemaphores({{*never, 1}, {*s, 9}}, WaitMode::Any, kLongNs));
}

TEST_P(SharedTest, AFailureInAnotherProcessReachesEveryWaiterHere) {
  UniqueSemaphore s = makeShared();
  UniqueSemaphore done = makeSemaphore(0, "done");
  ASSERT_OK(submit(queue(0), {{*s, 1}}, {}, {{*done, 1}}));
  Peer peer = spawnWith(*s, "fail", {"the producer gave up"});
  EXPECT_EQ(s->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  const std::string reason = failureReason(*s);
  EXPECT_NE(reason.find("the producer gave up"), std::string::npos) << reason;
  EXPECT_NE(reason.find("process " + std::to_string(peer.pid)), std::string::npos) << reason;
  // The submission that waited fails its own signal, as an in-process failure would.
  EXPECT_EQ(done->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_EQ(peer.finish(), 0) << peer.output;
}

TEST_P(SharedTest, AFailureHereReachesAWaiterInAnotherProcess) {
  UniqueSemaphore s = makeShared();
  Peer peer = spawnWith(*s, "wait", {"3"});
  usleep(20'000);
  ASSERT_OK(s->fail("the consumer is gone"));
  EXPECT_EQ(peer.finish(), 3) << peer.output;
  EXPECT_NE(peer.output.find("the consumer is gone"), std::string::npos) << peer.output;
}

// SIGKILL of a producer with a signal submitted: the survivor's host wait and its queue's GPU-side
// wait fail within 100 ms of the death; its queue then runs new work. 20 trials.
TEST_P(SharedTest, AKilledProducerFailsItsPeersWaitsWithin100Ms) {
  const size_t fdsBefore = openFds();
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    UniqueSemaphore s = makeShared();
    UniqueSemaphore done = makeSemaphore(0, "done");
    ASSERT_OK(submit(queue(0), {{*s, 5}}, {}, {{*done, 1}}));
    std::atomic<uint64_t> failedAtNs{0};
    std::atomic<int> waitResult{0};
    std::thread waiter([&] {
      Result r = s->wait(5, kLongNs);
      failedAtNs = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
      waitResult = static_cast<int>(r);
    });
    Peer peer = spawnWith(*s, "die-signalling", {"5"});
    ASSERT_TRUE(peer.awaitOutput("peer: submitted, dying at ")) << peer.output;
    int status = 0;
    ASSERT_EQ(waitpid(peer.pid, &status, 0), peer.pid);
    EXPECT_EQ(status & 0x7f, SIGKILL);
    waiter.join();
    EXPECT_EQ(static_cast<Result>(waitResult.load()), Result::ErrorSemaphoreFailed);
    // steady_clock is CLOCK_MONOTONIC, the same in both processes.
    const long long diedAt =
        std::atoll(peer.output.c_str() + peer.output.find("dying at ") + std::strlen("dying at "));
    const double ms = static_cast<double>(static_cast<long long>(failedAtNs.load()) - diedAt) / 1e6;
    EXPECT_LT(ms, 100.0) << "the wait failed " << ms << " ms after the peer killed itself";
    std::printf("trial %d: the host wait failed %.1f ms after the peer's SIGKILL\n", trial, ms);
    const std::string reason = failureReason(*s);
    EXPECT_NE(reason.find("process " + std::to_string(peer.pid)), std::string::npos) << reason;
    EXPECT_NE(reason.find("value 5"), std::string::npos) << reason;
    EXPECT_EQ(done->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
    // The queue runs new work.
    UniqueSemaphore after = makeSemaphore(0, "after");
    ASSERT_OK(submit(queue(0), {}, {}, {{*after, 1}}));
    ASSERT_OK(after->wait(1, kLongNs));
    close(peer.out);
  }
  EXPECT_LE(openFds(), fdsBefore + 2) << "descriptors leaked over 20 trials";
}

// A peer that dies while one of its waits is pending (a promise that someone signals) fails the
// timeline; one that exits while nothing is pending does not.
TEST_P(SharedTest, APeerThatDiesWaitingFailsTheTimelineOneThatLeavesQuietlyDoesNot) {
  UniqueSemaphore s = makeShared();
  Peer quiet = spawnWith(*s, "hold");
  EXPECT_EQ(quiet.finish(), 0) << quiet.output;
  usleep(100'000);  // several of the watchdog's looks
  uint64_t v = 0;
  ASSERT_OK(s->getValue(&v)) << "not failed by the quiet exit";
  ASSERT_OK(s->signal(1));
  Peer waiting = spawnWith(*s, "die-waiting", {"8"});
  EXPECT_EQ(waiting.finish(), 128 + SIGKILL) << waiting.output;
  EXPECT_EQ(s->wait(8, kLongNs), Result::ErrorSemaphoreFailed);
  const std::string reason = failureReason(*s);
  EXPECT_NE(reason.find("waits for value 8"), std::string::npos) << reason;
}

TEST_P(SharedTest, ExportImportAndDestroy10000TimesLeavesDescriptorsFlat) {
  const size_t fdsBefore = openFds();
  for (int i = 0; i < 10000; ++i) {
    UniqueSemaphore s = makeShared(static_cast<uint64_t>(i));
    int fd = exportFd(*s);
    SemaphoreImportInfo info;
    info.fd = fd;
    UniqueSemaphore imported;
    ASSERT_OK(instance().importSemaphore(info, imported.put()));
    close(fd);
    uint64_t v = 0;
    ASSERT_OK(imported->getValue(&v));
    ASSERT_EQ(v, static_cast<uint64_t>(i));
    if (i % 1000 == 0) {
      ASSERT_OK(s->signal(i + 1));
      ASSERT_OK(imported->wait(i + 1, kLongNs));
    }
  }
  // The watchdog lets go of a destroyed semaphore's page at its next look (every 10 ms).
  usleep(100'000);
  EXPECT_LE(openFds(), fdsBefore + 2);
}

TEST_P(SharedTest, ADescriptorImportedTwiceIsOneTimeline) {
  UniqueSemaphore s = makeShared();
  int fd = exportFd(*s);
  SemaphoreImportInfo info;
  info.fd = fd;
  UniqueSemaphore a, b;
  ASSERT_OK(instance().importSemaphore(info, a.put()));
  ASSERT_OK(instance().importSemaphore(info, b.put()));
  close(fd);
  ASSERT_OK(a->signal(3));
  ASSERT_OK(b->wait(3, kLongNs));
  ASSERT_OK(s->wait(3, kLongNs));
  EXPECT_EQ(b->signal(2), Result::ErrorNonIncreasingValue);
}

TEST_P(SharedTest, BadDescriptorsAndValuesGetClearResults) {
  SemaphoreImportInfo info;
  UniqueSemaphore s;
  info.fd = -1;
  EXPECT_EQ(instance().importSemaphore(info, s.put()), Result::ErrorInvalidArgument);
  // A closed descriptor.
  UniqueSemaphore shared = makeShared();
  int fd = exportFd(*shared);
  close(fd);
  info.fd = fd;
  EXPECT_EQ(instance().importSemaphore(info, s.put()), Result::ErrorInvalidArgument);
  // Descriptors of other things: a pipe, a file, a memfd of the right size without seals.
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  info.fd = p[0];
  EXPECT_EQ(instance().importSemaphore(info, s.put()), Result::ErrorInvalidArgument);
  close(p[0]);
  close(p[1]);
  int file = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  info.fd = file;
  EXPECT_EQ(instance().importSemaphore(info, s.put()), Result::ErrorInvalidArgument);
  close(file);
  int memfd = memfd_create("not-a-semaphore", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_EQ(ftruncate(memfd, 4096), 0);
  info.fd = memfd;
  EXPECT_EQ(instance().importSemaphore(info, s.put()), Result::ErrorInvalidArgument);
  ASSERT_EQ(fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  EXPECT_EQ(instance().importSemaphore(info, s.put()), Result::ErrorInvalidArgument)
      << "a sealed page of zeros is not a semaphore's";
  close(memfd);
  EXPECT_FALSE(s);
  // Null outputs, a semaphore that is not shareable, unknown flags.
  info.fd = exportFd(*shared);
  EXPECT_EQ(instance().importSemaphore(info, nullptr), Result::ErrorInvalidArgument);
  close(info.fd);
  EXPECT_EQ(shared->exportFd(nullptr), Result::ErrorInvalidArgument);
  UniqueSemaphore local = makeSemaphore();
  int none = 7;
  EXPECT_EQ(local->exportFd(&none), Result::ErrorInvalidArgument);
  EXPECT_EQ(none, -1);
  SemaphoreCreateInfo unknown;
  unknown.flags = 0x80;
  EXPECT_EQ(instance().createSemaphore(unknown, s.put()), Result::ErrorInvalidArgument);
  // Values beyond what a shared timeline holds.
  SemaphoreCreateInfo high;
  high.flags = kSemaphoreShareable;
  high.initialValue = kSharedSemaphoreMaxValue + 1;
  EXPECT_EQ(instance().createSemaphore(high, s.put()), Result::ErrorInvalidArgument);
  EXPECT_EQ(shared->signal(kSharedSemaphoreMaxValue + 1), Result::ErrorInvalidArgument);
  EXPECT_EQ(submit(queue(0), {}, {}, {{*shared, kSharedSemaphoreMaxValue + 1}}),
            Result::ErrorInvalidArgument);
  ASSERT_OK(shared->signal(kSharedSemaphoreMaxValue));
  ASSERT_OK(shared->wait(kSharedSemaphoreMaxValue, kLongNs));
  // A destroyed handle.
  Semaphore gone = shared.release();
  ASSERT_OK(gone.destroy());
  EXPECT_EQ(gone.exportFd(&none), Result::ErrorInvalidHandle);
}

BATON_INSTANTIATE_FOR_BACKENDS(SharedTest);

// ---- buffers shared across processes ------------------------------------------------------------
// A shareable buffer's memory is mapped by the peer (Device::importBuffer of the inherited
// descriptor); data passes both ways, ordered by a shared semaphore whose waits are GPU-side where
// the device can. Each side writes with a fill and an update and checks on its queue with a copy
// into a pinned buffer (shared_buffer_data.hpp).

// An odd size (not a page, not a granule) that fills accept (a multiple of 4).
constexpr uint64_t kSharedBytes = 3 * 4096 + 100;

class SharedBufferTest : public SharedTest {
 protected:
  UniqueBuffer makeShareable(uint64_t size = kSharedBytes) {
    BufferCreateInfo info;
    info.size = size;
    info.flags = kBufferShareable;
    UniqueBuffer b;
    EXPECT_OK(device().createBuffer(info, b.put()));
    return b;
  }
  int exportBuffer(Buffer b) {
    int fd = -1;
    EXPECT_OK(b.exportFd(&fd));
    EXPECT_GE(fd, 0);
    return fd;
  }
  UniqueBuffer importBuffer(int fd, uint64_t size = kSharedBytes) {
    BufferImportInfo info;
    info.fd = fd;
    info.size = size;
    UniqueBuffer b;
    EXPECT_OK(device().importBuffer(info, b.put()));
    return b;
  }
  // A command buffer writing `pattern` into `b` (a fill, then an update).
  UniqueCommandBuffer writer(Buffer b, uint32_t pattern, uint64_t size = kSharedBytes) {
    return makeCommandBuffer([&](CommandBuffer cb) {
      const std::vector<uint8_t> tag = tagOf(pattern);
      EXPECT_OK(cb.fillBuffer(b, 0, size / 4 * 4, pattern));
      EXPECT_OK(cb.updateBuffer(b, 0, tag.size(), tag.data()));
    });
  }
  // Writes `pattern` into `b` on queue 0 and waits for it.
  void write(Buffer b, uint32_t pattern, uint64_t size = kSharedBytes) {
    UniqueCommandBuffer cb = writer(b, pattern, size);
    UniqueSemaphore done = makeSemaphore(0, "written");
    ASSERT_OK(submit(queue(0), {}, {*cb}, {{*done, 1}}));
    ASSERT_OK(done->wait(1, kLongNs));
  }
  // Where `b` differs from what `pattern` writes ("" when it does not), read on queue 0 behind
  // `waits`.
  std::string check(Buffer b, uint32_t pattern, std::vector<SemaphoreValue> waits = {},
                    uint64_t size = kSharedBytes) {
    UniqueBuffer local = makeBuffer(size);
    UniqueCommandBuffer copy = makeCommandBuffer(
        [&](CommandBuffer cb) { EXPECT_OK(cb.copyBuffer(b, 0, *local, 0, size)); });
    UniqueSemaphore copied = makeSemaphore(0, "copied");
    EXPECT_OK(submit(queue(0), waits, {*copy}, {{*copied, 1}}));
    if (Result r = copied->wait(1, kLongNs); r != Result::Success)
      return std::string("the copy's wait: ") + resultName(r) + ": " + lastErrorMessage();
    return checkBytes(map(*local), size, pattern);
  }
  Peer spawnBuffer(Semaphore s, Buffer b, const std::string& part,
                   const std::vector<std::string>& values, uint64_t size = kSharedBytes) {
    const int semFd = exportFd(s);
    const int bufFd = exportBuffer(b);
    std::vector<std::string> args = {std::to_string(bufFd), std::to_string(size)};
    args.insert(args.end(), values.begin(), values.end());
    Peer p = spawn(backend(), semFd, part, args, {bufFd});
    close(semFd);
    close(bufFd);
    return p;
  }
};

// The consumer's wait and copy are submitted before the producer process exists; the producer's
// fill and update reach this process's queue through the buffer, ordered by the shared semaphore.
TEST_P(SharedBufferTest, DataWrittenInAnotherProcessIsReadHereBehindAGpuSideWait) {
  UniqueSemaphore s = makeShared();
  UniqueBuffer shared = makeShareable();
  write(*shared, 0x11111111);  // what the producer overwrites
  UniqueBuffer local = makeBuffer(kSharedBytes);
  UniqueCommandBuffer copy = makeCommandBuffer(
      [&](CommandBuffer cb) { EXPECT_OK(cb.copyBuffer(*shared, 0, *local, 0, kSharedBytes)); });
  UniqueSemaphore done = makeSemaphore(0, "done");
  ASSERT_OK(submit(queue(0), {{*s, 1}}, {*copy}, {{*done, 1}}));
  EXPECT_EQ(done->wait(1, kShortNs), Result::Timeout);
  Peer peer = spawnBuffer(*s, *shared, "buffer-produce", {"2864434397", "1"});
  ASSERT_OK(done->wait(1, kLongNs)) << peer.output;
  EXPECT_EQ(checkBytes(map(*local), kSharedBytes, 2864434397u), "");
  EXPECT_EQ(peer.finish(), 0) << peer.output;
  const int64_t blocked = fakeValueWaitsBlocked(backend());
  if (blocked >= 0 && !std::getenv("BATON_FAKE_CUDA_NO_MEMOPS64")) {
    EXPECT_GT(blocked, 0) << "the device waited on the host, not GPU-side";
  }
}

// A -> B -> A: this process writes, the peer's queue waits, checks and writes anew, this
// process's queue waits for that and checks it.
TEST_P(SharedBufferTest, DataPassesToAnotherProcessAndBack) {
  UniqueSemaphore s = makeShared();
  UniqueBuffer shared = makeShareable();
  Peer peer = spawnBuffer(*s, *shared, "buffer-relay", {"1", "101", "202", "2"});
  usleep(20'000);
  UniqueCommandBuffer first = writer(*shared, 101);
  ASSERT_OK(submit(queue(0), {}, {*first}, {{*s, 1}}));
  EXPECT_EQ(check(*shared, 202, {{*s, 2}}), "") << peer.output;
  EXPECT_EQ(peer.finish(), 0) << peer.output;
  // Once more the other way round, with a second process: it sees this process's latest write.
  write(*shared, 303);
  Peer second = spawnBuffer(*s, *shared, "buffer-relay", {"2", "303", "0", "0"});
  EXPECT_EQ(second.finish(), 0) << second.output;
}

// The exporter destroys its buffer while the peer still maps the memory. CUDA and the host
// backend: the memory lives on in the peer (and is freed here at once); HIP: the IPC rule is
// enforced: the free is held back until the peer let go, and no new import is accepted.
TEST_P(SharedBufferTest, TheExporterDestroysItsBufferWhileAnotherProcessMapsIt) {
  UniqueSemaphore s = makeShared();
  const int64_t before = fakeAllocationsLive(backend());
  UniqueBuffer shared = makeShareable();
  write(*shared, 77);
  const int keptFd = exportBuffer(*shared);
  Peer peer = spawnBuffer(*s, *shared, "buffer-hold", {"77"});
  ASSERT_TRUE(peer.awaitOutput("peer: imported")) << peer.output;
  ASSERT_OK(shared.release().destroy());
  const bool ipc = backend() == BackendKind::Hip;
  usleep(50'000);  // several of the holders' checks
  if (before >= 0) {
    EXPECT_EQ(fakeAllocationsLive(backend()), before + (ipc ? 1 : 0))
        << (ipc ? "the exporter's IPC allocation was freed while another process mapped it"
                : "the exporter kept its allocation after destroying its buffer");
  }
  ASSERT_OK(s->signal(1));
  ASSERT_OK(s->wait(2, kLongNs)) << peer.output;  // the peer read 77 and wrote 78
  EXPECT_EQ(peer.finish(), 0) << peer.output;
  BufferImportInfo again;
  again.fd = keptFd;
  again.size = kSharedBytes;
  UniqueBuffer late;
  if (ipc) {
    EXPECT_EQ(device().importBuffer(again, late.put()), Result::ErrorInvalidArgument)
        << "an import after the exporter was destroyed";
    EXPECT_NE(std::string(lastErrorMessage()).find("exporting buffer was destroyed"),
              std::string::npos)
        << lastErrorMessage();
  } else {
    // The descriptor keeps the memory: it still holds what the peer wrote.
    ASSERT_OK(device().importBuffer(again, late.put()));
    EXPECT_EQ(check(*late, 78), "");
    late.reset();
  }
  close(keptFd);
  if (before >= 0) {
    const auto start = Clock::now();
    while (fakeAllocationsLive(backend()) != before && secondsSince(start) < 5) usleep(5'000);
    EXPECT_EQ(fakeAllocationsLive(backend()), before) << "the allocation was never freed";
  }
}

// An importer that dies without destroying its buffer does not hold the exporter's memory for ever
// (HIP: its holder slot is given back once its death is seen).
TEST_P(SharedBufferTest, AnImporterThatDiesDoesNotHoldTheMemoryBack) {
  UniqueSemaphore s = makeShared();
  const int64_t before = fakeAllocationsLive(backend());
  UniqueBuffer shared = makeShareable();
  Peer peer = spawnBuffer(*s, *shared, "buffer-hold", {"0"});
  ASSERT_TRUE(peer.awaitOutput("peer: imported")) << peer.output;
  kill(peer.pid, SIGKILL);
  EXPECT_EQ(peer.finish(), 128 + SIGKILL) << peer.output;
  ASSERT_OK(shared.release().destroy());
  if (before >= 0) {
    const auto start = Clock::now();
    while (fakeAllocationsLive(backend()) != before && secondsSince(start) < 5) usleep(5'000);
    EXPECT_EQ(fakeAllocationsLive(backend()), before) << "the dead importer held the memory back";
    EXPECT_LT(secondsSince(start), 1.0);
  }
}

// Export, import (here: the same process), use now and then, destroy: descriptors and the
// driver's allocations stay flat. Every 100th cycle data goes through both buffers, and the
// importer exports the memory again.
TEST_P(SharedBufferTest, ExportImportAndDestroy1000TimesLeavesDescriptorsAndAllocationsFlat) {
  const size_t fdsBefore = openFds();
  const int64_t allocationsBefore = fakeAllocationsLive(backend());
  for (int i = 0; i < 1000; ++i) {
    UniqueBuffer shared = makeShareable();
    int fd = exportBuffer(*shared);
    UniqueBuffer imported = importBuffer(fd);
    close(fd);
    ASSERT_TRUE(imported);
    if (i % 100 == 0) {
      SCOPED_TRACE("cycle " + std::to_string(i));
      write(*shared, static_cast<uint32_t>(i) + 5);
      ASSERT_EQ(check(*imported, static_cast<uint32_t>(i) + 5), "");
      int again = exportBuffer(*imported);
      UniqueBuffer second = importBuffer(again);
      close(again);
      write(*second, static_cast<uint32_t>(i) + 6);
      ASSERT_EQ(check(*shared, static_cast<uint32_t>(i) + 6), "");
    }
    // Half the time the exporter goes first (HIP: its free waits for the importer).
    if (i % 2) shared.reset();
  }
  const auto start = Clock::now();
  while (allocationsBefore >= 0 && fakeAllocationsLive(backend()) != allocationsBefore &&
         secondsSince(start) < 5)
    usleep(5'000);
  if (allocationsBefore >= 0) {
    EXPECT_EQ(fakeAllocationsLive(backend()), allocationsBefore);
  }
  // HIP: an exporter's envelope goes with its deferred free, a look of the watchdog (10 ms) and
  // the release thread after the last importer let go.
  while (openFds() > fdsBefore + 2 && secondsSince(start) < 5) usleep(5'000);
  EXPECT_LE(openFds(), fdsBefore + 2);
}

TEST_P(SharedBufferTest, BadBufferDescriptorsAndArgumentsGetClearResults) {
  UniqueBuffer shared = makeShareable();
  UniqueBuffer b;
  BufferImportInfo info;
  info.size = kSharedBytes;
  auto refused = [&](Result expected, const char* what, const char* words = nullptr) {
    EXPECT_EQ(device().importBuffer(info, b.put()), expected) << what;
    EXPECT_FALSE(b) << what;
    if (words) {
      EXPECT_NE(std::string(lastErrorMessage()).find(words), std::string::npos)
          << what << ": " << lastErrorMessage();
    }
  };
  info.fd = -1;
  refused(Result::ErrorInvalidArgument, "a negative descriptor");
  int closed = exportBuffer(*shared);
  close(closed);
  info.fd = closed;
  refused(Result::ErrorInvalidArgument, "a closed descriptor");
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  info.fd = p[0];
  refused(Result::ErrorInvalidArgument, "a pipe");
  close(p[0]);
  close(p[1]);
  UniqueSemaphore sem = makeShared();
  info.fd = exportFd(*sem);
  refused(Result::ErrorInvalidArgument, "a shared semaphore's descriptor", "semaphore");
  close(info.fd);
  int memfd = memfd_create("not-a-buffer", MFD_CLOEXEC);
  ASSERT_EQ(ftruncate(memfd, 1 << 21), 0);
  info.fd = memfd;
  refused(Result::ErrorInvalidArgument, "a memfd of zeros");
  close(memfd);

  const int fd = exportBuffer(*shared);
  info.fd = fd;
  // On CUDA the driver tells the size to its granularity (2 MiB on the fake, as an H100): a size
  // in another granule is refused; elsewhere every other size is.
  info.size = backend() == BackendKind::Cuda ? kSharedBytes + (4u << 20) : kSharedBytes + 4;
  refused(Result::ErrorInvalidArgument, "a larger size", "size");
  info.size = backend() == BackendKind::Cuda ? 0 : kSharedBytes - 4;
  if (info.size) refused(Result::ErrorInvalidArgument, "a smaller size", "size");
  {
    // A size granules smaller than the allocation (on CUDA: the driver maps one granule more).
    UniqueBuffer big = makeShareable(3u << 20);
    BufferImportInfo smaller = info;
    smaller.fd = exportBuffer(*big);
    smaller.size = 1u << 20;
    EXPECT_EQ(device().importBuffer(smaller, b.put()), Result::ErrorInvalidArgument);
    EXPECT_NE(std::string(lastErrorMessage()).find("size mismatch"), std::string::npos)
        << lastErrorMessage();
    EXPECT_FALSE(b);
    close(smaller.fd);
  }
  info.size = 0;
  refused(Result::ErrorInvalidArgument, "size 0");
  info.size = kSharedBytes;
  info.memory = MemoryKind::HostPinned;
  refused(Result::ErrorInvalidArgument, "another memory kind");
  info.memory = static_cast<MemoryKind>(7);
  refused(Result::ErrorInvalidArgument, "an unknown memory kind");
  info.memory = MemoryKind::Device;
  EXPECT_EQ(device().importBuffer(info, nullptr), Result::ErrorInvalidArgument);
  ASSERT_OK(device().importBuffer(info, b.put())) << "the right arguments";
  b.reset();

  // Another backend's device: the host backend's, which every build has, takes no GPU buffer,
  // and a GPU device takes no host-backend buffer. And another device of the same backend where
  // the machine has one (BATON_FAKE_CUDA_DEVICES=2): refused by its UUID or ordinal.
  uint32_t count = 0;
  ASSERT_OK(instance().enumeratePhysicalDevices(&count, nullptr));
  std::vector<PhysicalDevice> physicals(count);
  ASSERT_OK(instance().enumeratePhysicalDevices(&count, physicals.data()));
  PhysicalDevice other, sibling;
  for (PhysicalDevice pd : physicals) {
    PhysicalDeviceProperties props;
    ASSERT_OK(pd.getProperties(&props));
    if (props.backend == BackendKind::Host && backend() != BackendKind::Host) other = pd;
    if (props.backend == backend() && props.ordinal == 1) sibling = pd;
  }
  for (PhysicalDevice pd : {other, sibling}) {
    if (!pd) continue;
    UniqueDevice dev;
    ASSERT_OK(instance().createDevice(pd, DeviceCreateInfo(), dev.put()));
    // A CUDA buffer's descriptor is the driver's, which says nothing about itself: another
    // backend's device cannot tell it from any other file, and says what it may be.
    const bool cudaElsewhere = backend() == BackendKind::Cuda && pd == other;
    EXPECT_EQ(dev->importBuffer(info, b.put()),
              cudaElsewhere ? Result::ErrorInvalidArgument : Result::ErrorDeviceMismatch)
        << lastErrorMessage();
    if (cudaElsewhere) {
      EXPECT_NE(std::string(lastErrorMessage()).find("CUDA devices only"), std::string::npos)
          << lastErrorMessage();
    }
    EXPECT_FALSE(b);
    BufferCreateInfo theirsInfo;
    theirsInfo.size = kSharedBytes;
    theirsInfo.flags = kBufferShareable;
    UniqueBuffer theirs;
    ASSERT_OK(dev->createBuffer(theirsInfo, theirs.put()));
    BufferImportInfo back = info;
    back.fd = exportBuffer(*theirs);
    EXPECT_EQ(device().importBuffer(back, b.put()), Result::ErrorDeviceMismatch)
        << lastErrorMessage();
    close(back.fd);
  }
  close(fd);

  // Exports: a buffer that is not shareable, null output, a destroyed handle.
  UniqueBuffer plain = makeBuffer(64);
  int none = 7;
  EXPECT_EQ(plain->exportFd(&none), Result::ErrorInvalidArgument);
  EXPECT_EQ(none, -1);
  EXPECT_EQ(shared->exportFd(nullptr), Result::ErrorInvalidArgument);
  Buffer gone = shared.release();
  ASSERT_OK(gone.destroy());
  EXPECT_EQ(gone.exportFd(&none), Result::ErrorInvalidHandle);
  // Creation: unknown flags; shareable queue-ordered buffers.
  BufferCreateInfo unknown;
  unknown.size = 64;
  unknown.flags = 0x40;
  EXPECT_EQ(device().createBuffer(unknown, b.put()), Result::ErrorInvalidArgument);
  BufferCreateInfo alloca;
  alloca.size = 64;
  alloca.flags = kBufferShareable;
  EXPECT_EQ(queue(0).allocaBuffer({}, alloca, {}, b.put()), Result::ErrorInvalidArgument);
  EXPECT_FALSE(b);
}

BATON_INSTANTIATE_FOR_BACKENDS(SharedBufferTest);

}  // namespace
