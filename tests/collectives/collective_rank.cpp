// baton-collective-rank: ONE rank of a collective group, in its own process — the program behind
// the multi-process tests (tests/collectives/multiprocess.py launches one per GPU).
// The in-process tests (collective_tests.cpp) cannot show what matters between processes: the
// CommunicatorId travelling through the application's own channel, NCCL's inter-process
// transports (P2P/NVLink, shared memory, sockets), and a peer process that dies — which no
// emulation can stage, because the fake NCCL lives in one process.
//
// Each rank creates its device (2 queues: 0 compute, 1 communication) and waits until every rank
// has (files PATH.up.<r> beside --id-file). Rank 0 makes the id (Instance::createCommunicatorId)
// and writes it to --id-file atomically (PATH.tmp, then rename); the other ranks poll for the file
// (60 s). Then each creates its communicator and runs one mode:
//   ops        every collective (allReduce with every ReduceOp, broadcast, reduce, allGather,
//              reduceScatter, allToAll, a send/recv ring) on every ElementType, each checked
//              against a host computation: inputs are a function of rank and index, so every
//              rank computes what the group must produce. One line per check, then
//              `RESULT ops rank=R checks=N failures=M`.
//   pipeline   --iterations layers: each layer's "compute" (a fill) on queue 0 and its all-reduce
//              on queue 1, ordered by timeline semaphores; the all-reduces are submitted first,
//              before the compute they wait for (wait-before-signal). Every layer's sum checked.
//   kill-loop  --iterations all-reduces of --bytes (float32 sum) on queue 1, the host waiting for
//              each; `READY` after the first. The harness SIGKILLs a rank; the survivors' wait must
//              return ErrorSemaphoreFailed (`FAILED_AT <CLOCK_MONOTONIC ns> reason=...`, the same
//              clock as Python's time.monotonic_ns, so the harness measures death-to-wake), then
//              the communicator must be Failed, shrink() without the --dead ranks must give a
//              communicator whose first all-reduce is correct (`SHRINK_OK ranks=N ms=...`), and
//              after tearing everything down the stream machinery must hold nothing
//              (`LEAKCHECK ...` from baton::stream::stats()). `RESULT kill rank=R ok=1|0`.
// Every mode ends with LEAKCHECK after the teardown. A watchdog thread prints `HANG` and exits 3
// after --limit-s: the point of the failure tests is that nothing hangs, so a hang must end the
// process with a verdict instead of stalling the harness.
//
//   baton-collective-rank --rank R --ranks N --id-file PATH [--device D (R)]
//       [--backend cuda|hip] [--mode ops|pipeline|kill-loop] [--timeout-ms T (10000)]
//       [--iterations K] [--bytes B] [--dead R1,R2] [--limit-s S (120)] [--parse-only]
//       [--inject-error-after K (fake NCCL only)]
// Exit codes: 0 every check passed, 1 a check or call failed (printed), 2 bad arguments,
// 3 the watchdog fired.
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baton/baton.hpp"
#include "elements.hpp"
#include "stream_backend.hpp"

namespace {

using namespace baton;
using namespace baton_test;

// ---- options ------------------------------------------------------------------------------------

enum class Mode { Ops, Pipeline, KillLoop };

struct Options {
  uint32_t rank = 0;
  uint32_t ranks = 0;
  std::string idFile;
  int device = -1;  // -1: the rank
  BackendKind backend = BackendKind::Cuda;
  Mode mode = Mode::Ops;
  uint64_t timeoutMs = 10'000;
  uint64_t iterations = 0;  // 0: the mode's default
  uint64_t bytes = 0;       // 0: the mode's default
  std::vector<uint32_t> dead;
  uint64_t limitS = 120;
  bool parseOnly = false;
  // kill-loop on the fake NCCL only: after this many iterations, inject ncclRemoteError (what NCCL
  // reports for a dead peer over sockets) instead of a peer dying, so the failure path — wake,
  // state, shrink, leak check — runs without GPUs (multiprocess.py selftest).
  uint64_t injectAfter = 0;
};

const char* modeName(Mode m) {
  return m == Mode::Ops ? "ops" : m == Mode::Pipeline ? "pipeline" : "kill-loop";
}

bool parseUnsigned(const char* text, uint64_t* out) {
  if (!text || !*text) return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (*end != '\0' || text[0] == '-') return false;
  *out = v;
  return true;
}

void usage() {
  std::fprintf(stderr,
               "usage: baton-collective-rank --rank R --ranks N --id-file PATH [--device D]\n"
               "         [--backend cuda|hip] [--mode ops|pipeline|kill-loop] [--timeout-ms T]\n"
               "         [--iterations K] [--bytes B] [--dead R1,R2] [--limit-s S] "
               "[--parse-only]\n");
}

bool parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--parse-only") {
      o->parseOnly = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", arg.c_str());
      return false;
    }
    const char* value = argv[++i];
    uint64_t n = 0;
    const bool number = parseUnsigned(value, &n);
    if (arg == "--rank" && number) {
      o->rank = static_cast<uint32_t>(n);
    } else if (arg == "--ranks" && number && n > 0) {
      o->ranks = static_cast<uint32_t>(n);
    } else if (arg == "--id-file") {
      o->idFile = value;
    } else if (arg == "--device" && number) {
      o->device = static_cast<int>(n);
    } else if (arg == "--backend" &&
               (std::strcmp(value, "cuda") == 0 || std::strcmp(value, "hip") == 0)) {
      o->backend = std::strcmp(value, "hip") == 0 ? BackendKind::Hip : BackendKind::Cuda;
    } else if (arg == "--mode" && std::strcmp(value, "ops") == 0) {
      o->mode = Mode::Ops;
    } else if (arg == "--mode" && std::strcmp(value, "pipeline") == 0) {
      o->mode = Mode::Pipeline;
    } else if (arg == "--mode" && std::strcmp(value, "kill-loop") == 0) {
      o->mode = Mode::KillLoop;
    } else if (arg == "--timeout-ms" && number && n > 0) {
      o->timeoutMs = n;
    } else if (arg == "--iterations" && number && n > 0) {
      o->iterations = n;
    } else if (arg == "--bytes" && number && n > 0) {
      o->bytes = n;
    } else if (arg == "--limit-s" && number && n > 0) {
      o->limitS = n;
    } else if (arg == "--inject-error-after" && number && n > 0) {
      o->injectAfter = n;
    } else if (arg == "--dead") {
      // A comma-separated list; "" (no rank dead) is allowed.
      std::string list = value;
      size_t at = 0;
      while (at < list.size()) {
        const size_t comma = std::min(list.find(',', at), list.size());
        uint64_t r = 0;
        if (!parseUnsigned(list.substr(at, comma - at).c_str(), &r)) {
          std::fprintf(stderr, "--dead: bad rank list '%s'\n", value);
          return false;
        }
        o->dead.push_back(static_cast<uint32_t>(r));
        at = comma + 1;
      }
    } else {
      std::fprintf(stderr, "bad argument: %s %s\n", arg.c_str(), value);
      return false;
    }
  }
  if (o->ranks == 0 || o->rank >= o->ranks || o->idFile.empty()) {
    std::fprintf(stderr, "--rank, --ranks (rank < ranks) and --id-file are required\n");
    return false;
  }
  for (uint32_t d : o->dead)
    if (d >= o->ranks) {
      std::fprintf(stderr, "--dead: rank %u is not below --ranks %u\n", d, o->ranks);
      return false;
    }
  if (o->device < 0) o->device = static_cast<int>(o->rank);
  if (o->iterations == 0)
    o->iterations = o->mode == Mode::KillLoop ? 10'000'000 : o->mode == Mode::Pipeline ? 8 : 1;
  if (o->bytes == 0) o->bytes = 4u << 20;
  return true;
}

// ---- small helpers ------------------------------------------------------------------------------

uint64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Messages go on one line each: the harness reads the output line by line.
std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// Prints the failed call with baton's message; false when `r` is an error.
bool check(Result r, const char* what) {
  if (!isError(r)) return true;
  std::printf("ERROR %s: %s: %s\n", what, resultName(r), oneLine(lastErrorMessage()).c_str());
  return false;
}

// Ends the process with a verdict when it runs past its limit: a survivor stuck in a wait, a
// shrink or a teardown must not stall the harness, and must be counted as a hang.
class Watchdog {
 public:
  Watchdog(uint64_t limitS, uint32_t rank)
      : thread_([this, limitS, rank] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (cv_.wait_for(lock, std::chrono::seconds(limitS), [this] { return stopped_; })) return;
          std::printf("HANG rank=%u: still running after %" PRIu64 " s (--limit-s)\n", rank,
                      limitS);
          std::fflush(stdout);
          _exit(3);
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

// ---- element encoding: elements.hpp ----------------------------------------------------------

// The range an integer type holds (a float type: unbounded here).
bool fitsType(ElementType type, double v) {
  switch (type) {
    case ElementType::Int8: return v >= -128 && v <= 127;
    case ElementType::Uint8: return v >= 0 && v <= 255;
    case ElementType::Int32: return v >= -2147483648.0 && v <= 2147483647.0;
    case ElementType::Uint32: return v >= 0 && v <= 4294967295.0;
    case ElementType::Int64:
    case ElementType::Uint64: return v >= 0 || type == ElementType::Int64;
    default: return true;
  }
}

// ---- inputs and the host's reference ------------------------------------------------------------

// Rank r's input for element j: small integers, different per rank, and, with a count that is
// not a multiple of 3, different per slot of a wide buffer (so a misrouted slot shows). With 2
// ranks every sum, product, max, min and average of them is exact in every element type (the
// largest is 3 * 4 = 12, which float8 e5m2 holds); see compare() for more ranks.
double input(uint32_t r, uint64_t j) { return static_cast<double>(1 + r + (j % 3)); }

std::vector<double> inputs(uint32_t r, uint64_t count, uint64_t first = 0) {
  std::vector<double> v(count);
  for (uint64_t i = 0; i < count; ++i) v[i] = input(r, first + i);
  return v;
}

// ---- the rank's objects -------------------------------------------------------------------------

struct Rank {
  Options opt;
  UniqueInstance instance;
  UniqueDevice device;
  Queue compute, comm;  // queue 0 and queue 1
  UniqueCommunicator communicator;
  UniqueCommunicator shrunk;  // kill-loop: the survivors' communicator (destroyed first)
  UniqueSemaphore done;       // the one-shot runs' timeline (runAndWait)
  uint64_t doneValue = 0;
  uint32_t libraryVersion = 0;  // CollectiveSupport::version
  std::vector<UniqueBuffer> buffers;

  // How long a wait that must succeed may take: past the communicator's own timeout, which turns
  // a stall into a failed semaphore well before this.
  uint64_t longNs() const { return (opt.timeoutMs + 30'000) * 1'000'000ull; }

  Buffer buffer(uint64_t bytes, MemoryKind memory = MemoryKind::Device) {
    BufferCreateInfo info;
    info.size = bytes;
    info.memory = memory;
    Buffer b;
    if (!check(device->createBuffer(info, &b), "createBuffer")) return Buffer();
    buffers.emplace_back(b);
    return b;
  }

  // Records with `record` into a new command buffer (null on an error, printed): a graph command
  // buffer with BATON_TEST_COMMAND_BUFFERS=graph (its collectives captured at its submission).
  UniqueCommandBuffer record(const std::function<Result(CommandBuffer)>& recordFn) {
    UniqueCommandBuffer cb;
    CommandBufferCreateInfo info;
    const char* mode = std::getenv("BATON_TEST_COMMAND_BUFFERS");
    if (mode && std::string(mode) == "graph") info.usage = CommandBufferUsage::Graph;
    if (!check(device->createCommandBuffer(info, cb.put()), "createCommandBuffer")) return {};
    if (!check(cb->begin(), "begin") || !check(recordFn(*cb), "record") || !check(cb->end(), "end"))
      return {};
    return cb;
  }

  Result submit(Queue queue, CommandBuffer cb, std::vector<SemaphoreValue> waits,
                std::vector<SemaphoreValue> signals) {
    SubmitInfo info;
    info.waits = waits;
    info.commandBuffers = Span<const CommandBuffer>(&cb, 1);
    info.signals = signals;
    return queue.submit(Span<const SubmitInfo>(&info, 1));
  }

  // Records, submits to `queue` and waits for it; false on an error (printed). A failed signal
  // leaves `done` failed for good: a new one then serves the next run, so that one failure does
  // not fail every check after it.
  bool runAndWait(Queue queue, const std::function<Result(CommandBuffer)>& recordFn,
                  const char* what) {
    UniqueCommandBuffer cb = record(recordFn);
    if (!cb) return false;
    const uint64_t value = ++doneValue;
    if (!check(submit(queue, *cb, {}, {{*done, value}}), what)) return false;
    const Result waited = done->wait(value, longNs());
    if (waited == Result::ErrorSemaphoreFailed) {
      UniqueSemaphore fresh;
      SemaphoreCreateInfo si;
      si.debugName = "done";
      if (instance->createSemaphore(si, fresh.put()) == Result::Success) {
        done = std::move(fresh);
        doneValue = 0;
      }
    }
    return check(waited, what);
  }

  bool upload(Buffer b, const std::vector<uint8_t>& bytes) {
    for (uint64_t at = 0; at < bytes.size(); at += kMaxUpdateSize) {
      const uint64_t n = std::min<uint64_t>(kMaxUpdateSize, bytes.size() - at);
      if (!runAndWait(
              compute, [&](CommandBuffer cb) { return cb.updateBuffer(b, at, n, &bytes[at]); },
              "upload"))
        return false;
    }
    return true;
  }

  // Reads `bytes` of b through a pinned staging buffer, freed again at once.
  bool download(Buffer b, uint64_t bytes, std::vector<uint8_t>* out) {
    UniqueBuffer staging;
    BufferCreateInfo info;
    info.size = bytes;
    info.memory = MemoryKind::HostPinned;
    if (!check(device->createBuffer(info, staging.put()), "createBuffer (staging)")) return false;
    const Buffer s = *staging;
    if (!runAndWait(
            compute, [&](CommandBuffer cb) { return cb.copyBuffer(b, 0, s, 0, bytes); },
            "download"))
      return false;
    void* p = nullptr;
    if (!check(staging->map(&p), "map")) return false;
    out->assign(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + bytes);
    return true;
  }
};

void debugMessage(MessageSeverity severity, const char* message, void*) {
  if (severity == MessageSeverity::Info) return;
  std::fprintf(stderr, "baton %s: %s\n", severity == MessageSeverity::Error ? "error" : "warning",
               oneLine(message).c_str());
}

// Every rank says it is up (PATH.up.<rank>, made once its device exists) and waits for the
// others: creation must be done within the communicator's timeout, which in the kill tests is
// short (2 s), so the ranks' unequal start-up (driver and context initialisation) must not count.
bool waitForEveryRank(const Options& o) {
  const std::string mine = o.idFile + ".up." + std::to_string(o.rank);
  if (!std::ofstream(mine)) {
    std::printf("ERROR cannot write %s\n", mine.c_str());
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (uint32_t q = 0; q < o.ranks; ++q) {
    const std::string theirs = o.idFile + ".up." + std::to_string(q);
    while (!std::ifstream(theirs)) {
      if (std::chrono::steady_clock::now() >= deadline) {
        std::printf("ERROR rank %u did not start within 60 s (no %s)\n", q, theirs.c_str());
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return true;
}

// Rank 0 makes the id and publishes it atomically (a reader never sees half a file); the others
// poll for it.
bool exchangeId(Rank& k, CommunicatorId* id) {
  const std::string& path = k.opt.idFile;
  if (k.opt.rank == 0) {
    if (!check(k.instance->createCommunicatorId(k.opt.backend, id), "createCommunicatorId"))
      return false;
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(id->bytes), kCommunicatorIdSize);
      if (!out) {
        std::printf("ERROR cannot write %s\n", tmp.c_str());
        return false;
      }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::printf("ERROR cannot rename %s to %s: %s\n", tmp.c_str(), path.c_str(),
                  std::strerror(errno));
      return false;
    }
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      in.read(reinterpret_cast<char*>(id->bytes), kCommunicatorIdSize);
      if (in.gcount() == static_cast<std::streamsize>(kCommunicatorIdSize)) return true;
      std::printf("ERROR %s holds %lld bytes, not %zu\n", path.c_str(),
                  static_cast<long long>(in.gcount()), kCommunicatorIdSize);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::printf("ERROR no id in %s after 60 s (rank 0 did not write it)\n", path.c_str());
  return false;
}

bool setUp(Rank& k) {
  InstanceCreateInfo ii;
  ii.debugCallback = debugMessage;
  ii.backendMask = backendBit(k.opt.backend);
  if (!check(createInstance(ii, k.instance.put()), "createInstance")) return false;
  CollectiveSupport support;
  if (!check(k.instance->getCollectiveSupport(k.opt.backend, &support), "getCollectiveSupport"))
    return false;
  if (!support.available) {
    std::printf("ERROR %s collectives unavailable: %s\n", backendName(k.opt.backend),
                support.reason);
    return false;
  }
  k.libraryVersion = support.version;
  std::printf("library %s version %u canRevoke=%d canShrink=%d\n", support.library, support.version,
              support.canRevoke, support.canShrink);

  uint32_t count = 0;
  if (!check(k.instance->enumeratePhysicalDevices(&count, nullptr), "enumeratePhysicalDevices"))
    return false;
  std::vector<PhysicalDevice> all(count);
  if (!check(k.instance->enumeratePhysicalDevices(&count, all.data()), "enumeratePhysicalDevices"))
    return false;
  std::vector<PhysicalDevice> mine;
  for (PhysicalDevice p : all) {
    PhysicalDeviceProperties props;
    if (check(p.getProperties(&props), "getProperties") && props.backend == k.opt.backend)
      mine.push_back(p);
  }
  if (static_cast<size_t>(k.opt.device) >= mine.size()) {
    std::printf("ERROR --device %d: the %s backend has %zu device(s)\n", k.opt.device,
                backendName(k.opt.backend), mine.size());
    return false;
  }
  PhysicalDeviceProperties props;
  (void)mine[static_cast<size_t>(k.opt.device)].getProperties(&props);
  std::printf("rank %u of %u on %s:%u %s, mode %s\n", k.opt.rank, k.opt.ranks,
              backendName(k.opt.backend), props.ordinal, props.name, modeName(k.opt.mode));

  DeviceCreateInfo di;
  di.queueCount = 2;
  di.debugName = "rank";
  if (!check(k.instance->createDevice(mine[static_cast<size_t>(k.opt.device)], di, k.device.put()),
             "createDevice") ||
      !check(k.device->getQueue(0, &k.compute), "getQueue") ||
      !check(k.device->getQueue(1, &k.comm), "getQueue"))
    return false;
  SemaphoreCreateInfo si;
  si.debugName = "done";
  if (!check(k.instance->createSemaphore(si, k.done.put()), "createSemaphore")) return false;

  CommunicatorCreateInfo ci;
  if (!waitForEveryRank(k.opt) || !exchangeId(k, &ci.id)) return false;
  ci.rank = k.opt.rank;
  ci.rankCount = k.opt.ranks;
  ci.timeoutNs = k.opt.timeoutMs * 1'000'000ull;
  ci.debugName = "multiprocess";
  const uint64_t start = monotonicNs();
  if (!check(k.device->createCommunicator(ci, k.communicator.put()), "createCommunicator"))
    return false;
  std::printf("communicator ready in %.1f ms\n", (monotonicNs() - start) / 1e6);
  return true;
}

// Destroys everything, then reports what the stream machinery still holds (process-wide): after
// the instance is gone, every event in use, timepoint and in-flight record must be released.
bool tearDownAndCheckLeaks(Rank& k) {
  if (k.device) (void)check(k.device->waitIdle(k.longNs()), "waitIdle");
  k.buffers.clear();
  k.done.reset();
  k.shrunk.reset();
  k.communicator.reset();
  k.device.reset();
  k.instance.reset();
  const stream::Stats st = stream::stats();
  std::printf("LEAKCHECK events_in_use=%" PRIu64 " timepoints_live=%" PRIu64
              " records_in_flight=%" PRIu64 "\n",
              st.eventsInUse, st.timepointsLive, st.recordsInFlight);
  return st.eventsInUse == 0 && st.timepointsLive == 0 && st.recordsInFlight == 0;
}

// ---- mode ops -----------------------------------------------------------------------------------

class OpsRun {
 public:
  explicit OpsRun(Rank& k) : k_(k), n_(k.opt.ranks), r_(k.opt.rank) {}

  int run() {
    for (ElementType type : kAllTypes) runType(type);
    const bool clean = tearDownAndCheckLeaks(k_);
    std::printf("RESULT ops rank=%u checks=%u failures=%u\n", r_, checks_, failures_);
    return failures_ == 0 && clean ? 0 : 1;
  }

 private:
  // Elements per rank and slot: not a multiple of 3, so that slots of a wide buffer differ.
  static constexpr uint64_t kCount = 1000;

  // Compares what the device produced with the host's reference, as the type holds it. With 2
  // ranks every result is exact; with more, a float type narrower than float32 may round partial
  // reductions (the library's order is its own), so one unit in the last place per further rank
  // is allowed, and an integer result the type cannot hold is skipped.
  void compare(const std::string& what, ElementType type, const std::vector<uint8_t>& got,
               const std::vector<double>& want) {
    const uint64_t es = elementSize(type);
    const int mbits = mantissaBits(type);
    for (double w : want)
      if (!fitsType(type, w)) {
        std::printf("SKIP %s %s: a result outside the type's range\n", what.c_str(),
                    elementTypeName(type));
        return;
      }
    ++checks_;
    std::string bad;
    for (size_t i = 0; i < want.size() && bad.empty(); ++i) {
      std::vector<uint8_t> held(es);
      encode(type, want[i], held.data());
      const double w = decode(type, held.data());  // the reference as the type holds it
      const double g = decode(type, &got[i * es]);
      double slack = 0;
      if (mbits >= 0 && mbits < 23 && n_ > 2 && w != 0)
        slack = (n_ - 2) *
                std::ldexp(1.0, static_cast<int>(std::floor(std::log2(std::fabs(w)))) - mbits);
      if (!(std::fabs(g - w) <= slack)) {
        char text[160];
        std::snprintf(text, sizeof text, "element %zu: got %.17g, want %.17g", i, g, w);
        bad = text;
      }
    }
    if (bad.empty()) {
      std::printf("CHECK %s %s ok\n", what.c_str(), elementTypeName(type));
    } else {
      ++failures_;
      std::printf("CHECK %s %s FAILED %s\n", what.c_str(), elementTypeName(type), bad.c_str());
    }
  }

  void callFailed(const std::string& what, ElementType type) {
    ++checks_;
    ++failures_;
    std::printf("CHECK %s %s FAILED (the call failed)\n", what.c_str(), elementTypeName(type));
  }

  // Runs one collective on the comm queue, then downloads `dst` and compares it with `want`.
  void runCheck(const std::string& what, ElementType type,
                const std::function<Result(CommandBuffer)>& recordFn, Buffer dst,
                const std::vector<double>& want, bool compareHere = true) {
    if (!k_.runAndWait(k_.comm, recordFn, what.c_str())) return callFailed(what, type);
    if (!compareHere) {
      std::printf("CHECK %s %s (not the root: nothing to compare)\n", what.c_str(),
                  elementTypeName(type));
      return;
    }
    std::vector<uint8_t> got;
    if (!k_.download(dst, want.size() * elementSize(type), &got)) return callFailed(what, type);
    compare(what, type, got, want);
  }

  // NCCL 2.24 and later refuse the average of float8 on a communicator of one rank (its one-rank
  // path has no float8 kernel for it), and baton refuses it when it is recorded: the check passes
  // when the recording call returns ErrorNotSupported naming the operation, the type and NCCL.
  // On CUDA (NCCL) the refusal is required: recorded, the call would fail the run. Under HIP names
  // a real RCCL, whose own rules baton does not know, may take it: then it runs as any check.
  // True when the check was decided here.
  bool refusedWhenRecorded(const std::string& what, ElementType type, ReduceOp op,
                           const std::function<Result(CommandBuffer)>& recordFn) {
    const bool float8 = type == ElementType::Float8E4M3 || type == ElementType::Float8E5M2;
    if (!(n_ == 1 && op == ReduceOp::Avg && float8 && k_.libraryVersion >= 22400)) return false;
    UniqueCommandBuffer cb;
    if (k_.device->createCommandBuffer(CommandBufferCreateInfo(), cb.put()) != Result::Success ||
        cb->begin() != Result::Success)
      return false;  // runCheck reports it
    const Result r = recordFn(*cb);
    const std::string message = lastErrorMessage();
    if (r == Result::Success && k_.opt.backend != BackendKind::Cuda) return false;
    ++checks_;
    const std::string named = what + " of " + elementTypeName(type);
    if (r == Result::ErrorNotSupported && message.find(named) != std::string::npos &&
        message.find("NCCL") != std::string::npos) {
      std::printf("CHECK %s %s ok (refused when recorded: %s)\n", what.c_str(),
                  elementTypeName(type), oneLine(message).c_str());
    } else {
      ++failures_;
      std::printf("CHECK %s %s FAILED (NCCL refuses it with one rank; recording returned %s: %s)\n",
                  what.c_str(), elementTypeName(type), resultName(r), oneLine(message).c_str());
    }
    return true;
  }

  void runType(ElementType type) {
    const uint64_t es = elementSize(type), slot = kCount * es, wideCount = n_ * kCount;
    const Communicator c = *k_.communicator;
    // src: this rank's kCount inputs; wide: n slots of them (reduceScatter, allToAll);
    // dst: room for n slots.
    k_.buffers.clear();  // the previous type's buffers
    const Buffer src = k_.buffer(slot), wide = k_.buffer(n_ * slot), dst = k_.buffer(n_ * slot);
    if (!src || !wide || !dst || !k_.upload(src, encodeAll(type, inputs(r_, kCount))) ||
        !k_.upload(wide, encodeAll(type, inputs(r_, wideCount))))
      return callFailed("setup", type);

    for (uint32_t o = 0; o < kReduceOpCount; ++o) {
      const auto op = static_cast<ReduceOp>(o);
      std::vector<double> want(kCount);
      for (uint64_t i = 0; i < kCount; ++i) {
        std::vector<double> v;
        for (uint32_t q = 0; q < n_; ++q) v.push_back(input(q, i));
        want[i] = reduceHost(op, v, type);
      }
      const std::string what = std::string("allReduce ") + reduceOpName(op);
      auto record = [&](CommandBuffer cb) {
        return cb.allReduce(c, src, 0, dst, 0, kCount, type, op);
      };
      if (refusedWhenRecorded(what, type, op, record)) continue;
      runCheck(what, type, record, dst, want);
    }

    const uint32_t last = n_ - 1;
    runCheck(
        "broadcast root=" + std::to_string(last), type,
        [&](CommandBuffer cb) { return cb.broadcast(c, src, 0, dst, 0, kCount, type, last); }, dst,
        inputs(last, kCount));

    {
      std::vector<double> want(kCount, 0.0);
      for (uint64_t i = 0; i < kCount; ++i)
        for (uint32_t q = 0; q < n_; ++q) want[i] += input(q, i);
      runCheck(
          "reduce sum root=0", type,
          [&](CommandBuffer cb) {
            return cb.reduce(c, src, 0, dst, 0, kCount, type, ReduceOp::Sum, 0);
          },
          dst, want, r_ == 0);
    }

    {
      std::vector<double> want;
      for (uint32_t q = 0; q < n_; ++q) {
        const std::vector<double> v = inputs(q, kCount);
        want.insert(want.end(), v.begin(), v.end());
      }
      runCheck(
          "allGather", type,
          [&](CommandBuffer cb) { return cb.allGather(c, src, 0, dst, 0, kCount, type); }, dst,
          want);
    }

    {
      // Rank r gets the sum of slot r of every rank's wide buffer.
      std::vector<double> want(kCount, 0.0);
      for (uint64_t i = 0; i < kCount; ++i)
        for (uint32_t q = 0; q < n_; ++q) want[i] += input(q, r_ * kCount + i);
      runCheck(
          "reduceScatter sum", type,
          [&](CommandBuffer cb) {
            return cb.reduceScatter(c, wide, 0, dst, 0, kCount, type, ReduceOp::Sum);
          },
          dst, want);
    }

    {
      // Slot q of this rank's dst is slot r of rank q's wide buffer.
      std::vector<double> want;
      for (uint32_t q = 0; q < n_; ++q) {
        const std::vector<double> v = inputs(q, kCount, r_ * kCount);
        want.insert(want.end(), v.begin(), v.end());
      }
      runCheck(
          "allToAll", type,
          [&](CommandBuffer cb) { return cb.allToAll(c, wide, 0, dst, 0, kCount, type); }, dst,
          want);
    }

    {
      // A ring in both directions, sends first: it completes only because one command buffer's
      // sends and receives go to the library as one group. dst slot 0 receives from the previous
      // rank, slot 1 (or the same slot with one rank) from the next.
      const uint32_t next = (r_ + 1) % n_, prev = (r_ + n_ - 1) % n_;
      const uint64_t second = n_ > 1 ? slot : 0;
      std::vector<double> want = inputs(prev, kCount);
      if (n_ > 1) {
        const std::vector<double> v = inputs(next, kCount);
        want.insert(want.end(), v.begin(), v.end());
      }
      runCheck(
          "send/recv ring", type,
          [&](CommandBuffer cb) {
            Result res = cb.send(c, src, 0, kCount, type, next);
            if (res == Result::Success && n_ > 1) res = cb.send(c, src, 0, kCount, type, prev);
            if (res == Result::Success) res = cb.recv(c, dst, 0, kCount, type, prev);
            if (res == Result::Success && n_ > 1) res = cb.recv(c, dst, second, kCount, type, next);
            return res;
          },
          dst, want);
    }
  }

  Rank& k_;
  const uint32_t n_, r_;
  uint32_t checks_ = 0, failures_ = 0;
};

// ---- mode pipeline ------------------------------------------------------------------------------

int runPipeline(Rank& k) {
  const uint32_t n = k.opt.ranks, r = k.opt.rank;
  const uint64_t layers = k.opt.iterations;
  const uint64_t count = std::max<uint64_t>(1, k.opt.bytes / 4), bytes = count * 4;
  uint32_t checks = 0, failures = 0;
  auto verdict = [&](bool ok, const std::string& what) {
    ++checks;
    if (!ok) ++failures;
    std::printf("CHECK %s %s\n", what.c_str(), ok ? "ok" : "FAILED");
  };

  UniqueSemaphore computed, reduced;
  SemaphoreCreateInfo si;
  si.debugName = "computed";
  bool ok = check(k.instance->createSemaphore(si, computed.put()), "createSemaphore");
  si.debugName = "reduced";
  ok = ok && check(k.instance->createSemaphore(si, reduced.put()), "createSemaphore");
  std::vector<Buffer> grads, sums;
  for (uint64_t l = 0; ok && l < layers; ++l) {
    grads.push_back(k.buffer(bytes));
    sums.push_back(k.buffer(bytes));
    ok = grads.back() && sums.back();
  }
  std::vector<UniqueCommandBuffer> cbs;
  // The all-reduces first, each waiting for a compute value nothing has signalled yet.
  for (uint64_t l = 0; ok && l < layers; ++l) {
    const Buffer g = grads[l], s = sums[l];
    cbs.push_back(k.record([&](CommandBuffer cb) {
      return cb.allReduce(*k.communicator, g, 0, s, 0, count, ElementType::Int32, ReduceOp::Sum);
    }));
    ok = cbs.back() &&
         check(k.submit(k.comm, *cbs.back(), {{*computed, l + 1}}, {{*reduced, l + 1}}),
               "submit allReduce");
  }
  if (ok) {
    uint64_t v = 1;
    ok = check(reduced->getValue(&v), "getValue");
    verdict(ok && v == 0,
            "all-reduces held until their compute (reduced=" + std::to_string(v) + ")");
  }
  // Then the compute: layer l's gradient on this rank is 10 l + r + 1 everywhere.
  for (uint64_t l = 0; ok && l < layers; ++l) {
    const Buffer g = grads[l];
    const auto value = static_cast<uint32_t>(10 * l + r + 1);
    cbs.push_back(k.record([&](CommandBuffer cb) { return cb.fillBuffer(g, 0, bytes, value); }));
    ok = cbs.back() &&
         check(k.submit(k.compute, *cbs.back(), {}, {{*computed, l + 1}}), "submit compute");
  }
  const uint64_t start = monotonicNs();
  ok = ok && check(reduced->wait(layers, k.longNs()), "wait for the last all-reduce");
  if (ok)
    std::printf("%" PRIu64 " layers of %" PRIu64 " bytes reduced in %.1f ms after the compute\n",
                layers, bytes, (monotonicNs() - start) / 1e6);
  for (uint64_t l = 0; ok && l < layers; ++l) {
    std::vector<uint8_t> got;
    if (!k.download(sums[l], bytes, &got)) {
      verdict(false, "layer " + std::to_string(l) + " download");
      continue;
    }
    const int64_t want = static_cast<int64_t>(n) * static_cast<int64_t>(10 * l + 1) +
                         static_cast<int64_t>(n) * (n - 1) / 2;
    uint64_t wrong = 0, firstWrong = 0;
    int32_t firstValue = 0;
    for (uint64_t i = 0; i < count; ++i) {
      int32_t v;
      std::memcpy(&v, &got[i * 4], 4);
      if (v != want && wrong++ == 0) {
        firstWrong = i;
        firstValue = v;
      }
    }
    std::string what = "layer " + std::to_string(l) + " sum=" + std::to_string(want);
    if (wrong)
      what += " (" + std::to_string(wrong) + " wrong, element " + std::to_string(firstWrong) +
              " is " + std::to_string(firstValue) + ")";
    verdict(wrong == 0, what);
  }
  if (!ok) {
    verdict(false, "pipeline ran");
    // Release what still waits for compute that will never come, so the teardown does not wait.
    if (computed) (void)computed->fail("the pipeline stopped on an error");
  }
  cbs.clear();
  computed.reset();
  reduced.reset();
  const bool clean = tearDownAndCheckLeaks(k);
  std::printf("RESULT pipeline rank=%u checks=%u failures=%u\n", r, checks, failures);
  return failures == 0 && clean ? 0 : 1;
}

// ---- mode kill-loop -----------------------------------------------------------------------------

// After the failure: the survivors shrink, and their first all-reduce on the new communicator
// (on the same comm queue, behind the stuck one that shrink ends) must be correct. Returns "" or
// why not.
std::string shrinkAndCheck(Rank& k, Buffer checkSrc, Buffer checkDst, uint64_t checkCount,
                           uint32_t* shrunkRanks) {
  if (Result r = k.communicator->shrink(Span<const uint32_t>(k.opt.dead), k.shrunk.put());
      isError(r))
    return std::string("shrink: ") + resultName(r) + ": " + oneLine(lastErrorMessage());
  uint32_t newRank = 0;
  if (!check(k.shrunk->getRankCount(shrunkRanks), "getRankCount") ||
      !check(k.shrunk->getRank(&newRank), "getRank"))
    return "the shrunk communicator's rank";
  std::printf("shrunk: rank %u of %u\n", newRank, *shrunkRanks);
  const Communicator c = *k.shrunk;
  if (!k.runAndWait(
          k.comm,
          [&](CommandBuffer cb) {
            return cb.allReduce(c, checkSrc, 0, checkDst, 0, checkCount, ElementType::Float32,
                                ReduceOp::Sum);
          },
          "allReduce on the shrunk communicator"))
    return "the all-reduce on the shrunk communicator failed";
  std::vector<uint8_t> got;
  if (!k.download(checkDst, checkCount * 4, &got)) return "download";
  for (uint64_t i = 0; i < checkCount; ++i) {
    double want = 0;
    for (uint32_t q = 0; q < k.opt.ranks; ++q)
      if (std::find(k.opt.dead.begin(), k.opt.dead.end(), q) == k.opt.dead.end())
        want += input(q, i);
    const double g = decode(ElementType::Float32, &got[i * 4]);
    if (g != want)
      return "element " + std::to_string(i) + ": got " + std::to_string(g) + ", want " +
             std::to_string(want);
  }
  return "";
}

// --inject-error-after: the fake NCCL's hook (tests/cuda/fake/nccl.cpp), on every communicator.
bool injectFakeError(BackendKind backend) {
  const char* path =
      std::getenv(backend == BackendKind::Hip ? "BATON_RCCL_LIBRARY" : "BATON_NCCL_LIBRARY");
  void* module = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  using Inject = int (*)(void*, int);
  auto inject =
      module ? reinterpret_cast<Inject>(dlsym(module, "batonFakeNcclInjectAsyncError")) : nullptr;
  if (!inject || inject(nullptr, 6 /* ncclRemoteError */) != 0) {
    std::printf("ERROR --inject-error-after needs the fake NCCL (batonFakeNcclInjectAsyncError)\n");
    return false;
  }
  std::printf("injected ncclRemoteError\n");
  return true;
}

int runKillLoop(Rank& k) {
  const uint32_t r = k.opt.rank;
  const uint64_t count = std::max<uint64_t>(1, k.opt.bytes / 4), bytes = count * 4;
  constexpr uint64_t kCheckCount = 1024;
  auto result = [&](bool ok, const std::string& reason) {
    if (ok)
      std::printf("RESULT kill rank=%u ok=1\n", r);
    else
      std::printf("RESULT kill rank=%u ok=0 reason=%s\n", r, reason.c_str());
    return ok ? 0 : 1;
  };

  // The loop's buffers, and the check's input, written before the loop: after the failure only
  // the shrink and its all-reduce run.
  const Buffer src = k.buffer(bytes), dst = k.buffer(bytes);
  const Buffer checkSrc = k.buffer(kCheckCount * 4), checkDst = k.buffer(kCheckCount * 4);
  if (!src || !dst || !checkSrc || !checkDst ||
      !k.runAndWait(
          k.compute, [&](CommandBuffer cb) { return cb.fillBuffer(src, 0, bytes, 0x3f800000u); },
          "fill") ||
      !k.upload(checkSrc, encodeAll(ElementType::Float32, inputs(r, kCheckCount))))
    return result(false, "setup");
  UniqueSemaphore loop;
  SemaphoreCreateInfo si;
  si.debugName = "loop";
  if (!check(k.instance->createSemaphore(si, loop.put()), "createSemaphore"))
    return result(false, "setup");
  // One recording, submitted K times.
  UniqueCommandBuffer cb = k.record([&](CommandBuffer c) {
    return c.allReduce(*k.communicator, src, 0, dst, 0, count, ElementType::Float32, ReduceOp::Sum);
  });
  if (!cb) return result(false, "record");

  uint64_t failedAt = 0, i = 1;
  std::string reason;
  for (; i <= k.opt.iterations; ++i) {
    if (k.opt.injectAfter != 0 && i == k.opt.injectAfter + 1 && !injectFakeError(k.opt.backend))
      return result(false, "inject");
    Result res = k.submit(k.comm, *cb, {}, {{*loop, i}});
    if (res == Result::Success) res = loop->wait(i, kWaitForever);  // the watchdog bounds it
    if (res == Result::Success) {
      if (i == 1) {
        std::printf("READY\n");
        std::fflush(stdout);
      }
      continue;
    }
    failedAt = monotonicNs();
    reason = oneLine(lastErrorMessage());
    if (res == Result::ErrorInvalidState) {
      // The submit was refused: the communicator failed between two iterations.
      char text[1024] = {};
      (void)k.communicator->getFailureReason(text, sizeof text);
      reason = "submit refused (" + reason + "); " + oneLine(text);
    } else if (res != Result::ErrorSemaphoreFailed) {
      std::printf("ERROR iteration %" PRIu64 ": %s: %s\n", i, resultName(res), reason.c_str());
      return result(false, std::string("wait-") + resultName(res));
    }
    break;
  }
  if (failedAt == 0) {
    loop.reset();
    cb.reset();
    (void)tearDownAndCheckLeaks(k);
    return result(false, "no-failure");
  }
  std::printf("FAILED_AT %" PRIu64 " reason=%s\n", failedAt, reason.c_str());
  std::printf("iteration %" PRIu64 " failed\n", i);

  CommunicatorState state = CommunicatorState::Ready;
  const bool stateFailed =
      check(k.communicator->getState(&state), "getState") && state == CommunicatorState::Failed;
  std::printf("STATE %s\n", stateFailed ? "failed" : "NOT failed");

  uint32_t shrunkRanks = 0;
  const std::string shrinkError = shrinkAndCheck(k, checkSrc, checkDst, kCheckCount, &shrunkRanks);
  const double ms = (monotonicNs() - failedAt) / 1e6;
  if (shrinkError.empty())
    std::printf("SHRINK_OK ranks=%u ms=%.1f\n", shrunkRanks, ms);
  else
    std::printf("SHRINK_FAIL ms=%.1f reason=%s\n", ms, shrinkError.c_str());

  loop.reset();
  cb.reset();
  const bool clean = tearDownAndCheckLeaks(k);
  if (!stateFailed) return result(false, "the communicator is not Failed");
  if (!shrinkError.empty()) return result(false, "shrink");
  if (!clean) return result(false, "leak");
  return result(true, "");
}

}  // namespace

int main(int argc, char** argv) {
  // The harness reads the output as it comes (READY above all): line-buffer it into the pipe.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // NVLink multicast can take the host's GPUs out of service (a rule of the multi-GPU test
  // machines): off unless the caller chose, set before baton loads NCCL.
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  Options opt;
  if (!parseOptions(argc, argv, &opt)) {
    usage();
    return 2;
  }
  if (opt.parseOnly) {
    std::string dead;
    for (uint32_t d : opt.dead) dead += (dead.empty() ? "" : ",") + std::to_string(d);
    std::printf("rank=%u ranks=%u id-file=%s device=%d backend=%s mode=%s timeout-ms=%" PRIu64
                " iterations=%" PRIu64 " bytes=%" PRIu64 " dead=%s limit-s=%" PRIu64 "\n",
                opt.rank, opt.ranks, opt.idFile.c_str(), opt.device, backendName(opt.backend),
                modeName(opt.mode), opt.timeoutMs, opt.iterations, opt.bytes, dead.c_str(),
                opt.limitS);
    return 0;
  }
  Watchdog watchdog(opt.limitS, opt.rank);
  Rank k;
  k.opt = opt;
  if (!setUp(k)) {
    // The RESULT line each mode ends with, so that the harness reports the rank, not a silence.
    if (opt.mode == Mode::KillLoop)
      std::printf("RESULT kill rank=%u ok=0 reason=setup\n", opt.rank);
    else
      std::printf("RESULT %s rank=%u checks=0 failures=1 reason=setup\n", modeName(opt.mode),
                  opt.rank);
    return 1;
  }
  switch (opt.mode) {
    case Mode::Ops: return OpsRun(k).run();
    case Mode::Pipeline: return runPipeline(k);
    case Mode::KillLoop: return runKillLoop(k);
  }
  return 1;
}
