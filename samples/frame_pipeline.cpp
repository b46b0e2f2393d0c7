// frame_pipeline: a producer process and a consumer process hand frames over through shared
// buffers, ordered by two shared timeline semaphores, with no host synchronisation per frame.
//
//   producer process                                 consumer process
//   queue: wait consumed >= f-3, fill slot f%3, ──produced=f──▶ queue: wait produced >= f,
//          signal produced = f                               copy slot f%3 out, signal consumed = f
//          ◀──────────────────────consumed=f─────────────────────┘
//
// The producer makes the semaphores and the three frame slots shareable, starts the consumer
// (this same program, with --consumer) and passes it their descriptors over a Unix socket
// (SCM_RIGHTS). Both submit every frame up front: each waits for a value the other process has
// not signalled yet (wait-before-signal across processes). The consumer checks every word of every
// frame on the host, from its own copies, after its queue is done. On CUDA and HIP devices with
// 64-bit stream memory operations the hand-overs happen GPU-side; elsewhere the host bridges them
// (docs/guide.md, 'Across processes'). If the producer dies, the consumer's waits fail instead of
// hanging, and the other way round.
//
// Usage: frame_pipeline [host|cuda|hip] [frames]   (default: the best backend present, 60 frames)
// Exit status 0 when the consumer saw every frame intact, 1 otherwise.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <baton/baton.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kSlots = 3;                 // frames in flight
constexpr uint64_t kFrameBytes = 1u << 20;     // 1 MiB per frame
constexpr uint64_t kWait = 20'000'000'000ull;  // 20 s: a hang becomes a failure

#define CHECK(call)                                                                    \
  do {                                                                                 \
    baton::Result r_ = (call);                                                         \
    if (r_ != baton::Result::Success) {                                                \
      std::fprintf(stderr, "%s: %s failed: %s\n", role, #call, baton::resultName(r_)); \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

const char* role = "producer";

// What the producer sends with the descriptors.
struct Handover {
  uint32_t frames;
  uint32_t backend;  // baton::BackendKind
};

// [send]
// Sends `count` descriptors and a small payload over a Unix socket: the receiving process gets
// its own descriptors of the same semaphores and buffers.
bool sendFds(int socket, const int* fds, size_t count, const Handover& payload) {
  char control[CMSG_SPACE(sizeof(int) * 8)] = {};
  iovec data{const_cast<Handover*>(&payload), sizeof payload};
  msghdr msg{};
  msg.msg_iov = &data;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(sizeof(int) * count);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * count);
  std::memcpy(CMSG_DATA(c), fds, sizeof(int) * count);
  return sendmsg(socket, &msg, 0) == static_cast<ssize_t>(sizeof payload);
}
// [send]

bool receiveFds(int socket, int* fds, size_t count, Handover* payload) {
  char control[CMSG_SPACE(sizeof(int) * 8)] = {};
  iovec data{payload, sizeof *payload};
  msghdr msg{};
  msg.msg_iov = &data;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (recvmsg(socket, &msg, MSG_CMSG_CLOEXEC) != static_cast<ssize_t>(sizeof *payload))
    return false;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int) * count))
    return false;
  std::memcpy(fds, CMSG_DATA(c), sizeof(int) * count);
  return true;
}

// The first device of `wanted` (or of the best backend present: CUDA, HIP, then the host).
baton::PhysicalDevice choose(baton::Instance instance, const char* wanted) {
  uint32_t count = 0;
  (void)instance.enumeratePhysicalDevices(&count, nullptr);
  std::vector<baton::PhysicalDevice> devices(count);
  (void)instance.enumeratePhysicalDevices(&count, devices.data());
  for (baton::BackendKind kind :
       {baton::BackendKind::Cuda, baton::BackendKind::Hip, baton::BackendKind::Host}) {
    if (wanted && std::strcmp(wanted, baton::backendName(kind)) != 0) continue;
    for (baton::PhysicalDevice d : devices) {
      baton::PhysicalDeviceProperties p;
      if (d.getProperties(&p) == baton::Result::Success && p.backend == kind) return d;
    }
  }
  return baton::PhysicalDevice();
}

baton::PhysicalDevice deviceOf(baton::Instance instance, baton::BackendKind backend) {
  return choose(instance, baton::backendName(backend));
}

int consumer(int socket) {
  role = "consumer";
  int fds[2 + kSlots];
  Handover h{};
  if (!receiveFds(socket, fds, 2 + kSlots, &h)) {
    std::fprintf(stderr, "consumer: no descriptors came\n");
    return 1;
  }
  baton::UniqueInstance instance;
  CHECK(baton::createInstance({}, instance.put()));
  baton::PhysicalDevice physical = deviceOf(*instance, static_cast<baton::BackendKind>(h.backend));
  baton::UniqueDevice device;
  CHECK(instance->createDevice(physical, {}, device.put()));
  baton::Queue queue;
  CHECK(device->getQueue(0, &queue));

  // [import]
  baton::UniqueSemaphore produced, consumed;
  CHECK(instance->importSemaphore({fds[0], "produced"}, produced.put()));
  CHECK(instance->importSemaphore({fds[1], "consumed"}, consumed.put()));
  baton::UniqueBuffer slots[kSlots];
  for (uint32_t i = 0; i < kSlots; ++i) {
    baton::BufferImportInfo info;
    info.fd = fds[2 + i];
    info.size = kFrameBytes;
    info.memory = baton::MemoryKind::Device;
    CHECK(device->importBuffer(info, slots[i].put()));
  }
  for (int fd : fds) close(fd);  // baton keeps what it needs
  // [import]

  // Each frame is copied out to a host-visible buffer of its own, checked once the queue is done.
  std::vector<baton::UniqueBuffer> copies(h.frames);
  for (uint32_t f = 1; f <= h.frames; ++f) {
    baton::BufferCreateInfo info;
    info.size = kFrameBytes;
    info.memory = baton::MemoryKind::HostPinned;
    CHECK(device->createBuffer(info, copies[f - 1].put()));
    baton::UniqueCommandBuffer cb;
    CHECK(device->createCommandBuffer({}, cb.put()));
    CHECK(cb->begin());
    CHECK(cb->copyBuffer(*slots[f % kSlots], 0, *copies[f - 1], 0, kFrameBytes));
    CHECK(cb->end());
    // Frame f is in its slot once produced reaches f; the slot is free again once consumed does.
    baton::SemaphoreValue wait{*produced, f}, signal{*consumed, f};
    baton::CommandBuffer cbs[] = {*cb};
    CHECK(queue.submit(baton::SubmitInfo{wait, cbs, signal}));
  }
  CHECK(consumed->wait(h.frames, kWait));
  uint32_t bad = 0;
  for (uint32_t f = 1; f <= h.frames; ++f) {
    void* p = nullptr;
    CHECK(copies[f - 1]->map(&p));
    const auto* words = static_cast<const uint32_t*>(p);
    for (uint64_t i = 0; i < kFrameBytes / 4; ++i)
      if (words[i] != f) {
        ++bad;
        break;
      }
  }
  std::printf("consumer: %u frames checked, %u damaged\n", h.frames, bad);
  return bad == 0 ? 0 : 1;
}

int producer(const char* self, const char* wanted, uint32_t frames) {
  baton::UniqueInstance instance;
  CHECK(baton::createInstance({}, instance.put()));
  baton::PhysicalDevice physical = choose(*instance, wanted);
  baton::PhysicalDeviceProperties props;
  CHECK(physical.getProperties(&props));
  std::printf("producer: %s (%s), %u frames of %llu KiB, %u in flight\n", props.name,
              baton::backendName(props.backend), frames,
              static_cast<unsigned long long>(kFrameBytes >> 10), kSlots);
  baton::UniqueDevice device;
  CHECK(instance->createDevice(physical, {}, device.put()));
  baton::Queue queue;
  CHECK(device->getQueue(0, &queue));

  // [share]
  baton::SemaphoreCreateInfo shareable;
  shareable.flags = baton::kSemaphoreShareable;
  baton::UniqueSemaphore produced, consumed;
  CHECK(instance->createSemaphore(shareable, produced.put()));
  CHECK(instance->createSemaphore(shareable, consumed.put()));
  baton::UniqueBuffer slots[kSlots];
  for (baton::UniqueBuffer& slot : slots) {
    baton::BufferCreateInfo info;
    info.size = kFrameBytes;
    info.memory = baton::MemoryKind::Device;
    info.flags = baton::kBufferShareable;
    CHECK(device->createBuffer(info, slot.put()));
  }
  int fds[2 + kSlots];
  CHECK(produced->exportFd(&fds[0]));
  CHECK(consumed->exportFd(&fds[1]));
  for (uint32_t i = 0; i < kSlots; ++i) CHECK(slots[i]->exportFd(&fds[2 + i]));
  // [share]

  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) != 0) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    // The consumer: this program again, with its end of the socket kept across exec.
    fcntl(sockets[1], F_SETFD, 0);
    std::string fd = std::to_string(sockets[1]);
    execl(self, self, "--consumer", fd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(sockets[1]);
  const Handover h{frames, static_cast<uint32_t>(props.backend)};
  if (!sendFds(sockets[0], fds, 2 + kSlots, h)) {
    std::fprintf(stderr, "producer: sending the descriptors failed\n");
    return 1;
  }
  for (int fd : fds) close(fd);
  close(sockets[0]);

  // [produce]
  for (uint32_t f = 1; f <= frames; ++f) {
    baton::UniqueCommandBuffer cb;
    CHECK(device->createCommandBuffer({}, cb.put()));
    CHECK(cb->begin());
    CHECK(cb->fillBuffer(*slots[f % kSlots], 0, kFrameBytes, f));  // frame f: every word is f
    CHECK(cb->end());
    // The slot is free once the consumer copied out the frame that used it before (f - 3).
    baton::SemaphoreValue wait{*consumed, f > kSlots ? f - kSlots : 0}, signal{*produced, f};
    baton::CommandBuffer cbs[] = {*cb};
    CHECK(queue.submit(baton::SubmitInfo{wait, cbs, signal}));
  }
  CHECK(consumed->wait(frames, kWait));  // the consumer is done with every frame
  // [produce]

  int status = 0;
  waitpid(pid, &status, 0);
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::printf("producer: consumer exited %s\n", ok ? "0: every frame intact" : "with a failure");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  if (argc == 3 && std::strcmp(argv[1], "--consumer") == 0) return consumer(std::atoi(argv[2]));
  const char* wanted = argc > 1 ? argv[1] : nullptr;
  const uint32_t frames = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 60;
  return producer("/proc/self/exe", wanted, frames);
}
