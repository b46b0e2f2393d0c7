// The fake driver's graphs and stream capture (fake_cuda.hpp: behaviours G1-G6). A CUgraph is a
// fake_cuda::Graph*, a CUgraphNode a GraphNode* (owned by its graph), a CUgraphExec an Exec*.
// A node is an op of the stream engine (a std::function run by a stream's worker); instantiation
// flattens a graph (children inline) into the list of ops a launch enqueues.
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "fake_cuda.hpp"

namespace fake_cuda {

struct GraphNode {
  enum Kind : int { Empty, Memcpy, Memset, Host, Child, Captured };
  Kind kind = Empty;
  Stream::Op op;                 // what it runs (not for Empty and Child)
  std::unique_ptr<Graph> child;  // Child: the clone
  std::vector<size_t> deps;      // indices of earlier nodes of the same graph
};

struct Graph {
  std::vector<std::unique_ptr<GraphNode>> nodes;

  std::unique_ptr<Graph> clone() const {
    auto g = std::make_unique<Graph>();
    for (const auto& n : nodes) {
      auto c = std::make_unique<GraphNode>();
      c->kind = n->kind;
      c->op = n->op;
      c->deps = n->deps;
      if (n->child) c->child = n->child->clone();
      g->nodes.push_back(std::move(c));
    }
    return g;
  }
  // The index of `node` in this graph, or -1.
  long indexOf(const GraphNode* node) const {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].get() == node) return static_cast<long>(i);
    return -1;
  }
};

}  // namespace fake_cuda

namespace {

using fake_cuda::gCounters;
using fake_cuda::Graph;
using fake_cuda::GraphNode;
using fake_cuda::Mark;
using fake_cuda::Stream;

// An executable graph: the flattened ops, and what an update must match (each node's kind and
// dependencies, children inline, as one list).
struct Exec {
  std::mutex mutex;
  std::vector<Stream::Op> ops;
  std::vector<std::pair<int, std::vector<size_t>>> shape;
  std::shared_ptr<Mark> last;  // the end of the latest launch (G3)
};

Graph* graph(CUgraph g) { return reinterpret_cast<Graph*>(g); }
Exec* exec(CUgraphExec e) { return reinterpret_cast<Exec*>(e); }

void flatten(const Graph& g, std::vector<Stream::Op>* ops,
             std::vector<std::pair<int, std::vector<size_t>>>* shape) {
  for (const auto& n : g.nodes) {
    shape->push_back({n->kind, n->deps});
    if (n->kind == GraphNode::Child) {
      flatten(*n->child, ops, shape);
      shape->push_back({-1, {}});  // the child's end
    } else if (n->op) {
      ops->push_back(n->op);
    }
  }
}

// Adds a node after checking its dependencies (G1).
CUresult addNode(CUgraphNode* out, CUgraph g, const CUgraphNode* deps, size_t count,
                 std::unique_ptr<GraphNode> node) {
  if (!out || !g || (count && !deps)) return CUDA_ERROR_INVALID_VALUE;
  Graph& graphRef = *graph(g);
  for (size_t i = 0; i < count; ++i) {
    const long at = graphRef.indexOf(reinterpret_cast<GraphNode*>(deps[i]));
    if (at < 0) return CUDA_ERROR_INVALID_VALUE;
    node->deps.push_back(static_cast<size_t>(at));
  }
  *out = reinterpret_cast<CUgraphNode>(node.get());
  graphRef.nodes.push_back(std::move(node));
  return CUDA_SUCCESS;
}

// The host address of a CUDA_MEMCPY3D side, or null when it is not a one-dimensional copy of
// host, device or unified memory.
void* copySide(CUmemorytype type, const void* host, CUdeviceptr device, size_t xInBytes) {
  switch (type) {
    case CU_MEMORYTYPE_HOST: return static_cast<char*>(const_cast<void*>(host)) + xInBytes;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: return reinterpret_cast<char*>(device) + xInBytes;
    default: return nullptr;
  }
}

}  // namespace

namespace fake_cuda {

void captureLocked(Stream& s, Stream::Op op) {
  auto node = std::make_unique<GraphNode>();
  node->kind = GraphNode::Captured;
  node->op = std::move(op);
  // Each depends on the one captured before it: the capture's nodes are only those, in order.
  if (!s.capture->nodes.empty()) node->deps.push_back(s.capture->nodes.size() - 1);
  s.capture->nodes.push_back(std::move(node));
  gCounters.opsCaptured.fetch_add(1, std::memory_order_relaxed);
}

bool capturing(const Stream& s) { return s.capturing.load(std::memory_order_acquire); }

void invalidateCapture(Stream& s) {
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.capture) s.captureInvalidated = true;
}

}  // namespace fake_cuda

extern "C" {

// ---- graphs and their nodes (G1) ----------------------------------------------------------------

CUresult CUDAAPI cuGraphCreate(CUgraph* g, unsigned int flags) {
  FAKE_CUDA_ENTRY("cuGraphCreate");
  if (!g || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *g = reinterpret_cast<CUgraph>(new Graph);
  gCounters.graphsLive.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph g) {
  FAKE_CUDA_ENTRY("cuGraphDestroy");
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  delete graph(g);
  gCounters.graphsLive.fetch_sub(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps,
                                     size_t count) {
  FAKE_CUDA_ENTRY("cuGraphAddEmptyNode");
  return addNode(node, g, deps, count, std::make_unique<GraphNode>());
}

CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps,
                                      size_t count, const CUDA_MEMCPY3D* p, CUcontext) {
  FAKE_CUDA_ENTRY("cuGraphAddMemcpyNode");
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (p->Height > 1 || p->Depth > 1 || p->srcY || p->srcZ || p->dstY || p->dstZ)
    return CUDA_ERROR_NOT_SUPPORTED;
  void* src = copySide(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes);
  void* dst = copySide(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes);
  if (!src || !dst) return CUDA_ERROR_NOT_SUPPORTED;
  auto n = std::make_unique<GraphNode>();
  n->kind = GraphNode::Memcpy;
  const size_t size = p->WidthInBytes;
  n->op = [dst, src, size] { std::memmove(dst, src, size); };
  return addNode(node, g, deps, count, std::move(n));
}

CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps,
                                      size_t count, const CUDA_MEMSET_NODE_PARAMS* p, CUcontext) {
  FAKE_CUDA_ENTRY("cuGraphAddMemsetNode");
  if (!p || p->height > 1 || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4))
    return CUDA_ERROR_INVALID_VALUE;
  auto n = std::make_unique<GraphNode>();
  n->kind = GraphNode::Memset;
  const CUdeviceptr dst = p->dst;
  const unsigned value = p->value, size = p->elementSize;
  const size_t width = p->width;
  n->op = [dst, value, size, width] {
    char* d = reinterpret_cast<char*>(dst);
    for (size_t i = 0; i < width; ++i) {
      if (size == 1) d[i] = static_cast<char>(value);
      if (size == 2) {
        const uint16_t v = static_cast<uint16_t>(value);
        std::memcpy(d + 2 * i, &v, 2);
      }
      if (size == 4) std::memcpy(d + 4 * i, &value, 4);
    }
  };
  return addNode(node, g, deps, count, std::move(n));
}

CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps,
                                    size_t count, const CUDA_HOST_NODE_PARAMS* p) {
  FAKE_CUDA_ENTRY("cuGraphAddHostNode");
  if (!p || !p->fn) return CUDA_ERROR_INVALID_VALUE;
  auto n = std::make_unique<GraphNode>();
  n->kind = GraphNode::Host;
  CUhostFn fn = p->fn;
  void* user = p->userData;
  n->op = [fn, user] {
    fake_cuda::tInHostFunction = true;
    fn(user);
    fake_cuda::tInHostFunction = false;
  };
  return addNode(node, g, deps, count, std::move(n));
}

CUresult CUDAAPI cuGraphAddChildGraphNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps,
                                          size_t count, CUgraph child) {
  FAKE_CUDA_ENTRY("cuGraphAddChildGraphNode");
  if (!child || child == g) return CUDA_ERROR_INVALID_VALUE;
  auto n = std::make_unique<GraphNode>();
  n->kind = GraphNode::Child;
  n->child = graph(child)->clone();
  return addNode(node, g, deps, count, std::move(n));
}

// ---- executable graphs (G2-G4) ------------------------------------------------------------------

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec* e, CUgraph g, unsigned long long flags) {
  FAKE_CUDA_ENTRY("cuGraphInstantiate");
  if (!e || !g) return CUDA_ERROR_INVALID_VALUE;
  if (flags != 0) return CUDA_ERROR_NOT_SUPPORTED;
  auto x = std::make_unique<Exec>();
  flatten(*graph(g), &x->ops, &x->shape);
  *e = reinterpret_cast<CUgraphExec>(x.release());
  gCounters.execsLive.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec e) {
  FAKE_CUDA_ENTRY("cuGraphExecDestroy");
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  delete exec(e);  // launches already enqueued hold copies of their ops
  gCounters.execsLive.fetch_sub(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec e, CUstream stream) {
  FAKE_CUDA_ENTRY("cuGraphLaunch");
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  if (fake_cuda::capturing(*s)) {  // G6: launching into a capture is not modelled
    fake_cuda::invalidateCapture(*s);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  Exec& x = *exec(e);
  std::lock_guard<std::mutex> lock(x.mutex);
  // G3: behind the previous launch of this executable graph, wherever it went.
  if (x.last && x.last->stream.get() != s)
    fake_cuda::enqueue(*s, [mark = x.last] {
      if (fake_cuda::waitFor(*mark->stream, mark->position, false))
        gCounters.streamWaitsBlocked.fetch_add(1, std::memory_order_relaxed);
    });
  for (const Stream::Op& op : x.ops) fake_cuda::enqueue(*s, op);
  x.last = fake_cuda::record(*s);
  gCounters.graphLaunches.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo* info) {
  FAKE_CUDA_ENTRY("cuGraphExecUpdate");
  if (!e || !g || !info) return CUDA_ERROR_INVALID_VALUE;
  std::memset(info, 0, sizeof *info);
  std::vector<Stream::Op> ops;
  std::vector<std::pair<int, std::vector<size_t>>> shape;
  flatten(*graph(g), &ops, &shape);
  Exec& x = *exec(e);
  std::lock_guard<std::mutex> lock(x.mutex);
  bool sameKinds = shape.size() == x.shape.size(), sameDeps = sameKinds;
  for (size_t i = 0; sameKinds && i < shape.size(); ++i) {
    sameKinds = shape[i].first == x.shape[i].first;
    sameDeps = sameDeps && shape[i].second == x.shape[i].second;
  }
  if (!sameKinds || !sameDeps) {
    info->result = shape.size() != x.shape.size() || !sameDeps
                       ? CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
                       : CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
    gCounters.execUpdatesRefused.fetch_add(1, std::memory_order_relaxed);
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  }
  x.ops = std::move(ops);
  info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  gCounters.execUpdates.fetch_add(1, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

// ---- stream capture (G5, G6) --------------------------------------------------------------------

CUresult CUDAAPI cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode) {
  FAKE_CUDA_ENTRY("cuStreamBeginCapture");
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(s->mutex);
  if (s->capture) return CUDA_ERROR_ILLEGAL_STATE;
  s->capture = new Graph;
  gCounters.graphsLive.fetch_add(1, std::memory_order_relaxed);
  s->captureInvalidated = false;
  s->capturing.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph* out) {
  FAKE_CUDA_ENTRY("cuStreamEndCapture");
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  *out = nullptr;
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  Graph* made;
  bool invalidated;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (!s->capture) return CUDA_ERROR_ILLEGAL_STATE;
    made = s->capture;
    invalidated = s->captureInvalidated;
    s->capture = nullptr;
    s->captureInvalidated = false;
    s->capturing.store(false, std::memory_order_release);
  }
  if (invalidated) {
    delete made;
    gCounters.graphsLive.fetch_sub(1, std::memory_order_relaxed);
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *out = reinterpret_cast<CUgraph>(made);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  FAKE_CUDA_ENTRY("cuStreamIsCapturing");
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  Stream* s = fake_cuda::resolve(stream);
  if (!s) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(s->mutex);
  *status = !s->capture             ? CU_STREAM_CAPTURE_STATUS_NONE
            : s->captureInvalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                    : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

}  // extern "C"
