// The Vulkan process of the descriptor-import suite (vulkan_fd_test.cpp starts it with fork and
// exec): it owns a Vulkan timeline semaphore, exports it as an OPAQUE_FD, sends the descriptor
// over a Unix socket (SCM_RIGHTS) and then signals and waits on its side as told. It does not use
// baton: it stands for a renderer that knows nothing of it.
//
//   baton-vkfd-peer <exporter> <socket>
//
// exporter: "vulkan", a real Vulkan device with VK_KHR_external_semaphore_fd (BATON_VULKAN_DEVICE
// picks it by name), under the validation layer when BATON_VULKAN_VALIDATION asks; or "fake", the
// fake CUDA driver's stand-in descriptor (fake_timeline_fd.hpp), whose signals and waits are
// stores and loads of a shared word.
//
// Messages are SOCK_SEQPACKET packets. First the peer sends "ready" with the descriptor attached,
// or "skip <reason>" (no usable exporter). Then, per command, one reply:
//   signal V        host signal of V                                      -> "ok"
//   wait V MS       host wait for V, up to MS milliseconds                -> "ok" | "timeout"
//   queue-signal V  a queue submission that signals V                     -> "ok"
//   relay W V       a queue submission that waits for W and signals V     -> "ok"
//   value           the counter's value                                   -> "value N"
//   export          a new descriptor of the same semaphore, attached      -> "fd"
//   exit            waits until its queue is idle, then exits             -> "bye errors=N"
// (N: unfiltered validation errors.) A failed call replies "error <what>".
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fake_timeline_fd.hpp"
#include "vulkan_context.hpp"

namespace {

bool sendMessage(int sock, const std::string& text, int fd = -1) {
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  return sendmsg(sock, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
}

// The side that owns the timeline.
class Exporter {
 public:
  virtual ~Exporter() = default;
  virtual int exportFd() = 0;
  virtual bool signal(uint64_t v) = 0;
  virtual bool wait(uint64_t v, uint64_t timeoutNs) = 0;
  virtual bool queueSignal(uint64_t v) = 0;
  virtual bool relay(uint64_t w, uint64_t v) = 0;
  virtual uint64_t value() = 0;
  virtual int finish() = 0;  // unfiltered validation errors
};

class VulkanExporter final : public Exporter {
 public:
  std::string init() {
    if (!vk_.ok()) return vk_.skip;
    if (!vk_.externalSemaphoreFd)
      return vk_.name + " has no VK_KHR_external_semaphore_fd (no OPAQUE_FD to export)";
    semaphore_ = vk_.createExportableTimeline(0);
    if (!semaphore_) return vk_.name + " cannot export a timeline semaphore as OPAQUE_FD";
    return "";
  }
  int exportFd() override { return vk_.exportFd(semaphore_); }
  bool signal(uint64_t v) override { return vk_.signal(semaphore_, v) == VK_SUCCESS; }
  bool wait(uint64_t v, uint64_t timeoutNs) override {
    return vk_.wait(semaphore_, v, timeoutNs) == VK_SUCCESS;
  }
  bool queueSignal(uint64_t v) override {
    return vk_.submit({}, VK_NULL_HANDLE, {{semaphore_, v}}) == VK_SUCCESS;
  }
  bool relay(uint64_t w, uint64_t v) override {
    return vk_.submit({{semaphore_, w}}, VK_NULL_HANDLE, {{semaphore_, v}}) == VK_SUCCESS;
  }
  uint64_t value() override { return vk_.value(semaphore_); }
  int finish() override {
    vkQueueWaitIdle(vk_.queue);
    vk_.destroy(semaphore_);
    return vk_.validation.errors();
  }

 private:
  baton::test::VulkanContext vk_;
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
};

class FakeExporter final : public Exporter {
 public:
  std::string init() {
    fd_ = fake_cuda::createTimelineFd(0);
    page_ = fd_ >= 0 ? fake_cuda::mapTimelineFd(fd_) : nullptr;
    return page_ ? "" : "could not make the fake driver's timeline descriptor";
  }
  ~FakeExporter() override {
    for (std::thread& t : relays_) t.join();
    if (page_) fake_cuda::unmapTimelineFd(page_);
    if (fd_ >= 0) close(fd_);
  }
  int exportFd() override { return fcntl(fd_, F_DUPFD_CLOEXEC, 0); }
  bool signal(uint64_t v) override {
    fake_cuda::signalTimeline(page_, v);
    return true;
  }
  bool wait(uint64_t v, uint64_t timeoutNs) override {
    return fake_cuda::waitTimeline(page_, v, timeoutNs);
  }
  bool queueSignal(uint64_t v) override { return signal(v); }
  // A "queue" of its own per relay: waits, then signals.
  bool relay(uint64_t w, uint64_t v) override {
    relays_.emplace_back([this, w, v] {
      if (fake_cuda::waitTimeline(page_, w, 20'000'000'000ull)) fake_cuda::signalTimeline(page_, v);
    });
    return true;
  }
  uint64_t value() override { return fake_cuda::timelineValue(page_); }
  int finish() override {
    for (std::thread& t : relays_) t.join();
    relays_.clear();
    return 0;
  }

 private:
  int fd_ = -1;
  fake_cuda::TimelineFdPage* page_ = nullptr;
  std::vector<std::thread> relays_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: baton-vkfd-peer vulkan|fake <socket>\n");
    return 2;
  }
  const std::string kind = argv[1];
  const int sock = std::atoi(argv[2]);
  std::unique_ptr<Exporter> exporter;
  std::string skip;
  if (kind == "vulkan") {
    auto v = std::make_unique<VulkanExporter>();
    skip = v->init();
    exporter = std::move(v);
  } else {
    auto f = std::make_unique<FakeExporter>();
    skip = f->init();
    exporter = std::move(f);
  }
  int fd = skip.empty() ? exporter->exportFd() : -1;
  if (skip.empty() && fd < 0) skip = "vkGetSemaphoreFdKHR failed";
  if (!skip.empty()) {
    sendMessage(sock, "skip " + skip);
    return 0;
  }
  sendMessage(sock, "ready", fd);
  close(fd);

  char buf[256];
  for (;;) {
    ssize_t n = recv(sock, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;  // the test went away
    buf[n] = '\0';
    char word[32] = {};
    unsigned long long a = 0, b = 0;
    std::sscanf(buf, "%31s %llu %llu", word, &a, &b);
    const std::string cmd = word;
    std::string reply = "ok";
    if (cmd == "signal") {
      if (!exporter->signal(a)) reply = "error vkSignalSemaphore";
    } else if (cmd == "wait") {
      reply = exporter->wait(a, b * 1'000'000ull) ? "ok" : "timeout";
    } else if (cmd == "queue-signal") {
      if (!exporter->queueSignal(a)) reply = "error vkQueueSubmit";
    } else if (cmd == "relay") {
      if (!exporter->relay(a, b)) reply = "error vkQueueSubmit";
    } else if (cmd == "value") {
      reply = "value " + std::to_string(exporter->value());
    } else if (cmd == "export") {
      int again = exporter->exportFd();
      if (again < 0) {
        reply = "error export";
      } else {
        sendMessage(sock, "fd", again);
        close(again);
        continue;
      }
    } else if (cmd == "exit") {
      int errors = exporter->finish();
      sendMessage(sock, "bye errors=" + std::to_string(errors));
      return 0;
    } else {
      reply = "error unknown command " + cmd;
    }
    sendMessage(sock, reply);
  }
}
