// frame_bench: an engine's frame on baton against the same frame written by hand with raw driver
// streams and events, in the same run. `--backend hip` runs the HIP backend against raw HIP calls
// (raw_driver.hpp); the default is CUDA.
//
// The frame: three queues of one device and the host. 64 small kernels per frame in 11 passes
// (kPasses below: shadow, G-buffer, lighting and post chains of a deferred renderer, with
// skinning, light culling, SSAO and exposure on an async-compute queue), 11 cross-queue edges,
// a host call at the end of the frame, three frames in flight: before it reuses a frame's
// resources, the CPU waits for the end of the frame that used them last (frame N-3), as an engine
// does. baton: one timeline semaphore per queue, one submit per pass (its waits, one command
// buffer of native callbacks that launch the pass's kernels, its signal), the host call recorded
// in the last pass, and a host wait on queue C's timeline. Raw: one stream per queue, one event per
// pass that another pass waits for (cuEventRecord / cuStreamWaitEvent), cuLaunchHostFunc (HIP:
// hipStreamAddCallback) and cuEventSynchronize on the frame's last event. Both issue the same
// kernels with the same arguments from one submitting thread (this one); baton's waits are reduced
// to one per producing queue (a timeline value covers the earlier ones), as the raw frame waits
// for one event per producing stream.
//
// Results are checked, so that a broken ordering fails the run (exit code 1) instead of only
// slowing it: each kernel (1 thread) reads the stamps its predecessors wrote this frame (the frame
// number), counts a mismatch, and writes its own; the frame's last kernel reads all 64 stamps and
// the mismatch count and writes a verdict to pinned memory, which the host call checks. The host
// call also checks that frames end in order, and the CPU that a frame's host call has run when it
// sees the frame's end. Where the driver cannot run kernels (the tests' emulated driver), each
// node is instead one or two 4-byte copies of its predecessors' stamps (baton: copyBuffer; raw:
// cuMemcpyAsync), which the host call checks: a smoke test of the queues and of the ordering, not
// a measurement; the output says so.
//
// Figures, each for baton, raw and their ratio, with their targets: frame time (wall time per frame
// at steady state), CPU time of the submitting thread per frame (CLOCK_THREAD_CPUTIME_ID) and CPU
// time of the whole process per frame (CLOCK_PROCESS_CPUTIME_ID: baton's threads and the driver's
// count). Steady state: each run skips its first tenth of the frames, then measures between two
// points where the CPU has just seen frame N-3 end. Runs alternate baton and raw (3 of each by
// default); the table gives the medians and the median of the per-run ratios (baton and raw back to
// back).
//
// Also in each run: baton with every submission issued by the device's issuing thread (baton-it)
// and with direct issue whenever nothing holds a submission back (baton-di), and the raw frame with
// its driver calls made by a second thread that this one hands each pass to (raw-2t): the
// frame-time floor of a design that issues on a thread of its own. The graph sides: baton-graph
// (each pass of each slot recorded once as a graph command buffer), bgraph-inf (the same, the host
// call kHostCallInfallible), bgraph-it (bgraph-inf with every submission made by the issuing
// thread) and raw-graph (the raw frame as CUDA/HIP graphs), each printed against raw streams and
// raw graphs with their targets. CPU by thread tells baton's threads from driver threads that
// inherited their names ("drv:baton-issue", stream::threadIds).
//
// Options: --backend cuda|hip, --frames N (default 1000 / BATON_BENCH_SCALE), --runs N (3),
// --raw-blocking-sync (the raw frame-end events sleep in cuEventSynchronize; also when
// BATON_CUDA_BLOCKING_SYNC_EVENTS=1, which makes baton's CUDA events blocking-sync), --no-edges
// (drops every cross-queue wait on both sides: a self-test of the checks, the run must fail),
// --ptx (prints the kernels and exits). A backend that is not built, not loaded or has no device
// ends the run with the reason and exit code 77 (a skip), unless BATON_TEST_REQUIRE_BACKENDS names
// it (then 1). BATON_BENCH_SIDES=<side>,... runs only those sides (and raw, the base). Output is
// unbuffered.
//
// Profiling: SAMPLE=<file> samples one thread (SAMPLE_THREAD, e.g. baton-issue; by default the
// submitting thread) during the runs of one side (SAMPLE_SIDE: baton, baton-it, baton-di, raw-2t or
// raw; default baton) with bench/sampler.hpp; bench/symbolize.py <file> summarizes it. On the H100
// (2026-11-27), baton-issue spent 61% of its samples in libcuda, 31% in libc (the driver's locks),
// 8% in the frame's callbacks and under 1% in baton: the frame's issuing cost is the driver's.
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <baton/baton.hpp>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_device.hpp"
#include "raw_driver.hpp"
#include "sampler.hpp"         // ThreadCpu: CPU per frame by thread
#include "stream_backend.hpp"  // setIssueMode: both issue designs in one run

namespace {

using baton::Result;
using baton_bench::RawDriver;
using baton_bench::RawEvent;
using baton_bench::RawEventKind;
using baton_bench::RawFunction;
using baton_bench::RawGraph;
using baton_bench::RawGraphExec;
using baton_bench::RawHostCall;
using baton_bench::RawStream;
using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const char* what, const char* detail) {
  std::fprintf(stderr, "frame_bench: %s: %s\n", what, detail);
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

RawDriver driver;  // the chosen backend's raw calls (a copy: one indirection less per call)

// ---- the frame graph --------------------------------------------------------------------------

enum QueueId { A, B, C, kQueues };
const char* const kQueueNames[kQueues] = {"A (graphics)", "B (async compute)", "C (post)"};

enum PassId {
  Skin,
  Depth,
  Shadows,
  LightCull,
  Fog,
  GBuffer,
  Ssao,
  Lighting,
  Exposure,
  Forward,
  Post,
  kPasses,
  None = -1
};
struct PassSpec {
  const char* name;
  QueueId queue;
  int kernels;
  PassId waits[2];  // passes of other queues whose end this pass waits for
};
// In submission order (each pass after those it waits for, as an engine's frame graph issues
// them). The last pass joins every queue: its last kernel verifies the frame, then the host call.
constexpr PassSpec kSpec[kPasses] = {
    {"skin", B, 4, {None, None}},           // skinning + particles
    {"depth", A, 4, {Skin, None}},          // depth pre-pass of the skinned meshes
    {"shadows", A, 6, {None, None}},        // shadow cascades
    {"lightcull", B, 4, {Depth, None}},     // tiled light culling on the depth
    {"fog", C, 4, {Shadows, LightCull}},    // volumetric fog: shadows + light lists
    {"gbuffer", A, 8, {None, None}},        // G-buffer
    {"ssao", B, 6, {GBuffer, None}},        // SSAO on the G-buffer
    {"lighting", A, 8, {Ssao, LightCull}},  // deferred lighting: AO + light lists
    {"exposure", B, 4, {Lighting, None}},   // luminance histogram, auto exposure
    {"forward", A, 4, {Fog, None}},         // forward transparency through the fog
    {"post", C, 12, {Forward, Exposure}},   // TAA, bloom, DOF, tonemap, UI; verify
};
constexpr int kInFlight = 3;
constexpr uint32_t kNoPred = 0xffffffffu;

struct Node {
  uint32_t predA = kNoPred, predB = kNoPred;  // this frame's nodes it reads (kernel mode) or copies
};
struct Pass {
  QueueId queue;
  uint32_t firstNode, nodes;
  std::vector<PassId> waits;  // reduced: the latest pass of each other queue it waits for
  bool signals = false;       // some pass waits for it, or it ends the frame
  uint32_t signalIndex = 0;   // its signal's place among its queue's signals in a frame
};
struct Graph {
  std::vector<Node> nodes;
  Pass passes[kPasses];
  uint32_t signalsPerFrame[kQueues] = {};
  int crossEdges = 0, semaphoreWaits = 0;
};
Graph graph;

void buildGraph() {
  uint32_t lastOnQueue[kQueues] = {kNoPred, kNoPred, kNoPred};
  for (int p = 0; p < kPasses; ++p) {
    const PassSpec& s = kSpec[p];
    Pass& pass = graph.passes[p];
    pass.queue = s.queue;
    pass.firstNode = static_cast<uint32_t>(graph.nodes.size());
    pass.nodes = static_cast<uint32_t>(s.kernels);
    std::vector<uint32_t> cross;
    for (PassId w : s.waits) {
      if (w == None) continue;
      const Pass& producer = graph.passes[w];
      if (w >= p || producer.queue == s.queue)
        die("kSpec", "a pass waits for a later pass or one of its own queue");
      cross.push_back(producer.firstNode + producer.nodes - 1);
      ++graph.crossEdges;
      auto same = std::find_if(pass.waits.begin(), pass.waits.end(),
                               [&](PassId q) { return graph.passes[q].queue == producer.queue; });
      if (same == pass.waits.end())
        pass.waits.push_back(w);
      else
        *same = std::max(*same, w);
    }
    for (int k = 0; k < s.kernels; ++k) {
      Node n;
      uint32_t id = pass.firstNode + k;
      if (k > 0) {
        n.predA = id - 1;
      } else {
        // The first kernel checks two of: the ends of the passes it waits for, then its queue's
        // previous kernel.
        if (lastOnQueue[s.queue] != kNoPred) cross.push_back(lastOnQueue[s.queue]);
        if (cross.size() > 0) n.predA = cross[0];
        if (cross.size() > 1) n.predB = cross[1];
      }
      graph.nodes.push_back(n);
    }
    lastOnQueue[s.queue] = pass.firstNode + pass.nodes - 1;
  }
  for (int p = 0; p < kPasses; ++p) {
    for (PassId w : graph.passes[p].waits) graph.passes[w].signals = true;
    graph.semaphoreWaits += static_cast<int>(graph.passes[p].waits.size());
  }
  graph.passes[kPasses - 1].signals = true;
  for (int p = 0; p < kPasses; ++p)
    if (graph.passes[p].signals)
      graph.passes[p].signalIndex = graph.signalsPerFrame[graph.passes[p].queue]++;
  // The verifying kernel must come after every other one: every queue's last pass reaches the
  // last pass (waits on other queues are transitive through their earlier passes).
  std::vector<bool> reaches(kPasses, false);
  reaches[kPasses - 1] = true;
  for (int p = kPasses - 1; p >= 0; --p) {
    if (!reaches[p]) continue;
    for (PassId w : kSpec[p].waits)
      if (w != None) reaches[w] = true;
    for (int q = p - 1; q >= 0; --q)
      if (kSpec[q].queue == kSpec[p].queue) reaches[q] = true;
  }
  for (int p = 0; p < kPasses; ++p)
    if (!reaches[p]) die("kSpec", "a pass does not precede the frame's last pass");
}

uint32_t nodeCount() { return static_cast<uint32_t>(graph.nodes.size()); }
uint32_t verifyNode() { return nodeCount() - 1; }

// ---- the kernels --------------------------------------------------------------------------------

// Per slot (frame in flight), 32-bit words of the state buffer:
constexpr uint32_t kStamps = 0;    // [64] each node's stamp: the frame number + 1
constexpr uint32_t kSides = 64;    // [64] copy mode: the stamp of a node's second predecessor
constexpr uint32_t kErrors = 128;  // kernel mode: stamps that did not match, never reset
// The frame's stamp: copy mode, written by the CPU; kernel mode, for the raw-graph side, copied
// in from the slot's pinned word by the frame's first graph (its kernels get stamp 0: read it).
constexpr uint32_t kStampSrc = 129;
constexpr uint64_t kSlotBytes = 1024;
constexpr uint64_t kVerdictBytes = 64;  // per slot: {stamp if the frame verified else 0, errors}

// baton_frame_node(state, self, predA, predB, stamp): for each predecessor, counts a stamp other
// than this frame's in state[kErrors]; then writes state[self] = stamp. A stamp of 0 (never a
// frame's) means state[kStampSrc]: a graph's kernels, whose arguments are fixed at capture.
// baton_frame_verify(state, self, stamp, verdict): writes its own stamp, counts the stamps of all
// nodes that differ plus state[kErrors], and writes verdict = {bad ? 0 : stamp, bad}. Its loads
// are unrolled (16 vector loads in flight, not 64 round trips to L2).
std::string ptx() {
  std::string s = R"PTX(.version 7.0
.target sm_75
.address_size 64

.visible .entry baton_frame_node(.param .u64 state, .param .u32 self, .param .u32 predA,
                                 .param .u32 predB, .param .u32 stamp)
{
  .reg .pred %p;
  .reg .b32 %self, %a, %b, %stamp, %v, %one;
  .reg .b64 %base, %addr, %off, %err;
  ld.param.u64 %base, [state];
  cvta.to.global.u64 %base, %base;
  ld.param.u32 %self, [self];
  ld.param.u32 %a, [predA];
  ld.param.u32 %b, [predB];
  ld.param.u32 %stamp, [stamp];
  setp.eq.u32 %p, %stamp, 0;
  @%p ld.volatile.global.u32 %stamp, [%base+STAMPSRC_OFFSET];
  add.u64 %err, %base, ERRORS_OFFSET;
  mov.u32 %one, 1;
  setp.eq.u32 %p, %a, -1;
  @%p bra CHECK_B;
  mul.wide.u32 %off, %a, 4;
  add.u64 %addr, %base, %off;
  ld.volatile.global.u32 %v, [%addr];
  setp.ne.u32 %p, %v, %stamp;
  @%p red.global.add.u32 [%err], %one;
CHECK_B:
  setp.eq.u32 %p, %b, -1;
  @%p bra WRITE;
  mul.wide.u32 %off, %b, 4;
  add.u64 %addr, %base, %off;
  ld.volatile.global.u32 %v, [%addr];
  setp.ne.u32 %p, %v, %stamp;
  @%p red.global.add.u32 [%err], %one;
WRITE:
  mul.wide.u32 %off, %self, 4;
  add.u64 %addr, %base, %off;
  st.global.u32 [%addr], %stamp;
  ret;
}

.visible .entry baton_frame_verify(.param .u64 state, .param .u32 self, .param .u32 stamp,
                                   .param .u64 verdict)
{
  .reg .pred %p;
  .reg .b32 %self, %stamp, %bad, %t, %ok, %r<NODES>;
  .reg .b64 %base, %addr, %off, %out;
  ld.param.u64 %base, [state];
  cvta.to.global.u64 %base, %base;
  ld.param.u32 %self, [self];
  ld.param.u32 %stamp, [stamp];
  setp.eq.u32 %p, %stamp, 0;
  @%p ld.volatile.global.u32 %stamp, [%base+STAMPSRC_OFFSET];
  ld.param.u64 %out, [verdict];
  cvta.to.global.u64 %out, %out;
  mul.wide.u32 %off, %self, 4;
  add.u64 %addr, %base, %off;
  st.global.u32 [%addr], %stamp;
  ld.volatile.global.u32 %bad, [%base+ERRORS_OFFSET];
)PTX";
  auto replace = [&](const std::string& what, const std::string& with) {
    for (size_t at; (at = s.find(what)) != std::string::npos;) s.replace(at, what.size(), with);
  };
  const uint32_t n = nodeCount();  // a multiple of 4 (checked in main)
  for (uint32_t i = 0; i < n; i += 4)
    s += "  ld.volatile.global.v4.u32 {%r" + std::to_string(i) + ", %r" + std::to_string(i + 1) +
         ", %r" + std::to_string(i + 2) + ", %r" + std::to_string(i + 3) + "}, [%base+" +
         std::to_string(4 * (kStamps + i)) + "];\n";
  for (uint32_t i = 0; i < n; ++i)
    s += "  setp.ne.u32 %p, %r" + std::to_string(i) + ", %stamp;\n  selp.u32 %t, 1, 0, %p;\n" +
         "  add.u32 %bad, %bad, %t;\n";
  s += R"PTX(  setp.eq.u32 %p, %bad, 0;
  selp.u32 %ok, %stamp, 0, %p;
  st.volatile.global.u32 [%out+4], %bad;
  st.volatile.global.u32 [%out], %ok;
  ret;
}
)PTX";
  replace("ERRORS_OFFSET", std::to_string(4 * kErrors));
  replace("STAMPSRC_OFFSET", std::to_string(4 * kStampSrc));
  replace("NODES", std::to_string(n));
  return s;
}

// ---- the environment ----------------------------------------------------------------------------

struct Env {
  baton::Instance instance;
  baton::Device device;
  baton::Queue q[kQueues];
  RawFunction node = nullptr, verify = nullptr;
  bool kernels = false;  // false: the driver cannot run kernels; nodes are copies
  bool noEdges = false;  // --no-edges
  RawEventKind endKind = RawEventKind::Plain;
};
Env env;

baton::BackendKind backendKind = baton::BackendKind::Cuda;
const char* backendName() { return backendKind == baton::BackendKind::Hip ? "HIP" : "CUDA"; }

// Ends the run as skipped (meson's exit code 77), saying why; a failure where
// BATON_TEST_REQUIRE_BACKENDS names the backend (the smoke tests on the emulated driver).
[[noreturn]] void skip(const std::string& why) {
  std::printf("frame_bench: %s\n", why.c_str());
  const char* required = std::getenv("BATON_TEST_REQUIRE_BACKENDS");
  std::string mine = backendKind == baton::BackendKind::Hip ? "hip" : "cuda";
  if (required && std::string(required).find(mine) != std::string::npos) {
    std::printf("frame_bench: BATON_TEST_REQUIRE_BACKENDS=%s: failing instead of skipping\n",
                required);
    std::exit(1);
  }
  std::exit(77);
}

// One side of the comparison: its memory, its checks, and (baton) its semaphores and command
// buffers or (raw) its streams and events.
struct Side {
  const char* name;
  baton::Buffer state, verdict;
  uint64_t stateAddress = 0, verdictAddress = 0;
  uint32_t* stateHost = nullptr;  // copy mode: the state buffer is pinned and mapped
  uint32_t* verdictHost = nullptr;
  // Per slot: the frame it holds and its stamp, set by the submitting thread before the frame's
  // first submit and read by native callbacks and the host call.
  std::atomic<uint64_t> frame[kInFlight] = {};
  std::atomic<uint32_t> stamp[kInFlight] = {};
  std::atomic<uint64_t> hostCalls{0};  // host calls run so far (all runs): the next frame's number
  std::mutex failMutex;
  uint64_t failures = 0;
  std::string firstFailure;
  struct NodeCall {
    Side* side;
    uint32_t slot, node;
  };
  std::vector<NodeCall> calls;  // [slot * nodes + node]
  struct SlotCall {
    Side* side;
    uint32_t slot;
  };
  SlotCall slots[kInFlight];
  RawHostCall rawHostCalls[kInFlight];

  // baton
  baton::Semaphore timeline[kQueues];
  baton::CommandBuffer cbs[kInFlight][kPasses];
  // raw
  RawStream streams[kQueues] = {};
  RawEvent events[kInFlight][kPasses] = {};
  // raw-graph and baton-graph: each pass of each slot captured once as a graph (baton-graph: a
  // graph command buffer); the slots' stamps in pinned words that the first pass's graph copies
  // into the state (kernel mode).
  bool graph = false;
  bool infallible = false;  // baton: the frame's host call is recorded kHostCallInfallible
  double recordUs = 0;      // baton: what recording every command buffer took (recordAll)
  RawGraphExec execs[kInFlight][kPasses] = {};
  baton::Buffer stampWords;
  uint64_t stampWordsAddress = 0;
  uint32_t* stampWordsHost = nullptr;

  void fail(const char* format, ...) {
    char text[256];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof text, format, args);
    va_end(args);
    std::lock_guard<std::mutex> lock(failMutex);
    if (failures++ == 0) firstFailure = text;
  }
};

// The host call at the end of a frame: frames end in order, and the frame verified. Makes no
// driver call (it runs inside the driver's host function on both sides).
void checkFrame(Side& side, uint32_t slot) {
  const uint64_t frame = side.frame[slot].load(std::memory_order_acquire);
  const uint32_t stamp = static_cast<uint32_t>(frame + 1);
  const uint64_t done = side.hostCalls.load(std::memory_order_relaxed);
  if (done != frame)
    side.fail("frame %llu: its host call ran after %llu host calls (out of order)",
              static_cast<unsigned long long>(frame), static_cast<unsigned long long>(done));
  if (env.kernels) {
    const uint32_t* v = side.verdictHost + slot * (kVerdictBytes / 4);
    uint32_t ok = __atomic_load_n(&v[0], __ATOMIC_ACQUIRE),
             bad = __atomic_load_n(&v[1], __ATOMIC_ACQUIRE);
    if (ok != stamp)
      side.fail("frame %llu: the verifying kernel saw %u stale stamps (verdict %u, expected %u)",
                static_cast<unsigned long long>(frame), bad, ok, stamp);
  } else {
    const uint32_t* s = side.stateHost + slot * (kSlotBytes / 4);
    uint32_t bad = 0;
    for (uint32_t i = 0; i < nodeCount(); ++i) {
      bad += __atomic_load_n(&s[kStamps + i], __ATOMIC_ACQUIRE) != stamp;
      if (graph.nodes[i].predB != kNoPred)
        bad += __atomic_load_n(&s[kSides + i], __ATOMIC_ACQUIRE) != stamp;
    }
    if (bad)
      side.fail("frame %llu: %u copies carried a stale stamp",
                static_cast<unsigned long long>(frame), bad);
  }
  side.hostCalls.store(done + 1, std::memory_order_release);
}

Result batonHostCall(void* user) {
  auto* c = static_cast<Side::SlotCall*>(user);
  checkFrame(*c->side, c->slot);
  return Result::Success;
}
void rawHostCall(void* user) {
  auto* c = static_cast<Side::SlotCall*>(user);
  checkFrame(*c->side, c->slot);
}

// The CPU saw frame `frame` end: its host call must have run.
void checkEnded(Side& side, uint64_t frame) {
  if (side.hostCalls.load(std::memory_order_acquire) < frame + 1)
    side.fail("the CPU saw frame %llu end before its host call ran",
              static_cast<unsigned long long>(frame));
}

// One kernel of the frame, on `stream`: the same call on both sides.
int launchNode(RawStream stream, const Side::NodeCall& c) {
  uint64_t state = c.side->stateAddress + c.slot * kSlotBytes;
  uint32_t self = c.node,
           stamp = c.side->graph ? 0 : c.side->stamp[c.slot].load(std::memory_order_relaxed);
  if (c.node == verifyNode()) {
    uint64_t verdict = c.side->verdictAddress + c.slot * kVerdictBytes;
    void* params[] = {&state, &self, &stamp, &verdict};
    return driver.launch(env.verify, stream, params);
  }
  uint32_t a = graph.nodes[c.node].predA, b = graph.nodes[c.node].predB;
  void* params[] = {&state, &self, &a, &b, &stamp};
  return driver.launch(env.node, stream, params);
}
Result nodeNative(const baton::NativeQueue& q, void* user) {
  return launchNode(static_cast<RawStream>(q.stream), *static_cast<Side::NodeCall*>(user)) == 0
             ? Result::Success
             : Result::ErrorDriver;
}

// Copy mode: the byte offsets within the state buffer of a node's copies: {src, dst} for its
// stamp (from its first predecessor, or the CPU-written stamp) and, with a second predecessor,
// for its side word.
struct Copy {
  uint64_t src, dst;
};
struct Copies {
  Copy copy[2];
  int count = 0;
  const Copy* begin() const { return copy; }
  const Copy* end() const { return copy + count; }
};
Copies nodeCopies(uint32_t slot, uint32_t node) {
  const uint64_t base = slot * kSlotBytes;
  const Node& n = graph.nodes[node];
  Copies out;
  out.copy[out.count++] = {base + 4 * (n.predA == kNoPred ? kStampSrc : kStamps + n.predA),
                           base + 4 * (kStamps + node)};
  if (n.predB != kNoPred)
    out.copy[out.count++] = {base + 4 * (kStamps + n.predB), base + 4 * (kSides + node)};
  return out;
}

// The raw side of a node: its kernel, or its copies.
void rawNode(Side& side, uint32_t slot, uint32_t node, RawStream stream) {
  if (env.kernels) {
    RAW_OK(launchNode(stream, side.calls[slot * nodeCount() + node]));
    return;
  }
  for (const Copy& c : nodeCopies(slot, node))
    RAW_OK(driver.memcpyAsync(side.stateAddress + c.dst, side.stateAddress + c.src, 4, stream));
}

baton::Buffer buffer(uint64_t size, baton::MemoryKind kind) {
  baton::BufferCreateInfo info;
  info.size = size;
  info.memory = kind;
  baton::Buffer b;
  BATON_OK(env.device.createBuffer(info, &b));
  return b;
}

// The raw-graph side: each pass of each slot captured once, from the same calls as the raw frame's
// pass (rawPass without its waits, host call and event: those stay between the graphs, as in the
// raw frame; HIP's hipStreamAddCallback cannot be captured), preceded in the frame's first pass
// (the one every other follows) by the copy of the slot's stamp (kernel mode; copy mode: the CPU
// writes it into the mapped state, as for the raw side).
void makeStampWords(Side& side) {
  side.stampWords = buffer(kInFlight * 4, baton::MemoryKind::HostPinned);
  BATON_OK(side.stampWords.getDeviceAddress(&side.stampWordsAddress));
  void* host = nullptr;
  BATON_OK(side.stampWords.map(&host));
  side.stampWordsHost = static_cast<uint32_t*>(host);
}

void captureGraphs(Side& side) {
  makeStampWords(side);
  for (uint32_t slot = 0; slot < kInFlight; ++slot)
    for (int p = 0; p < kPasses; ++p) {
      const Pass& pass = graph.passes[p];
      RawStream stream = side.streams[pass.queue];
      RAW_OK(driver.beginCapture(stream));
      if (p == 0 && env.kernels)
        RAW_OK(driver.memcpyAsync(side.stateAddress + slot * kSlotBytes + 4 * kStampSrc,
                                  side.stampWordsAddress + 4 * slot, 4, stream));
      for (uint32_t n = pass.firstNode; n < pass.firstNode + pass.nodes; ++n)
        rawNode(side, slot, n, stream);
      RawGraph g = nullptr;
      RAW_OK(driver.endCapture(stream, &g));
      RAW_OK(driver.graphInstantiate(&side.execs[slot][p], g));
      RAW_OK(driver.graphDestroy(g));
    }
}

// Records every command buffer of a baton side (a pass of a slot each): the same calls as the raw
// frame's pass, plus (graph command buffers, kernel mode) the copy of the slot's stamp in the
// first pass, as the raw-graph side captures it. Returns the time it took, in µs.
double recordAll(Side& side) {
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t slot = 0; slot < kInFlight; ++slot) {
    for (int p = 0; p < kPasses; ++p) {
      const Pass& pass = graph.passes[p];
      baton::CommandBuffer cb = side.cbs[slot][p];
      BATON_OK(cb.begin());
      if (side.graph && p == 0 && env.kernels)
        BATON_OK(cb.copyBuffer(side.stampWords, 4 * slot, side.state,
                               slot * kSlotBytes + 4 * kStampSrc, 4));
      for (uint32_t n = pass.firstNode; n < pass.firstNode + pass.nodes; ++n) {
        if (env.kernels) {
          // Capturable: the graph side's kernels read the stamp from the state (launchNode).
          BATON_OK(cb.native(nodeNative, &side.calls[slot * nodeCount() + n],
                             side.graph ? baton::kNativeCapturable : 0));
        } else {
          for (const Copy& c : nodeCopies(slot, n))
            BATON_OK(cb.copyBuffer(side.state, c.src, side.state, c.dst, 4));
        }
      }
      if (p == kPasses - 1)
        BATON_OK(cb.hostCall(batonHostCall, &side.slots[slot],
                             side.infallible ? baton::kHostCallInfallible : 0));
      BATON_OK(cb.end());
    }
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

void setupSide(Side& side, bool batonSide) {
  const uint64_t stateBytes = kInFlight * kSlotBytes;
  // Kernel mode: device memory (the kernels' stamps stay on the GPU), zeroed by a fill; copy
  // mode: pinned, so that the host call reads the stamps.
  side.state =
      buffer(stateBytes, env.kernels ? baton::MemoryKind::Device : baton::MemoryKind::HostPinned);
  BATON_OK(side.state.getDeviceAddress(&side.stateAddress));
  side.verdict = buffer(kInFlight * kVerdictBytes, baton::MemoryKind::HostPinned);
  BATON_OK(side.verdict.getDeviceAddress(&side.verdictAddress));
  void* host = nullptr;
  BATON_OK(side.verdict.map(&host));
  side.verdictHost = static_cast<uint32_t*>(host);
  std::memset(host, 0, kInFlight * kVerdictBytes);
  if (env.kernels) {
    baton::CommandBuffer zero;
    BATON_OK(env.device.createCommandBuffer(&zero));
    BATON_OK(zero.begin());
    BATON_OK(zero.fillBuffer(side.state, 0, stateBytes, 0));
    BATON_OK(zero.end());
    baton::SubmitInfo info;
    info.commandBuffers = {&zero, 1};
    BATON_OK(env.q[A].submit(info));
    BATON_OK(env.device.waitIdle());
    (void)zero.destroy();
  } else {
    BATON_OK(side.state.map(&host));
    side.stateHost = static_cast<uint32_t*>(host);
    std::memset(host, 0, stateBytes);
  }
  side.calls.resize(kInFlight * nodeCount());
  for (uint32_t slot = 0; slot < kInFlight; ++slot) {
    for (uint32_t n = 0; n < nodeCount(); ++n)
      side.calls[slot * nodeCount() + n] = {&side, slot, n};
    side.slots[slot] = {&side, slot};
    side.rawHostCalls[slot] = {rawHostCall, &side.slots[slot]};
  }
  if (batonSide) {
    for (int q = 0; q < kQueues; ++q) {
      baton::SemaphoreCreateInfo info;
      info.debugName = q == A ? "frame-A" : q == B ? "frame-B" : "frame-C";
      BATON_OK(env.instance.createSemaphore(info, &side.timeline[q]));
    }
    // One command buffer per pass and slot, recorded once and reused every third frame;
    // baton-graph: graph command buffers, timed (recordAll).
    if (side.graph && env.kernels) makeStampWords(side);
    for (uint32_t slot = 0; slot < kInFlight; ++slot)
      for (int p = 0; p < kPasses; ++p) {
        baton::CommandBufferCreateInfo info;
        if (side.graph) info.usage = baton::CommandBufferUsage::Graph;
        BATON_OK(env.device.createCommandBuffer(info, &side.cbs[slot][p]));
      }
    side.recordUs = recordAll(side);
  } else {
    for (RawStream& s : side.streams) RAW_OK(driver.streamCreate(&s));
    for (auto& slotEvents : side.events)
      for (int p = 0; p < kPasses; ++p)
        RAW_OK(driver.eventCreate(&slotEvents[p],
                                  p == kPasses - 1 ? env.endKind : RawEventKind::Plain));
    if (side.graph) captureGraphs(side);
  }
}

void teardownSide(Side& side) {
  for (auto& slotExecs : side.execs)
    for (RawGraphExec& e : slotExecs)
      if (e) RAW_OK(driver.graphExecDestroy(e));
  if (side.stampWords) (void)side.stampWords.destroy();
  for (auto& slotCbs : side.cbs)
    for (baton::CommandBuffer cb : slotCbs)
      if (cb) (void)cb.destroy();
  for (baton::Semaphore s : side.timeline)
    if (s) (void)s.destroy();
  for (auto& slotEvents : side.events)
    for (RawEvent e : slotEvents)
      if (e) RAW_OK(driver.eventDestroy(e));
  for (RawStream s : side.streams)
    if (s) RAW_OK(driver.streamDestroy(s));
  (void)side.state.destroy();
  (void)side.verdict.destroy();
}

void setup() {
  const std::string name = backendName();
  baton::PhysicalDevice physical;
  baton::PhysicalDeviceProperties props;
  std::string why;
  BATON_OK(baton_bench::findBenchDevice(backendKind, -1, &env.instance, &physical, &props, &why));
  if (!physical) skip(why);
  if (props.maxQueues < kQueues) skip("the " + name + " device has fewer than 3 queues");
  std::printf("backend: %s\ndevice: %s (compute %u.%u), %s\n", driver.name, props.name,
              props.computeMajor, props.computeMinor, driver.versions().c_str());
  baton::DeviceCreateInfo info;
  info.queueCount = kQueues;
  BATON_OK(env.instance.createDevice(physical, info, &env.device));
  for (int q = 0; q < kQueues; ++q) BATON_OK(env.device.getQueue(q, &env.q[q]));
  // BATON_BENCH_HOST_WAIT_SPIN=<ns>: the device's host-wait spin (Device::setHostWaitSpin; the
  // default 50 us otherwise, "forever" for kHostWaitSpinForever).
  if (const char* spin = std::getenv("BATON_BENCH_HOST_WAIT_SPIN")) {
    const uint64_t ns = std::string(spin) == "forever" ? baton::kHostWaitSpinForever
                                                       : std::strtoull(spin, nullptr, 10);
    BATON_OK(env.device.setHostWaitSpin(ns));
    std::printf("host-wait spin: %s ns (BATON_BENCH_HOST_WAIT_SPIN)\n", spin);
  }

  RAW_OK(driver.open(static_cast<int>(props.ordinal)));
  if (const char* why = driver.cannotRunKernels()) {
    std::printf(
        "kernels: NONE: %s. Each node is instead one or two 4-byte copies of its "
        "predecessors' stamps (baton copyBuffer, raw %s), checked by the host call: a "
        "smoke test of the queues and their ordering, not a measurement\n",
        why, backendKind == baton::BackendKind::Hip ? "hipMemcpyAsync" : "cuMemcpyAsync");
  } else if (int r = driver.moduleLoad(ptx().c_str())) {
    std::printf(
        "kernels: NONE: the %s driver cannot load the frame's PTX kernels (%s); nodes are "
        "copies instead: a smoke test, not a measurement\n",
        name.c_str(), driver.errorName(r).c_str());
  } else {
    env.kernels = true;
    RAW_OK(driver.getFunction(&env.node, "baton_frame_node"));
    RAW_OK(driver.getFunction(&env.verify, "baton_frame_verify"));
    std::printf(
        "kernels: baton_frame_node (1 thread: checks its predecessors' stamps, writes its "
        "own), the last one baton_frame_verify (checks all %u for the host call)\n",
        nodeCount());
  }
}

// ---- one run of each side -----------------------------------------------------------------------

struct Figures {
  double wallUs, threadCpuUs, processCpuUs;  // per frame, steady state
};
double clockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}
struct Mark {
  Clock::time_point wall;
  double thread, process;
  static Mark now() {
    return {Clock::now(), clockNs(CLOCK_THREAD_CPUTIME_ID), clockNs(CLOCK_PROCESS_CPUTIME_ID)};
  }
};
Figures perFrame(const Mark& a, const Mark& b, int frames) {
  double wall = std::chrono::duration<double, std::nano>(b.wall - a.wall).count();
  return {wall / 1e3 / frames, (b.thread - a.thread) / 1e3 / frames,
          (b.process - a.process) / 1e3 / frames};
}

uint64_t signalValue(uint64_t frame, int p) {
  const Pass& pass = graph.passes[p];
  return frame * graph.signalsPerFrame[pass.queue] + pass.signalIndex + 1;
}

// Both sides: frames [first, first + frames); measured from frame `warmup` on, between two points
// where the CPU has just seen frame N-3 end.
template <typename WaitEnd, typename SubmitFrame>
Figures runFrames(Side& side, uint64_t first, int frames, int warmup, WaitEnd waitEnd,
                  SubmitFrame submitFrame) {
  Mark start{}, end{};
  for (int i = 0;; ++i) {
    const uint64_t f = first + i;
    if (i >= kInFlight) {
      waitEnd(f - kInFlight);
      checkEnded(side, f - kInFlight);
    }
    if (i == warmup) start = Mark::now();
    if (i == frames) {
      end = Mark::now();
      break;
    }
    const uint32_t slot = static_cast<uint32_t>(f % kInFlight);
    const uint32_t stamp = static_cast<uint32_t>(f + 1);
    side.frame[slot].store(f, std::memory_order_relaxed);
    side.stamp[slot].store(stamp, std::memory_order_relaxed);
    if (side.stateHost)
      __atomic_store_n(&side.stateHost[slot * (kSlotBytes / 4) + kStampSrc], stamp,
                       __ATOMIC_RELEASE);
    submitFrame(f, slot);
  }
  for (uint64_t f = first + frames - std::min(frames, kInFlight); f < first + frames; ++f) {
    waitEnd(f);
    checkEnded(side, f);
  }
  if (side.hostCalls.load() != first + frames)
    side.fail("%llu host calls after %llu frames",
              static_cast<unsigned long long>(side.hostCalls.load()),
              static_cast<unsigned long long>(first + frames));
  return perFrame(start, end, frames - warmup);
}

Figures runBaton(Side& side, uint64_t first, int frames, int warmup) {
  baton::Semaphore end = side.timeline[graph.passes[kPasses - 1].queue];
  auto waitEnd = [&](uint64_t f) { BATON_OK(end.wait(signalValue(f, kPasses - 1), UINT64_MAX)); };
  auto submitFrame = [&](uint64_t f, uint32_t slot) {
    if (side.graph && env.kernels)
      __atomic_store_n(&side.stampWordsHost[slot], side.stamp[slot].load(), __ATOMIC_RELEASE);
    for (int p = 0; p < kPasses; ++p) {
      const Pass& pass = graph.passes[p];
      baton::SemaphoreValue waits[kQueues];
      size_t waitCount = 0;
      if (!env.noEdges)
        for (PassId w : pass.waits)
          waits[waitCount++] = {side.timeline[graph.passes[w].queue], signalValue(f, w)};
      baton::SemaphoreValue signal{side.timeline[pass.queue], signalValue(f, p)};
      baton::SubmitInfo info;
      info.waits = {waits, waitCount};
      info.commandBuffers = {&side.cbs[slot][p], 1};
      if (pass.signals) info.signals = {&signal, 1};
      BATON_OK(env.q[pass.queue].submit(info));
    }
  };
  return runFrames(side, first, frames, warmup, waitEnd, submitFrame);
}

// The CPU time of runRawHandoff's workers, all runs (ThreadCpu misses threads that end).
double gRawIssueNs = 0;

// One pass of the raw frame: its waits, its nodes, the host call (last pass), its event.
void rawPass(Side& side, uint32_t slot, int p) {
  const Pass& pass = graph.passes[p];
  RawStream stream = side.streams[pass.queue];
  if (!env.noEdges)
    for (PassId w : pass.waits) RAW_OK(driver.streamWaitEvent(stream, side.events[slot][w]));
  for (uint32_t n = pass.firstNode; n < pass.firstNode + pass.nodes; ++n)
    rawNode(side, slot, n, stream);
  if (p == kPasses - 1) RAW_OK(driver.launchHostFunc(stream, &side.rawHostCalls[slot]));
  if (pass.signals) RAW_OK(driver.eventRecord(side.events[slot][p], stream));
}

Figures runRaw(Side& side, uint64_t first, int frames, int warmup) {
  auto waitEnd = [&](uint64_t f) {
    RAW_OK(driver.eventSynchronize(side.events[f % kInFlight][kPasses - 1]));
  };
  auto submitFrame = [&](uint64_t, uint32_t slot) {
    for (int p = 0; p < kPasses; ++p) rawPass(side, slot, p);
  };
  return runFrames(side, first, frames, warmup, waitEnd, submitFrame);
}

// The raw frame as graphs ("raw-graph", the graph sides' baseline): per pass its waits, the launch
// of the pass's graph for the slot, the host call (last pass), its event; the slot's stamp written
// to its pinned word first (kernel mode).
Figures runRawGraph(Side& side, uint64_t first, int frames, int warmup) {
  auto waitEnd = [&](uint64_t f) {
    RAW_OK(driver.eventSynchronize(side.events[f % kInFlight][kPasses - 1]));
  };
  auto submitFrame = [&](uint64_t, uint32_t slot) {
    if (env.kernels)
      __atomic_store_n(&side.stampWordsHost[slot], side.stamp[slot].load(), __ATOMIC_RELEASE);
    for (int p = 0; p < kPasses; ++p) {
      const Pass& pass = graph.passes[p];
      RawStream stream = side.streams[pass.queue];
      if (!env.noEdges)
        for (PassId w : pass.waits) RAW_OK(driver.streamWaitEvent(stream, side.events[slot][w]));
      RAW_OK(driver.graphLaunch(side.execs[slot][p], stream));
      if (p == kPasses - 1) RAW_OK(driver.launchHostFunc(stream, &side.rawHostCalls[slot]));
      if (pass.signals) RAW_OK(driver.eventRecord(side.events[slot][p], stream));
    }
  };
  return runFrames(side, first, frames, warmup, waitEnd, submitFrame);
}

// The raw frame with its driver calls made by a second thread ("raw-2t", named raw-issue), to
// which this thread hands each pass through a ring of slots: the floor of a design that issues
// on a thread of its own, as baton's device issuing thread does, with no bookkeeping (the worker
// spins between passes; it never sleeps). The host wait first waits for the worker to have
// issued the frame's last pass (an event not yet recorded would count as complete).
Figures runRawHandoff(Side& side, uint64_t first, int frames, int warmup) {
  struct alignas(64) Slot {
    std::atomic<int64_t> job{-1};  // frame * kPasses + pass; -1 empty; kStop: the end
  };
  constexpr int kSlots = 64;
  constexpr int64_t kStop = -2;
  static Slot ring[kSlots];
  for (Slot& slot : ring) slot.job.store(-1, std::memory_order_relaxed);
  alignas(64) std::atomic<int64_t> issuedFrame{-1};  // the last frame fully issued
  std::thread worker([&] {
    pthread_setname_np(pthread_self(), "raw-issue");
    RAW_OK(driver.makeCurrent());
    for (uint64_t i = 0;; ++i) {
      Slot& slot = ring[i % kSlots];
      int64_t job;
      while ((job = slot.job.load(std::memory_order_acquire)) == -1) {
      }
      if (job == kStop) {
        gRawIssueNs += clockNs(CLOCK_THREAD_CPUTIME_ID);  // gone before ThreadCpu looks
        return;
      }
      const int p = static_cast<int>(job % kPasses);
      const uint64_t f = static_cast<uint64_t>(job / kPasses);
      rawPass(side, static_cast<uint32_t>(f % kInFlight), p);
      slot.job.store(-1, std::memory_order_release);
      if (p == kPasses - 1) issuedFrame.store(static_cast<int64_t>(f), std::memory_order_release);
    }
  });
  uint64_t handed = 0;
  auto hand = [&](int64_t job) {
    Slot& slot = ring[handed++ % kSlots];
    while (slot.job.load(std::memory_order_acquire) != -1) {
    }
    slot.job.store(job, std::memory_order_release);
  };
  auto waitEnd = [&](uint64_t f) {
    while (issuedFrame.load(std::memory_order_acquire) < static_cast<int64_t>(f)) {
    }
    RAW_OK(driver.eventSynchronize(side.events[f % kInFlight][kPasses - 1]));
  };
  auto submitFrame = [&](uint64_t f, uint32_t) {
    for (int p = 0; p < kPasses; ++p) hand(static_cast<int64_t>(f) * kPasses + p);
  };
  Figures figures = runFrames(side, first, frames, warmup, waitEnd, submitFrame);
  hand(kStop);
  worker.join();
  return figures;
}

// ---- report
// ---------------------------------------------------------------------------------------

using baton_bench::median;

void printGraph() {
  int signals = 0;
  for (const Pass& p : graph.passes) signals += p.signals;
  std::printf(
      "frame: %u kernels in %d passes on 3 queues + the host; %d cross-queue edges, %d "
      "waits once reduced to one per producing queue (baton: semaphore waits, raw: %s), "
      "%d signals (raw: %s), 1 host call; %d frames in flight\n",
      nodeCount(), kPasses, graph.crossEdges, graph.semaphoreWaits, driver.streamWaitEventName,
      signals, driver.eventRecordName, kInFlight);
  for (int q = 0; q < kQueues; ++q) {
    std::string line;
    for (int p = 0; p < kPasses; ++p) {
      if (kSpec[p].queue != q) continue;
      if (!line.empty()) line += " | ";
      line += std::string(kSpec[p].name) + "[" + std::to_string(kSpec[p].kernels) + "]";
      bool first = true;
      for (PassId w : kSpec[p].waits) {
        if (w == None) continue;
        line += (first ? " <- " : ", ") + std::string(kSpec[w].name);
        first = false;
      }
    }
    if (q == graph.passes[kPasses - 1].queue) line += " | host call";
    std::printf("  queue %-18s %s\n", kQueueNames[q], line.c_str());
  }
}

using baton_bench::scale;

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  const char* usage =
      "usage: frame_bench [--backend cuda|hip] [--frames N] [--runs N] [--raw-blocking-sync] "
      "[--no-edges] [--ptx]\n"
      "(baton-graph, graph command buffers, runs beside the other sides wherever the device has "
      "them)\n";
  int frames = std::max(1000 / scale(), 8), runs = 3;
  bool rawBlocking = false, printPtx = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "frame_bench: %s needs a value\n%s", a.c_str(), usage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf("%s", usage);
      return 0;
    } else if (a == "--backend") {
      std::string b = value();
      if (b == "cuda")
        backendKind = baton::BackendKind::Cuda;
      else if (b == "hip")
        backendKind = baton::BackendKind::Hip;
      else {
        std::fprintf(stderr, "frame_bench: unknown backend %s\n%s", b.c_str(), usage);
        return 2;
      }
    } else if (a == "--frames") {
      frames = std::atoi(value().c_str());
    } else if (a == "--runs") {
      runs = std::atoi(value().c_str());
    } else if (a == "--raw-blocking-sync") {
      rawBlocking = true;
    } else if (a == "--no-edges") {
      env.noEdges = true;
    } else if (a == "--ptx") {
      printPtx = true;
    } else {
      std::fprintf(stderr, "frame_bench: unknown argument %s\n%s", a.c_str(), usage);
      return 2;
    }
  }
  if (frames < 2 * kInFlight + 2 || runs < 1) {
    std::fprintf(stderr, "frame_bench: --frames must be at least %d and --runs at least 1\n",
                 2 * kInFlight + 2);
    return 2;
  }
  buildGraph();
  if (nodeCount() % 4 != 0) die("kSpec", "the kernel count must be a multiple of 4");
  if (printPtx) {
    std::printf("%s", ptx().c_str());
    return 0;
  }
#if BATON_BENCH_CUDA
  if (backendKind == baton::BackendKind::Cuda) driver = baton_bench::rawCuda();
#endif
#if BATON_BENCH_HIP
  if (backendKind == baton::BackendKind::Hip) driver = baton_bench::rawHip();
#endif
  if (!driver.name) skip(std::string(backendName()) + " is not compiled into this build");
  const char* blockingEnv = std::getenv("BATON_CUDA_BLOCKING_SYNC_EVENTS");
  const bool batonBlocking =
      backendKind == baton::BackendKind::Cuda && blockingEnv && blockingEnv[0] == '1';
  if (rawBlocking || batonBlocking) env.endKind = RawEventKind::BlockingSync;

  setup();
  printGraph();
  const int warmup = std::max(frames / 10, kInFlight);
  std::printf("runs: %d of each side, alternating; %d frames per run, the first %d unmeasured\n",
              runs, frames, warmup);
  std::printf(
      "host waits: baton Semaphore::wait on queue C's timeline (pooled events %s); raw "
      "%s on the frame's last event (%s)\n",
      batonBlocking ? "blocking-sync" : "plain, baton sleeps on a helper event",
      driver.name == std::string("HIP") ? "hipEventSynchronize" : "cuEventSynchronize",
      env.endKind == RawEventKind::BlockingSync ? std::string(driver.blockingSyncName).c_str()
                                                : "plain: the driver spins");
  if (env.noEdges)
    std::printf("--no-edges: every cross-queue wait dropped on both sides; the checks must fail\n");

  Side ours, oursGraph, oursGraphInf, raw, raw2, rawGraph;
  ours.name = "baton";
  oursGraph.name = "baton-graph";
  oursGraph.graph = true;
  oursGraphInf.name = "bgraph-inf";
  oursGraphInf.graph = true;
  oursGraphInf.infallible = true;
  raw.name = "raw";
  raw2.name = "raw-2t";
  rawGraph.name = "raw-graph";
  rawGraph.graph = true;
  setupSide(ours, true);
  baton::PhysicalDeviceProperties props;
  {
    baton::PhysicalDevice physical;
    BATON_OK(env.device.getPhysicalDevice(&physical));
    BATON_OK(physical.getProperties(&props));
  }
  const bool batonGraphs = props.capabilities & baton::kCapabilityGraphCommandBuffers;
  if (!batonGraphs) {
    std::printf("baton-graph: not run: the device has no graph command buffers\n");
  } else {
    // What recording costs: every command buffer of the frame (%d passes x %d slots) recorded and
    // instantiated, then recorded again (nothing in flight: each executable graph is updated in
    // place), beside the replayed side's recording.
    const baton::stream::Stats s0 = baton::stream::stats();
    setupSide(oursGraph, true);
    const baton::stream::Stats s1 = baton::stream::stats();
    const double rerecordUs = recordAll(oursGraph);
    const baton::stream::Stats s2 = baton::stream::stats();
    const int cbs = kInFlight * kPasses;
    std::printf(
        "recording, per command buffer (%d of them): replayed %.1f us; graph: record + instantiate "
        "%.1f us (%llu graphs instantiated), re-record + update %.1f us (%llu updated in place, "
        "%llu instantiated)\n",
        cbs, ours.recordUs / cbs, oursGraph.recordUs / cbs,
        static_cast<unsigned long long>(s1.graphInstantiations - s0.graphInstantiations),
        rerecordUs / cbs, static_cast<unsigned long long>(s2.graphUpdates - s1.graphUpdates),
        static_cast<unsigned long long>(s2.graphInstantiations - s1.graphInstantiations));
    setupSide(oursGraphInf, true);
  }
  setupSide(raw, false);
  setupSide(raw2, false);
  const char* noGraphs = driver.cannotRunGraphs();
  if (noGraphs)
    std::printf("raw-graph: not run: %s\n", noGraphs);
  else
    setupSide(rawGraph, false);

  // baton runs in its default issue mode (a submission that nothing holds back is issued by the
  // submitting thread when its queue is known idle, otherwise by the device's issuing thread) and,
  // alternating with it, with every submission issued by the issuing thread and with direct issue
  // (whenever nothing holds it back): the same Side, so the frames continue on the same timelines.
  // "direct" says how many of the run's submissions were issued directly.
  struct Mode {
    const char* name;
    baton::stream::IssueMode mode;  // unused for raw
    const char* what;
  };
  const Mode modes[] = {
      {"baton", baton::stream::IssueMode::WhenIdle, "the default (direct on an idle queue)"},
      {"baton-it", baton::stream::IssueMode::IssuingThread,
       "every submission by the issuing thread (BATON_STREAM_DIRECT_ISSUE=0)"},
      {"baton-di", baton::stream::IssueMode::Direct,
       "direct issue whenever nothing holds it back (BATON_STREAM_DIRECT_ISSUE=1)"},
      {"baton-graph", baton::stream::IssueMode::WhenIdle,
       "graph command buffers: each pass's kernels captured once at end(), one launch per pass"},
      {"bgraph-inf", baton::stream::IssueMode::WhenIdle,
       "graph command buffers with the frame's host call kHostCallInfallible (its signal published "
       "GPU-side, as raw's cuLaunchHostFunc's event)"},
      {"bgraph-it", baton::stream::IssueMode::IssuingThread,
       "bgraph-inf with every submission by the issuing thread (the design before direct issue of "
       "graph submissions)"},
      {"raw-graph", baton::stream::IssueMode::WhenIdle,
       "no baton: the raw frame as graphs, one per pass and slot captured once, launched every "
       "frame between the same waits and events (the graph sides' baseline)"},
      {"raw-2t", baton::stream::IssueMode::WhenIdle,
       "no baton: the raw calls made by a second thread, handed each pass (the floor of an "
       "issuing thread)"},
      {"raw", baton::stream::IssueMode::WhenIdle, nullptr}};
  constexpr int kModes = sizeof modes / sizeof modes[0], kRaw = kModes - 1, kRaw2 = kModes - 2,
                kRawGraph = kModes - 3, kBatonGraph = kModes - 6;
  auto graphSide = [&](int k) { return k >= kBatonGraph && k < kRawGraph; };
  // BATON_BENCH_SIDES=<name>,...: only those sides, and raw streams (the tables' base).
  const char* sidesOnly = std::getenv("BATON_BENCH_SIDES");
  auto chosen = [&](int k) {
    if (!sidesOnly || k == kRaw) return true;
    const std::string list = std::string(",") + sidesOnly + ",";
    return list.find(std::string(",") + modes[k].name + ",") != std::string::npos;
  };
  auto ran = [&](int k) {
    return (k != kRawGraph || !noGraphs) && (!graphSide(k) || batonGraphs) && chosen(k);
  };
  // BATON_BENCH_ISSUE_TIMING=1: the issuing threads time their work (Stats::issueBusyNs and
  // issueDriverNs), printed per frame for each baton side; it slows them a little.
  const bool issueTiming =
      std::getenv("BATON_BENCH_ISSUE_TIMING") && std::getenv("BATON_BENCH_ISSUE_TIMING")[0] == '1';
  if (issueTiming) baton::stream::setIssueTiming(true);
  struct Timing {
    uint64_t timed = 0, busyNs = 0, driverNs = 0, driverCalls = 0;
  } timing[kModes];
  uint64_t oursGraphFirst = 0, oursGraphInfFirst = 0;
  std::printf("\n%-4s %-9s %12s %16s %17s  %s\n", "run", "side", "frame us", "thread CPU us",
              "process CPU us", "direct");
  std::vector<Figures> runsOf[kModes];
  // Threads a driver started from baton's threads inherit their names: told apart ("drv:").
  sampler::gOwnThreadIds = &baton::stream::threadIds;
  sampler::ThreadCpu byThread[kModes];  // where each side's process CPU goes
  // SAMPLE=<file>: profiles one thread (SAMPLE_THREAD, e.g. baton-issue; default this one)
  // during the runs of one side (SAMPLE_SIDE, default baton), for bench/symbolize.py.
  const char* samplePath = std::getenv("SAMPLE");
  const char* sampleSide = std::getenv("SAMPLE_SIDE") ? std::getenv("SAMPLE_SIDE") : "baton";
  if (samplePath) {
    const char* name = std::getenv("SAMPLE_THREAD");
    sampler::pause(true);
    if (!(name ? sampler::startNamed(name) : sampler::start()))
      std::fprintf(stderr, "sampler: no timer or no thread named %s\n", name ? name : "(this)");
  }
  // What the completion threads did (Stats), summed over each side's runs.
  struct Looks {
    uint64_t looks = 0, lazyParks = 0, hostCallParks = 0;
  } looks[kModes];
  uint64_t oursFirst = 0;
  for (int r = 0; r < runs; ++r) {
    std::fprintf(stderr, "[run %d]\n", r);  // progress, so a hang shows where
    for (int k = 0; k < kModes; ++k) {
      if (!ran(k)) continue;
      Figures f;
      const baton::stream::Stats before = baton::stream::stats();
      byThread[k].begin();
      if (samplePath) sampler::pause(std::strcmp(modes[k].name, sampleSide) != 0);
      if (k == kRaw) {
        f = runRaw(raw, static_cast<uint64_t>(r) * frames, frames, warmup);
      } else if (k == kRaw2) {
        f = runRawHandoff(raw2, static_cast<uint64_t>(r) * frames, frames, warmup);
      } else if (k == kRawGraph) {
        f = runRawGraph(rawGraph, static_cast<uint64_t>(r) * frames, frames, warmup);
      } else if (k == kBatonGraph) {
        baton::stream::setIssueMode(modes[k].mode);
        f = runBaton(oursGraph, oursGraphFirst, frames, warmup);
        oursGraphFirst += frames;
      } else if (graphSide(k)) {
        baton::stream::setIssueMode(modes[k].mode);
        f = runBaton(oursGraphInf, oursGraphInfFirst, frames, warmup);
        oursGraphInfFirst += frames;
      } else {
        baton::stream::setIssueMode(modes[k].mode);
        f = runBaton(ours, oursFirst, frames, warmup);
        oursFirst += frames;
      }
      if (samplePath) sampler::pause(true);
      runsOf[k].push_back(f);
      byThread[k].end();
      const baton::stream::Stats after = baton::stream::stats();
      looks[k].looks += after.completionLooks - before.completionLooks;
      looks[k].lazyParks += after.lazyParks - before.lazyParks;
      looks[k].hostCallParks += after.hostCallParks - before.hostCallParks;
      timing[k].timed += after.issueTimed - before.issueTimed;
      timing[k].busyNs += after.issueBusyNs - before.issueBusyNs;
      timing[k].driverNs += after.issueDriverNs - before.issueDriverNs;
      timing[k].driverCalls += after.issueDriverCalls - before.issueDriverCalls;
      const uint64_t direct = after.directIssued - before.directIssued;
      const uint64_t all = direct + after.postedToIssuer - before.postedToIssuer;
      // Why the others were not (the issue mode aside): the issuing thread held some of the
      // queue, or a wait was not yet recorded.
      const std::string why =
          " (behind " + std::to_string(after.directBehind - before.directBehind) + ", not ready " +
          std::to_string(after.directNotReady - before.directNotReady) + ")";
      std::printf("%-4d %-9s %12.2f %16.2f %17.2f  %s\n", r, modes[k].name, f.wallUs, f.threadCpuUs,
                  f.processCpuUs,
                  k >= kRawGraph
                      ? ""
                      : (std::to_string(direct) + " of " + std::to_string(all) + why).c_str());
    }
  }
  baton::stream::resetIssueMode();
  if (samplePath) sampler::stop(samplePath);
  // Where each side's process CPU goes (all frames of all runs, warm-up included).
  // With each thread's sleeps (voluntary context switches) per frame: a sleep is a wake-up that
  // some thread paid for. For baton, also the completion threads' looks for completed records
  // (event queries), lazy parks and parks until a host call ran, per frame.
  const double allFrames = static_cast<double>(runs) * frames;
  std::printf("\nCPU per frame by thread (us), and (sleeps per frame):\n");
  for (int k = 0; k < kModes; ++k) {
    if (!ran(k)) continue;
    char worker[64] = "";  // raw-2t's worker: gone before ThreadCpu looks, so measured by itself
    if (k == kRaw2)
      std::snprintf(worker, sizeof worker, ", raw-issue %.1f", gRawIssueNs / 1e3 / allFrames);
    std::printf("  %-9s %s%s\n", modes[k].name, byThread[k].text(allFrames, true).c_str(), worker);
  }
  std::printf("completion threads per frame: looks, lazy parks, host-call parks:");
  for (int k = 0; k < kRawGraph; ++k)
    if (ran(k))
      std::printf(" %s %.2f %.2f %.2f%s", modes[k].name, looks[k].looks / allFrames,
                  looks[k].lazyParks / allFrames, looks[k].hostCallParks / allFrames,
                  k + 1 < kRawGraph ? ";" : "\n");

  if (issueTiming) {
    std::printf(
        "issuing threads per frame (BATON_BENCH_ISSUE_TIMING): submissions, busy us, driver "
        "calls, in driver us:");
    for (int k = 0; k < kRawGraph; ++k)
      if (ran(k))
        std::printf(" %s %.2f %.1f %.2f %.1f;", modes[k].name, timing[k].timed / allFrames,
                    timing[k].busyNs / 1e3 / allFrames, timing[k].driverCalls / allFrames,
                    timing[k].driverNs / 1e3 / allFrames);
    std::printf("\n");
  }

  struct Row {
    const char* name;
    double Figures::*field;
    double target;
  } rows[] = {{"frame time (steady state, wall)", &Figures::wallUs, 1.1},
              {"submitting-thread CPU per frame", &Figures::threadCpuUs, 1.2},
              {"process CPU per frame", &Figures::processCpuUs, 1.5}};
  for (int k = 0; k < kRaw; ++k) {
    if (!ran(k)) continue;
    if (k == 0)
      std::printf("\n%-34s %12s %12s %8s %8s %8s  %s\n", "figure", "baton",
                  ("raw " + std::string(driver.name)).c_str(), "ratio", "paired", "target", "unit");
    else
      std::printf("the same with %s (%s):\n", modes[k].what, modes[k].name);
    for (const Row& row : rows) {
      std::vector<double> o, w, ratios;
      for (int r = 0; r < runs; ++r) {
        o.push_back(runsOf[k][r].*row.field);
        w.push_back(runsOf[kRaw][r].*row.field);
        ratios.push_back(w.back() > 0 ? o.back() / w.back() : 0);
      }
      const double mo = median(o), mw = median(w), ratio = mw > 0 ? mo / mw : 0;
      if (k == 0)
        std::printf("%-34s %12.2f %12.2f %7.2fx %7.2fx  <=%.1fx  us %s\n", row.name, mo, mw, ratio,
                    median(ratios), row.target,
                    !env.kernels          ? "(emulated: no meaning)"
                    : ratio <= row.target ? "(met)"
                                          : "(MISSED)");
      else
        std::printf("%-34s %12.2f %12.2f %7.2fx %7.2fx\n", row.name, mo, mw, ratio, median(ratios));
    }
  }

  // Graph command buffers against raw streams and raw graphs (their targets). The issuing
  // CPU is what the submitting thread and the device's issuing thread spent together (all frames,
  // warm-up included), beside what raw's submitting thread spent (it issues everything itself).
  for (int g = kBatonGraph; g < kRawGraph; ++g) {
    if (!ran(g) || !ran(kRawGraph)) continue;
    char self[32] = "";
    pthread_getname_np(pthread_self(), self, sizeof self);
    auto med = [&](int k, double Figures::*field) {
      std::vector<double> v;
      for (int r = 0; r < runs; ++r) v.push_back(runsOf[k][r].*field);
      return median(v);
    };
    auto paired = [&](int k, int base, double Figures::*field) {
      std::vector<double> v;
      for (int r = 0; r < runs; ++r) v.push_back(runsOf[k][r].*field / runsOf[base][r].*field);
      return median(v);
    };
    const double issuing = (byThread[g].ns(self) + byThread[g].ns("baton-issue")) / 1e3 / allFrames;
    const double rawIssuing = byThread[kRaw].ns(self) / 1e3 / allFrames;
    const double rawGraphIssuing = byThread[kRawGraph].ns(self) / 1e3 / allFrames;
    const double gFrame = med(g, &Figures::wallUs), rFrame = med(kRaw, &Figures::wallUs),
                 rgFrame = med(kRawGraph, &Figures::wallUs);
    const double gProc = med(g, &Figures::processCpuUs),
                 rgProc = med(kRawGraph, &Figures::processCpuUs);
    auto verdict = [&](double ratio, double target) {
      return !env.kernels ? "(emulated: no meaning)" : ratio <= target ? "(met)" : "(MISSED)";
    };
    std::printf("\n%s (%s) against raw streams and raw graphs:\n", modes[g].name, modes[g].what);
    std::printf("%-44s %10s %10s %8s %8s %8s\n", "figure", modes[g].name, "base", "ratio", "paired",
                "target");
    std::printf("%-44s %10.2f %10.2f %7.2fx %7.2fx  <=0.70x %s\n", "frame time vs raw streams (us)",
                gFrame, rFrame, gFrame / rFrame, paired(g, kRaw, &Figures::wallUs),
                verdict(gFrame / rFrame, 0.7));
    std::printf("%-44s %10.2f %10.2f %7.2fx %7.2fx  <=1.05x %s\n", "frame time vs raw graphs (us)",
                gFrame, rgFrame, gFrame / rgFrame, paired(g, kRawGraph, &Figures::wallUs),
                verdict(gFrame / rgFrame, 1.05));
    std::printf("%-44s %10.2f %10.2f %7.2fx %8s  <=0.25x %s\n",
                "issuing CPU vs raw streams' submitting thread", issuing, rawIssuing,
                issuing / rawIssuing, "", verdict(issuing / rawIssuing, 0.25));
    std::printf("%-44s %10.2f %10.2f %7.2fx %8s  (the floor: raw graphs' own %.2fx)\n",
                "issuing CPU vs raw graphs' submitting thread", issuing, rawGraphIssuing,
                issuing / rawGraphIssuing, "", rawGraphIssuing / rawIssuing);
    std::printf("%-44s %10.2f %10.2f %7.2fx %7.2fx  <=1.10x %s\n", "process CPU vs raw graphs (us)",
                gProc, rgProc, gProc / rgProc, paired(g, kRawGraph, &Figures::processCpuUs),
                verdict(gProc / rgProc, 1.1));
    std::printf(
        "(issuing CPU: the submitting thread '%s' and baton-issue, per frame, all frames)\n", self);
  }

  BATON_OK(env.device.waitIdle());
  for (Side* side : {&raw, &raw2, &rawGraph})
    for (RawStream s : side->streams)
      if (s) RAW_OK(driver.streamSynchronize(s));
  int rc = 0;
  for (Side* side : {&ours, &oursGraph, &oursGraphInf, &raw, &raw2, &rawGraph}) {
    if (side->failures) {
      std::printf("FAILED (%s): %llu check(s) failed; the first: %s\n", side->name,
                  static_cast<unsigned long long>(side->failures), side->firstFailure.c_str());
      rc = 1;
    }
  }
  if (rc == 0)
    std::printf(
        "verified: %d frames per side; every %s saw its predecessors' stamps, every host "
        "call its frame complete and in order, the CPU every host call before reuse\n",
        runs * frames, env.kernels ? "kernel" : "copy");
  teardownSide(ours);
  if (batonGraphs) {
    teardownSide(oursGraph);
    teardownSide(oursGraphInf);
  }
  teardownSide(raw);
  teardownSide(raw2);
  teardownSide(rawGraph);
  (void)env.device.destroy();
  (void)env.instance.destroy();
  if (env.kernels) RAW_OK(driver.moduleUnload());
  RAW_OK(driver.close());
  return rc;
}
