// The error half of the HIP-over-CUDA translation library (hip_over_cuda.cpp): hipGetErrorName
// and hipGetErrorString for every hipError_t of ROCm 5.2's header, and the CUresult -> hipError_t
// mapping the entry points return through. Neither needs the CUDA driver.
#include "hip_over_cuda.hpp"

// Every value of 5.2's hipError_t under its canonical name (the deprecated aliases
// hipErrorMemoryAllocation, hipErrorInitializationError, hipErrorMapBufferObjectFailed and
// hipErrorInvalidResourceHandle share a value with the name listed), with a one-line description.
// clang-format off
#define HIP_OVER_CUDA_ERRORS(X)                                                                  \
  X(hipSuccess, "no error")                                                                      \
  X(hipErrorInvalidValue, "an argument is null or out of its acceptable range")                 \
  X(hipErrorOutOfMemory, "out of memory")                                                        \
  X(hipErrorNotInitialized, "the runtime is not initialized")                                    \
  X(hipErrorDeinitialized, "the runtime is shutting down")                                       \
  X(hipErrorProfilerDisabled, "the profiler is disabled")                                        \
  X(hipErrorProfilerNotInitialized, "the profiler is not initialized")                           \
  X(hipErrorProfilerAlreadyStarted, "the profiler is already started")                           \
  X(hipErrorProfilerAlreadyStopped, "the profiler is already stopped")                           \
  X(hipErrorInvalidConfiguration, "invalid launch configuration")                                \
  X(hipErrorInvalidPitchValue, "invalid pitch")                                                  \
  X(hipErrorInvalidSymbol, "invalid device symbol")                                              \
  X(hipErrorInvalidDevicePointer, "invalid device pointer")                                      \
  X(hipErrorInvalidMemcpyDirection, "invalid copy direction")                                    \
  X(hipErrorInsufficientDriver, "the driver is missing or older than the runtime needs")         \
  X(hipErrorMissingConfiguration, "a launch has no configuration")                               \
  X(hipErrorPriorLaunchFailure, "an earlier kernel launch failed")                               \
  X(hipErrorInvalidDeviceFunction, "invalid device function")                                    \
  X(hipErrorNoDevice, "no device that can run HIP code was found")                               \
  X(hipErrorInvalidDevice, "invalid device ordinal")                                             \
  X(hipErrorInvalidImage, "the code object is not valid for the device")                         \
  X(hipErrorInvalidContext, "invalid or missing context")                                        \
  X(hipErrorContextAlreadyCurrent, "the context is already current")                             \
  X(hipErrorMapFailed, "mapping the resource failed")                                            \
  X(hipErrorUnmapFailed, "unmapping the resource failed")                                        \
  X(hipErrorArrayIsMapped, "the array is mapped")                                                \
  X(hipErrorAlreadyMapped, "the resource is already mapped")                                     \
  X(hipErrorNoBinaryForGpu, "no kernel image for this device")                                   \
  X(hipErrorAlreadyAcquired, "the resource is already acquired")                                 \
  X(hipErrorNotMapped, "the resource is not mapped")                                             \
  X(hipErrorNotMappedAsArray, "the resource is not mapped as an array")                          \
  X(hipErrorNotMappedAsPointer, "the resource is not mapped as a pointer")                       \
  X(hipErrorECCNotCorrectable, "an uncorrectable hardware (ECC) error was detected")             \
  X(hipErrorUnsupportedLimit, "the limit is not supported by the device")                        \
  X(hipErrorContextAlreadyInUse, "the context is already in use by another thread")              \
  X(hipErrorPeerAccessUnsupported, "peer access is not supported between these devices")         \
  X(hipErrorInvalidKernelFile, "the kernel source (PTX) is invalid")                             \
  X(hipErrorInvalidGraphicsContext, "invalid graphics context")                                  \
  X(hipErrorInvalidSource, "invalid kernel source")                                              \
  X(hipErrorFileNotFound, "file not found")                                                      \
  X(hipErrorSharedObjectSymbolNotFound, "a shared object symbol was not found")                  \
  X(hipErrorSharedObjectInitFailed, "a shared object failed to initialize")                      \
  X(hipErrorOperatingSystem, "an operating system call failed")                                  \
  X(hipErrorInvalidHandle, "invalid resource handle")                                            \
  X(hipErrorIllegalState, "the resource is not in a state that allows the operation")            \
  X(hipErrorNotFound, "the named symbol was not found")                                          \
  X(hipErrorNotReady, "the operation has not completed yet")                                     \
  X(hipErrorIllegalAddress, "a kernel accessed an illegal memory address")                       \
  X(hipErrorLaunchOutOfResources, "the launch needs more resources than the device has")        \
  X(hipErrorLaunchTimeOut, "a kernel ran past the device's time limit")                          \
  X(hipErrorPeerAccessAlreadyEnabled, "peer access is already enabled")                          \
  X(hipErrorPeerAccessNotEnabled, "peer access is not enabled")                                  \
  X(hipErrorSetOnActiveProcess, "the device flags cannot change once the device is active")      \
  X(hipErrorContextIsDestroyed, "the context has been destroyed")                                \
  X(hipErrorAssert, "a device-side assert failed")                                               \
  X(hipErrorHostMemoryAlreadyRegistered, "the host memory is already registered")                \
  X(hipErrorHostMemoryNotRegistered, "the host memory is not registered")                        \
  X(hipErrorLaunchFailure, "an exception occurred on the device while running a kernel")         \
  X(hipErrorCooperativeLaunchTooLarge, "too many blocks for a cooperative launch")               \
  X(hipErrorNotSupported, "the operation is not supported")                                      \
  X(hipErrorStreamCaptureUnsupported, "the operation is not allowed while the stream captures") \
  X(hipErrorStreamCaptureInvalidated, "the stream capture was invalidated by an earlier error")  \
  X(hipErrorStreamCaptureMerge, "the operation would merge two independent captures")            \
  X(hipErrorStreamCaptureUnmatched, "the capture did not start in this stream")                  \
  X(hipErrorStreamCaptureUnjoined, "the capture forked into a stream that did not join back")    \
  X(hipErrorStreamCaptureIsolation, "the dependency would cross the capture's boundary")         \
  X(hipErrorStreamCaptureImplicit, "the operation would depend implicitly on a capture")         \
  X(hipErrorCapturedEvent, "the event was last recorded in a capturing stream")                  \
  X(hipErrorStreamCaptureWrongThread, "the capture must end on the thread that began it")        \
  X(hipErrorGraphExecUpdateFailure, "the graph update violates the instantiated graph")          \
  X(hipErrorUnknown, "unknown error")                                                            \
  X(hipErrorRuntimeMemory, "a memory call of the runtime's driver layer failed")                 \
  X(hipErrorRuntimeOther, "a call of the runtime's driver layer failed")                         \
  X(hipErrorTbd, "an error without a code yet")
// clang-format on

extern "C" {

// AMD's runtime answers "hipErrorUnknown" for a value it does not know; so does this one.
const char* hipGetErrorName(hipError_t hip_error) {
  switch (hip_error) {
#define HIP_OVER_CUDA_NAME(code, text) \
  case code: return #code;
    HIP_OVER_CUDA_ERRORS(HIP_OVER_CUDA_NAME)
#undef HIP_OVER_CUDA_NAME
    default: return "hipErrorUnknown";
  }
}

const char* hipGetErrorString(hipError_t hipError) {
  switch (hipError) {
#define HIP_OVER_CUDA_TEXT(code, text) \
  case code: return text;
    HIP_OVER_CUDA_ERRORS(HIP_OVER_CUDA_TEXT)
#undef HIP_OVER_CUDA_TEXT
    default: return "unknown error";
  }
}

}  // extern "C"

namespace hip_over_cuda {

hipError_t fromCuda(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS: return hipSuccess;
    case CUDA_ERROR_INVALID_VALUE: return hipErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return hipErrorOutOfMemory;
    case CUDA_ERROR_NOT_INITIALIZED: return hipErrorNotInitialized;
    case CUDA_ERROR_DEINITIALIZED: return hipErrorDeinitialized;
    case CUDA_ERROR_PROFILER_DISABLED: return hipErrorProfilerDisabled;
    case CUDA_ERROR_PROFILER_NOT_INITIALIZED: return hipErrorProfilerNotInitialized;
    case CUDA_ERROR_PROFILER_ALREADY_STARTED: return hipErrorProfilerAlreadyStarted;
    case CUDA_ERROR_PROFILER_ALREADY_STOPPED: return hipErrorProfilerAlreadyStopped;
    // No usable driver: the stub library of the toolkit, a driver older than the call or than
    // this toolkit, or a forward-compatibility package the device does not take.
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return hipErrorInsufficientDriver;
    // Exclusive-process or prohibited compute mode, or a device not licensed for compute: the
    // device exists but cannot be used by this process.
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_DEVICE_NOT_LICENSED: return hipErrorInvalidDevice;
    case CUDA_ERROR_NO_DEVICE: return hipErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE: return hipErrorInvalidDevice;
    case CUDA_ERROR_INVALID_IMAGE: return hipErrorInvalidImage;
    case CUDA_ERROR_INVALID_CONTEXT: return hipErrorInvalidContext;
    case CUDA_ERROR_CONTEXT_ALREADY_CURRENT: return hipErrorContextAlreadyCurrent;
    case CUDA_ERROR_MAP_FAILED: return hipErrorMapFailed;
    case CUDA_ERROR_UNMAP_FAILED: return hipErrorUnmapFailed;
    case CUDA_ERROR_ARRAY_IS_MAPPED: return hipErrorArrayIsMapped;
    case CUDA_ERROR_ALREADY_MAPPED: return hipErrorAlreadyMapped;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: return hipErrorNoBinaryForGpu;
    case CUDA_ERROR_ALREADY_ACQUIRED: return hipErrorAlreadyAcquired;
    case CUDA_ERROR_NOT_MAPPED: return hipErrorNotMapped;
    case CUDA_ERROR_NOT_MAPPED_AS_ARRAY: return hipErrorNotMappedAsArray;
    case CUDA_ERROR_NOT_MAPPED_AS_POINTER: return hipErrorNotMappedAsPointer;
    // Sticky: uncorrectable memory or NVLink errors.
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE: return hipErrorECCNotCorrectable;
    case CUDA_ERROR_UNSUPPORTED_LIMIT: return hipErrorUnsupportedLimit;
    case CUDA_ERROR_CONTEXT_ALREADY_IN_USE: return hipErrorContextAlreadyInUse;
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: return hipErrorPeerAccessUnsupported;
    // PTX that does not compile here (HIP's own NVIDIA path maps INVALID_PTX the same way).
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: return hipErrorInvalidKernelFile;
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_JIT_COMPILATION_DISABLED: return hipErrorSharedObjectInitFailed;
    case CUDA_ERROR_INVALID_GRAPHICS_CONTEXT: return hipErrorInvalidGraphicsContext;
    case CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY:
    case CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC:
    case CUDA_ERROR_CDP_NOT_SUPPORTED:
    case CUDA_ERROR_CDP_VERSION_MISMATCH: return hipErrorNotSupported;
    case CUDA_ERROR_INVALID_SOURCE: return hipErrorInvalidSource;
    case CUDA_ERROR_FILE_NOT_FOUND: return hipErrorFileNotFound;
    case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND: return hipErrorSharedObjectSymbolNotFound;
    case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED: return hipErrorSharedObjectInitFailed;
    case CUDA_ERROR_OPERATING_SYSTEM: return hipErrorOperatingSystem;
    case CUDA_ERROR_INVALID_HANDLE: return hipErrorInvalidHandle;
    case CUDA_ERROR_ILLEGAL_STATE: return hipErrorIllegalState;
    case CUDA_ERROR_LOSSY_QUERY: return hipErrorInvalidValue;
    case CUDA_ERROR_NOT_FOUND: return hipErrorNotFound;
    case CUDA_ERROR_NOT_READY: return hipErrorNotReady;
    case CUDA_ERROR_ILLEGAL_ADDRESS: return hipErrorIllegalAddress;  // sticky
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return hipErrorLaunchOutOfResources;
    case CUDA_ERROR_LAUNCH_TIMEOUT: return hipErrorLaunchTimeOut;  // sticky
    case CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING: return hipErrorInvalidValue;
    case CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: return hipErrorPeerAccessAlreadyEnabled;
    case CUDA_ERROR_PEER_ACCESS_NOT_ENABLED: return hipErrorPeerAccessNotEnabled;
    case CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE: return hipErrorSetOnActiveProcess;
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return hipErrorContextIsDestroyed;  // sticky
    case CUDA_ERROR_ASSERT: return hipErrorAssert;                            // sticky
    case CUDA_ERROR_TOO_MANY_PEERS: return hipErrorPeerAccessUnsupported;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: return hipErrorHostMemoryAlreadyRegistered;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: return hipErrorHostMemoryNotRegistered;
    // Sticky: the exceptions a kernel raises (CUDA names each kind; HIP 5.2 reports all but
    // illegal addresses as hipErrorLaunchFailure, "an exception occurred on the device"), the
    // contained hardware errors, and the error an external device signalled into a CUDA wait.
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_EXTERNAL_DEVICE: return hipErrorLaunchFailure;
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: return hipErrorCooperativeLaunchTooLarge;
    case CUDA_ERROR_NOT_PERMITTED:
    case CUDA_ERROR_NOT_SUPPORTED: return hipErrorNotSupported;
    // The system (fabric manager, MPS server) cannot serve the process now.
    case CUDA_ERROR_SYSTEM_NOT_READY:
    case CUDA_ERROR_MPS_CONNECTION_FAILED:
    case CUDA_ERROR_MPS_RPC_FAILURE:
    case CUDA_ERROR_MPS_SERVER_NOT_READY:
    case CUDA_ERROR_MPS_MAX_CLIENTS_REACHED:
    case CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED: return hipErrorNoDevice;
    // Sticky: the MPS server terminated this client; its context is gone.
    case CUDA_ERROR_MPS_CLIENT_TERMINATED: return hipErrorContextIsDestroyed;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return hipErrorStreamCaptureUnsupported;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return hipErrorStreamCaptureInvalidated;
    case CUDA_ERROR_STREAM_CAPTURE_MERGE: return hipErrorStreamCaptureMerge;
    case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: return hipErrorStreamCaptureUnmatched;
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED: return hipErrorStreamCaptureUnjoined;
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION: return hipErrorStreamCaptureIsolation;
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: return hipErrorStreamCaptureImplicit;
    case CUDA_ERROR_CAPTURED_EVENT: return hipErrorCapturedEvent;
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD: return hipErrorStreamCaptureWrongThread;
    // A wait that ran out of time: what it waited for has not completed (HIP 5.2 has no timeout
    // code; hipErrorUnknown would read as a lost device).
    case CUDA_ERROR_TIMEOUT: return hipErrorNotReady;
    case CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE: return hipErrorGraphExecUpdateFailure;
    case CUDA_ERROR_INVALID_CLUSTER_SIZE:
    case CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION: return hipErrorInvalidConfiguration;
    case CUDA_ERROR_INVALID_RESOURCE_TYPE: return hipErrorInvalidValue;
    case CUDA_ERROR_FUNCTION_NOT_LOADED: return hipErrorInvalidDeviceFunction;
    case CUDA_ERROR_KEY_ROTATION: return hipErrorUnknown;  // confidential computing: fatal
    case CUDA_ERROR_UNKNOWN: return hipErrorUnknown;       // sticky on both sides
    default: return hipErrorUnknown;  // a code newer than this toolkit's header
  }
}

}  // namespace hip_over_cuda
