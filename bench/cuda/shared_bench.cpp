// shared_bench: semaphores shared across processes (kSemaphoreShareable, Semaphore::exportFd,
// Instance::importSemaphore) against what an application would write by hand, with two real
// processes on one device, in the same run. The binary starts itself again as its peer
// (`--peer FD`, on the same backend and device); the two talk over a Unix socket pair
// (SOCK_SEQPACKET), over which every descriptor (a semaphore's, a memfd page's) travels with
// SCM_RIGHTS. Raw calls go through baton's symbol tables (raw_driver.hpp), as in cuda_bench.
//
//   gpu     GPU-side ping-pong on one shared timeline: this process's queue waits for 2k+1 and
//           signals 2k+2, the peer's waits for 2k+2 and signals 2k+3, k = 0..N-1. Each side
//           submits its first `--window` rounds, then the host opens the gate (value 1) and each
//           side submits the rest while the GPU runs; the clock stops when this process sees
//           2N+1 (baton: a host wait; raw: a spin on the word). No host wait inside the loop on
//           either side. Per hand-over: the total / 2N (the gate's wake and the last read are
//           spread over the 2N hand-overs). Baselines:
//           (a) raw 64-bit stream memory operations on a memfd page registered in both processes
//               (cuMemHostRegister PORTABLE | DEVICEMAP), the same wait + write pairs and gate: the
//               floor of baton's GPU-side design (target: baton <= 1.2x);
//           (b) CUDA IPC events (CU_EVENT_INTERPROCESS), the design without a shared timeline: a
//               binary event says nothing about which record it waits for, so each hand-over is a
//               record, a message over the socket that the record was made, and the other side's
//               cuStreamWaitEvent (target: baton below it).
//           Each repeat gives one figure per side; the table gives the median over the repeats
//           and their p10/p90.
//   host    host wake across processes: this process signals 2k+1 and waits for 2k+2, the peer
//           waits for 2k+1 and signals 2k+2. Per hand-over: each round trip / 2; median, p10 and
//           p90 over every round trip of every repeat (the first tenth of each repeat dropped).
//           Against: the same between two threads of this process on a local semaphore (baton),
//           and a futex ping-pong on a shared memfd page (FUTEX_WAIT / FUTEX_WAKE, not private:
//           the floor).
//   pipe    a pipeline of frames (64 MiB by default, --frame-mib), 3 in flight: this process
//           (the producer) fills a frame with cuMemsetD32Async, the peer (the consumer) copies it
//           out and copies two words of it into a registered host page that it checks at the end
//           (every frame's first and last word must be its number). Raw baselines only for now:
//           the frames are cuMemAlloc allocations the peer maps with cuIpcOpenMemHandle, handed
//           over (a) with stream memory operations on a shared page (the design baton's side will
//           have: a shared timeline per direction) and (b) with IPC events and a message per
//           frame each way. baton's side needs shared buffers (Device::importBuffer); the row is
//           printed as skipped until then. Per frame: the total / frames.
//
// The host synchronisations of baton's side are counted where they mean something: the GPU
// ping-pong makes no host wait in the loop (the table says so), and the completion thread's looks
// at the queue's events (stream::Stats::completionLooks, this process) are given per hand-over.
// Where the device has no 64-bit stream memory operations (kCapabilityStreamMemOps64) baton
// bridges the hand-over through the host, the header says so, and the raw memory-operation rows
// are skipped. A scenario the driver cannot run (the tests' fake driver has no IPC events) prints
// "skipped: <reason>" and the rest goes on.
//
// Options: --backend cuda|hip, --rounds N (GPU and host ping-pongs, default 2000 /
// BATON_BENCH_SCALE), --repeats R (5), --window W (rounds submitted before the gate opens, 128:
// 256 raw stream operations per side, 384 of baton's, below what fills a stream), --frames F
// (pipeline, 200 / BATON_BENCH_SCALE), --frame-mib M (64); arguments name the scenarios (gpu host
// pipe), none: all. A backend that is not built, not loaded or has no device ends the run
// with the reason and exit code 77 (a skip), unless BATON_TEST_REQUIRE_BACKENDS names it (then 1).
// On the fake driver the pipeline's IPC memory needs BATON_FAKE_CUDA_SHAREABLE_ALLOCATIONS=1
// (meson.build sets it for the smoke test). Output is unbuffered.
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <baton/baton.hpp>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_device.hpp"
#include "raw_driver.hpp"
#include "stream_backend.hpp"  // stream::stats: the completion thread's looks

namespace {

using baton::Result;
using baton_bench::RawDriver;
using baton_bench::RawEvent;
using baton_bench::RawEventKind;
using baton_bench::RawIpcHandle;
using baton_bench::RawStream;
using Clock = std::chrono::steady_clock;

// In the peer: the socket to the parent, told of a failure before the peer exits.
int gPeerSocket = -1;

void tellParentOfFailure(const std::string& text);

[[noreturn]] void die(const char* what, const char* detail) {
  std::fprintf(stderr, "shared_bench%s: %s: %s\n", gPeerSocket >= 0 ? " (peer)" : "", what, detail);
  if (gPeerSocket >= 0) tellParentOfFailure(std::string(what) + ": " + detail);
  std::exit(1);
}
#define BATON_OK(expr)                                                \
  do {                                                                \
    Result r_ = (expr);                                               \
    if (r_ != Result::Success) die(#expr, baton::lastErrorMessage()); \
  } while (0)
#define RAW_OK(expr)                                       \
  do {                                                     \
    int r_ = (expr);                                       \
    if (r_ != 0) die(#expr, driver.errorName(r_).c_str()); \
  } while (0)
#define SYS_OK(expr)                                  \
  do {                                                \
    if ((expr) < 0) die(#expr, std::strerror(errno)); \
  } while (0)

RawDriver driver;  // the chosen backend's raw calls (a copy: one indirection less per call)

using baton_bench::median;
using baton_bench::nsSince;
using baton_bench::percentile;
using baton_bench::scale;

// ---- options ------------------------------------------------------------------------------------

baton::BackendKind backendKind = baton::BackendKind::Cuda;
const char* backendName() { return backendKind == baton::BackendKind::Hip ? "HIP" : "CUDA"; }
const char* backendArg() { return backendKind == baton::BackendKind::Hip ? "hip" : "cuda"; }
int rounds = 0;            // --rounds
int repeats = 5;           // --repeats
int window = 256;          // --window
int frames = 0;            // --frames
int frameMib = 64;         // --frame-mib
constexpr int kSlots = 3;  // pipeline frames in flight

// Ends the run as skipped (meson's exit code 77), saying why; a failure instead where
// BATON_TEST_REQUIRE_BACKENDS names the backend (the smoke test must not pass by skipping).
[[noreturn]] void skip(const std::string& why) {
  const char* required = std::getenv("BATON_TEST_REQUIRE_BACKENDS");
  if (required && std::strstr(required, backendArg())) {
    std::printf("shared_bench: %s (required by BATON_TEST_REQUIRE_BACKENDS)\n", why.c_str());
    std::exit(1);
  }
  std::printf("shared_bench: %s\n", why.c_str());
  std::exit(77);
}

// ---- the channel between the two processes ------------------------------------------------------

enum Op : uint32_t {
  kReady = 1,  // peer -> parent: set up (a: its pid)
  kArmed,      // peer -> parent: its side is submitted or enqueued up to the gate (handles)
  kDone,       // peer -> parent: its side ended (a: errors found, pipeline)
  kFailed,     // peer -> parent: text says why; the peer exits
  kRecorded,   // either way: an event record was made (IPC-event designs; a: the round or frame)
  kRelease,    // parent -> peer: drop what the last scenario opened, then kDone
  kQuit,       // parent -> peer: exit
  // parent -> peer, a scenario's peer side (a: rounds or frames, b: window or frame bytes):
  kBatonGpu,    // + the semaphore's descriptor
  kRawMemOps,   // + the page's descriptor
  kIpcEvents,   // handle[0]: the parent's event
  kBatonHost,   // + the semaphore's descriptor
  kRawFutex,    // + the page's descriptor
  kPipeMemOps,  // + the page's descriptor; handle[0..2]: the frames
  kPipeIpc,     // handle[0..2]: the frames, handle[3..5]: the producer's events
  kBatonPipe,   // + the "produced" semaphore's descriptor; then 4 kDescriptor messages: the
                // "consumed" semaphore's, the frames'
  kDescriptor,  // + a descriptor
};
struct Msg {
  uint32_t op = 0;
  uint32_t pad = 0;
  uint64_t a = 0, b = 0;
  RawIpcHandle handle[6] = {};
  char text[256] = {};
};

// Sends `m` (and `fd`, when not -1, with SCM_RIGHTS).
void sendMsg(int sock, const Msg& m, int fd = -1) {
  iovec iov{const_cast<Msg*>(&m), sizeof m};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    h.msg_control = control;
    h.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ssize_t n;
  do n = sendmsg(sock, &h, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof m)) {
    gPeerSocket = -1;  // nobody to tell
    die("sendmsg", n < 0 ? std::strerror(errno) : "short write");
  }
}

// Receives one message (and its descriptor into *fd, -1 when none came). A peer's kFailed ends
// this process with its reason; a closed socket says the other process is gone.
Msg recvMsg(int sock, int* fd = nullptr) {
  Msg m;
  iovec iov{&m, sizeof m};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  h.msg_control = control;
  h.msg_controllen = sizeof control;
  ssize_t n;
  do n = recvmsg(sock, &h, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n == 0) {
    gPeerSocket = -1;
    die("recvmsg", "the other process is gone");
  }
  if (n != static_cast<ssize_t>(sizeof m)) die("recvmsg", n < 0 ? std::strerror(errno) : "short");
  int received = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      std::memcpy(&received, CMSG_DATA(c), sizeof received);
  if (fd)
    *fd = received;
  else if (received >= 0)
    close(received);
  if (m.op == kFailed) {
    gPeerSocket = -1;
    die("the peer failed", m.text);
  }
  return m;
}

Msg expect(int sock, Op op, int* fd = nullptr) {
  Msg m = recvMsg(sock, fd);
  if (m.op != op) die("recvMsg", ("unexpected message " + std::to_string(m.op)).c_str());
  return m;
}

void tellParentOfFailure(const std::string& text) {
  Msg m;
  m.op = kFailed;
  std::snprintf(m.text, sizeof m.text, "%s", text.c_str());
  int sock = gPeerSocket;
  gPeerSocket = -1;  // no second attempt if this fails too
  iovec iov{&m, sizeof m};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  (void)sendmsg(sock, &h, MSG_NOSIGNAL);
}

// ---- shared pages and futexes
// ---------------------------------------------------------------------

constexpr size_t kPageBytes = 4096;

// A page of a new memfd, mapped shared (zeroed); its descriptor in *fd.
void* makePage(int* fd) {
  *fd = memfd_create("shared_bench", MFD_CLOEXEC);
  SYS_OK(*fd);
  SYS_OK(ftruncate(*fd, kPageBytes));
  void* p = mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
  if (p == MAP_FAILED) die("mmap", std::strerror(errno));
  return p;
}
void* mapPage(int fd) {
  void* p = mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) die("mmap", std::strerror(errno));
  return p;
}

// Shared futexes (the page is mapped by two processes: no FUTEX_PRIVATE_FLAG).
void futexWake(uint32_t* word) {
  syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}
void futexAwait(uint32_t* word, uint32_t target) {
  for (;;) {
    uint32_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    if (v >= target) return;
    syscall(SYS_futex, word, FUTEX_WAIT, v, nullptr, nullptr, 0);
  }
}
void futexRaise(uint32_t* word, uint32_t value) {
  __atomic_store_n(word, value, __ATOMIC_RELEASE);
  futexWake(word);
}

// ---- baton and the raw device, in either process
// ---------------------------------------------------

struct Env {
  baton::Instance instance;
  baton::Device device;
  baton::Queue queue;
  baton::PhysicalDeviceProperties props;
  bool memOps64 = false;  // the device's kCapabilityStreamMemOps64: GPU-side hand-over
  RawStream raw = nullptr;
};
Env env;

void setup(int ordinal, bool print) {
  const std::string name = backendName();
  baton::PhysicalDevice physical;
  std::string why;
  BATON_OK(baton_bench::findBenchDevice(backendKind, ordinal, &env.instance, &physical, &env.props,
                                        &why));
  if (!physical) skip(why);
  env.memOps64 = (env.props.capabilities & baton::kCapabilityStreamMemOps64) != 0;
  if (print) {
    std::printf("backend: %s\n", driver.name);
    if (backendKind == baton::BackendKind::Cuda || !env.props.arch[0])
      std::printf("device: %s (compute %u.%u), %s\n", env.props.name, env.props.computeMajor,
                  env.props.computeMinor, driver.versions().c_str());
    else
      std::printf("device: %s (compute %u.%u, arch %s), %s\n", env.props.name,
                  env.props.computeMajor, env.props.computeMinor, env.props.arch,
                  driver.versions().c_str());
    std::printf("stream-mem-ops-64: %s\n",
                env.memOps64 ? "yes (baton's hand-over is GPU-side)"
                             : "no (baton bridges the hand-over through the host)");
  }
  BATON_OK(env.instance.createDevice(physical, baton::DeviceCreateInfo(), &env.device));
  BATON_OK(env.device.getQueue(0, &env.queue));
  RAW_OK(driver.open(static_cast<int>(env.props.ordinal)));
  RAW_OK(driver.streamCreate(&env.raw));
}

void teardown() {
  BATON_OK(env.device.waitIdle());
  RAW_OK(driver.streamDestroy(env.raw));
  (void)env.device.destroy();
  (void)env.instance.destroy();
  RAW_OK(driver.close());
}

baton::Semaphore sharedSemaphore(const char* name) {
  baton::SemaphoreCreateInfo info;
  info.debugName = name;
  info.flags = baton::kSemaphoreShareable;
  baton::Semaphore s;
  BATON_OK(env.instance.createSemaphore(info, &s));
  return s;
}
baton::Semaphore importSemaphore(int fd, const char* name) {
  baton::SemaphoreImportInfo info;
  info.fd = fd;
  info.debugName = name;
  baton::Semaphore s;
  BATON_OK(env.instance.importSemaphore(info, &s));
  close(fd);
  return s;
}
void submit(baton::Semaphore s, uint64_t wait, uint64_t signal) {
  baton::SemaphoreValue w{s, wait}, g{s, signal};
  baton::SubmitInfo info;
  info.waits = w;
  info.signals = g;
  BATON_OK(env.queue.submit(info));
}

// Why the raw memory-operation designs cannot run here, or nullptr.
const char* cannotUseMemOps() {
  if (const char* why = driver.cannotUseMemOps()) return why;
  if (!env.memOps64) return "the device has no 64-bit stream memory operations";
  return nullptr;
}

// A memfd page registered for the device in this process: its word 0 (and 1) at `device`.
struct RegisteredPage {
  int fd = -1;
  void* host = nullptr;
  uint64_t device = 0;
  uint64_t* words() const { return static_cast<uint64_t*>(host); }
};
RegisteredPage registerPage(int fd) {
  RegisteredPage p;
  p.fd = fd;
  p.host = fd >= 0 ? mapPage(fd) : makePage(&p.fd);
  RAW_OK(driver.hostRegister(p.host, kPageBytes));
  RAW_OK(driver.hostDevicePointer(&p.device, p.host));
  return p;
}
void unregisterPage(RegisteredPage& p) {
  RAW_OK(driver.hostUnregister(p.host));
  munmap(p.host, kPageBytes);
  close(p.fd);
  p = {};
}

// ---- the peer's sides
// ----------------------------------------------------------------------------

void peerBatonGpu(int sock, const Msg& m, int fd) {
  baton::Semaphore s = importSemaphore(fd, "gpu ping-pong (peer)");
  const int n = static_cast<int>(m.a), first = std::min(n, static_cast<int>(m.b));
  for (int k = 0; k < first; ++k) submit(s, 2 * k + 2, 2 * k + 3);
  sendMsg(sock, Msg{kArmed});
  for (int k = first; k < n; ++k) submit(s, 2 * k + 2, 2 * k + 3);
  BATON_OK(s.wait(2 * uint64_t(n) + 1, baton::kWaitForever));
  BATON_OK(env.queue.waitIdle());
  BATON_OK(s.destroy());
  sendMsg(sock, Msg{kDone});
}

void peerRawMemOps(int sock, const Msg& m, int fd) {
  RegisteredPage page = registerPage(fd);
  const int n = static_cast<int>(m.a), first = std::min(n, static_cast<int>(m.b));
  auto pair = [&](int k) {
    RAW_OK(driver.streamWaitValue64(env.raw, page.device, 2 * k + 2));
    RAW_OK(driver.streamWriteValue64(env.raw, page.device, 2 * k + 3));
  };
  for (int k = 0; k < first; ++k) pair(k);
  sendMsg(sock, Msg{kArmed});
  for (int k = first; k < n; ++k) pair(k);
  RAW_OK(driver.streamSynchronize(env.raw));
  unregisterPage(page);
  sendMsg(sock, Msg{kDone});
}

// The peer's events of the last IPC scenario, dropped on kRelease.
std::vector<RawEvent> peerEvents;

void peerIpcEvents(int sock, const Msg& m) {
  RawEvent theirs = nullptr, mine = nullptr;
  RAW_OK(driver.ipcOpenEventHandle(&theirs, &m.handle[0]));
  RAW_OK(driver.eventCreate(&mine, RawEventKind::Interprocess));
  peerEvents = {theirs, mine};
  Msg armed{kArmed};
  RAW_OK(driver.ipcGetEventHandle(&armed.handle[0], mine));
  sendMsg(sock, armed);
  const int n = static_cast<int>(m.a);
  for (int k = 0; k < n; ++k) {
    expect(sock, kRecorded);
    RAW_OK(driver.streamWaitEvent(env.raw, theirs));
    RAW_OK(driver.eventRecord(mine, env.raw));
    Msg r{kRecorded};
    r.a = k;
    sendMsg(sock, r);
  }
  RAW_OK(driver.streamSynchronize(env.raw));
  sendMsg(sock, Msg{kDone});
}

void peerBatonHost(int sock, const Msg& m, int fd) {
  baton::Semaphore s = importSemaphore(fd, "host ping-pong (peer)");
  sendMsg(sock, Msg{kArmed});
  const uint64_t n = m.a;
  for (uint64_t k = 0; k < n; ++k) {
    BATON_OK(s.wait(2 * k + 1, baton::kWaitForever));
    BATON_OK(s.signal(2 * k + 2));
  }
  BATON_OK(s.destroy());
  sendMsg(sock, Msg{kDone});
}

void peerRawFutex(int sock, const Msg& m, int fd) {
  void* page = mapPage(fd);
  close(fd);
  auto* word = static_cast<uint32_t*>(page);
  sendMsg(sock, Msg{kArmed});
  const uint32_t n = static_cast<uint32_t>(m.a);
  for (uint32_t k = 0; k < n; ++k) {
    futexAwait(word, 2 * k + 1);
    futexRaise(word, 2 * k + 2);
  }
  munmap(page, kPageBytes);
  sendMsg(sock, Msg{kDone});
}

// The consumer of the pipeline, either design: maps the producer's frames, copies each out and
// two of its words into a registered host area, checked once the stream drained.
void peerPipeline(int sock, const Msg& m, int fd) {
  const bool memOps = m.op == kPipeMemOps;
  const int n = static_cast<int>(m.a);
  const size_t bytes = m.b;
  uint64_t frames[kSlots];
  for (int i = 0; i < kSlots; ++i) RAW_OK(driver.ipcOpenMemHandle(&frames[i], &m.handle[i]));
  uint64_t local = 0;
  RAW_OK(driver.memAlloc(&local, bytes));
  const size_t sampleBytes =
      (static_cast<size_t>(n) * 8 + kPageBytes - 1) / kPageBytes * kPageBytes;
  void* samples =
      mmap(nullptr, sampleBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (samples == MAP_FAILED) die("mmap", std::strerror(errno));
  RAW_OK(driver.hostRegister(samples, sampleBytes));
  uint64_t samplesDevice = 0;
  RAW_OK(driver.hostDevicePointer(&samplesDevice, samples));
  RegisteredPage page;
  RawEvent written[kSlots] = {}, consumed[kSlots] = {};
  Msg armed{kArmed};
  if (memOps) {
    page = registerPage(fd);
  } else {
    for (int i = 0; i < kSlots; ++i) {
      RAW_OK(driver.ipcOpenEventHandle(&written[i], &m.handle[3 + i]));
      RAW_OK(driver.eventCreate(&consumed[i], RawEventKind::Interprocess));
      RAW_OK(driver.ipcGetEventHandle(&armed.handle[i], consumed[i]));
    }
  }
  sendMsg(sock, armed);
  for (int f = 0; f < n; ++f) {
    const int i = f % kSlots;
    if (memOps) {
      RAW_OK(driver.streamWaitValue64(env.raw, page.device, f + 1));  // word 0: frames written
    } else {
      expect(sock, kRecorded);
      RAW_OK(driver.streamWaitEvent(env.raw, written[i]));
    }
    RAW_OK(driver.memcpyAsync(local, frames[i], bytes, env.raw));
    RAW_OK(driver.memcpyAsync(samplesDevice + 8 * f, local, 4, env.raw));
    RAW_OK(driver.memcpyAsync(samplesDevice + 8 * f + 4, local + bytes - 4, 4, env.raw));
    if (memOps) {
      RAW_OK(driver.streamWriteValue64(env.raw, page.device + 8, f + 1));  // word 1: consumed
    } else {
      RAW_OK(driver.eventRecord(consumed[i], env.raw));
      Msg r{kRecorded};
      r.a = f;
      sendMsg(sock, r);
    }
  }
  RAW_OK(driver.streamSynchronize(env.raw));
  uint64_t errors = 0;
  const auto* words = static_cast<const uint32_t*>(samples);
  for (int f = 0; f < n; ++f)
    errors += (words[2 * f] != uint32_t(f + 1)) + (words[2 * f + 1] != uint32_t(f + 1));
  RAW_OK(driver.hostUnregister(samples));
  munmap(samples, sampleBytes);
  RAW_OK(driver.memFree(local));
  for (uint64_t frame : frames) RAW_OK(driver.ipcCloseMemHandle(frame));
  if (memOps) unregisterPage(page);
  for (int i = 0; i < kSlots && !memOps; ++i)
    peerEvents.insert(peerEvents.end(), {written[i], consumed[i]});
  Msg done{kDone};
  done.a = errors;
  sendMsg(sock, done);
}

// baton's pipeline, the consumer: imports the two shared semaphores and the three shared frames;
// each frame's copy-out (the frame into a local buffer, its first and last word into a host-pinned
// samples buffer) is recorded before the producer starts, and submitted waiting for "produced" and
// signalling "consumed", with no host synchronisation per frame.
void peerBatonPipeline(int sock, const Msg& m, int fd) {
  const int n = static_cast<int>(m.a);
  const uint64_t bytes = m.b;
  baton::Semaphore produced = importSemaphore(fd, "produced (peer)");
  int more = -1;
  expect(sock, kDescriptor, &more);
  baton::Semaphore consumed = importSemaphore(more, "consumed (peer)");
  baton::Buffer frames[kSlots];
  for (baton::Buffer& frame : frames) {
    expect(sock, kDescriptor, &more);
    baton::BufferImportInfo info;
    info.fd = more;
    info.size = bytes;
    BATON_OK(env.device.importBuffer(info, &frame));
    close(more);
  }
  baton::Buffer local, samples;
  baton::BufferCreateInfo info;
  info.size = bytes;
  BATON_OK(env.device.createBuffer(info, &local));
  info.size = 8 * uint64_t(n);
  info.memory = baton::MemoryKind::HostPinned;
  BATON_OK(env.device.createBuffer(info, &samples));
  std::vector<baton::CommandBuffer> copies(n);
  for (int f = 0; f < n; ++f) {
    BATON_OK(env.device.createCommandBuffer(baton::CommandBufferCreateInfo(), &copies[f]));
    BATON_OK(copies[f].begin());
    BATON_OK(copies[f].copyBuffer(frames[f % kSlots], 0, local, 0, bytes));
    BATON_OK(copies[f].copyBuffer(local, 0, samples, 8 * uint64_t(f), 4));
    BATON_OK(copies[f].copyBuffer(local, bytes - 4, samples, 8 * uint64_t(f) + 4, 4));
    BATON_OK(copies[f].end());
  }
  sendMsg(sock, Msg{kArmed});
  for (int f = 0; f < n; ++f) {
    baton::SemaphoreValue w{produced, uint64_t(f) + 1}, g{consumed, uint64_t(f) + 1};
    BATON_OK(env.queue.submit(baton::SubmitInfo{w, copies[f], g}));
  }
  BATON_OK(consumed.wait(uint64_t(n), baton::kWaitForever));
  void* p = nullptr;
  BATON_OK(samples.map(&p));
  const auto* words = static_cast<const uint32_t*>(p);
  uint64_t errors = 0;
  for (int f = 0; f < n; ++f)
    errors += (words[2 * f] != uint32_t(f + 1)) + (words[2 * f + 1] != uint32_t(f + 1));
  BATON_OK(env.queue.waitIdle());
  for (baton::CommandBuffer& cb : copies) BATON_OK(cb.destroy());
  for (baton::Buffer& b : frames) BATON_OK(b.destroy());
  BATON_OK(local.destroy());
  BATON_OK(samples.destroy());
  BATON_OK(produced.destroy());
  BATON_OK(consumed.destroy());
  Msg done{kDone};
  done.a = errors;
  sendMsg(sock, done);
}

int peerMain(int sock, int ordinal) {
  gPeerSocket = sock;
  setup(ordinal, false);
  Msg ready{kReady};
  ready.a = static_cast<uint64_t>(getpid());
  sendMsg(sock, ready);
  for (;;) {
    int fd = -1;
    Msg m = recvMsg(sock, &fd);
    switch (m.op) {
      case kBatonGpu: peerBatonGpu(sock, m, fd); break;
      case kRawMemOps: peerRawMemOps(sock, m, fd); break;
      case kIpcEvents: peerIpcEvents(sock, m); break;
      case kBatonHost: peerBatonHost(sock, m, fd); break;
      case kRawFutex: peerRawFutex(sock, m, fd); break;
      case kPipeMemOps:
      case kPipeIpc: peerPipeline(sock, m, fd); break;
      case kBatonPipe: peerBatonPipeline(sock, m, fd); break;
      case kRelease:
        for (RawEvent e : peerEvents) RAW_OK(driver.eventDestroy(e));
        peerEvents.clear();
        sendMsg(sock, Msg{kDone});
        break;
      case kQuit: teardown(); return 0;
      default: die("peer", ("unknown message " + std::to_string(m.op)).c_str());
    }
  }
}

// ---- the parent: the peer process
// ------------------------------------------------------------------

struct PeerProcess {
  pid_t pid = -1;
  int sock = -1;
};
PeerProcess peer;

void startPeer(const char* self) {
  int pair[2];
  SYS_OK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair));
  std::vector<std::string> words = {
      self,         "--peer",   std::to_string(pair[1]),          "--backend",
      backendArg(), "--device", std::to_string(env.props.ordinal)};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  SYS_OK(pid);
  if (pid == 0) {
    // Only async-signal-safe calls until exec: the peer's end of the socket survives exec.
    fcntl(pair[1], F_SETFD, 0);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(pair[1]);
  peer.pid = pid;
  peer.sock = pair[0];
  Msg ready = expect(peer.sock, kReady);
  std::printf("peer: pid %llu (this process %d), the same device\n",
              static_cast<unsigned long long>(ready.a), getpid());
}

void stopPeer() {
  sendMsg(peer.sock, Msg{kQuit});
  int status = 0;
  waitpid(peer.pid, &status, 0);
  close(peer.sock);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    die("peer", ("exit status " + std::to_string(status)).c_str());
}

// A repeat that does not end within kStuckSeconds ends the run: a stream filled before the gate
// opened (the enqueuing thread blocks in the driver and never opens it: lower --window), or a
// hand-over lost. The peer, possibly blocked in the driver too, is killed.
constexpr unsigned kStuckSeconds = 120;
void onStuck(int) {
  const char msg[] =
      "shared_bench: a repeat did not end within 120 s (a stream full before the gate? try a "
      "smaller --window); killing the peer\n";
  (void)!write(2, msg, sizeof msg - 1);
  if (peer.pid > 0) kill(peer.pid, SIGKILL);
  _exit(1);
}
// Arms (or re-arms) the limit for the next repeat.
void repeatStarts() { alarm(kStuckSeconds); }

void release() {
  sendMsg(peer.sock, Msg{kRelease});
  expect(peer.sock, kDone);
}

// ---- the table
// ---------------------------------------------------------------------------------------

void row(const char* name, double baton, double raw, const char* unit, const char* note = "") {
  // A figure of 0 is one this row does not have ("-").
  char b[32], r[32], x[32];
  if (baton > 0)
    std::snprintf(b, sizeof b, "%12.3f", baton);
  else
    std::snprintf(b, sizeof b, "%12s", "-");
  if (raw > 0)
    std::snprintf(r, sizeof r, "%12.3f", raw);
  else
    std::snprintf(r, sizeof r, "%12s", "-");
  if (baton > 0 && raw > 0)
    std::snprintf(x, sizeof x, "%8.2fx", baton / raw);
  else
    std::snprintf(x, sizeof x, "%9s", "-");
  std::printf("%-36s %s %s %s  %-4s %s\n", name, b, r, x, unit, note);
}
void skipped(const char* name, const std::string& why) {
  std::printf("%-36s skipped: %s\n", name, why.c_str());
}
std::string spread(const char* what, const std::vector<double>& v) {
  char s[160];
  std::snprintf(s, sizeof s, "%s p10 %.3f, median %.3f, p90 %.3f", what, percentile(v, 10),
                median(v), percentile(v, 90));
  return s;
}

// ---- scenario 1: GPU-side ping-pong
// -------------------------------------------------------------------

// baton: one repeat; ns per hand-over. *looks: the completion thread's looks per hand-over.
double batonGpuRun(int n, double* looks) {
  baton::Semaphore s = sharedSemaphore("gpu ping-pong");
  int fd = -1;
  BATON_OK(s.exportFd(&fd));
  Msg m{kBatonGpu};
  m.a = n;
  m.b = window;
  sendMsg(peer.sock, m, fd);
  close(fd);
  const int first = std::min(n, window);
  for (int k = 0; k < first; ++k) submit(s, 2 * k + 1, 2 * k + 2);
  expect(peer.sock, kArmed);
  const baton::stream::Stats before = baton::stream::stats();
  const auto t0 = Clock::now();
  BATON_OK(s.signal(1));  // the gate
  for (int k = first; k < n; ++k) submit(s, 2 * k + 1, 2 * k + 2);
  // The end: a host wait for the peer's last value (its completion thread raises the page and
  // wakes this process's watcher), once per repeat, spread over the 2N hand-overs. Not a loop of
  // getValue: that queries this process's own events and would contend with the issuing thread
  // for the driver while it enqueues the rest.
  BATON_OK(s.wait(2 * uint64_t(n) + 1, baton::kWaitForever));
  const double ns = nsSince(t0);
  const baton::stream::Stats after = baton::stream::stats();
  *looks = double(after.completionLooks - before.completionLooks) / (2.0 * n);
  expect(peer.sock, kDone);
  BATON_OK(env.queue.waitIdle());
  BATON_OK(s.destroy());
  return ns / (2.0 * n);
}

// Raw stream memory operations on a memfd page registered in both processes.
double rawMemOpsRun(int n) {
  RegisteredPage page = registerPage(-1);
  Msg m{kRawMemOps};
  m.a = n;
  m.b = window;
  sendMsg(peer.sock, m, page.fd);
  auto pair = [&](int k) {
    RAW_OK(driver.streamWaitValue64(env.raw, page.device, 2 * k + 1));
    RAW_OK(driver.streamWriteValue64(env.raw, page.device, 2 * k + 2));
  };
  const int first = std::min(n, window);
  for (int k = 0; k < first; ++k) pair(k);
  expect(peer.sock, kArmed);
  uint64_t* word = page.words();
  const auto t0 = Clock::now();
  __atomic_store_n(word, 1, __ATOMIC_RELEASE);  // the gate
  for (int k = first; k < n; ++k) pair(k);
  const uint64_t last = 2 * uint64_t(n) + 1;
  while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < last) {
  }
  const double ns = nsSince(t0);
  expect(peer.sock, kDone);
  RAW_OK(driver.streamSynchronize(env.raw));
  unregisterPage(page);
  return ns / (2.0 * n);
}

// IPC events: a record, a message, the other side's stream wait, and back. *trips: each round trip
// / 2 as this process saw it (from one of its records to the next), ns.
double ipcEventsRun(int n, std::vector<double>* trips) {
  RawEvent mine = nullptr, theirs = nullptr, end = nullptr;
  RAW_OK(driver.eventCreate(&mine, RawEventKind::Interprocess));
  RAW_OK(driver.eventCreate(&end, RawEventKind::Plain));
  Msg m{kIpcEvents};
  m.a = n;
  RAW_OK(driver.ipcGetEventHandle(&m.handle[0], mine));
  sendMsg(peer.sock, m);
  Msg armed = expect(peer.sock, kArmed);
  RAW_OK(driver.ipcOpenEventHandle(&theirs, &armed.handle[0]));
  const auto t0 = Clock::now();
  auto last = t0;
  for (int k = 0; k < n; ++k) {
    if (k > 0) {
      expect(peer.sock, kRecorded);
      RAW_OK(driver.streamWaitEvent(env.raw, theirs));
    }
    RAW_OK(driver.eventRecord(mine, env.raw));
    Msg r{kRecorded};
    r.a = k;
    sendMsg(peer.sock, r);
    if (k > 0) trips->push_back(nsSince(last) / 2);
    last = Clock::now();
  }
  expect(peer.sock, kRecorded);
  RAW_OK(driver.streamWaitEvent(env.raw, theirs));
  RAW_OK(driver.eventRecord(end, env.raw));
  RAW_OK(driver.eventSynchronize(end));
  const double ns = nsSince(t0);
  expect(peer.sock, kDone);
  RAW_OK(driver.eventDestroy(theirs));
  RAW_OK(driver.eventDestroy(mine));
  RAW_OK(driver.eventDestroy(end));
  release();
  return ns / (2.0 * n);
}

void benchGpu() {
  const int n = rounds;
  const char* noMemOps = cannotUseMemOps();
  const char* noIpc = driver.cannotShareEvents();
  std::printf(
      "\ngpu ping-pong: %d rounds (%d hand-overs) per repeat, %d repeats, the first %d "
      "rounds submitted before the gate\n",
      n, 2 * n, repeats, std::min(n, window));
  std::vector<double> ours, mem, ipc, ipcTrips, looks, memRatios, ipcRatios;
  for (int r = 0; r < repeats; ++r) {
    repeatStarts();
    double l = 0;
    ours.push_back(batonGpuRun(n, &l));
    looks.push_back(l);
    if (!noMemOps) {
      mem.push_back(rawMemOpsRun(n));
      memRatios.push_back(ours.back() / mem.back());
    }
    if (!noIpc) {
      ipc.push_back(ipcEventsRun(n, &ipcTrips));
      ipcRatios.push_back(ours.back() / ipc.back());
    }
  }
  const double o = median(ours) / 1e3;
  char note[200];
  if (noMemOps) {
    skipped("gpu ping-pong vs raw memory ops", noMemOps);
    row("gpu ping-pong, per hand-over", o, 0, "us");
  } else {
    std::snprintf(note, sizeof note, "(target <= 1.2x; median of per-repeat ratios %.2fx)",
                  median(memRatios));
    row("gpu ping-pong vs raw memory ops", o, median(mem) / 1e3, "us", note);
  }
  if (noIpc) {
    skipped("gpu ping-pong vs raw IPC events", noIpc);
  } else {
    std::snprintf(note, sizeof note, "(target < 1x; median of per-repeat ratios %.2fx)",
                  median(ipcRatios));
    row("gpu ping-pong vs raw IPC events", o, median(ipc) / 1e3, "us", note);
  }
  auto us = [](std::vector<double> v) {
    for (double& x : v) x /= 1e3;
    return v;
  };
  std::printf("    per hand-over over the repeats, us: %s", spread("baton", us(ours)).c_str());
  if (!mem.empty()) std::printf("; %s", spread("raw memory ops", us(mem)).c_str());
  if (!ipc.empty()) std::printf("; %s", spread("raw IPC events", us(ipc)).c_str());
  std::printf("\n");
  if (!ipcTrips.empty())
    std::printf("    IPC events, each round trip / 2, us: %s\n",
                spread("", us(ipcTrips)).c_str() + 1);
  // Without 64-bit stream memory operations baton hands each value over through the host: the
  // signalling process's completion thread publishes it to the page, the waiting process's
  // watcher releases the held submission.
  std::printf(
      "    host synchronisations in the loop: baton %s, raw memory ops 0, raw IPC events 2 "
      "messages per round trip\n",
      env.memOps64 ? "0 (no host wait; the bench's host waits once, at the end)"
                   : "1 per hand-over (bridged: a completion seen by the host, a page "
                     "write and a futex wake)");
  std::printf("    baton, completion-thread looks per hand-over (this process): %.3f\n",
              median(looks));
}

// ---- scenario 2: host wake across processes
// ------------------------------------------------------------

// Warm-up rounds, dropped from the figures (the watcher threads start, pages fault in).
int warmup(int n) { return n / 10 + 1; }

void batonHostRun(int n, std::vector<double>* trips) {
  baton::Semaphore s = sharedSemaphore("host ping-pong");
  int fd = -1;
  BATON_OK(s.exportFd(&fd));
  Msg m{kBatonHost};
  m.a = n;
  sendMsg(peer.sock, m, fd);
  close(fd);
  expect(peer.sock, kArmed);
  for (int k = 0; k < n; ++k) {
    const auto t = Clock::now();
    BATON_OK(s.signal(2 * uint64_t(k) + 1));
    BATON_OK(s.wait(2 * uint64_t(k) + 2, baton::kWaitForever));
    if (k >= warmup(n)) trips->push_back(nsSince(t) / 2);
  }
  expect(peer.sock, kDone);
  BATON_OK(s.destroy());
}

void localHostRun(int n, std::vector<double>* trips) {
  baton::SemaphoreCreateInfo info;
  info.debugName = "host ping-pong (local)";
  baton::Semaphore s;
  BATON_OK(env.instance.createSemaphore(info, &s));
  std::thread other([&] {
    for (int k = 0; k < n; ++k) {
      BATON_OK(s.wait(2 * uint64_t(k) + 1, baton::kWaitForever));
      BATON_OK(s.signal(2 * uint64_t(k) + 2));
    }
  });
  for (int k = 0; k < n; ++k) {
    const auto t = Clock::now();
    BATON_OK(s.signal(2 * uint64_t(k) + 1));
    BATON_OK(s.wait(2 * uint64_t(k) + 2, baton::kWaitForever));
    if (k >= warmup(n)) trips->push_back(nsSince(t) / 2);
  }
  other.join();
  BATON_OK(s.destroy());
}

void rawFutexRun(int n, std::vector<double>* trips) {
  int fd = -1;
  void* page = makePage(&fd);
  auto* word = static_cast<uint32_t*>(page);
  Msg m{kRawFutex};
  m.a = n;
  sendMsg(peer.sock, m, fd);
  close(fd);
  expect(peer.sock, kArmed);
  for (int k = 0; k < n; ++k) {
    const auto t = Clock::now();
    futexRaise(word, 2 * k + 1);
    futexAwait(word, 2 * k + 2);
    if (k >= warmup(n)) trips->push_back(nsSince(t) / 2);
  }
  expect(peer.sock, kDone);
  munmap(page, kPageBytes);
}

void benchHost() {
  const int n = rounds;
  std::printf("\nhost wake: %d round trips per repeat, %d repeats, the first %d of each dropped\n",
              n, repeats, warmup(n));
  std::vector<double> shared, local, futex;
  for (int r = 0; r < repeats; ++r) {
    repeatStarts();
    batonHostRun(n, &shared);
    localHostRun(n, &local);
    rawFutexRun(n, &futex);
  }
  std::vector<double> s = shared, l = local, f = futex;
  for (auto* v : {&s, &l, &f})
    for (double& x : *v) x /= 1e3;
  row("host wake, 2 processes (shared)", median(s), median(f), "us",
      "(per hand-over = round trip / 2; raw: futex on a shared page)");
  row("host wake, 2 threads (local)", median(l), median(f), "us",
      "(baton on a local semaphore, one process)");
  std::printf("    per hand-over, us: %s; %s; %s\n", spread("shared", s).c_str(),
              spread("local", l).c_str(), spread("raw futex", f).c_str());
}

// ---- scenario 3: a pipeline of frames (raw baselines; baton's side needs shared buffers)
// --------------

// The producer's side of either raw design; ns per frame. *errors: words the consumer found wrong.
double rawPipelineRun(bool memOps, int n, size_t bytes, uint64_t* errors) {
  uint64_t frames[kSlots];
  Msg m{memOps ? kPipeMemOps : kPipeIpc};
  m.a = n;
  m.b = bytes;
  for (int i = 0; i < kSlots; ++i) {
    RAW_OK(driver.memAlloc(&frames[i], bytes));
    RAW_OK(driver.ipcGetMemHandle(&m.handle[i], frames[i]));
  }
  RegisteredPage page;
  RawEvent written[kSlots] = {}, consumed[kSlots] = {};
  if (memOps) {
    page = registerPage(-1);
    sendMsg(peer.sock, m, page.fd);
  } else {
    for (int i = 0; i < kSlots; ++i) {
      RAW_OK(driver.eventCreate(&written[i], RawEventKind::Interprocess));
      RAW_OK(driver.ipcGetEventHandle(&m.handle[3 + i], written[i]));
    }
    sendMsg(peer.sock, m);
  }
  Msg armed = expect(peer.sock, kArmed);
  for (int i = 0; i < kSlots && !memOps; ++i)
    RAW_OK(driver.ipcOpenEventHandle(&consumed[i], &armed.handle[i]));
  const auto t0 = Clock::now();
  for (int f = 0; f < n; ++f) {
    const int i = f % kSlots;
    if (f >= kSlots) {
      // The consumer is done with the frame that used this slot last.
      if (memOps) {
        RAW_OK(driver.streamWaitValue64(env.raw, page.device + 8, f - kSlots + 1));
      } else {
        expect(peer.sock, kRecorded);
        RAW_OK(driver.streamWaitEvent(env.raw, consumed[i]));
      }
    }
    RAW_OK(driver.memsetD32Async(frames[i], uint32_t(f + 1), bytes / 4, env.raw));
    if (memOps) {
      RAW_OK(driver.streamWriteValue64(env.raw, page.device, f + 1));
    } else {
      RAW_OK(driver.eventRecord(written[i], env.raw));
      Msg r{kRecorded};
      r.a = f;
      sendMsg(peer.sock, r);
    }
  }
  Msg done;
  do done = recvMsg(peer.sock);  // the last frames' kRecorded, then kDone
  while (done.op == kRecorded);
  if (done.op != kDone) die("pipeline", "unexpected message");
  const double ns = nsSince(t0);
  *errors += done.a;
  RAW_OK(driver.streamSynchronize(env.raw));
  for (uint64_t frame : frames) RAW_OK(driver.memFree(frame));
  if (memOps) unregisterPage(page);
  for (int i = 0; i < kSlots && !memOps; ++i) {
    RAW_OK(driver.eventDestroy(written[i]));
    RAW_OK(driver.eventDestroy(consumed[i]));
  }
  if (!memOps) release();
  return ns / n;
}

// baton's pipeline, the producer: three shared frames and two shared semaphores passed to the
// peer; each frame's fill recorded up front, submitted waiting until the consumer is done with
// the frame that used the slot before, and signalling "produced"; ns per frame, from the peer's
// "armed" to "consumed" reaching the last frame (a host wait, once). *errors: words the consumer
// found wrong.
double batonPipelineRun(int n, uint64_t bytes, uint64_t* errors) {
  baton::SemaphoreCreateInfo shareable;
  shareable.flags = baton::kSemaphoreShareable;
  baton::Semaphore produced, consumed;
  BATON_OK(env.instance.createSemaphore(shareable, &produced));
  BATON_OK(env.instance.createSemaphore(shareable, &consumed));
  baton::Buffer frames[kSlots];
  for (baton::Buffer& frame : frames) {
    baton::BufferCreateInfo info;
    info.size = bytes;
    info.flags = baton::kBufferShareable;
    BATON_OK(env.device.createBuffer(info, &frame));
  }
  std::vector<baton::CommandBuffer> fills(n);
  for (int f = 0; f < n; ++f) {
    BATON_OK(env.device.createCommandBuffer(baton::CommandBufferCreateInfo(), &fills[f]));
    BATON_OK(fills[f].begin());
    BATON_OK(fills[f].fillBuffer(frames[f % kSlots], 0, bytes, uint32_t(f + 1)));
    BATON_OK(fills[f].end());
  }
  Msg m{kBatonPipe};
  m.a = n;
  m.b = bytes;
  int fd = -1;
  BATON_OK(produced.exportFd(&fd));
  sendMsg(peer.sock, m, fd);
  close(fd);
  BATON_OK(consumed.exportFd(&fd));
  sendMsg(peer.sock, Msg{kDescriptor}, fd);
  close(fd);
  for (baton::Buffer& frame : frames) {
    BATON_OK(frame.exportFd(&fd));
    sendMsg(peer.sock, Msg{kDescriptor}, fd);
    close(fd);
  }
  expect(peer.sock, kArmed);
  const auto t0 = Clock::now();
  for (int f = 0; f < n; ++f) {
    baton::SemaphoreValue w{consumed, f >= kSlots ? uint64_t(f - kSlots + 1) : 0};
    baton::SemaphoreValue g{produced, uint64_t(f) + 1};
    BATON_OK(env.queue.submit(baton::SubmitInfo{w, fills[f], g}));
  }
  BATON_OK(consumed.wait(uint64_t(n), baton::kWaitForever));
  const double ns = nsSince(t0);
  Msg done = expect(peer.sock, kDone);
  *errors += done.a;
  BATON_OK(env.queue.waitIdle());
  for (baton::CommandBuffer& cb : fills) BATON_OK(cb.destroy());
  for (baton::Buffer& b : frames) BATON_OK(b.destroy());
  BATON_OK(produced.destroy());
  BATON_OK(consumed.destroy());
  return ns / n;
}

bool pipelineFailed = false;

void benchPipeline() {
  const int n = std::max(frames, kSlots + 1);
  const size_t bytes = size_t(frameMib) << 20;
  std::printf(
      "\npipeline: %d frames of %d MiB per repeat, %d in flight, %d repeats; producer "
      "memset, consumer copy + check\n",
      n, frameMib, kSlots, repeats);
  const char* noBaton = (env.props.capabilities & baton::kCapabilityShareableMemory)
                            ? nullptr
                            : "the device has no shareable memory (kCapabilityShareableMemory)";
  const char* noMemory = driver.cannotShareMemory();
  const char* noMemOps = cannotUseMemOps();
  const char* noIpc = driver.cannotShareEvents();
  std::vector<double> bat, mem, ipc;
  uint64_t batonErrors = 0, memErrors = 0, ipcErrors = 0;
  for (int r = 0; r < repeats; ++r) {
    repeatStarts();
    if (!noBaton) bat.push_back(batonPipelineRun(n, bytes, &batonErrors));
    if (!noMemory && !noMemOps) mem.push_back(rawPipelineRun(true, n, bytes, &memErrors));
    if (!noMemory && !noIpc) ipc.push_back(rawPipelineRun(false, n, bytes, &ipcErrors));
  }
  auto report = [&](const char* name, const char* why, const std::vector<double>& v,
                    uint64_t errors, const char* syncs) {
    if (why) return skipped(name, why);
    std::vector<double> us = v;
    for (double& x : us) x /= 1e3;
    char note[200];
    std::snprintf(note, sizeof note, "(%s; %s; words wrong: %llu)", spread("", us).c_str() + 1,
                  syncs, static_cast<unsigned long long>(errors));
    // baton's row against raw memory ops (the same design by hand); the raw rows alone.
    const bool isBaton = &v == &bat;
    const double raw = isBaton && !mem.empty() ? median(mem) / 1e3 : 0;
    row(name, isBaton ? median(us) : 0, isBaton ? raw : median(us), "us", note);
    if (errors) pipelineFailed = true;
  };
  report("pipeline frame, baton", noBaton, bat, batonErrors, "no host sync per frame");
  report("pipeline frame, raw memory ops", noMemory ? noMemory : noMemOps, mem, memErrors,
         "no host sync per frame");
  report("pipeline frame, raw IPC events", noMemory ? noMemory : noIpc, ipc, ipcErrors,
         "2 messages per frame");
  if (!bat.empty() && !mem.empty()) {
    const double b = median(bat), r = median(mem);
    std::printf("    pipeline throughput, baton / raw memory ops: %.3fx (target >= 0.98x)\n",
                r / b);
  }
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  struct {
    const char* name;
    void (*run)();
  } benches[] = {{"gpu", benchGpu}, {"host", benchHost}, {"pipe", benchPipeline}};
  const char* usage =
      "usage: shared_bench [--backend cuda|hip] [--rounds N] [--repeats R] [--window W] "
      "[--frames F] [--frame-mib M] [gpu host pipe]\n";
  std::vector<std::string> only;
  int peerSocket = -1, ordinal = -1;
  rounds = std::max(2000 / scale(), 4);
  frames = std::max(200 / scale(), kSlots + 1);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto number = [&](int* out) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "shared_bench: %s needs a value\n%s", a.c_str(), usage);
        std::exit(2);
      }
      *out = std::atoi(argv[++i]);
    };
    if (a == "--help" || a == "-h") {
      std::printf("%s", usage);
      return 0;
    } else if (a == "--backend" && i + 1 < argc) {
      std::string b = argv[++i];
      if (b == "cuda")
        backendKind = baton::BackendKind::Cuda;
      else if (b == "hip")
        backendKind = baton::BackendKind::Hip;
      else {
        std::fprintf(stderr, "shared_bench: unknown backend %s\n%s", b.c_str(), usage);
        return 2;
      }
    } else if (a == "--rounds") {
      number(&rounds);
    } else if (a == "--repeats") {
      number(&repeats);
    } else if (a == "--window") {
      number(&window);
    } else if (a == "--frames") {
      number(&frames);
    } else if (a == "--frame-mib") {
      number(&frameMib);
    } else if (a == "--peer") {
      number(&peerSocket);
    } else if (a == "--device") {
      number(&ordinal);
    } else if (std::none_of(std::begin(benches), std::end(benches),
                            [&](const auto& b) { return a == b.name; })) {
      std::fprintf(stderr, "shared_bench: unknown argument %s\n%s", a.c_str(), usage);
      return 2;
    } else {
      only.push_back(a);
    }
  }
  if (rounds < 1 || repeats < 1 || window < 1 || frames < 1 || frameMib < 1) {
    std::fprintf(stderr, "shared_bench: counts must be positive\n%s", usage);
    return 2;
  }
#if BATON_BENCH_CUDA
  if (backendKind == baton::BackendKind::Cuda) driver = baton_bench::rawCuda();
#endif
#if BATON_BENCH_HIP
  if (backendKind == baton::BackendKind::Hip) driver = baton_bench::rawHip();
#endif
  if (peerSocket >= 0) {
    if (!driver.name) return 2;
    return peerMain(peerSocket, ordinal);
  }
  if (!driver.name) skip(std::string(backendName()) + " is not compiled into this build");

  std::printf("shared_bench: two processes on one device\n");
  setup(-1, true);
  signal(SIGALRM, onStuck);
  startPeer(argv[0]);
  std::printf("rounds %d, repeats %d, window %d, frames %d of %d MiB\n\n", rounds, repeats, window,
              frames, frameMib);
  std::printf("%-36s %12s %12s %9s  %s\n", "figure", "baton",
              ("raw " + std::string(driver.name)).c_str(), "ratio", "unit");
  for (auto& b : benches) {
    if (!only.empty() && std::find(only.begin(), only.end(), b.name) == only.end()) continue;
    std::fprintf(stderr, "[%s]\n", b.name);  // progress, so a hang shows where
    b.run();
  }
  alarm(0);
  stopPeer();
  teardown();
  if (pipelineFailed) {
    std::printf("shared_bench: the pipeline's consumer found wrong words: FAILED\n");
    return 1;
  }
  return 0;
}
