// A Vulkan timeline known only by its descriptor (importVulkanSemaphoreFd; docs/guide.md, 'Vulkan
// interop'): another process (baton-vkfd-peer) owns the VkSemaphore, exports its OPAQUE_FD and
// sends it over a Unix socket; this process imports it into a CUDA device and the two hand values
// over both ways. Every test runs once per backend: on CUDA the import works, on the host backend
// and HIP it is refused with the reason (VulkanFdTest.ARefusalSaysWhy), and the other tests skip.
//
// The exporter is BATON_VKFD_EXPORTER: "vulkan" (the default; a Vulkan device with
// VK_KHR_external_semaphore_fd, the NVIDIA driver on the GPU test machine; Mesa's lavapipe has no
// such export, so the tests skip with that reason in CI) or "fake" (the fake CUDA driver's
// stand-in descriptor, fake_timeline_fd.hpp; only with the fake driver loaded).
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backend_fixture.hpp"
#include "baton/baton.h"
#include "baton/baton_vulkan.h"
#include "baton/vulkan.hpp"
#include "fake_timeline_fd.hpp"
#include "process_counts.hpp"
#ifdef BATON_VKFD_FAKE_STATS
#include "fake_cuda.hpp"
#endif

namespace {

using namespace baton;
using namespace baton_test;

constexpr uint64_t kLongNs = 20'000'000'000ull;

std::string exporterKind() {
  const char* e = std::getenv("BATON_VKFD_EXPORTER");
  return e && *e ? e : "vulkan";
}

using baton::test::openFds;

#ifdef BATON_VKFD_FAKE_STATS
// A counter of the fake CUDA driver baton loaded; -1 when the driver is not the fake.
int64_t fakeCounter(uint64_t BatonFakeCudaStats::*counter) {
  return batonFakeCudaCounter(std::getenv("BATON_CUDA_DRIVER"), counter);
}
#define FAKE_COUNTER(name) fakeCounter(&BatonFakeCudaStats::name)
#else
#define FAKE_COUNTER(name) int64_t(-1)
#endif

// The Vulkan process: started with one end of a SOCK_SEQPACKET pair inherited, spoken to with
// the commands of vulkan_fd_peer.cpp.
class VulkanPeer {
 public:
  ~VulkanPeer() { stop(); }

  // Starts it; returns "" and the descriptor it sent, or why it cannot export.
  std::string start(int* fd) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return "socketpair";
    const char* path = std::getenv("BATON_VKFD_PEER");
    std::string exe = path ? path : "./baton-vkfd-peer";
    std::string kind = exporterKind();
    std::string sock = std::to_string(pair[1]);
    char* argv[] = {exe.data(), kind.data(), sock.data(), nullptr};
    pid_ = fork();
    if (pid_ == 0) {
      fcntl(pair[1], F_SETFD, 0);  // inherited across exec
      execv(argv[0], argv);
      _exit(127);
    }
    close(pair[1]);
    sock_ = pair[0];
    std::string hello = receive(fd);
    if (hello == "ready" && *fd >= 0) return "";
    if (hello.rfind("skip ", 0) == 0) return hello.substr(5);
    return "the peer said '" + hello + "'";
  }

  // Sends a command and returns the reply ("" when the peer did not answer in 30 s).
  std::string command(const std::string& text, int* fd = nullptr) {
    if (send(sock_, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size()))
      return "";
    return receive(fd);
  }

  // Ends the peer ("exit": its queue drains); returns its reply.
  std::string stop() {
    if (pid_ <= 0) return "";
    std::string bye = command("exit");
    close(sock_);
    int status = 0;
    for (int i = 0; i < 3000 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (waitpid(pid_, &status, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    pid_ = -1;
    return bye;
  }

 private:
  std::string receive(int* fd) {
    if (fd) *fd = -1;
    pollfd p{sock_, POLLIN, 0};
    if (poll(&p, 1, 30000) <= 0) return "";
    char buf[512];
    iovec iov{buf, sizeof buf - 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = recvmsg(sock_, &msg, MSG_CMSG_CLOEXEC);
    if (n <= 0) return "";
    buf[n] = '\0';
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        int received = -1;
        std::memcpy(&received, CMSG_DATA(c), sizeof(int));
        if (fd)
          *fd = received;
        else
          close(received);
      }
    }
    return buf;
  }

  pid_t pid_ = -1;
  int sock_ = -1;
};

std::string cmd(const char* format, unsigned long long a, unsigned long long b = 0) {
  char text[128];
  std::snprintf(text, sizeof text, format, a, b);
  return text;
}

class VulkanFdTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    imports_ = (props_.capabilities & kCapabilityExternalSemaphoreTimelineFd) != 0;
  }
  void TearDown() override {
    if (started_) {
      std::string bye = peer_.stop();
      EXPECT_EQ(bye, "bye errors=0") << "the Vulkan process's validation errors (its stderr)";
    }
    BackendTest::TearDown();
  }

  // Skips unless this device imports Vulkan timelines and the peer can export one; then imports
  // the peer's timeline into `s`.
  void startAndImport(UniqueSemaphore* s) {
    if (!imports_)
      GTEST_SKIP() << backendName(backend())
                   << " cannot import Vulkan timelines (ARefusalSaysWhy checks the refusal)";
    if (exporterKind() == "fake" && FAKE_COUNTER(opsExecuted) < 0)
      GTEST_SKIP() << "BATON_VKFD_EXPORTER=fake needs the fake CUDA driver loaded";
    int fd = -1;
    std::string why = peer_.start(&fd);
    started_ = why.empty();
    if (!started_) GTEST_SKIP() << "the Vulkan process cannot export a timeline: " << why;
    VulkanSemaphoreFdImportInfo info;
    info.fd = fd;
    info.debugName = "from-vulkan";
    fdsBeforeImport_ = openFds();
    liveBeforeImport_ = FAKE_COUNTER(externalSemaphoresLive);
    ASSERT_OK(importVulkanSemaphoreFd(device(), info, s->put())) << sink_.dump();
  }

  std::string peerValue() { return peer_.command("value"); }

  VulkanPeer peer_;
  size_t fdsBeforeImport_ = 0;     // with the received descriptor open
  int64_t liveBeforeImport_ = -1;  // the fake driver's imports (-1: not the fake)
  bool started_ = false;
  bool imports_ = false;
};

TEST_P(VulkanFdTest, AHostSignalInTheVulkanProcessWakesAHostWaitHere) {
  UniqueSemaphore s;
  startAndImport(&s);
  if (IsSkipped() || HasFatalFailure()) return;
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(peer_.command("signal 1"), "ok");
  });
  EXPECT_OK(s->wait(1, kLongNs));
  later.join();
  uint64_t v = 0;
  EXPECT_OK(s->getValue(&v));
  EXPECT_GE(v, 1u);
  VulkanInteropInfo info;
  ASSERT_OK(getVulkanSemaphoreInterop(*s, &info));
  EXPECT_EQ(info.mode, InteropMode::Native);
  EXPECT_EQ(info.device, VK_NULL_HANDLE);
  EXPECT_TRUE(containsText(info.reason, "OPAQUE_FD")) << info.reason;
}

TEST_P(VulkanFdTest, AQueueHereWaitsGpuSideForAValueTheVulkanProcessSignalsLater) {
  UniqueSemaphore s;
  startAndImport(&s);
  if (IsSkipped() || HasFatalFailure()) return;
  UniqueSemaphore after = makeSemaphore(0, "after");
  const int64_t blockedBefore = FAKE_COUNTER(externalWaitsBlocked);
  // Submitted first: the wait goes into the stream at once, GPU-side.
  ASSERT_OK(submit(queue(0), {{*s, 2}}, {}, {{*after, 1}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  uint64_t v = 0;
  EXPECT_OK(after->getValue(&v));
  EXPECT_EQ(v, 0u) << "the queue ran before the Vulkan process signalled";
  EXPECT_EQ(peer_.command("signal 2"), "ok");
  EXPECT_OK(after->wait(1, kLongNs));
  if (blockedBefore >= 0) {
    EXPECT_GT(FAKE_COUNTER(externalWaitsBlocked), blockedBefore)
        << "the wait was not made GPU-side (the driver's stream never waited)";
  }
}

TEST_P(VulkanFdTest, AHostSignalHereReachesTheVulkanProcess) {
  UniqueSemaphore s;
  startAndImport(&s);
  if (IsSkipped() || HasFatalFailure()) return;
  EXPECT_OK(s->signal(3));
  EXPECT_EQ(peer_.command("wait 3 10000"), "ok");
  EXPECT_EQ(peerValue(), "value 3");
  // A value baton signals is never passed on again, nor one below it.
  EXPECT_OK(s->signal(5));
  EXPECT_EQ(peer_.command("wait 5 10000"), "ok");
}

TEST_P(VulkanFdTest, AQueueSignalHereReachesTheVulkanProcessGpuSide) {
  UniqueSemaphore s;
  startAndImport(&s);
  if (IsSkipped() || HasFatalFailure()) return;
  UniqueSemaphore gate = makeSemaphore(0, "gate");
  // The queue signals 4 behind a local gate; the Vulkan process waits first.
  ASSERT_OK(submit(queue(0), {{*gate, 1}}, {}, {{*s, 4}}));
  EXPECT_EQ(peer_.command("wait 4 100"), "timeout");
  EXPECT_OK(gate->signal(1));
  EXPECT_EQ(peer_.command("wait 4 10000"), "ok");
  EXPECT_OK(s->wait(4, kLongNs));
}

TEST_P(VulkanFdTest, AChainOfHandOversBetweenBatonAndVulkanKeepsItsOrder) {
  UniqueSemaphore s;
  startAndImport(&s);
  if (IsSkipped() || HasFatalFailure()) return;
  constexpr uint64_t kRounds = 20;
  // Vulkan relays odd -> even on its queue; baton's queue relays even -> odd. Both sides submit
  // everything before anything is signalled; the host starts the chain.
  for (uint64_t k = 0; k < kRounds; ++k)
    ASSERT_EQ(peer_.command(cmd("relay %llu %llu", 2 * k + 1, 2 * k + 2)), "ok");
  for (uint64_t k = 1; k < kRounds; ++k)
    ASSERT_OK(submit(queue(0), {{*s, 2 * k}}, {}, {{*s, 2 * k + 1}}));
  EXPECT_OK(s->signal(1));
  EXPECT_OK(s->wait(2 * kRounds, kLongNs));
  EXPECT_EQ(peer_.command(cmd("wait %llu 10000", 2 * kRounds)), "ok");
}

TEST_P(VulkanFdTest, QueuesOfOtherDevicesWaitThroughTheImportingDevice) {
  UniqueSemaphore s;
  startAndImport(&s);
  if (IsSkipped() || HasFatalFailure()) return;
  // The host backend's device cannot see the Vulkan timeline: its queue is held until the value
  // is observed through the CUDA device.
  uint32_t count = 0;
  ASSERT_OK(instance().enumeratePhysicalDevices(&count, nullptr));
  std::vector<PhysicalDevice> physicals(count);
  ASSERT_OK(instance().enumeratePhysicalDevices(&count, physicals.data()));
  PhysicalDevice hostPhysical;
  for (PhysicalDevice p : physicals) {
    PhysicalDeviceProperties props;
    ASSERT_OK(p.getProperties(&props));
    if (props.backend == BackendKind::Host) hostPhysical = p;
  }
  if (!hostPhysical) GTEST_SKIP() << "no host backend device in this instance";
  UniqueDevice hostDevice;
  ASSERT_OK(instance().createDevice(hostPhysical, DeviceCreateInfo(), hostDevice.put()));
  Queue hostQueue;
  ASSERT_OK(hostDevice->getQueue(0, &hostQueue));
  UniqueSemaphore after = makeSemaphore(0, "after");
  ASSERT_OK(submit(hostQueue, {{*s, 6}}, {}, {{*after, 1}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  uint64_t v = 0;
  EXPECT_OK(after->getValue(&v));
  EXPECT_EQ(v, 0u);
  EXPECT_EQ(peer_.command("queue-signal 6"), "ok");
  EXPECT_OK(after->wait(1, kLongNs)) << sink_.dump();
  EXPECT_OK(hostDevice->waitIdle(kLongNs));
}

TEST_P(VulkanFdTest, ALowerValueIsNotHeldUpBehindAPendingWatchForAHigherOne) {
  UniqueSemaphore s;
  startAndImport(&s);
  if (IsSkipped() || HasFatalFailure()) return;
  // A host wait for 10 (which comes only at the end) starts a watch for 10; then one for 7.
  EXPECT_EQ(s->wait(10, 100'000'000ull), Result::Timeout);
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(peer_.command("signal 7"), "ok");
  });
  const auto start = Clock::now();
  EXPECT_OK(s->wait(7, kLongNs));
  later.join();
  EXPECT_LT(secondsSince(start), 5.0);
  uint64_t v = 0;
  EXPECT_OK(s->getValue(&v));
  EXPECT_EQ(v, 7u) << "baton's value is what it learnt, a lower bound of Vulkan's";
  // Destroyed with the watch for 10 pending: no hang; the import lives on until 10 comes.
  EXPECT_OK(s.release().destroy());
  if (liveBeforeImport_ >= 0) {
    EXPECT_EQ(FAKE_COUNTER(externalSemaphoresLive), liveBeforeImport_ + 1)
        << "the driver's import went while a watch was pending on it";
  }
  EXPECT_EQ(peer_.command("signal 10"), "ok");
  // The watch ends and the import goes: descriptors back to what they were before the import
  // (which closed the received one), and the driver's import destroyed.
  size_t fds = 0;
  for (int i = 0; i < 500 && (fds = openFds()) > fdsBeforeImport_ - 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_LE(fds, fdsBeforeImport_ - 1) << "the import's descriptor was not released";
  if (liveBeforeImport_ >= 0) {
    for (int i = 0; i < 500 && FAKE_COUNTER(externalSemaphoresLive) > liveBeforeImport_; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(FAKE_COUNTER(externalSemaphoresLive), liveBeforeImport_);
    EXPECT_EQ(FAKE_COUNTER(externalSemaphoresDestroyedInUse), 0);
  }
}

TEST_P(VulkanFdTest, AFailureHereStopsForwardingAndFailsWaitersHere) {
  UniqueSemaphore s;
  startAndImport(&s);
  if (IsSkipped() || HasFatalFailure()) return;
  EXPECT_OK(s->signal(1));
  EXPECT_EQ(peer_.command("wait 1 10000"), "ok");
  EXPECT_OK(s->fail("the producer crashed"));
  EXPECT_EQ(s->wait(2, kLongNs), Result::ErrorSemaphoreFailed);
  EXPECT_TRUE(sink_.has(MessageSeverity::Warning, "no longer signals its Vulkan timeline"))
      << sink_.dump();
  // A submission waiting for it fails its own signals.
  UniqueSemaphore after = makeSemaphore(0, "after");
  Result r = submit(queue(0), {{*s, 2}}, {}, {{*after, 1}});
  if (r == Result::Success) {
    EXPECT_EQ(after->wait(1, kLongNs), Result::ErrorSemaphoreFailed);
  } else {
    EXPECT_EQ(r, Result::ErrorSemaphoreFailed);
  }
  EXPECT_EQ(peerValue(), "value 1") << "baton passed a value on after the failure";
}

TEST_P(VulkanFdTest, ImportAndDestroy1000TimesLeavesDescriptorsFlat) {
  UniqueSemaphore first;
  startAndImport(&first);
  if (IsSkipped() || HasFatalFailure()) return;
  EXPECT_OK(first->signal(1));
  first.reset();
  const size_t fdsBefore = openFds();
  const int64_t liveBefore = FAKE_COUNTER(externalSemaphoresLive);
  for (int i = 0; i < 1000; ++i) {
    int fd = -1;
    ASSERT_EQ(peer_.command("export", &fd), "fd");
    ASSERT_GE(fd, 0);
    VulkanSemaphoreFdImportInfo info;
    info.fd = fd;
    info.initialValue = 1;
    UniqueSemaphore s;
    ASSERT_OK(importVulkanSemaphoreFd(device(), info, s.put())) << "cycle " << i;
    if (i % 100 == 0) {  // used, now and then: a queue signal and a host wait
      ASSERT_OK(submit(queue(0), {}, {}, {{*s, 2 + static_cast<uint64_t>(i)}}));
      ASSERT_OK(s->wait(2 + static_cast<uint64_t>(i), kLongNs));
    }
  }
  EXPECT_OK(device().waitIdle(kLongNs));
  size_t fds = openFds();
  for (int i = 0; i < 200 && fds > fdsBefore; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    fds = openFds();
  }
  EXPECT_LE(fds, fdsBefore);
  if (liveBefore >= 0) {
    EXPECT_EQ(FAKE_COUNTER(externalSemaphoresLive), liveBefore);
  }
}

TEST_P(VulkanFdTest, ARefusalSaysWhy) {
  // Bad descriptors first, on every backend: checked before the device's abilities.
  UniqueSemaphore s;
  VulkanSemaphoreFdImportInfo info;
  EXPECT_EQ(importVulkanSemaphoreFd(device(), info, s.put()), Result::ErrorInvalidArgument);
  EXPECT_TRUE(containsText(lastError(), "fd is -1")) << lastError();
  int pipeFds[2];
  ASSERT_EQ(pipe2(pipeFds, O_CLOEXEC), 0);
  close(pipeFds[1]);
  info.fd = pipeFds[1];  // closed
  EXPECT_EQ(importVulkanSemaphoreFd(device(), info, s.put()), Result::ErrorInvalidArgument);
  EXPECT_TRUE(containsText(lastError(), "not an open file descriptor")) << lastError();
  info.fd = pipeFds[0];
  EXPECT_EQ(importVulkanSemaphoreFd(device(), info, nullptr), Result::ErrorInvalidArgument);
  EXPECT_EQ(importVulkanSemaphoreFd(Device(), info, s.put()), Result::ErrorInvalidHandle);
  // A descriptor of something else (a pipe): the driver refuses it, and it stays the caller's.
  Result r = importVulkanSemaphoreFd(device(), info, s.put());
  if (imports_) {
    EXPECT_EQ(r, Result::ErrorInvalidArgument) << lastError();
    EXPECT_TRUE(containsText(lastError(), "not an OPAQUE_FD of a timeline semaphore"))
        << lastError();
    // The refusal is the argument's, not a fault of the device: it still runs work.
    UniqueSemaphore done = makeSemaphore(0, "done");
    ASSERT_OK(submit(queue(0), {}, {}, {{*done, 1}}));
    EXPECT_OK(done->wait(1, kLongNs));
  } else {
    EXPECT_EQ(r, Result::ErrorNotSupported);
    EXPECT_TRUE(containsText(lastError(), hostBackend() ? "host backend" : "no timeline"))
        << lastError();
  }
  EXPECT_FALSE(s);
  EXPECT_NE(fcntl(pipeFds[0], F_GETFD), -1) << "a failed import closed the caller's descriptor";
  close(pipeFds[0]);
  // The C entry point says the same.
  baton_vulkan_semaphore_fd_import_info cInfo = BATON_VULKAN_SEMAPHORE_FD_IMPORT_INFO_INIT;
  baton_semaphore cs = BATON_NULL_HANDLE;
  EXPECT_EQ(
      baton_import_vulkan_semaphore_fd(reinterpret_cast<baton_device>(device().raw()), &cInfo, &cs),
      BATON_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(baton_import_vulkan_semaphore_fd(reinterpret_cast<baton_device>(device().raw()),
                                             nullptr, &cs),
            BATON_ERROR_INVALID_ARGUMENT);
  // With the fake driver, its own descriptor imports (and through C).
  if (imports_ && FAKE_COUNTER(opsExecuted) >= 0) {
    cInfo.fd = fake_cuda::createTimelineFd(0);
    ASSERT_GE(cInfo.fd, 0);
    ASSERT_EQ(baton_import_vulkan_semaphore_fd(reinterpret_cast<baton_device>(device().raw()),
                                               &cInfo, &cs),
              BATON_SUCCESS)
        << lastError();
    EXPECT_EQ(baton_semaphore_destroy(cs), BATON_SUCCESS);
  }
}

BATON_INSTANTIATE_FOR_BACKENDS(VulkanFdTest);

}  // namespace
