// Graph command buffers (CommandBufferUsage::Graph, baton/command_buffer.hpp): what end() builds
// from a recording (GraphProgram: executable graphs, one per segment of the command list), the
// executable graphs a command buffer keeps from one recording to the next (GraphCache), and the
// host nodes' hand-over of each launch's host calls (HostNode).
//
// Segments: a segment is a run of commands that one executable graph replays, as a linear chain
// of nodes in recording order. A segment ends after a run of host calls that other work follows
// when one of them may fail (that work must not run when a host call fails, which is known only
// once the host calls ran: the issuer suspends the submission there, as it does for a replayed
// one; kHostCallInfallible calls stay inside the segment), and each run of collective commands is
// a segment of its own (one library group, captured from the library: NCCL and RCCL support
// stream capture), so that the watch, which times a segment's launch against the communicator's
// timeout, times the collectives alone: neither the work before them nor the work after them
// counts toward it. Copies and fills become memcpy and memset nodes; updates memcpy nodes from
// page-locked memory the program owns; host calls host nodes; capturable native callbacks child
// graphs, captured once here.
//
// Segments of collectives: their library calls are captured at the segment's first launch, on
// the issuing side (launchCollectiveGraph, collectives.hpp), not at end(): a communicator's first
// collectives wait in the library for every peer (NCCL connects then), which must neither block
// the recording thread nor deadlock a thread that records the ranks of one process one after the
// other. The first launch instantiates the captured graph, and the communicators keep it
// (CapturedExec): NCCL ends a communicator only once the graphs holding its collectives are gone,
// so a communicator that fails or is destroyed drops them first, and the segment cannot run
// again. Never updated in place nor kept for a later recording (each capture holds the library's
// resources for its own graph).
//
// Host nodes: a host node's user data is fixed when the graph is instantiated, but each launch
// runs the host calls of its own submission (HostCalls: failure, counting, the queue to hand
// passes to). Launches of one executable graph are ordered by the driver (cuGraphLaunch: "each
// launch is ordered behind ... any previous launches of hGraphExec"), so each host node keeps a
// FIFO of the host-call entries of the launches made so far: a launch appends its entries (under
// the segment's launch lock, so that the FIFO order is the launch order, on any queue), and the
// node's trampoline takes the front one.
//
// Threads: GraphProgram is built by CommandBuffer::end on the recording thread, then read by the
// issuing threads (a segment's launch lock serialises launches of one executable graph, which the
// driver does not allow concurrently); it is destroyed by whichever thread drops the last
// reference to its command list (a completion thread, usually), once no submission of it is in
// flight, and hands its executable graphs back to its command buffer's GraphCache.
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "collectives.hpp"
#include "device_shared.hpp"
#include "host_calls.hpp"
#include "image_copies.hpp"
#include "objects.hpp"
#include "stream_counters.hpp"
#include "stream_driver.hpp"

namespace baton::stream {
namespace {

// One host node of a segment: the host-call entries of its launches, oldest first.
struct HostNode {
  static void trampoline(void* data) {
    auto* node = static_cast<HostNode*>(data);
    HostCalls::Call* call = nullptr;
    {
      std::lock_guard<std::mutex> lock(node->mutex);
      if (!node->pending.empty()) {
        call = node->pending.front();
        node->pending.pop_front();
      }
    }
    if (call) HostCalls::trampoline(call);
  }
  uint32_t command = 0;  // its HostCall command's index in the list
  std::mutex mutex;
  std::deque<HostCalls::Call*> pending;
};

struct GraphSegment {
  uint32_t first = 0, end = 0;  // the commands [first, end) of the list it replays
  void* exec = nullptr;         // the executable graph
  std::string shape;            // its nodes' kinds, for reuse by a later recording (GraphCache)
  std::vector<std::unique_ptr<HostNode>> hostNodes;  // its host calls, in order
  // It ends with host calls of which one may fail (without kHostCallInfallible): the work after
  // it, in its list or in the submission's next ones, waits for their results (the issuer
  // suspends the submission there).
  bool suspends = false;
  std::mutex launchMutex;  // one launch at a time: the order of the host nodes' FIFOs
  // A run of collectives: its executable graph (instead of `exec`), captured at its first launch.
  Ref<CapturedExec> captured;
};

// The executable graphs of a command buffer's earlier recordings that no submission uses any
// more, kept to be updated in place by a later recording of the same shape.
class GraphCache : public core::Object {
 public:
  explicit GraphCache(std::shared_ptr<DeviceShared> device) : device_(std::move(device)) {}
  ~GraphCache() override {
    if (idle_.empty()) return;
    ContextScope scope(device_->driver, device_->config.context, ContextScope::kRelease,
                       "destroying executable graphs");
    for (auto& [shape, exec] : idle_) (void)device_->driver.graphExecDestroy(exec);
  }
  // An idle executable graph of `shape`, or null.
  void* take(const std::string& shape) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < idle_.size(); ++i)
      if (idle_[i].first == shape) {
        void* exec = idle_[i].second;
        idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
        return exec;
      }
    return nullptr;
  }
  // Keeps `exec` (nothing uses it any more); beyond kKept, destroys the oldest.
  void give(std::string shape, void* exec) {
    void* drop = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      idle_.emplace_back(std::move(shape), exec);
      if (idle_.size() > kKept) {
        drop = idle_.front().second;
        idle_.erase(idle_.begin());
      }
    }
    if (!drop) return;
    ContextScope scope(device_->driver, device_->config.context, ContextScope::kRelease,
                       "destroying an executable graph");
    (void)device_->driver.graphExecDestroy(drop);
  }

 private:
  // Enough for a recording per frame with a few frames in flight, each of a few segments.
  static constexpr size_t kKept = 16;
  std::shared_ptr<DeviceShared> device_;
  std::mutex mutex_;
  std::vector<std::pair<std::string, void*>> idle_;
};

// What a graph command list's submissions launch (core::CommandList::program).
class GraphProgram : public core::Object {
 public:
  GraphProgram(std::shared_ptr<DeviceShared> device, Ref<GraphCache> cache)
      : device_(std::move(device)), cache_(std::move(cache)) {}
  ~GraphProgram() override {
    for (auto& s : segments) {
      if (s->exec) cache_->give(std::move(s->shape), s->exec);
      if (s->captured) s->captured->drop("its command buffer was recorded again or destroyed");
    }
    if (stagingHost) {
      core::Allocation a;
      a.host = stagingHost;
      a.native = tagOf(MemoryTag::HostPinned);
      device_->freeAllocation(a);
    }
  }
  DeviceShared& device() const { return *device_; }
  GraphCache& cache() const { return *cache_; }
  // The segment that starts at command `index`, or null (inside a segment).
  GraphSegment* segmentAt(size_t index) const {
    const uint32_t s = starts[index];
    return s ? segments[s - 1].get() : nullptr;
  }

  std::vector<std::unique_ptr<GraphSegment>> segments;
  std::vector<uint32_t> starts;  // per command: 1 + the index of the segment it starts, or 0
  void* stagingHost = nullptr;   // page-locked copies of the update commands' bytes
  uint64_t stagingDevice = 0;    // the same memory's device address

 private:
  std::shared_ptr<DeviceShared> device_;
  Ref<GraphCache> cache_;
};

// Builds a GraphProgram from a command list, with the device's context current.
class GraphBuilder {
 public:
  GraphBuilder(DeviceShared& device, const core::CommandList& list, GraphProgram& program,
               GraphCache& cache)
      : d_(device.driver), device_(device), list_(list), program_(program), cache_(cache) {}

  // Whether a capture may have left the capture stream capturing (its end failed twice): the
  // device replaces that stream before the next capture.
  bool captureBroken() const { return captureBroken_; }

  // `captureStream`: a stream of the device that nothing else uses meanwhile, for the capture of
  // native callbacks (null when the list has none).
  Status build(void* captureStream) {
    capture_ = captureStream;
    const std::vector<core::Command>& cmds = list_.commands;
    BATON_TRY(stage());
    program_.starts.assign(cmds.size(), 0);
    uint64_t staged = 0;
    size_t i = 0;
    while (i < cmds.size()) {
      auto seg = std::make_unique<GraphSegment>();
      seg->first = static_cast<uint32_t>(i);
      bool fallibleRun = false;  // the run of host calls at hand has one that may fail
      const bool collectives = cmds[i].kind == core::Command::Kind::Collective;
      while (i < cmds.size()) {
        // A run of collectives is a segment of its own: the watch times it alone.
        if ((cmds[i].kind == core::Command::Kind::Collective) != collectives) break;
        ++i;
        if (cmds[i - 1].kind == core::Command::Kind::HostCall) {
          fallibleRun |= !(cmds[i - 1].flags & kHostCallInfallible);
          if (i < cmds.size() && cmds[i].kind != core::Command::Kind::HostCall) {
            // The work after these host calls waits for their results: a new segment.
            if (fallibleRun) break;
            fallibleRun = false;
          }
        }
      }
      seg->end = static_cast<uint32_t>(i);
      // Ending with such a run, it suspends whatever follows it in the submission: this list's
      // next commands or the next command list's.
      seg->suspends = fallibleRun;
      if (collectives) {
        BATON_TRY(checkGraphCapture(&cmds[seg->first], seg->end - seg->first, seg->first));
        seg->captured = core::makeRef<CapturedExec>(d_, device_.config.context);
      } else {
        void* graph = nullptr;
        BATON_TRY(d_.graphCreate(&graph));
        Status st = addNodes(*seg, graph, &staged);
        if (st.ok()) st = instantiate(graph, *seg);
        (void)d_.graphDestroy(graph);
        BATON_TRY(std::move(st));
      }
      program_.segments.push_back(std::move(seg));
      program_.starts[program_.segments.back()->first] =
          static_cast<uint32_t>(program_.segments.size());
    }
    return Status();
  }

 private:
  // The nodes of the segment's commands, as a chain in `graph`.
  Status addNodes(GraphSegment& seg, void* graph, uint64_t* staged) {
    const std::vector<core::Command>& cmds = list_.commands;
    void* dep = nullptr;
    for (size_t i = seg.first; i < seg.end; ++i)
      BATON_TRY(addNode(cmds[i], i, graph, &dep, seg, staged));
    return Status();
  }

  // An update command's bytes in the staging memory, 16-byte aligned.
  static uint64_t stagedBytes(const core::Command& c) { return (c.size + 15) & ~uint64_t{15}; }

  static Status backed(const core::Command& c, size_t index) {
    if (c.buffersBacked()) return Status();
    return core::error(Result::ErrorInvalidState,
                       "command %zu uses a buffer whose queue-ordered allocation has not run "
                       "(or was freed): a graph holds device addresses, so its buffers must "
                       "have memory at end() (at its first submission for collectives)",
                       index);
  }

  // Copies the update commands' bytes into page-locked memory that the program owns.
  Status stage() {
    uint64_t total = 0;
    for (const core::Command& c : list_.commands)
      if (c.kind == core::Command::Kind::Update) total += stagedBytes(c);
    if (total == 0) return Status();
    BATON_TRY(d_.hostAlloc(&program_.stagingHost, &program_.stagingDevice, total)
                  .context("allocating page-locked memory for the graph's update data"));
    uint64_t at = 0;
    for (const core::Command& c : list_.commands)
      if (c.kind == core::Command::Kind::Update) {
        std::memcpy(static_cast<uint8_t*>(program_.stagingHost) + at, c.data.data(), c.size);
        at += stagedBytes(c);
      }
    return Status();
  }

  Status addNode(const core::Command& c, size_t index, void* graph, void** dep, GraphSegment& seg,
                 uint64_t* staged) {
    BATON_TRY(backed(c, index));
    void* node = nullptr;
    void* context = device_.config.context;
    switch (c.kind) {
      case core::Command::Kind::Copy:
        BATON_TRY(d_.graphAddMemcpy(graph, *dep, c.dst->allocation.deviceAddress + c.dstOffset,
                                    c.src->allocation.deviceAddress + c.srcOffset, c.size, context,
                                    &node));
        seg.shape += 'c';
        break;
      case core::Command::Kind::Fill:
        BATON_TRY(d_.graphAddMemset32(graph, *dep, c.dst->allocation.deviceAddress + c.dstOffset,
                                      c.pattern, c.size / 4, context, &node));
        seg.shape += 'f';
        break;
      case core::Command::Kind::Update:
        BATON_TRY(d_.graphAddMemcpy(graph, *dep, c.dst->allocation.deviceAddress + c.dstOffset,
                                    program_.stagingDevice + *staged, c.size, context, &node));
        *staged += stagedBytes(c);
        seg.shape += 'c';
        break;
      case core::Command::Kind::HostCall: {
        seg.hostNodes.push_back(std::make_unique<HostNode>());
        seg.hostNodes.back()->command = static_cast<uint32_t>(index);
        BATON_TRY(
            d_.graphAddHost(graph, *dep, &HostNode::trampoline, seg.hostNodes.back().get(), &node));
        seg.shape += 'h';
        break;
      }
      case core::Command::Kind::Native: {
        void* child = nullptr;
        BATON_TRY(captureNative(c, index, &child));
        Status st = d_.graphAddChild(graph, *dep, child, &node);
        (void)d_.graphDestroy(child);
        BATON_TRY(st);
        seg.shape += 'n';
        break;
      }
      case core::Command::Kind::Collective: break;  // segments of their own (buildCapturedSegment)
      case core::Command::Kind::CopyBufferToImage:
      case core::Command::Kind::CopyImageToBuffer:
        // One node per region, each behind the one before.
        BATON_TRY(forEachImageCopy(c, [&](const ImageCopy& copy) {
          if (node) *dep = node;
          seg.shape += 'i';
          return d_.graphAddMemcpyImage(graph, *dep, copy, context, &node);
        }));
        break;
    }
    *dep = node;
    return Status();
  }

  // Runs a capturable native callback on the capture stream; *child receives what it enqueued.
  Status captureNative(const core::Command& c, size_t index, void** child) {
    DeviceShared::CaptureScope capturing(device_);
    BATON_TRY(d_.streamBeginCapture(capture_).context(
        core::format("starting the capture of the native callback of command %zu", index)));
    NativeQueue nq;
    nq.backend = d_.kind;
    nq.stream = capture_;
    nq.deviceOrdinal = device_.config.ordinal;
    nq.queueIndex = kCaptureQueueIndex;
    const Result r = c.nativeCallback(nq, c.userData);
    // The callback may have switched the current context (cudaSetDevice): end the capture and
    // build the rest in the device's.
    void* now = nullptr;
    if (!d_.getCurrent(&now).ok() || now != device_.config.context)
      (void)d_.setCurrent(device_.config.context);
    void* graph = nullptr;
    // A stream left capturing is replaced by the device (captureBroken).
    Status st = endCapture(d_, capture_, &graph, &captureBroken_);
    if (isError(r)) {
      if (graph) (void)d_.graphDestroy(graph);
      return core::error(Result::ErrorHostCallFailed,
                         "the capturable native callback of command %zu returned %s", index,
                         resultName(r));
    }
    if (!st.ok())
      return st.context(core::format(
          "capturing the native callback of command %zu (a capturable callback may only enqueue "
          "work on the stream it is given, with no synchronising call)",
          index));
    if (!graph)
      return core::error(Result::ErrorDriver,
                         "capturing the native callback of command %zu gave no graph", index);
    *child = graph;
    return Status();
  }

  // Updates an idle executable graph of the same shape in place, or instantiates a new one.
  Status instantiate(void* graph, GraphSegment& seg) {
    if (void* exec = cache_.take(seg.shape)) {
      bool updated = false;
      Status st = d_.graphExecUpdate(exec, graph, &updated);
      if (st.ok() && updated) {
        Counters::add(kGraphUpdates, 1);
        seg.exec = exec;
        return Status();
      }
      Counters::add(kGraphUpdatesRefused, 1);
      (void)d_.graphExecDestroy(exec);
    }
    BATON_TRY(d_.graphInstantiate(&seg.exec, graph));
    Counters::add(kGraphInstantiations, 1);
    return Status();
  }

  const DriverTable& d_;
  DeviceShared& device_;
  const core::CommandList& list_;
  GraphProgram& program_;
  GraphCache& cache_;
  void* capture_ = nullptr;
  bool captureBroken_ = false;
};

// A segment of collectives, at its first launch (launchCollectiveGraph): its commands of `list`,
// captured by `capture` as one group, instantiated into *exec.
Status buildCapturedSegment(DeviceShared& device, const core::CommandList& list,
                            const GraphSegment& seg, const CaptureGroup& capture, void** exec) {
  void* graph = nullptr;
  {
    DeviceShared::CaptureScope capturing(device);
    BATON_TRY(capture(&list.commands[seg.first], seg.end - seg.first, &graph));
  }
  Status st = device.driver.graphInstantiate(exec, graph);
  (void)device.driver.graphDestroy(graph);
  BATON_TRY(std::move(st));
  Counters::add(kGraphInstantiations, 1);
  return Status();
}

}  // namespace
}  // namespace baton::stream
