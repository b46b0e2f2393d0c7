// Streams, events, host callbacks and kernel launches of the HIP-over-CUDA translation library
// (hip_over_cuda.cpp says what the library is for). Each call is the CUDA call of the same role on
// the same handle; what differs is HIP's argument checking, its flag values and its callback
// signature.
#include <new>

#include "hip_over_cuda.hpp"

namespace {

using hip_over_cuda::cu;
using hip_over_cuda::Cuda;
using hip_over_cuda::ensureContext;
using hip_over_cuda::ensureContextFor;
using hip_over_cuda::fromCuda;

// HIP's callback takes (stream, status, userData); cuLaunchHostFunc's takes userData only. The
// record is freed before the callback runs, so a callback that never returns leaks nothing.
struct StreamCallback {
  hipStreamCallback_t callback;
  hipStream_t stream;
  void* userData;

  static void CUDA_CB run(void* data) {
    StreamCallback call = *static_cast<StreamCallback*>(data);
    delete static_cast<StreamCallback*>(data);
    // CUDA runs host functions only while the context is healthy, so the status is success.
    call.callback(call.stream, hipSuccess, call.userData);
  }
};

}  // namespace

extern "C" {

// ---- streams ----------------------------------------------------------------------------------

hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned int flags) {
  if (!stream || (flags & ~static_cast<unsigned>(hipStreamNonBlocking)))
    return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  if (hipError_t e = ensureContext(*c)) return e;
  CUstream s = nullptr;
  CUresult r = c->cuStreamCreate(
      &s, (flags & hipStreamNonBlocking) ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT);
  if (r != CUDA_SUCCESS) return fromCuda(r);
  *stream = reinterpret_cast<hipStream_t>(s);
  return hipSuccess;
}

hipError_t hipStreamDestroy(hipStream_t stream) {
  if (!stream) return hipErrorInvalidHandle;
  HIP_OVER_CUDA_DRIVER(c);
  return fromCuda(c->cuStreamDestroy(cu(stream)));
}

hipError_t hipStreamSynchronize(hipStream_t stream) {
  HIP_OVER_CUDA_DRIVER(c);
  if (hipError_t e = ensureContextFor(*c, stream)) return e;
  return fromCuda(c->cuStreamSynchronize(cu(stream)));
}

hipError_t hipStreamQuery(hipStream_t stream) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuStreamQuery);
  if (hipError_t e = ensureContextFor(*c, stream)) return e;
  return fromCuda(c->cuStreamQuery(cu(stream)));
}

// 5.2 documents flags as "must be 0".
hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags) {
  if (flags != 0) return hipErrorInvalidValue;
  if (!event) return hipErrorInvalidHandle;
  HIP_OVER_CUDA_DRIVER(c);
  if (hipError_t e = ensureContextFor(*c, stream)) return e;
  return fromCuda(c->cuStreamWaitEvent(cu(stream), cu(event), CU_EVENT_WAIT_DEFAULT));
}

// The callback runs on a driver thread after the work before it, and blocks the work after it
// until it returns (HIP's contract, and cuLaunchHostFunc's); like every host function it must not
// call the runtime. flags are reserved and must be 0. One difference is CUDA's: after a sticky
// error the context runs no further host functions, so a callback behind the fault is never
// called (nor its record freed), where HIP documents each callback as called exactly once (with
// the stream's error as status). The process has lost its device either way.
// Not during stream capture (CUDA's cudaStreamAddCallback is not permitted there either; a
// captured host function would run once per launch, and the record below is freed by its first
// run): hipErrorStreamCaptureUnsupported, nothing enqueued.
hipError_t hipStreamAddCallback(hipStream_t stream, hipStreamCallback_t callback, void* userData,
                                unsigned int flags) {
  if (!callback || flags != 0) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  if (hipError_t e = ensureContextFor(*c, stream)) return e;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (c->cuStreamIsCapturing && c->cuStreamIsCapturing(cu(stream), &capture) == CUDA_SUCCESS &&
      capture != CU_STREAM_CAPTURE_STATUS_NONE)
    return hipErrorStreamCaptureUnsupported;
  auto* call = new (std::nothrow) StreamCallback{callback, stream, userData};
  if (!call) return hipErrorOutOfMemory;
  CUresult r = c->cuLaunchHostFunc(cu(stream), &StreamCallback::run, call);
  if (r != CUDA_SUCCESS) delete call;
  return fromCuda(r);
}

// ---- events -----------------------------------------------------------------------------------

// hipEventReleaseToDevice/ToSystem choose the cache scope of AMD's release; CUDA events always
// release at system scope, so they are accepted (not both at once, as AMD's runtime insists) and
// change nothing.
hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned flags) {
  constexpr unsigned kKnown = hipEventBlockingSync | hipEventDisableTiming | hipEventInterprocess |
                              hipEventReleaseToDevice | hipEventReleaseToSystem;
  if (!event || (flags & ~kKnown)) return hipErrorInvalidValue;
  if ((flags & hipEventReleaseToDevice) && (flags & hipEventReleaseToSystem))
    return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  if (hipError_t e = ensureContext(*c)) return e;
  unsigned cuFlags = CU_EVENT_DEFAULT;
  if (flags & hipEventBlockingSync) cuFlags |= CU_EVENT_BLOCKING_SYNC;
  if (flags & hipEventDisableTiming) cuFlags |= CU_EVENT_DISABLE_TIMING;
  if (flags & hipEventInterprocess) cuFlags |= CU_EVENT_INTERPROCESS;
  CUevent e = nullptr;
  if (CUresult r = c->cuEventCreate(&e, cuFlags)) return fromCuda(r);
  *event = reinterpret_cast<hipEvent_t>(e);
  return hipSuccess;
}

hipError_t hipEventDestroy(hipEvent_t event) {
  if (!event) return hipErrorInvalidHandle;
  HIP_OVER_CUDA_DRIVER(c);
  return fromCuda(c->cuEventDestroy(cu(event)));
}

hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
  if (!event) return hipErrorInvalidHandle;
  HIP_OVER_CUDA_DRIVER(c);
  if (hipError_t e = ensureContextFor(*c, stream)) return e;
  return fromCuda(c->cuEventRecord(cu(event), cu(stream)));
}

// An event never recorded counts as complete (hipSuccess), in HIP as in CUDA.
hipError_t hipEventQuery(hipEvent_t event) {
  if (!event) return hipErrorInvalidHandle;
  HIP_OVER_CUDA_DRIVER(c);
  return fromCuda(c->cuEventQuery(cu(event)));
}

hipError_t hipEventSynchronize(hipEvent_t event) {
  if (!event) return hipErrorInvalidHandle;
  HIP_OVER_CUDA_DRIVER(c);
  return fromCuda(c->cuEventSynchronize(cu(event)));
}

// Unrecorded or timing-disabled events: hipErrorInvalidHandle; not yet complete:
// hipErrorNotReady (HIP's contract, and CUDA's codes).
hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
  if (!ms) return hipErrorInvalidValue;
  if (!start || !stop) return hipErrorInvalidHandle;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuEventElapsedTime);
  return fromCuda(c->cuEventElapsedTime(ms, cu(start), cu(stop)));
}

// ---- modules ----------------------------------------------------------------------------------

#ifndef HIP_OVER_CUDA_NO_MODULES

// The image is whatever cuModuleLoadData takes (PTX text, a cubin or a fatbin): on this GPU the
// tests' PTX kernels, where an AMD GPU would take a code object.
hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  if (!module || !image) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuModuleLoadData);
  if (hipError_t e = ensureContext(*c)) return e;
  CUmodule m = nullptr;
  if (CUresult r = c->cuModuleLoadData(&m, image)) return fromCuda(r);
  *module = reinterpret_cast<hipModule_t>(m);
  return hipSuccess;
}

hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* kname) {
  if (!function || !module || !kname) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuModuleGetFunction);
  CUfunction f = nullptr;
  if (CUresult r = c->cuModuleGetFunction(&f, cu(module), kname)) return fromCuda(r);
  *function = reinterpret_cast<hipFunction_t>(f);
  return hipSuccess;
}

// `extra` uses HIP's keys, whose END differs from CUDA's (HIP_LAUNCH_PARAM_END is 0x3,
// CU_LAUNCH_PARAM_END 0x0): the list is rewritten with CUDA's keys.
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX, unsigned int gridDimY,
                                 unsigned int gridDimZ, unsigned int blockDimX,
                                 unsigned int blockDimY, unsigned int blockDimZ,
                                 unsigned int sharedMemBytes, hipStream_t stream,
                                 void** kernelParams, void** extra) {
  if (!f) return hipErrorInvalidHandle;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuLaunchKernel);
  void* cuExtra[9];  // at most the two keys HIP defines, each with its value, and END
  void** extraOut = nullptr;
  if (extra) {
    size_t n = 0;
    for (size_t i = 0;; i += 2) {
      if (extra[i] == HIP_LAUNCH_PARAM_END) break;
      if (n + 3 > sizeof cuExtra / sizeof cuExtra[0]) return hipErrorInvalidValue;
      if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_POINTER)
        cuExtra[n++] = CU_LAUNCH_PARAM_BUFFER_POINTER;
      else if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_SIZE)
        cuExtra[n++] = CU_LAUNCH_PARAM_BUFFER_SIZE;
      else
        return hipErrorInvalidValue;
      cuExtra[n++] = extra[i + 1];
    }
    cuExtra[n] = CU_LAUNCH_PARAM_END;
    extraOut = cuExtra;
  }
  if (hipError_t e = ensureContextFor(*c, stream)) return e;
  return fromCuda(c->cuLaunchKernel(cu(f), gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                                    blockDimZ, sharedMemBytes, cu(stream), kernelParams, extraOut));
}

hipError_t hipModuleUnload(hipModule_t module) {
  if (!module) return hipErrorInvalidHandle;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuModuleUnload);
  return fromCuda(c->cuModuleUnload(cu(module)));
}

#endif  // HIP_OVER_CUDA_NO_MODULES

}  // extern "C"

// ---- stream memory operations -----------------------------------------------------------------

namespace {

// HIP's waits take a mask that CUDA's do not: "waits until (*ptr & mask) <op> value". Each is
// translated only where CUDA's condition is the same one:
//   - Gte and Eq with every bit of the mask set: CUDA's GEQ and EQ. (CUDA's GEQ is cyclic,
//     (int64_t)(*ptr - value) >= 0; it differs from a plain >= only for values 2^63 or more
//     apart.) Another mask has no CUDA form: hipErrorInvalidValue.
//   - And: ((*ptr & mask) & value) != 0 is CUDA's AND with value & mask.
//   - Nor: ~((*ptr & mask) | (value & mask)) != 0 holds at once when a bit of the mask is clear
//     (that bit of the NOR is 1): nothing to wait for. With every bit set it is CUDA's NOR.
// The flag values (hipStreamWaitValueGte...) are mapped by name. `ptr` is a device address: of
// hipMalloc memory, or of registered host memory (hipHostGetDevicePointer).
template <class Word, class Wait>
hipError_t waitValue(Cuda& c, Wait wait, hipStream_t stream, void* ptr, Word value,
                     unsigned int flags, Word mask) {
  constexpr Word kAll = static_cast<Word>(~Word(0));
  unsigned cuFlags;
  switch (flags) {
    case hipStreamWaitValueGte:
      if (mask != kAll) return hipErrorInvalidValue;
      cuFlags = CU_STREAM_WAIT_VALUE_GEQ;
      break;
    case hipStreamWaitValueEq:
      if (mask != kAll) return hipErrorInvalidValue;
      cuFlags = CU_STREAM_WAIT_VALUE_EQ;
      break;
    case hipStreamWaitValueAnd:
      cuFlags = CU_STREAM_WAIT_VALUE_AND;
      value &= mask;
      break;
    case hipStreamWaitValueNor:
      if (mask != kAll) return hipSuccess;  // always satisfied (above)
      cuFlags = CU_STREAM_WAIT_VALUE_NOR;
      break;
    default: return hipErrorInvalidValue;
  }
  if (!ptr) return hipErrorInvalidValue;
  if (hipError_t e = ensureContextFor(c, stream)) return e;
  return fromCuda(wait(cu(stream), hip_over_cuda::dptr(ptr), value, cuFlags));
}

}  // namespace

extern "C" {

hipError_t hipStreamWaitValue32(hipStream_t stream, void* ptr, uint32_t value, unsigned int flags,
                                uint32_t mask) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuStreamWaitValue32);
  return waitValue<uint32_t>(*c, c->cuStreamWaitValue32, stream, ptr, value, flags, mask);
}

hipError_t hipStreamWaitValue64(hipStream_t stream, void* ptr, uint64_t value, unsigned int flags,
                                uint64_t mask) {
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuStreamWaitValue64);
  return waitValue<uint64_t>(*c, c->cuStreamWaitValue64, stream, ptr, value, flags, mask);
}

// HIP's write flags are "reserved, ignored"; CUDA's default write (ordered after the stream's
// earlier work, with a memory barrier) is what HIP documents.
hipError_t hipStreamWriteValue32(hipStream_t stream, void* ptr, uint32_t value, unsigned int) {
  if (!ptr) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuStreamWriteValue32);
  if (hipError_t e = ensureContextFor(*c, stream)) return e;
  return fromCuda(c->cuStreamWriteValue32(cu(stream), hip_over_cuda::dptr(ptr), value,
                                          CU_STREAM_WRITE_VALUE_DEFAULT));
}

hipError_t hipStreamWriteValue64(hipStream_t stream, void* ptr, uint64_t value, unsigned int) {
  if (!ptr) return hipErrorInvalidValue;
  HIP_OVER_CUDA_DRIVER(c);
  HIP_OVER_CUDA_NEED(c, cuStreamWriteValue64);
  if (hipError_t e = ensureContextFor(*c, stream)) return e;
  return fromCuda(c->cuStreamWriteValue64(cu(stream), hip_over_cuda::dptr(ptr), value,
                                          CU_STREAM_WRITE_VALUE_DEFAULT));
}

}  // extern "C"
