// The translation library's graphs and stream capture (hip_over_cuda.cpp says what the library
// is): ROCm 5.2's hipGraph* and hipStream*Capture entry points over CUDA's cuGraph* and
// cuStream*Capture. The handles pass straight through (a hipGraph_t IS a CUgraph, a
// hipGraphNode_t a CUgraphNode, a hipGraphExec_t a CUgraphExec); HIP's parameter structs become
// CUDA's. Every one of them answers hipErrorNotSupported where the driver lacks the CUDA entry
// point (the fake driver has them: tests/cuda/fake/graphs.cpp).
#include <cstring>

#include "hip_over_cuda.hpp"

using hip_over_cuda::cu;
using hip_over_cuda::Cuda;
using hip_over_cuda::dptr;
using hip_over_cuda::ensureContext;
using hip_over_cuda::ensureContextFor;
using hip_over_cuda::fromCuda;

namespace {

// The enumerations pass by value: HIP copied CUDA's numbering.
static_assert(static_cast<int>(hipStreamCaptureModeGlobal) == CU_STREAM_CAPTURE_MODE_GLOBAL);
static_assert(static_cast<int>(hipStreamCaptureModeRelaxed) == CU_STREAM_CAPTURE_MODE_RELAXED);
static_assert(static_cast<int>(hipStreamCaptureStatusActive) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
static_assert(static_cast<int>(hipStreamCaptureStatusInvalidated) ==
              CU_STREAM_CAPTURE_STATUS_INVALIDATED);
static_assert(static_cast<int>(hipGraphExecUpdateErrorTopologyChanged) ==
              CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
static_assert(static_cast<int>(hipGraphExecUpdateErrorNodeTypeChanged) ==
              CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);

CUgraph cu(hipGraph_t g) { return reinterpret_cast<CUgraph>(g); }
CUgraphExec cu(hipGraphExec_t e) { return reinterpret_cast<CUgraphExec>(e); }
CUgraphNode* cu(hipGraphNode_t* n) { return reinterpret_cast<CUgraphNode*>(n); }
const CUgraphNode* cu(const hipGraphNode_t* n) { return reinterpret_cast<const CUgraphNode*>(n); }

// The current context, for the node calls that take one (memcpy, memset).
CUcontext currentContext(Cuda& c) {
  CUcontext ctx = nullptr;
  (void)c.cuCtxGetCurrent(&ctx);
  return ctx;
}

}  // namespace

extern "C" {

hipError_t hipGraphCreate(hipGraph_t* graph, unsigned int flags) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuGraphCreate);
  if (hipError_t e = ensureContext(*c)) return e;
  return fromCuda(c->cuGraphCreate(reinterpret_cast<CUgraph*>(graph), flags));
}

hipError_t hipGraphDestroy(hipGraph_t graph) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuGraphDestroy);
  return fromCuda(c->cuGraphDestroy(cu(graph)));
}

hipError_t hipGraphAddEmptyNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps,
                                size_t count) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuGraphAddEmptyNode);
  return fromCuda(c->cuGraphAddEmptyNode(cu(node), cu(graph), cu(deps), count));
}

// HIP's one-dimensional copy: a CUDA_MEMCPY3D of one row. hipMemcpyDefault (unified addressing)
// and the device kinds name device (or unified) memory; host kinds name host pointers.
hipError_t hipGraphAddMemcpyNode1D(hipGraphNode_t* node, hipGraph_t graph,
                                   const hipGraphNode_t* deps, size_t count, void* dst,
                                   const void* src, size_t bytes, hipMemcpyKind kind) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuGraphAddMemcpyNode);
  if (hipError_t e = ensureContext(*c)) return e;
  CUDA_MEMCPY3D p;
  std::memset(&p, 0, sizeof p);
  const bool srcHost = kind == hipMemcpyHostToDevice || kind == hipMemcpyHostToHost;
  const bool dstHost = kind == hipMemcpyDeviceToHost || kind == hipMemcpyHostToHost;
  p.srcMemoryType = srcHost ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_UNIFIED;
  p.dstMemoryType = dstHost ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_UNIFIED;
  if (srcHost)
    p.srcHost = src;
  else
    p.srcDevice = dptr(src);
  if (dstHost)
    p.dstHost = dst;
  else
    p.dstDevice = dptr(dst);
  p.WidthInBytes = bytes;
  p.Height = 1;
  p.Depth = 1;
  return fromCuda(
      c->cuGraphAddMemcpyNode(cu(node), cu(graph), cu(deps), count, &p, currentContext(*c)));
}

hipError_t hipGraphAddMemsetNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps,
                                 size_t count, const hipMemsetParams* params) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuGraphAddMemsetNode);
  if (!params) return hipErrorInvalidValue;
  if (hipError_t e = ensureContext(*c)) return e;
  CUDA_MEMSET_NODE_PARAMS p;
  std::memset(&p, 0, sizeof p);
  p.dst = dptr(params->dst);
  p.pitch = params->pitch;
  p.value = params->value;
  p.elementSize = params->elementSize;
  p.width = params->width;
  p.height = params->height;
  return fromCuda(
      c->cuGraphAddMemsetNode(cu(node), cu(graph), cu(deps), count, &p, currentContext(*c)));
}

hipError_t hipGraphAddHostNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps,
                               size_t count, const hipHostNodeParams* params) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuGraphAddHostNode);
  if (!params) return hipErrorInvalidValue;
  CUDA_HOST_NODE_PARAMS p;
  std::memset(&p, 0, sizeof p);
  p.fn = params->fn;  // void (*)(void*) on both sides
  p.userData = params->userData;
  return fromCuda(c->cuGraphAddHostNode(cu(node), cu(graph), cu(deps), count, &p));
}

hipError_t hipGraphAddChildGraphNode(hipGraphNode_t* node, hipGraph_t graph,
                                     const hipGraphNode_t* deps, size_t count, hipGraph_t child) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuGraphAddChildGraphNode);
  return fromCuda(c->cuGraphAddChildGraphNode(cu(node), cu(graph), cu(deps), count, cu(child)));
}

hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t* exec, hipGraph_t graph,
                                        unsigned long long flags) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuGraphInstantiate);
  if (hipError_t e = ensureContext(*c)) return e;
  return fromCuda(c->cuGraphInstantiate(reinterpret_cast<CUgraphExec*>(exec), cu(graph), flags));
}

// ROCm 5.2's older form: the error node and log are not filled (CUDA 12 dropped them too).
hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t graph, hipGraphNode_t* errorNode,
                               char* log, size_t logSize) {
  if (errorNode) *errorNode = nullptr;
  if (log && logSize) log[0] = '\0';
  return hipGraphInstantiateWithFlags(exec, graph, 0);
}

hipError_t hipGraphExecDestroy(hipGraphExec_t exec) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuGraphExecDestroy);
  return fromCuda(c->cuGraphExecDestroy(cu(exec)));
}

hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuGraphLaunch);
  if (hipError_t e = ensureContextFor(*c, stream)) return e;
  return fromCuda(c->cuGraphLaunch(cu(exec), cu(stream)));
}

// ROCm 5.2's form (the error node and the result as out-parameters) over CUDA 12's result info.
hipError_t hipGraphExecUpdate(hipGraphExec_t exec, hipGraph_t graph, hipGraphNode_t* errorNode,
                              hipGraphExecUpdateResult* result) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuGraphExecUpdate);
  CUgraphExecUpdateResultInfo info;
  std::memset(&info, 0, sizeof info);
  const CUresult r = c->cuGraphExecUpdate(cu(exec), cu(graph), &info);
  if (errorNode) *errorNode = reinterpret_cast<hipGraphNode_t>(info.errorNode);
  if (result) *result = static_cast<hipGraphExecUpdateResult>(info.result);
  return fromCuda(r);
}

hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode mode) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuStreamBeginCapture);
  if (hipError_t e = ensureContextFor(*c, stream)) return e;
  return fromCuda(c->cuStreamBeginCapture(cu(stream), static_cast<CUstreamCaptureMode>(mode)));
}

hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t* graph) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuStreamEndCapture);
  if (hipError_t e = ensureContextFor(*c, stream)) return e;
  return fromCuda(c->cuStreamEndCapture(cu(stream), reinterpret_cast<CUgraph*>(graph)));
}

hipError_t hipStreamIsCapturing(hipStream_t stream, hipStreamCaptureStatus* status) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuStreamIsCapturing);
  if (!status) return hipErrorInvalidValue;
  if (hipError_t e = ensureContextFor(*c, stream)) return e;
  CUstreamCaptureStatus s = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult r = c->cuStreamIsCapturing(cu(stream), &s);
  *status = static_cast<hipStreamCaptureStatus>(s);
  return fromCuda(r);
}

}  // extern "C"
