/** \file
 * baton/baton.h — the C API (C11; also compiles as C++), for C engines and for bindings from
 * Rust, Python (ctypes, cffi), Zig and others.
 *
 * A thin layer over the C++ API (baton/baton.hpp): every C function converts its arguments and
 * calls the C++ function of the same name (baton_semaphore_signal is Semaphore::signal,
 * baton_queue_submit is Queue::submit, ...), so semantics, validation, results and messages are
 * the C++ ones. Each function below states its results and who owns what; the comment of the C++
 * function has the full semantics. Messages name the C++ operation ("baton: Semaphore::signal:
 * ..."), and baton_result_name gives the C++ enumerator name ("ErrorInvalidHandle").
 *
 * Conventions:
 *  - Handles (baton_instance, baton_semaphore, ...) are non-owning 64-bit values naming an object
 *    in baton's handle table, exactly what the C++ handles hold: pointers to incomplete structs
 *    on 64-bit platforms (type checked, as Vulkan's non-dispatchable handles), uint64_t
 *    elsewhere. BATON_NULL_HANDLE is null. They are never dereferenced; a handle of a destroyed
 *    object makes calls return BATON_ERROR_INVALID_HANDLE, never crash. Objects made by a
 *    baton_*_create_* call are owned by the caller and destroyed with baton_*_destroy; a parent
 *    destroyed with live children destroys them too and returns BATON_ERROR_OBJECT_IN_USE.
 *  - Create-info structs are plain structs. Initialise them with their BATON_*_INIT macro to get
 *    the C++ defaults; a zero-initialised struct means what the same zeros mean in C++ (the only
 *    differences from the defaults: backend_mask 0 loads only the host backend, queue_count 0 is
 *    BATON_ERROR_INVALID_ARGUMENT). A null create-info pointer means the defaults. Create-infos
 *    and their strings are read during the call only (strings are copied).
 *  - Arrays are a pointer and a count; a null pointer with a non-zero count is
 *    BATON_ERROR_INVALID_ARGUMENT. They are read during the call only.
 *  - Results: >= 0 are not errors (BATON_SUCCESS, BATON_NOT_READY, BATON_TIMEOUT); every error
 *    (< 0) comes with a message, from baton_last_error_message() on the calling thread and at the
 *    instance's debug callback.
 *  - No function blocks unless it says it waits; all are thread safe unless they say otherwise.
 *    Nothing throws or longjmps.
 *  - Callbacks (debug, host call, native) are C functions called from baton's threads; a host or
 *    native callback returns a baton_result (an error fails its submission).
 */
#ifndef BATON_BATON_H_
#define BATON_BATON_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baton/export.h" /* BATON_API: marks the functions libbaton exports */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- handles -------------------------------------------------------------------------------- */

/** \def BATON_DEFINE_HANDLE(name)
 * Declares the handle type `name` (see the conventions of baton/baton.h): a pointer to the
 * incomplete struct name_T on 64-bit platforms, uint64_t elsewhere. The handle types below are
 * declared with it. */
/** \def BATON_NULL_HANDLE
 * The null handle, of every handle type: ((void*)0) (nullptr in C++) on 64-bit platforms, 0
 * elsewhere.
 */
#if UINTPTR_MAX == UINT64_MAX
#define BATON_DEFINE_HANDLE(name) typedef struct name##_T* name;
#ifdef __cplusplus
#define BATON_NULL_HANDLE nullptr
#else
#define BATON_NULL_HANDLE ((void*)0)
#endif
#else
#define BATON_DEFINE_HANDLE(name) typedef uint64_t name;
#define BATON_NULL_HANDLE 0
#endif

/** The root object (baton::Instance): made by baton_create_instance, destroyed with
 * baton_instance_destroy. */
BATON_DEFINE_HANDLE(baton_instance)
/** A device a backend can run work on (baton::PhysicalDevice), listed by
 * baton_instance_enumerate_physical_devices; owned by its instance. */
BATON_DEFINE_HANDLE(baton_physical_device)
/** A logical device (baton::Device): made by baton_instance_create_device, destroyed with
 * baton_device_destroy. */
BATON_DEFINE_HANDLE(baton_device)
/** An in-order queue of a device (baton::Queue), from baton_device_get_queue; owned by its
 * device. */
BATON_DEFINE_HANDLE(baton_queue)
/** A timeline semaphore (baton::Semaphore): made by baton_instance_create_semaphore, destroyed
 * with baton_semaphore_destroy. */
BATON_DEFINE_HANDLE(baton_semaphore)
/** Recorded work for a device's queues (baton::CommandBuffer): made by
 * baton_device_create_command_buffer or baton_device_create_command_buffer_with_info, destroyed
 * with baton_command_buffer_destroy. */
BATON_DEFINE_HANDLE(baton_command_buffer)
/** Linear memory owned by a device (baton::Buffer): made by baton_device_create_buffer or
 * baton_queue_alloca_buffer, destroyed with baton_buffer_destroy. */
BATON_DEFINE_HANDLE(baton_buffer)
/** Texel memory of a device shared with another API (baton::Image): made by
 * baton_import_vulkan_image (baton_vulkan.h), destroyed with baton_image_destroy. */
BATON_DEFINE_HANDLE(baton_image)
/** One rank of a group of devices that run collectives together (baton::Communicator): made by
 * baton_device_create_communicator, baton_instance_create_communicators,
 * baton_communicator_split or baton_communicator_shrink, destroyed with
 * baton_communicator_destroy. */
BATON_DEFINE_HANDLE(baton_communicator)

/* ---- results (baton/result.hpp) ------------------------------------------------------------- */

/** The same values as baton::Result. */
typedef enum baton_result {
  BATON_SUCCESS = 0,   /**< the call did what it was asked */
  BATON_NOT_READY = 1, /**< not complete yet (an array too small, a buffer not allocated yet) */
  BATON_TIMEOUT = 2,   /**< a wait ended unmet: its timeout expired, or a poll (timeout 0) */

  BATON_ERROR_INVALID_ARGUMENT = -1,     /**< a field or argument is out of its documented range */
  BATON_ERROR_INVALID_HANDLE = -2,       /**< a null, destroyed, stale or wrong-type handle */
  BATON_ERROR_DEVICE_MISMATCH = -3,      /**< objects of different devices (or instances) */
  BATON_ERROR_NON_INCREASING_VALUE = -4, /**< a signal not greater than the semaphore's value */
  BATON_ERROR_SEMAPHORE_FAILED = -5,     /**< a waited semaphore failed; see the message */
  BATON_ERROR_DEVICE_LOST = -6,          /**< a sticky device fault */
  BATON_ERROR_OUT_OF_HOST_MEMORY = -7,   /**< a host allocation or handle slot failed */
  BATON_ERROR_OUT_OF_DEVICE_MEMORY = -8, /**< a device allocation failed */
  BATON_ERROR_BACKEND_UNAVAILABLE = -9,  /**< the backend's driver is absent or failed */
  BATON_ERROR_NOT_SUPPORTED = -10,       /**< the backend or device lacks the capability */
  BATON_ERROR_HOST_CALL_FAILED = -11,    /**< a host call or native callback returned an error */
  BATON_ERROR_OBJECT_IN_USE = -12,       /**< destroyed while in use; see each destroy */
  BATON_ERROR_DRIVER = -13,              /**< any other native driver error; see the message */
  BATON_ERROR_INVALID_STATE = -14,       /**< the object's state does not allow the call */
  BATON_RESULT_MAX_ENUM = 0x7FFFFFFF     /**< keeps the enum 32 bits wide */
} baton_result;

/** True for the error codes (< 0). */
static inline bool baton_is_error(baton_result result) { return result < 0; }

/** The C++ enumerator's name ("ErrorSemaphoreFailed", as messages print it); "Result(<n>)" for
 * unknown values (from a per-thread buffer). Never null. Thread safe. */
BATON_API const char* baton_result_name(baton_result result);

/** The message of the most recent error returned to this thread by any baton call (C or C++), or
 * "" when none. Owned by baton; valid until this thread's next baton call. Thread safe. */
BATON_API const char* baton_last_error_message(void);

/* ---- common types (baton/fwd.hpp) ----------------------------------------------------------- */

/** A timeout meaning "never expire", for every timeout_ns. 0 polls. */
#define BATON_WAIT_FOREVER UINT64_MAX

/** Which backend a physical device, queue or native handle belongs to (baton::BackendKind). */
typedef enum baton_backend_kind {
  BATON_BACKEND_KIND_HOST = 0,             /**< CPU worker threads; always available */
  BATON_BACKEND_KIND_CUDA = 1,             /**< NVIDIA CUDA driver API, loaded at run time */
  BATON_BACKEND_KIND_HIP = 2,              /**< AMD HIP runtime, loaded at run time */
  BATON_BACKEND_KIND_MAX_ENUM = 0x7FFFFFFF /**< keeps the enum 32 bits wide; not a backend */
} baton_backend_kind;
/** The number of backends (of baton_backend_kind values, MAX_ENUM aside). */
#define BATON_BACKEND_KIND_COUNT 3u

/** The bit of a backend in baton_instance_create_info::backend_mask. */
#define BATON_BACKEND_BIT(kind) (1u << (kind))
/** Every backend's bit: the default backend_mask (BATON_INSTANCE_CREATE_INFO_INIT). */
#define BATON_ALL_BACKENDS ((1u << BATON_BACKEND_KIND_COUNT) - 1u)

/** "host", "cuda", "hip" ("unknown" otherwise). Never null; static storage. Thread safe. */
BATON_API const char* baton_backend_name(baton_backend_kind kind);

/** Host waits over several semaphores: satisfied when all, or any one, of the values is reached. */
typedef enum baton_wait_mode {
  BATON_WAIT_MODE_ALL = 0,              /**< every semaphore has reached its value */
  BATON_WAIT_MODE_ANY = 1,              /**< at least one semaphore has reached its value */
  BATON_WAIT_MODE_MAX_ENUM = 0x7FFFFFFF /**< keeps the enum 32 bits wide; not a mode */
} baton_wait_mode;

/** A {semaphore, value} pair: an entry of a host wait, or a submission's wait or signal. */
typedef struct baton_semaphore_value {
  baton_semaphore semaphore; /**< the semaphore waited for or signalled */
  uint64_t value;            /**< the value: a wait is satisfied by any value >= it */
} baton_semaphore_value;

/* ---- instance (baton/instance.hpp) ---------------------------------------------------------- */

/** How serious a message given to the debug callback is (baton::MessageSeverity). */
typedef enum baton_message_severity {
  BATON_MESSAGE_SEVERITY_INFO = 0,    /**< information: backends loaded or not, interop modes */
  BATON_MESSAGE_SEVERITY_WARNING = 1, /**< e.g. a parent destroyed with live children */
  BATON_MESSAGE_SEVERITY_ERROR = 2,   /**< an error a call returned, or a device lost */
  BATON_MESSAGE_SEVERITY_MAX_ENUM = 0x7FFFFFFF /**< keeps the enum 32 bits wide */
} baton_message_severity;

/** Receives every message baton reports for objects of the instance: each error a call returns
 * (the text of baton_last_error_message()), warnings and information. `message` is valid during
 * the call only. May be called from any thread, baton's worker threads included, concurrently;
 * it must not call back into baton. */
typedef void (*baton_debug_callback)(baton_message_severity severity, const char* message,
                                     void* user_data);

/** What baton_create_instance needs (baton::InstanceCreateInfo). */
typedef struct baton_instance_create_info {
  baton_debug_callback debug_callback; /**< may be null */
  void* debug_user_data;               /**< passed to debug_callback; baton never touches it */
  /** Backends to load, as BATON_BACKEND_BIT flags; the host backend is always loaded. */
  uint32_t backend_mask;
  /** Where to write a timeline trace (Chrome trace-event JSON), or NULL for none; copied. The
   * environment variable BATON_TRACE takes precedence. (InstanceCreateInfo::tracePath) */
  const char* trace_path;
} baton_instance_create_info;
/** The C++ defaults: no debug callback, every backend, no trace. */
#define BATON_INSTANCE_CREATE_INFO_INIT \
  { NULL, NULL, BATON_ALL_BACKENDS, NULL }

/** What baton_instance_enumerate_backends reports for each backend baton knows. */
typedef struct baton_backend_info {
  baton_backend_kind kind; /**< which backend this entry describes */
  bool compiled;           /**< built into this library */
  bool available;          /**< compiled, asked for, and its driver loaded and initialised */
  uint32_t device_count;   /**< how many physical devices it reported; 0 when not available */
  /** Why not available, or why an available backend has no devices; else "". */
  char reason[512];
} baton_backend_info;

/** Creates an instance and loads the backends of info->backend_mask (info null: the defaults). A
 * backend whose driver is missing is reported unavailable, which is not an error. Ownership: the
 * caller owns *instance (destroy with baton_instance_destroy). Thread safe.
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null instance, unknown mask bits),
 * BATON_ERROR_OUT_OF_HOST_MEMORY. (baton::createInstance) */
BATON_API baton_result baton_create_instance(const baton_instance_create_info* info,
                                             baton_instance* instance);

/** Destroys the instance. Children still alive (devices, semaphores and what they own) are
 * destroyed too, each reported through the debug callback, and the result is then
 * BATON_ERROR_OBJECT_IN_USE; the instance is gone either way. Not to be called concurrently with
 * other calls on the instance or its children.
 * Returns BATON_SUCCESS, BATON_ERROR_OBJECT_IN_USE, BATON_ERROR_INVALID_HANDLE,
 * BATON_ERROR_INVALID_STATE (called from a callback running on one of its devices; nothing
 * changes). (Instance::destroy) */
BATON_API baton_result baton_instance_destroy(baton_instance instance);

/** Two-call enumeration of every backend baton knows: with infos null, writes the count to
 * *count; otherwise fills up to *count entries (caller-owned array) and writes how many.
 * Returns BATON_SUCCESS, BATON_NOT_READY (the array was too small; not an error),
 * BATON_ERROR_INVALID_ARGUMENT (null count), BATON_ERROR_INVALID_HANDLE.
 * (Instance::enumerateBackends) */
BATON_API baton_result baton_instance_enumerate_backends(baton_instance instance, uint32_t* count,
                                                         baton_backend_info* infos);

/** Lists the physical devices of every available backend, host first (the same two-call idiom).
 * The handles are owned by the instance and stay valid until it is destroyed.
 * Returns BATON_SUCCESS, BATON_NOT_READY, BATON_ERROR_INVALID_ARGUMENT (null count),
 * BATON_ERROR_INVALID_HANDLE. (Instance::enumeratePhysicalDevices) */
BATON_API baton_result baton_instance_enumerate_physical_devices(baton_instance instance,
                                                                 uint32_t* count,
                                                                 baton_physical_device* devices);

/** What baton_instance_create_semaphore needs (baton::SemaphoreCreateInfo). */
typedef struct baton_semaphore_create_info {
  uint64_t initial_value; /**< the value the semaphore starts at */
  const char* debug_name; /**< may be null; copied; names the semaphore in messages */
  uint32_t flags;         /**< BATON_SEMAPHORE_SHAREABLE or 0 */
} baton_semaphore_create_info;
/** The C++ defaults: initial value 0, no name, no flags. */
#define BATON_SEMAPHORE_CREATE_INFO_INIT \
  { 0, NULL, 0 }
/** baton_semaphore_create_info::flags: the semaphore can be shared with other processes
 * (baton_semaphore_export_fd, baton_instance_import_semaphore). (kSemaphoreShareable) */
#define BATON_SEMAPHORE_SHAREABLE 0x1u
/** The highest value a shared semaphore holds, 2^62 - 1. (kSharedSemaphoreMaxValue) */
#define BATON_SHARED_SEMAPHORE_MAX_VALUE 0x3fffffffffffffffull

/** What baton_instance_import_semaphore needs (baton::SemaphoreImportInfo). */
typedef struct baton_semaphore_import_info {
  int fd; /**< from baton_semaphore_export_fd, here or in another process; borrowed */
  const char* debug_name; /**< may be null; copied; names the semaphore in messages */
} baton_semaphore_import_info;
/** No descriptor, no name. */
#define BATON_SEMAPHORE_IMPORT_INFO_INIT \
  { -1, NULL }

/** Imports a semaphore that another process (or this one) shared: a new handle of the same
 * timeline. Ownership: the caller owns *semaphore; info->fd stays the caller's. Returns
 * BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null info or output; a descriptor that is closed
 * or not a shared semaphore's), BATON_ERROR_OUT_OF_HOST_MEMORY (every process slot taken),
 * BATON_ERROR_INVALID_HANDLE. (Instance::importSemaphore) */
BATON_API baton_result baton_instance_import_semaphore(baton_instance instance,
                                                       const baton_semaphore_import_info* info,
                                                       baton_semaphore* semaphore);

/** Creates a timeline semaphore usable by every queue of every device of the instance and by the
 * host (info null: initial value 0, no name), and with BATON_SEMAPHORE_SHAREABLE by other
 * processes. Ownership: the caller owns *semaphore (destroy with baton_semaphore_destroy).
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null semaphore; an unknown flag; a
 * shareable semaphore's initial value above BATON_SHARED_SEMAPHORE_MAX_VALUE),
 * BATON_ERROR_INVALID_HANDLE, BATON_ERROR_OUT_OF_HOST_MEMORY.
 * (Instance::createSemaphore) */
BATON_API baton_result baton_instance_create_semaphore(baton_instance instance,
                                                       const baton_semaphore_create_info* info,
                                                       baton_semaphore* semaphore);

/** The most entries one host wait accepts. */
#define BATON_MAX_WAIT_COUNT 65536u

/** Blocks the calling thread until all (BATON_WAIT_MODE_ALL) or any one (BATON_WAIT_MODE_ANY) of
 * waits[0..wait_count) are reached, a waited semaphore fails, or timeout_ns passes (0 polls,
 * BATON_WAIT_FOREVER never expires); sleeps while blocked. An empty list is satisfied at once.
 * Any number of threads may wait at once.
 * Returns BATON_SUCCESS, BATON_TIMEOUT (not an error), BATON_ERROR_SEMAPHORE_FAILED (the message
 * has the first failure reason), BATON_ERROR_DEVICE_LOST, BATON_ERROR_INVALID_HANDLE,
 * BATON_ERROR_INVALID_ARGUMENT (more than BATON_MAX_WAIT_COUNT entries, null waits with a
 * non-zero count, an unknown mode), BATON_ERROR_DEVICE_MISMATCH (a semaphore of another
 * instance). (Instance::waitSemaphores) */
BATON_API baton_result baton_instance_wait_semaphores(baton_instance instance,
                                                      const baton_semaphore_value* waits,
                                                      size_t wait_count, baton_wait_mode mode,
                                                      uint64_t timeout_ns);

/** The most queues any device accepts (a physical device may accept fewer: max_queues). */
#define BATON_MAX_QUEUES 64u

/** What baton_instance_create_device needs (baton::DeviceCreateInfo). */
typedef struct baton_device_create_info {
  uint32_t queue_count;   /**< 1..baton_physical_device_properties::max_queues */
  const char* debug_name; /**< may be null; copied; names the device in messages */
} baton_device_create_info;
/** The C++ defaults: one queue, no name. */
#define BATON_DEVICE_CREATE_INFO_INIT \
  { 1, NULL }

/** Creates a logical device on one of the instance's physical devices (info null: one queue, no
 * name). Ownership: the caller owns *device (destroy with baton_device_destroy).
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (queue_count 0 or above max_queues, null
 * device), BATON_ERROR_INVALID_HANDLE, BATON_ERROR_DEVICE_MISMATCH (a physical device of another
 * instance), BATON_ERROR_BACKEND_UNAVAILABLE, BATON_ERROR_OUT_OF_HOST_MEMORY, BATON_ERROR_DRIVER.
 * (Instance::createDevice) */
BATON_API baton_result baton_instance_create_device(baton_instance instance,
                                                    baton_physical_device physical_device,
                                                    const baton_device_create_info* info,
                                                    baton_device* device);

/* ---- physical device (baton/physical_device.hpp) -------------------------------------------- */

/** \name Capability bits
 * Capability bits of baton_physical_device_properties::capabilities (baton::Capability).
 * @{ */
/** BATON_MEMORY_KIND_DEVICE buffers. */
#define BATON_CAPABILITY_DEVICE_MEMORY (UINT64_C(1) << 0)
/** BATON_MEMORY_KIND_HOST_PINNED buffers (mappable). */
#define BATON_CAPABILITY_HOST_PINNED_MEMORY (UINT64_C(1) << 1)
/** Queue-ordered alloca/dealloca (memory pools). */
#define BATON_CAPABILITY_STREAM_ORDERED_ALLOC (UINT64_C(1) << 2)
/** 64-bit GPU-side value waits and writes. */
#define BATON_CAPABILITY_STREAM_MEM_OPS_64 (UINT64_C(1) << 3)
/** Waits on recorded device signals stay on the GPU. */
#define BATON_CAPABILITY_NATIVE_TIMEPOINT_WAITS (UINT64_C(1) << 4)
/** Imports Vulkan timeline OPAQUE_FD semaphores. */
#define BATON_CAPABILITY_EXTERNAL_SEMAPHORE_TIMELINE_FD (UINT64_C(1) << 5)
/** Imports Vulkan memory OPAQUE_FD. */
#define BATON_CAPABILITY_EXTERNAL_MEMORY_OPAQUE_FD (UINT64_C(1) << 6)
/** BATON_MEMORY_KIND_DEVICE buffers are host-mappable. */
#define BATON_CAPABILITY_HOST_MAPPED_DEVICE_MEMORY (UINT64_C(1) << 7)
/** BATON_COMMAND_BUFFER_USAGE_GRAPH builds driver graphs (the host backend, which lacks the bit,
 * replays graph command buffers instead). */
#define BATON_CAPABILITY_GRAPH_COMMAND_BUFFERS (UINT64_C(1) << 8)
/** BATON_BUFFER_SHAREABLE buffers and baton_device_import_buffer. */
#define BATON_CAPABILITY_SHAREABLE_MEMORY (UINT64_C(1) << 9)
/** @} */

/** Writes the names of the set bits, comma-separated, into buffer (caller-owned; always
 * NUL-terminated when capacity > 0). Returns the number of characters the full text needs.
 * Thread safe. (baton::capabilityNames) */
BATON_API size_t baton_capability_names(uint64_t capabilities, char* buffer, size_t capacity);

/** What baton_physical_device_get_properties writes (baton::PhysicalDeviceProperties). */
typedef struct baton_physical_device_properties {
  baton_backend_kind backend; /**< the backend that runs work on it */
  uint32_t ordinal;       /**< index among the backend's devices (the CUDA/HIP device ordinal) */
  char name[256];         /**< as the driver names it; the host: "host (N CPU threads)" */
  uint8_t uuid[16];       /**< matches VkPhysicalDeviceIDProperties::deviceUUID on GPUs */
  char arch[64];          /**< "sm_90", "gfx90a:sramecc+:xnack-"; "" on the host */
  uint32_t compute_major; /**< compute capability (CUDA) or gfx version (HIP); 0 on the host */
  uint32_t compute_minor; /**< the minor number of the same version; 0 on the host */
  uint64_t total_memory;  /**< bytes */
  uint32_t max_queues;    /**< the largest baton_device_create_info::queue_count accepted */
  uint64_t capabilities;  /**< BATON_CAPABILITY_* bits */
} baton_physical_device_properties;

/** Writes the properties into *properties (caller-owned). The physical device is owned by its
 * instance. Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null properties),
 * BATON_ERROR_INVALID_HANDLE. (PhysicalDevice::getProperties) */
BATON_API baton_result baton_physical_device_get_properties(
    baton_physical_device physical_device, baton_physical_device_properties* properties);

/* ---- device (baton/device.hpp) -------------------------------------------------------------- */

/** Destroys the device. Held submissions on its queues fail their signals; issued work is waited
 * for. Command buffers and buffers still alive are destroyed too (reported through the debug
 * callback; the result is then BATON_ERROR_OBJECT_IN_USE); the device is gone in every case. Not
 * to be called concurrently with other calls on this device.
 * Returns BATON_SUCCESS, BATON_ERROR_OBJECT_IN_USE, BATON_ERROR_INVALID_HANDLE,
 * BATON_ERROR_INVALID_STATE (called from a callback running on its queues; nothing changes).
 * (Device::destroy) */
BATON_API baton_result baton_device_destroy(baton_device device);

/** Writes queue `index` (0..queue count-1). Queues are owned by the device (never destroyed by
 * the caller). Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (index out of range, null
 * queue), BATON_ERROR_INVALID_HANDLE. (Device::getQueue) */
BATON_API baton_result baton_device_get_queue(baton_device device, uint32_t index,
                                              baton_queue* queue);

/** Writes the number of queues. Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null),
 * BATON_ERROR_INVALID_HANDLE. (Device::getQueueCount) */
BATON_API baton_result baton_device_get_queue_count(baton_device device, uint32_t* count);

/** Writes the physical device the device was created on (owned by the instance).
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null), BATON_ERROR_INVALID_HANDLE.
 * (Device::getPhysicalDevice) */
BATON_API baton_result baton_device_get_physical_device(baton_device device,
                                                        baton_physical_device* physical_device);

/** Creates an empty command buffer for the device's queues. Ownership: the caller owns
 * *command_buffer (destroy with baton_command_buffer_destroy). Returns BATON_SUCCESS,
 * BATON_ERROR_INVALID_ARGUMENT (null), BATON_ERROR_INVALID_HANDLE, BATON_ERROR_DEVICE_LOST.
 * (Device::createCommandBuffer) */
BATON_API baton_result baton_device_create_command_buffer(baton_device device,
                                                          baton_command_buffer* command_buffer);

/** How a command buffer runs its recording (baton::CommandBufferUsage). A graph command buffer
 * is recorded and submitted as any other; on a GPU backend, baton_command_buffer_end builds
 * (or updates in place) driver graphs of the recording and runs its native callbacks there,
 * once, under stream capture (they must be recorded with BATON_NATIVE_CAPTURABLE), and each
 * submission launches the graphs. The host backend replays a graph command buffer: its native
 * callbacks run at every submission. See baton/command_buffer.hpp. */
typedef enum baton_command_buffer_usage {
  BATON_COMMAND_BUFFER_USAGE_REPLAY = 0, /**< each submission issues the commands one by one */
  BATON_COMMAND_BUFFER_USAGE_GRAPH = 1,  /**< end builds driver graphs; submissions launch them */
  BATON_COMMAND_BUFFER_USAGE_MAX_ENUM = 0x7FFFFFFF /**< keeps the enum 32 bits wide */
} baton_command_buffer_usage;

/** What baton_device_create_command_buffer_with_info needs (baton::CommandBufferCreateInfo). */
typedef struct baton_command_buffer_create_info {
  baton_command_buffer_usage usage; /**< replayed (the default) or graph */
  const char* debug_name; /**< may be null; copied; names the command buffer in messages */
} baton_command_buffer_create_info;
/** The C++ defaults: a replayed command buffer, no name. */
#define BATON_COMMAND_BUFFER_CREATE_INFO_INIT \
  { BATON_COMMAND_BUFFER_USAGE_REPLAY, NULL }

/** baton_device_create_command_buffer with parameters (info null: the defaults, a replayed
 * command buffer without a name). Ownership: the caller owns *command_buffer (destroy with
 * baton_command_buffer_destroy). Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null
 * command_buffer, a usage that is not a baton_command_buffer_usage value),
 * BATON_ERROR_NOT_SUPPORTED (BATON_COMMAND_BUFFER_USAGE_GRAPH on a GPU device whose driver
 * lacks the graph entry points: BATON_CAPABILITY_GRAPH_COMMAND_BUFFERS is clear),
 * BATON_ERROR_INVALID_HANDLE, BATON_ERROR_DEVICE_LOST, BATON_ERROR_OUT_OF_HOST_MEMORY.
 * (Device::createCommandBuffer) */
BATON_API baton_result baton_device_create_command_buffer_with_info(
    baton_device device, const baton_command_buffer_create_info* info,
    baton_command_buffer* command_buffer);

/** Where a buffer's memory lives (baton::MemoryKind). */
typedef enum baton_memory_kind {
  BATON_MEMORY_KIND_DEVICE = 0,           /**< device-local (host memory on the host backend) */
  BATON_MEMORY_KIND_HOST_PINNED = 1,      /**< page-locked host memory the device can access */
  BATON_MEMORY_KIND_MAX_ENUM = 0x7FFFFFFF /**< keeps the enum 32 bits wide; not a kind */
} baton_memory_kind;

/** What baton_device_create_buffer and baton_queue_alloca_buffer need
 * (baton::BufferCreateInfo). */
typedef struct baton_buffer_create_info {
  uint64_t size;            /**< bytes, > 0 */
  baton_memory_kind memory; /**< one the device lacks is BATON_ERROR_NOT_SUPPORTED */
  uint32_t flags;           /**< BATON_BUFFER_SHAREABLE or 0 */
} baton_buffer_create_info;
/** The C++ defaults: size 0 (to be set), device memory, no flags. */
#define BATON_BUFFER_CREATE_INFO_INIT \
  { 0, BATON_MEMORY_KIND_DEVICE, 0 }
/** baton_buffer_create_info::flags: the buffer's memory can be mapped by other processes
 * (baton_buffer_export_fd, baton_device_import_buffer); baton_device_create_buffer only. See
 * baton::kBufferShareable (baton/buffer.hpp) for how each backend shares it and how long it lives.
 */
#define BATON_BUFFER_SHAREABLE 0x1u

/** What baton_device_import_buffer needs (baton::BufferImportInfo). */
typedef struct baton_buffer_import_info {
  int fd;        /**< from baton_buffer_export_fd, here or in another process; borrowed */
  uint64_t size; /**< the exported buffer's size: another is refused */
  baton_memory_kind memory; /**< the exported buffer's kind: another is refused */
} baton_buffer_import_info;
/** No descriptor, size 0 (to be set), device memory. */
#define BATON_BUFFER_IMPORT_INFO_INIT \
  { -1, 0, BATON_MEMORY_KIND_DEVICE }

/** Allocates a buffer now (blocking; see baton_queue_alloca_buffer for queue-ordered allocation).
 * info null means the defaults, whose size 0 is BATON_ERROR_INVALID_ARGUMENT. Ownership: the
 * caller owns *buffer (destroy with baton_buffer_destroy).
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (size 0, an unknown memory kind, null
 * buffer), BATON_ERROR_NOT_SUPPORTED (a memory kind the device lacks),
 * BATON_ERROR_OUT_OF_DEVICE_MEMORY, BATON_ERROR_OUT_OF_HOST_MEMORY, BATON_ERROR_DEVICE_LOST,
 * BATON_ERROR_INVALID_HANDLE. (Device::createBuffer) */
BATON_API baton_result baton_device_create_buffer(baton_device device,
                                                  const baton_buffer_create_info* info,
                                                  baton_buffer* buffer);

/** Maps memory that another buffer exported (baton_buffer_export_fd, here or in another process)
 * into this device: a new buffer of info->size bytes sharing that memory. Ownership: the caller
 * owns *buffer; info->fd stays the caller's. Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT
 * (null info or output; a descriptor that is closed or not a buffer's; a size or memory kind other
 * than the exported buffer's; a HIP buffer whose exporter was destroyed),
 * BATON_ERROR_DEVICE_MISMATCH (memory of another device or backend), BATON_ERROR_NOT_SUPPORTED
 * (no BATON_CAPABILITY_SHAREABLE_MEMORY), BATON_ERROR_OUT_OF_DEVICE_MEMORY,
 * BATON_ERROR_OUT_OF_HOST_MEMORY, BATON_ERROR_DEVICE_LOST, BATON_ERROR_DRIVER,
 * BATON_ERROR_INVALID_HANDLE. (Device::importBuffer) */
BATON_API baton_result baton_device_import_buffer(baton_device device,
                                                  const baton_buffer_import_info* info,
                                                  baton_buffer* buffer);

/** Waits for every queue of the device to be idle, or timeout_ns (BATON_WAIT_FOREVER: no limit).
 * Returns what baton_queue_wait_idle returns. (Device::waitIdle) */
BATON_API baton_result baton_device_wait_idle(baton_device device, uint64_t timeout_ns);

/** baton_instance_wait_semaphores that also returns BATON_ERROR_DEVICE_LOST when this device is
 * lost. (Device::waitSemaphores) */
BATON_API baton_result baton_device_wait_semaphores(baton_device device,
                                                    const baton_semaphore_value* waits,
                                                    size_t wait_count, baton_wait_mode mode,
                                                    uint64_t timeout_ns);

/** Device::setHostWaitSpin: a new device's spin (50 µs). */
#define BATON_HOST_WAIT_SPIN_DEFAULT_NS UINT64_C(50000)
/** Device::setHostWaitSpin: the value that spins for a whole wait. */
#define BATON_HOST_WAIT_SPIN_FOREVER UINT64_MAX

/** How long a host wait for a signal of this device (one recorded signal of a submission to its
 * queues covering the value) spins on the signal's driver event before it sleeps until the
 * device's completion thread wakes it: wake-up latency (a sleeping waiter wakes about when a raw
 * blocking-sync event would; docs/performance.md has the figures) against the waiting thread's
 * CPU.
 * BATON_HOST_WAIT_SPIN_DEFAULT_NS (50 µs) on a new device, 0 sleeps at once,
 * BATON_HOST_WAIT_SPIN_FOREVER spins for the whole wait (yielding between queries after 5 µs). A
 * wait for a value that a submission to this device publishes from the host (host calls,
 * collectives) polls that long too when it is longer than the default; otherwise up to 50 µs,
 * as long as that semaphore's values lately took to come (down to 5 µs while they come later
 * than the poll lasts). For waits that start after the call; no
 * effect on a host-backend device. Thread safe. Returns
 * BATON_SUCCESS, BATON_ERROR_INVALID_HANDLE. (Device::setHostWaitSpin) */
BATON_API baton_result baton_device_set_host_wait_spin(baton_device device, uint64_t spin_ns);

/* ---- queue (baton/queue.hpp) ---------------------------------------------------------------- */

/** The most submit infos one submit accepts. */
#define BATON_MAX_SUBMIT_INFOS 4096u
/** The most entries of each list (waits, command buffers, signals) of one submit info. */
#define BATON_MAX_SUBMIT_ENTRIES 4096u

/** One batch, as in vkQueueSubmit2: it runs after every wait is satisfied, executes the command
 * buffers in order, then signals every signal. Wait-before-signal is allowed. */
typedef struct baton_submit_info {
  const baton_semaphore_value* waits;          /**< values the batch waits for before it runs */
  size_t wait_count;                           /**< the number of waits */
  const baton_command_buffer* command_buffers; /**< ended command buffers, run in this order */
  size_t command_buffer_count;                 /**< the number of command_buffers */
  const baton_semaphore_value* signals;        /**< values signalled once they have run */
  size_t signal_count;                         /**< the number of signals */
} baton_submit_info;

/** Submits submits[0..submit_count) in order. Never blocks on their waits: a batch whose waits
 * are not met is held (with everything behind it on this queue) and released as soon as they
 * can be met; on a GPU backend it may wait for room when ~1024 released batches are queued. If
 * a waited semaphore fails, the batch does not run and its signals fail. All-or-nothing: on an
 * error nothing is submitted. Ownership: the caller keeps the command buffers and semaphores
 * (pending work references them, so destroying them afterwards is safe) and the arrays. Several
 * threads may submit to one queue.
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_HANDLE, BATON_ERROR_INVALID_ARGUMENT (an over-long
 * list, a null array with a non-zero count), BATON_ERROR_INVALID_STATE (a command buffer without
 * an ended recording), BATON_ERROR_DEVICE_MISMATCH (a command buffer of another device, a
 * semaphore of another instance), BATON_ERROR_NON_INCREASING_VALUE (a signal not above the
 * semaphore's value), BATON_ERROR_DEVICE_LOST. (Queue::submit) */
BATON_API baton_result baton_queue_submit(baton_queue queue, const baton_submit_info* submits,
                                          size_t submit_count);

/** Queue-ordered allocation: creates *buffer now, its memory allocated in queue order once the
 * waits are met, before the signals are signalled; use it only in work ordered after the
 * signals. Never waits for the waits. Ownership: the caller owns *buffer; release it with
 * baton_queue_dealloca_buffer (or baton_buffer_destroy).
 * Returns what baton_queue_submit returns, plus BATON_ERROR_NOT_SUPPORTED (no stream-ordered
 * allocation, a memory kind the device lacks), BATON_ERROR_INVALID_ARGUMENT (size 0, so also a
 * null info; an unknown memory kind; null buffer) and BATON_ERROR_OUT_OF_DEVICE_MEMORY.
 * (Queue::allocaBuffer) */
BATON_API baton_result baton_queue_alloca_buffer(baton_queue queue,
                                                 const baton_semaphore_value* waits,
                                                 size_t wait_count,
                                                 const baton_buffer_create_info* info,
                                                 const baton_semaphore_value* signals,
                                                 size_t signal_count, baton_buffer* buffer);

/** Queue-ordered free of a buffer made by baton_queue_alloca_buffer: its memory is returned in
 * queue order after the waits, then the signals are signalled. Ownership: success consumes the
 * handle; an error consumes nothing (the buffer is still the caller's).
 * Returns what baton_queue_submit returns, plus BATON_ERROR_INVALID_HANDLE (a null or destroyed
 * buffer), BATON_ERROR_INVALID_ARGUMENT (a buffer not made by alloca: use baton_buffer_destroy),
 * BATON_ERROR_DEVICE_MISMATCH (a buffer of another device). (Queue::deallocaBuffer) */
BATON_API baton_result baton_queue_dealloca_buffer(baton_queue queue,
                                                   const baton_semaphore_value* waits,
                                                   size_t wait_count, baton_buffer buffer,
                                                   const baton_semaphore_value* signals,
                                                   size_t signal_count);

/** Blocks until every batch submitted to the queue before the call has finished (held batches
 * count as unfinished), or timeout_ns passes (BATON_WAIT_FOREVER: no limit).
 * Returns BATON_SUCCESS, BATON_TIMEOUT, BATON_ERROR_DEVICE_LOST, BATON_ERROR_INVALID_HANDLE,
 * BATON_ERROR_INVALID_STATE (at once, from a callback running on a queue of this device).
 * (Queue::waitIdle) */
BATON_API baton_result baton_queue_wait_idle(baton_queue queue, uint64_t timeout_ns);

/** Writes the device that owns the queue. Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT
 * (null), BATON_ERROR_INVALID_HANDLE. (Queue::getDevice) */
BATON_API baton_result baton_queue_get_device(baton_queue queue, baton_device* device);

/* ---- semaphore (baton/semaphore.hpp) -------------------------------------------------------- */

/** Destroys the semaphore handle. If pending work still uses it, the semaphore is failed
 * ("destroyed while pending work used it") so its waiters return, and the result is
 * BATON_ERROR_OBJECT_IN_USE; the handle is invalid afterwards in every case.
 * Returns BATON_SUCCESS, BATON_ERROR_OBJECT_IN_USE, BATON_ERROR_INVALID_HANDLE.
 * (Semaphore::destroy) */
BATON_API baton_result baton_semaphore_destroy(baton_semaphore semaphore);

/** Writes the current value. Returns BATON_SUCCESS, BATON_ERROR_SEMAPHORE_FAILED (*value is still
 * written: the last value reached), BATON_ERROR_INVALID_ARGUMENT (null value),
 * BATON_ERROR_INVALID_HANDLE. (Semaphore::getValue) */
BATON_API baton_result baton_semaphore_get_value(baton_semaphore semaphore, uint64_t* value);

/** Signals `value` from the host, waking host waiters and releasing submissions that wait for it.
 * Returns BATON_SUCCESS, BATON_ERROR_NON_INCREASING_VALUE (value <= current value; nothing
 * changes), BATON_ERROR_SEMAPHORE_FAILED (already failed), BATON_ERROR_INVALID_HANDLE.
 * (Semaphore::signal) */
BATON_API baton_result baton_semaphore_signal(baton_semaphore semaphore, uint64_t value);

/** Fails the semaphore with `reason` (copied; null gives "failed by the host"); the first failure
 * wins. Returns BATON_SUCCESS, BATON_ERROR_SEMAPHORE_FAILED or BATON_ERROR_DEVICE_LOST (already
 * failed: that failure's own result; nothing changes), BATON_ERROR_INVALID_HANDLE.
 * (Semaphore::fail) */
BATON_API baton_result baton_semaphore_fail(baton_semaphore semaphore, const char* reason);

/** Writes the first failure reason into buffer (caller-owned; NUL-terminated, truncated to
 * capacity), or "" when the semaphore has not failed. Returns BATON_SUCCESS,
 * BATON_ERROR_INVALID_ARGUMENT (null buffer, capacity 0; nothing written),
 * BATON_ERROR_INVALID_HANDLE. (Semaphore::getFailureReason) */
BATON_API baton_result baton_semaphore_get_failure_reason(baton_semaphore semaphore, char* buffer,
                                                          size_t capacity);

/** Host wait for one value; baton_instance_wait_semaphores with a single entry (the same
 * results). (Semaphore::wait) */
BATON_API baton_result baton_semaphore_wait(baton_semaphore semaphore, uint64_t value,
                                            uint64_t timeout_ns);

/** Writes to *fd a new descriptor of a shareable semaphore, for another process to import; the
 * caller owns it (close-on-exec is set). Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT
 * (null fd; a semaphore that is not shareable), BATON_ERROR_OUT_OF_HOST_MEMORY,
 * BATON_ERROR_INVALID_HANDLE. (Semaphore::exportFd) */
BATON_API baton_result baton_semaphore_export_fd(baton_semaphore semaphore, int* fd);

/* ---- command buffer (baton/command_buffer.hpp) ---------------------------------------------- */

/** \name Command buffers
 * Recording (begin, the commands, end) is not thread safe: one thread at a time per command
 * buffer. A submission keeps the recording it was given, so begin may re-record while earlier
 * submissions are pending. Graph command buffers (BATON_COMMAND_BUFFER_USAGE_GRAPH) build their
 * driver graphs in baton_command_buffer_end; see baton_command_buffer_usage.
 * @{ */

/** The most bytes one baton_command_buffer_update_buffer records. */
#define BATON_MAX_UPDATE_SIZE 65536u

/** Runs on the host, in queue order, when a submission reaches it; an error result fails the
 * submission (its signals fail; later commands of it do not run). It must not block on work
 * queued behind it, nor call the native driver's stream API. What it may call of baton: see
 * baton::HostCallback (command_buffer.hpp); waits that would wait for its own device return
 * BATON_ERROR_INVALID_STATE. */
typedef baton_result (*baton_host_callback)(void* user_data);

/** The backend's native queue, handed to native callbacks at execution time. */
typedef struct baton_native_queue {
  baton_backend_kind backend; /**< the backend of the queue the callback runs on */
  void* stream;               /**< CUstream / hipStream_t; null on the host backend */
  int32_t device_ordinal;     /**< the CUDA/HIP device ordinal (properties' ordinal) */
  /** The queue's index in its device (baton_device_get_queue), or BATON_CAPTURE_QUEUE_INDEX. */
  uint32_t queue_index;
} baton_native_queue;

/** baton_native_queue::queue_index while baton_command_buffer_end captures a graph command
 * buffer's capturable native callback: the stream is then a capture stream of the device, not a
 * queue's. (baton::kCaptureQueueIndex) */
#define BATON_CAPTURE_QUEUE_INDEX UINT32_C(0xFFFFFFFF)

/** Runs on a host thread when the submission is issued, in queue order, with the native stream
 * (*queue is valid during the call only): enqueue work there and return; never block on other
 * baton work. On the host backend it runs on the queue's worker and its own work is the work.
 * An error result fails the submission. See baton::NativeCallback. */
typedef baton_result (*baton_native_callback)(const baton_native_queue* queue, void* user_data);

/** Destroys the command buffer; pending submissions keep their recording.
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_HANDLE. (CommandBuffer::destroy) */
BATON_API baton_result baton_command_buffer_destroy(baton_command_buffer command_buffer);

/** Starts a new recording, discarding the previous one (pending submissions keep theirs).
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_HANDLE. (CommandBuffer::begin) */
BATON_API baton_result baton_command_buffer_begin(baton_command_buffer command_buffer);

/** Ends the recording; only ended command buffers can be submitted. For a graph command buffer
 * on a GPU backend it also builds the graphs and runs the capturable native callbacks; on
 * failure the recording is discarded (begin again) and nothing was submitted. Returns
 * BATON_SUCCESS, BATON_ERROR_INVALID_STATE (not recording; in a graph command buffer, a buffer
 * whose queue-ordered memory is not there), BATON_ERROR_INVALID_HANDLE,
 * BATON_ERROR_HOST_CALL_FAILED (a capturable native callback returned an error),
 * BATON_ERROR_DEVICE_LOST, BATON_ERROR_DRIVER (the driver refused the graph or the capture; the
 * message names the call), BATON_ERROR_NOT_SUPPORTED (collectives of a communicator with other
 * ranks in this process, with blocking calls: CommandBuffer::end), BATON_ERROR_OUT_OF_HOST_MEMORY,
 * BATON_ERROR_OUT_OF_DEVICE_MEMORY.
 * (CommandBuffer::end) */
BATON_API baton_result baton_command_buffer_end(baton_command_buffer command_buffer);
/** @} */

/** \name Recording calls
 * Each recording call returns BATON_SUCCESS, BATON_ERROR_INVALID_STATE (not between begin and
 * end), BATON_ERROR_INVALID_HANDLE (the command buffer or a buffer), BATON_ERROR_DEVICE_MISMATCH
 * (a buffer of another device), BATON_ERROR_INVALID_ARGUMENT (a range outside a buffer, size 0,
 * null data or callback, or a break of the call's own rule). A rejected call records nothing.
 * The buffers stay the caller's; the recording keeps their memory alive while it is pending.
 * @{ */

/** Copies `size` bytes; the ranges may share a buffer but must not overlap.
 * (CommandBuffer::copyBuffer) */
BATON_API baton_result baton_command_buffer_copy_buffer(baton_command_buffer command_buffer,
                                                        baton_buffer src, uint64_t src_offset,
                                                        baton_buffer dst, uint64_t dst_offset,
                                                        uint64_t size);

/** Writes the 32-bit pattern over [offset, offset+size); offset and size multiples of 4.
 * (CommandBuffer::fillBuffer) */
BATON_API baton_result baton_command_buffer_fill_buffer(baton_command_buffer command_buffer,
                                                        baton_buffer dst, uint64_t offset,
                                                        uint64_t size, uint32_t pattern);

/** Writes `size` (<= BATON_MAX_UPDATE_SIZE) bytes of `data` at offset; data is copied now (the
 * caller keeps it). (CommandBuffer::updateBuffer) */
BATON_API baton_result baton_command_buffer_update_buffer(baton_command_buffer command_buffer,
                                                          baton_buffer dst, uint64_t offset,
                                                          uint64_t size, const void* data);

/** Records a host callback; user_data stays the caller's and must stay valid until every
 * submission of the recording has run it. (CommandBuffer::hostCall) */
BATON_API baton_result baton_command_buffer_host_call(baton_command_buffer command_buffer,
                                                      baton_host_callback callback,
                                                      void* user_data);

/** baton_command_buffer_host_call_flags flag: the call's error return does not fail the
 * submission; it is reported through the debug callback as a warning, the commands after it run,
 * and the submission's signals are published GPU-side (no host round trip for the GPU waiters of
 * the next values); a graph command buffer keeps the call inside its graph.
 * (baton::kHostCallInfallible) */
#define BATON_HOST_CALL_INFALLIBLE (UINT32_C(1) << 0)

/** Records a host callback with flags (BATON_HOST_CALL_INFALLIBLE, or 0 as
 * baton_command_buffer_host_call). Other flag bits: BATON_ERROR_INVALID_ARGUMENT.
 * (CommandBuffer::hostCall) */
BATON_API baton_result baton_command_buffer_host_call_flags(baton_command_buffer command_buffer,
                                                            baton_host_callback callback,
                                                            void* user_data, uint32_t flags);

/** Records a native callback; user_data as for baton_command_buffer_host_call. A graph command
 * buffer refuses it (BATON_ERROR_INVALID_ARGUMENT): use baton_command_buffer_native_flags with
 * BATON_NATIVE_CAPTURABLE there. (CommandBuffer::native) */
BATON_API baton_result baton_command_buffer_native(baton_command_buffer command_buffer,
                                                   baton_native_callback callback, void* user_data);

/** baton_command_buffer_native_flags flag: the callback may be captured into a graph. Its
 * contract: it only enqueues work on baton_native_queue::stream (kernels, copies, library calls
 * that support stream capture), makes no synchronising call, calls no baton function, and
 * enqueues the same work every time it is called. (baton::kNativeCapturable) */
#define BATON_NATIVE_CAPTURABLE (UINT32_C(1) << 0)

/** Records a native callback with flags (BATON_NATIVE_CAPTURABLE, or 0 as
 * baton_command_buffer_native). In a graph command buffer a callback without
 * BATON_NATIVE_CAPTURABLE is refused with BATON_ERROR_INVALID_ARGUMENT; a capturable one runs
 * inside baton_command_buffer_end, once, on a capture stream (queue_index
 * BATON_CAPTURE_QUEUE_INDEX), on CUDA and HIP, and at every submission on the host backend,
 * which replays graph command buffers. In a replayed command buffer the flag changes nothing.
 * Other flag bits: BATON_ERROR_INVALID_ARGUMENT. user_data as for
 * baton_command_buffer_host_call. (CommandBuffer::native) */
BATON_API baton_result baton_command_buffer_native_flags(baton_command_buffer command_buffer,
                                                         baton_native_callback callback,
                                                         void* user_data, uint32_t flags);
/** @} */

/* ---- image (baton/image.hpp) ---------------------------------------------------------------- */

/** An image's texel format (baton::ImageFormat; the names follow Vulkan's). */
typedef enum baton_image_format {
  BATON_IMAGE_FORMAT_UNDEFINED = 0,      /**< no format */
  BATON_IMAGE_FORMAT_R8_UNORM = 1,       /**< VK_FORMAT_R8_UNORM, 1 byte per texel */
  BATON_IMAGE_FORMAT_R8G8_UNORM = 2,     /**< VK_FORMAT_R8G8_UNORM, 2 bytes per texel */
  BATON_IMAGE_FORMAT_R8G8B8A8_UNORM = 3, /**< VK_FORMAT_R8G8B8A8_UNORM, 4 bytes per texel */
  BATON_IMAGE_FORMAT_R8G8B8A8_SRGB = 4,  /**< VK_FORMAT_R8G8B8A8_SRGB, 4 bytes per texel */
  BATON_IMAGE_FORMAT_B8G8R8A8_UNORM = 5, /**< VK_FORMAT_B8G8R8A8_UNORM, 4 bytes per texel */
  BATON_IMAGE_FORMAT_B8G8R8A8_SRGB = 6,  /**< VK_FORMAT_B8G8R8A8_SRGB, 4 bytes per texel */
  BATON_IMAGE_FORMAT_R8G8B8A8_UINT = 7,  /**< VK_FORMAT_R8G8B8A8_UINT, 4 bytes per texel */
  BATON_IMAGE_FORMAT_R8G8B8A8_SNORM = 8, /**< VK_FORMAT_R8G8B8A8_SNORM, 4 bytes per texel */
  BATON_IMAGE_FORMAT_R16_SFLOAT = 9,     /**< VK_FORMAT_R16_SFLOAT, 2 bytes per texel */
  BATON_IMAGE_FORMAT_R16G16_SFLOAT = 10, /**< VK_FORMAT_R16G16_SFLOAT, 4 bytes per texel */
  BATON_IMAGE_FORMAT_R16G16B16A16_SFLOAT =
      11, /**< VK_FORMAT_R16G16B16A16_SFLOAT, 8 bytes per texel */
  BATON_IMAGE_FORMAT_R16G16B16A16_UNORM =
      12,                                    /**< VK_FORMAT_R16G16B16A16_UNORM, 8 bytes per texel */
  BATON_IMAGE_FORMAT_R16G16B16A16_UINT = 13, /**< VK_FORMAT_R16G16B16A16_UINT, 8 bytes per texel */
  BATON_IMAGE_FORMAT_R32_SFLOAT = 14,        /**< VK_FORMAT_R32_SFLOAT, 4 bytes per texel */
  BATON_IMAGE_FORMAT_R32_UINT = 15,          /**< VK_FORMAT_R32_UINT, 4 bytes per texel */
  BATON_IMAGE_FORMAT_R32G32_SFLOAT = 16,     /**< VK_FORMAT_R32G32_SFLOAT, 8 bytes per texel */
  BATON_IMAGE_FORMAT_R32G32B32A32_SFLOAT =
      17, /**< VK_FORMAT_R32G32B32A32_SFLOAT, 16 bytes per texel */
  BATON_IMAGE_FORMAT_R32G32B32A32_UINT = 18, /**< VK_FORMAT_R32G32B32A32_UINT, 16 bytes per texel */
  BATON_IMAGE_FORMAT_A2B10G10R10_UNORM_PACK32 =
      19, /**< VK_FORMAT_A2B10G10R10_UNORM_PACK32, 4 bytes per texel */
  BATON_IMAGE_FORMAT_B10G11R11_UFLOAT_PACK32 =
      20 /**< VK_FORMAT_B10G11R11_UFLOAT_PACK32, 4 bytes per texel */
} baton_image_format;

/** "R8G8B8A8_SRGB" and so on, or "unknown". Never null. (baton::imageFormatName) */
BATON_API const char* baton_image_format_name(baton_image_format format);
/** Bytes per texel; 0 for UNDEFINED and unknown values. (baton::imageFormatTexelBytes) */
BATON_API uint32_t baton_image_format_texel_bytes(baton_image_format format);

/** What an image is (baton::ImageInfo). */
typedef struct baton_image_info {
  baton_image_format format; /**< its texel format */
  uint32_t width;            /**< level 0's width in texels */
  uint32_t height;           /**< level 0's height in texels */
  uint32_t mip_levels;       /**< levels, >= 1 */
  uint32_t array_layers;     /**< layers, >= 1 */
} baton_image_info;

/** One region of an image copy (baton::BufferImageCopy, as VkBufferImageCopy). */
typedef struct baton_buffer_image_copy {
  uint64_t buffer_offset;       /**< the first texel in the buffer; a multiple of the texel size */
  uint32_t buffer_row_length;   /**< texels between row starts in the buffer; 0: width */
  uint32_t buffer_image_height; /**< rows between layer starts in the buffer; 0: height */
  uint32_t mip_level;           /**< the level */
  uint32_t base_array_layer;    /**< the first layer */
  uint32_t layer_count;         /**< layers, >= 1 */
  uint32_t x;                   /**< the rectangle's first column */
  uint32_t y;                   /**< its first row */
  uint32_t width;               /**< its width in texels, > 0 */
  uint32_t height;              /**< its height in texels, > 0 */
} baton_buffer_image_copy;
/** The whole of level 0, layer 0 of a width x height image: set width and height. */
#define BATON_BUFFER_IMAGE_COPY_INIT \
  { 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 }

/** The backend's objects behind an image (baton::NativeImage); owned by the image. */
typedef struct baton_native_image {
  baton_backend_kind backend; /**< the backend of the image's device */
  void* mipmapped_array;      /**< CUDA: the CUmipmappedArray; NULL on the host backend */
  uint64_t texture_object;    /**< CUDA: a CUtexObject over every level; 0 otherwise */
} baton_native_image;

/** One mip level's objects (baton::NativeImageLevel); owned by the image. */
typedef struct baton_native_image_level {
  uint32_t width;          /**< the level's width in texels */
  uint32_t height;         /**< the level's height in texels */
  void* array;             /**< CUDA: the level's CUarray; NULL on the host backend */
  uint64_t surface_object; /**< CUDA: a CUsurfObject over the level; 0 otherwise */
  void* host_pointer;      /**< host backend: layer 0's first texel; NULL on GPU backends */
  uint64_t row_pitch;      /**< host backend: bytes between rows */
  uint64_t layer_pitch;    /**< host backend: bytes between layers */
} baton_native_image_level;

/** Destroys the image handle; command buffers recorded with it keep its memory alive until their
 * pending submissions finish. Returns BATON_SUCCESS, BATON_ERROR_INVALID_HANDLE.
 * (Image::destroy) */
BATON_API baton_result baton_image_destroy(baton_image image);
/** Describes the image into *info (caller-owned). Returns BATON_SUCCESS,
 * BATON_ERROR_INVALID_ARGUMENT (null), BATON_ERROR_INVALID_HANDLE. (Image::getInfo) */
BATON_API baton_result baton_image_get_info(baton_image image, baton_image_info* info);
/** The backend's objects for the image, into *native (caller-owned). Returns as
 * baton_image_get_info. (Image::getNative) */
BATON_API baton_result baton_image_get_native(baton_image image, baton_native_image* native);
/** The backend's objects for mip level `level`. Returns BATON_SUCCESS,
 * BATON_ERROR_INVALID_ARGUMENT (null, a level out of range), BATON_ERROR_INVALID_HANDLE.
 * (Image::getNativeLevel) */
BATON_API baton_result baton_image_get_native_level(baton_image image, uint32_t level,
                                                    baton_native_image_level* native);

/** Records a copy from `src` into the image `dst`, `region_count` regions (regions null only with
 * a count of 0, which is BATON_ERROR_INVALID_ARGUMENT). Returns what the recording calls return.
 * (CommandBuffer::copyBufferToImage) */
BATON_API baton_result baton_command_buffer_copy_buffer_to_image(
    baton_command_buffer command_buffer, baton_buffer src, baton_image dst,
    const baton_buffer_image_copy* regions, size_t region_count);
/** Records a copy from the image `src` into `dst`; as baton_command_buffer_copy_buffer_to_image.
 * (CommandBuffer::copyImageToBuffer) */
BATON_API baton_result baton_command_buffer_copy_image_to_buffer(
    baton_command_buffer command_buffer, baton_image src, baton_buffer dst,
    const baton_buffer_image_copy* regions, size_t region_count);

/* ---- buffer (baton/buffer.hpp) -------------------------------------------------------------- */

/** Destroys the buffer handle; command buffers recorded with it keep its memory alive until their
 * pending submissions finish. Returns BATON_SUCCESS, BATON_ERROR_INVALID_HANDLE.
 * (Buffer::destroy) */
BATON_API baton_result baton_buffer_destroy(baton_buffer buffer);

/** Writes the size in bytes. Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null),
 * BATON_ERROR_INVALID_HANDLE. (Buffer::getSize) */
BATON_API baton_result baton_buffer_get_size(baton_buffer buffer, uint64_t* size);

/** Writes to *fd a new descriptor (close-on-exec, the caller's) of a shareable buffer's memory
 * (BATON_BUFFER_SHAREABLE, or made by baton_device_import_buffer), for another process to import
 * with baton_device_import_buffer together with the buffer's size and memory kind. Returns
 * BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null fd; a buffer that is not shareable: *fd is
 * -1), BATON_ERROR_OUT_OF_HOST_MEMORY, BATON_ERROR_DRIVER, BATON_ERROR_INVALID_HANDLE.
 * (Buffer::exportFd) */
BATON_API baton_result baton_buffer_export_fd(baton_buffer buffer, int* fd);

/** Writes a host pointer to the memory, owned by the buffer and valid until it is destroyed;
 * order host access against device work with semaphores. Returns BATON_SUCCESS, BATON_NOT_READY
 * (an alloca buffer whose allocation has not run yet; *host_pointer is null),
 * BATON_ERROR_NOT_SUPPORTED (device memory the host cannot map), BATON_ERROR_INVALID_ARGUMENT
 * (null), BATON_ERROR_INVALID_HANDLE. (Buffer::map) */
BATON_API baton_result baton_buffer_map(baton_buffer buffer, void** host_pointer);

/** Writes the address device code uses (a CUdeviceptr on CUDA, the host address on the host
 * backend). Returns BATON_SUCCESS, BATON_NOT_READY (an alloca buffer not yet allocated;
 * *address is 0), BATON_ERROR_INVALID_ARGUMENT (null), BATON_ERROR_INVALID_HANDLE.
 * (Buffer::getDeviceAddress) */
BATON_API baton_result baton_buffer_get_device_address(baton_buffer buffer, uint64_t* address);

/* ---- collectives (baton/communicator.hpp) --------------------------------------------------- */

/** \name Collectives
 * A communicator is one rank of a group of devices that exchange data with collective operations
 * (all-reduce, broadcast, ...) and point-to-point transfers, carried by the collective library
 * (NCCL on CUDA, RCCL on HIP, loaded at run time) and ordered by baton: collective commands are
 * recorded in command buffers and run in queue order, so timeline semaphores order them like any
 * other work. A failure the library reports, or no progress for the communicator's timeout,
 * marks the communicator failed and fails the signals of every submission that used it (the
 * device stays usable); see baton/communicator.hpp.
 * @{ */

/** The size of a baton_communicator_id: NCCL's and RCCL's unique id (NCCL_UNIQUE_ID_BYTES). */
#define BATON_COMMUNICATOR_ID_SIZE 128u

/** What the ranks of one communicator share (baton::CommunicatorId): made once by one rank
 * (baton_instance_create_communicator_id), handed to every other rank by the application (any
 * channel: it is plain bytes), and given to each rank's baton_device_create_communicator. An id
 * is used for one communicator only. */
typedef struct baton_communicator_id {
  uint8_t bytes[BATON_COMMUNICATOR_ID_SIZE]; /**< opaque to baton and to the application */
} baton_communicator_id;

/** The element type of a collective's buffers (baton::ElementType). Each maps to the library's
 * own type of the same width and format, so reductions happen in the type itself. */
typedef enum baton_element_type {
  BATON_ELEMENT_TYPE_INT8 = 0,             /**< signed 8-bit integer */
  BATON_ELEMENT_TYPE_UINT8 = 1,            /**< unsigned 8-bit integer */
  BATON_ELEMENT_TYPE_INT32 = 2,            /**< signed 32-bit integer */
  BATON_ELEMENT_TYPE_UINT32 = 3,           /**< unsigned 32-bit integer */
  BATON_ELEMENT_TYPE_INT64 = 4,            /**< signed 64-bit integer */
  BATON_ELEMENT_TYPE_UINT64 = 5,           /**< unsigned 64-bit integer */
  BATON_ELEMENT_TYPE_FLOAT16 = 6,          /**< IEEE 754 half precision */
  BATON_ELEMENT_TYPE_FLOAT32 = 7,          /**< IEEE 754 single precision */
  BATON_ELEMENT_TYPE_FLOAT64 = 8,          /**< IEEE 754 double precision */
  BATON_ELEMENT_TYPE_BFLOAT16 = 9,         /**< bfloat16: float32's exponent, 7 mantissa bits */
  BATON_ELEMENT_TYPE_FLOAT8_E4M3 = 10,     /**< 8-bit float, 4 exponent, 3 mantissa bits (OCP) */
  BATON_ELEMENT_TYPE_FLOAT8_E5M2 = 11,     /**< 8-bit float, 5 exponent, 2 mantissa bits (OCP) */
  BATON_ELEMENT_TYPE_MAX_ENUM = 0x7FFFFFFF /**< keeps the enum 32 bits wide; not a type */
} baton_element_type;
/** The number of baton_element_type values (MAX_ENUM aside). */
#define BATON_ELEMENT_TYPE_COUNT 12u

/** The size in bytes of one element of `type`; 0 for a value that is not a baton_element_type.
 * Thread safe. (baton::elementSize) */
BATON_API uint64_t baton_element_size(baton_element_type type);

/** The printable name of an element type ("float32", "bfloat16"); "?" for an unknown value.
 * Never null; static storage. Thread safe. (baton::elementTypeName) */
BATON_API const char* baton_element_type_name(baton_element_type type);

/** How a reduction combines the ranks' elements (baton::ReduceOp). */
typedef enum baton_reduce_op {
  BATON_REDUCE_OP_SUM = 0,  /**< the sum */
  BATON_REDUCE_OP_PROD = 1, /**< the product */
  BATON_REDUCE_OP_MAX = 2,  /**< the largest */
  BATON_REDUCE_OP_MIN = 3,  /**< the smallest */
  BATON_REDUCE_OP_AVG = 4,  /**< the sum divided by the rank count (integers: toward zero) */
  BATON_REDUCE_OP_MAX_ENUM = 0x7FFFFFFF /**< keeps the enum 32 bits wide; not an op */
} baton_reduce_op;
/** The number of baton_reduce_op values (MAX_ENUM aside). */
#define BATON_REDUCE_OP_COUNT 5u

/** The printable name of a reduction ("sum", "avg"); "?" for an unknown value. Never null;
 * static storage. Thread safe. (baton::reduceOpName) */
BATON_API const char* baton_reduce_op_name(baton_reduce_op op);

/** What baton_communicator_get_state writes (baton::CommunicatorState). */
typedef enum baton_communicator_state {
  BATON_COMMUNICATOR_STATE_READY = 0,  /**< accepts collectives */
  BATON_COMMUNICATOR_STATE_FAILED = 1, /**< failed (see get_failure_reason): only shrink works */
  BATON_COMMUNICATOR_STATE_MAX_ENUM = 0x7FFFFFFF /**< keeps the enum 32 bits wide */
} baton_communicator_state;

/** baton_communicator_create_info::timeout_ns 0 means this: 30 seconds. */
#define BATON_COLLECTIVE_TIMEOUT_DEFAULT_NS UINT64_C(30000000000)

/** baton_communicator_split: this rank joins no new communicator. */
#define BATON_SPLIT_NO_COLOR (-1)

/** What baton_device_create_communicator needs (baton::CommunicatorCreateInfo). */
typedef struct baton_communicator_create_info {
  baton_communicator_id id; /**< the group's id (baton_instance_create_communicator_id) */
  uint32_t rank;            /**< this device's rank: 0..rank_count-1, each rank once */
  uint32_t rank_count;      /**< how many ranks the group has: 1 or more */
  /** How long creation waits for every rank to arrive, and how long a collective may make no
   * progress before baton fails the communicator; 0: BATON_COLLECTIVE_TIMEOUT_DEFAULT_NS. */
  uint64_t timeout_ns;
  const char* debug_name; /**< may be null; copied; names the communicator in messages */
} baton_communicator_create_info;
/** The C++ defaults: a zero id, rank 0, rank_count 0 (to be set), the default timeout, no
 * name. */
#define BATON_COMMUNICATOR_CREATE_INFO_INIT \
  { {{0}}, 0, 0, 0, NULL }

/** What baton_instance_create_communicators needs (baton::CommunicatorGroupCreateInfo). */
typedef struct baton_communicator_group_create_info {
  uint64_t timeout_ns;    /**< as baton_communicator_create_info::timeout_ns */
  const char* debug_name; /**< as baton_communicator_create_info::debug_name, for every rank */
} baton_communicator_group_create_info;
/** The C++ defaults: the default timeout, no name. */
#define BATON_COMMUNICATOR_GROUP_CREATE_INFO_INIT \
  { 0, NULL }

/** What baton_instance_get_collective_support writes (baton::CollectiveSupport). */
typedef struct baton_collective_support {
  baton_backend_kind backend; /**< the backend this describes */
  bool available;             /**< the library loaded: communicators can be made */
  /** The library's version as it reports it (ncclGetVersion: 22809 for 2.28.9); 0 if absent. */
  uint32_t version;
  char library[256]; /**< the path that loaded ("libnccl.so.2"), or "" */
  /** Why not available (the paths tried and dlopen's errors, "the host backend has no
   * collective engine", ...); "" when available. */
  char reason[512];
  bool can_revoke; /**< the library ends stuck operations and keeps the communicator */
  bool can_shrink; /**< the library can shrink a communicator (NCCL 2.27 and later) */
  /** Collective calls go to a blocking library communicator (the default); false when
   * BATON_NCCL_BLOCKING_CALLS=0 puts them on the non-blocking one, or when not available. */
  bool blocking_calls;
} baton_collective_support;

/** Reports whether `backend` has a collective library (NCCL for CUDA, RCCL for HIP), which one
 * and its version, or why not, into *support (caller-owned). Loads the library on first use (the
 * path in BATON_NCCL_LIBRARY or BATON_RCCL_LIBRARY first when set). Thread safe.
 * Returns BATON_SUCCESS (also when not available: support->reason says why),
 * BATON_ERROR_INVALID_ARGUMENT (null support, an unknown backend), BATON_ERROR_INVALID_HANDLE.
 * (Instance::getCollectiveSupport) */
BATON_API baton_result baton_instance_get_collective_support(baton_instance instance,
                                                             baton_backend_kind backend,
                                                             baton_collective_support* support);

/** Makes a new id for one communicator group of `backend` (ncclGetUniqueId) into *id
 * (caller-owned), to be handed to every rank; the rank that makes it should be rank 0 (the id
 * holds the address where that process listens). Thread safe.
 * Returns BATON_SUCCESS, BATON_ERROR_NOT_SUPPORTED (no collective library: the message says
 * why), BATON_ERROR_INVALID_ARGUMENT, BATON_ERROR_INVALID_HANDLE, BATON_ERROR_DRIVER.
 * (Instance::createCommunicatorId) */
BATON_API baton_result baton_instance_create_communicator_id(baton_instance instance,
                                                             baton_backend_kind backend,
                                                             baton_communicator_id* id);

/** Creates a whole group in this process at once (as ncclCommInitAll): communicators[i] (a
 * caller-owned array of device_count entries) is rank i, on devices[i] (one device per rank,
 * distinct physical devices, all of one backend), with a fresh id (info null: the defaults).
 * Blocks until every rank is initialised, at most info->timeout_ns. Ownership: the caller owns
 * each communicator (destroy with baton_communicator_destroy). Thread safe.
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (no devices, null devices with a non-zero
 * count, null communicators, two ranks on one physical device), BATON_ERROR_INVALID_HANDLE,
 * BATON_ERROR_DEVICE_MISMATCH (devices of other instances or mixed backends),
 * BATON_ERROR_NOT_SUPPORTED (no collective library, the host backend), BATON_ERROR_DRIVER; on
 * an error nothing is created. (Instance::createCommunicators) */
BATON_API baton_result baton_instance_create_communicators(
    baton_instance instance, const baton_device* devices, size_t device_count,
    const baton_communicator_group_create_info* info, baton_communicator* communicators);

/** Creates this device's rank of a communicator group (ncclCommInitRankConfig, non-blocking):
 * blocks until every rank of the group has arrived, at most info->timeout_ns (a rank that never
 * arrives is an error then, not a hang). info null means the defaults, whose rank_count 0 is
 * BATON_ERROR_INVALID_ARGUMENT. Ownership: the caller owns *communicator (destroy with
 * baton_communicator_destroy). Thread safe.
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (rank_count 0, rank out of range, null
 * communicator), BATON_ERROR_INVALID_HANDLE, BATON_ERROR_NOT_SUPPORTED (the host backend, or no
 * collective library: the message says why), BATON_ERROR_DEVICE_LOST, BATON_ERROR_DRIVER (the
 * library's error with its message, or ranks that did not arrive within the timeout).
 * (Device::createCommunicator) */
BATON_API baton_result baton_device_create_communicator(baton_device device,
                                                        const baton_communicator_create_info* info,
                                                        baton_communicator* communicator);

/** Destroys the communicator. A ready one is finalized first (its issued collectives complete,
 * which needs the other ranks to run theirs), then destroyed; a failed one is aborted (its stuck
 * operations end, and the queue behind them moves on). Submissions already made keep the
 * library's communicator until they finished. Not to be called concurrently with recording or
 * submitting its collectives.
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_HANDLE, BATON_ERROR_DRIVER (the library's error;
 * the handle is gone either way). (Communicator::destroy) */
BATON_API baton_result baton_communicator_destroy(baton_communicator communicator);

/** Writes this communicator's rank. Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null),
 * BATON_ERROR_INVALID_HANDLE. (Communicator::getRank) */
BATON_API baton_result baton_communicator_get_rank(baton_communicator communicator, uint32_t* rank);

/** Writes how many ranks the group has. Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT
 * (null), BATON_ERROR_INVALID_HANDLE. (Communicator::getRankCount) */
BATON_API baton_result baton_communicator_get_rank_count(baton_communicator communicator,
                                                         uint32_t* count);

/** Writes the device the communicator belongs to (its collectives run on that device's queues;
 * not owned by the communicator). Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT
 * (null), BATON_ERROR_INVALID_HANDLE. (Communicator::getDevice) */
BATON_API baton_result baton_communicator_get_device(baton_communicator communicator,
                                                     baton_device* device);

/** Writes the state; a failure found by baton's watch (an error, a timeout) shows here at the
 * same moment the submissions' signals fail. Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT
 * (null), BATON_ERROR_INVALID_HANDLE. (Communicator::getState) */
BATON_API baton_result baton_communicator_get_state(baton_communicator communicator,
                                                    baton_communicator_state* state);

/** Writes why the communicator failed into buffer (caller-owned; NUL-terminated, truncated to
 * capacity), or "" while it is ready. Returns BATON_SUCCESS, BATON_ERROR_INVALID_ARGUMENT (null
 * buffer, capacity 0), BATON_ERROR_INVALID_HANDLE. (Communicator::getFailureReason) */
BATON_API baton_result baton_communicator_get_failure_reason(baton_communicator communicator,
                                                             char* buffer, size_t capacity);

/** Splits the group (ncclCommSplit): every rank of this communicator calls it with a `color`;
 * ranks of one color form a new communicator, ordered by `key` (then by their rank here). A rank
 * passing BATON_SPLIT_NO_COLOR takes part but joins none (*out is BATON_NULL_HANDLE, success).
 * Blocks until the ranks of its color arrived, at most this communicator's timeout. Ownership:
 * the caller owns *out. Thread safe against calls on other communicators.
 * Returns BATON_SUCCESS, BATON_ERROR_INVALID_STATE (the communicator failed),
 * BATON_ERROR_INVALID_ARGUMENT (null out, a negative color other than BATON_SPLIT_NO_COLOR),
 * BATON_ERROR_INVALID_HANDLE, BATON_ERROR_DRIVER (the library's error, or ranks that did not
 * arrive within the timeout). (Communicator::split) */
BATON_API baton_result baton_communicator_split(baton_communicator communicator, int32_t color,
                                                int32_t key, baton_communicator* out);

/** Makes a new communicator of the ranks not in excluded_ranks[0..excluded_count)
 * (ncclCommShrink), typically after this one failed because those ranks died: each surviving
 * rank calls it with the same list; their ranks are renumbered in order. On a failed
 * communicator its stuck operations are ended first, so the queue behind them moves on; this
 * communicator then stays failed (destroy it). Blocks until the survivors arrived, at most the
 * timeout. Ownership: the caller owns *out and keeps the array.
 * Returns BATON_SUCCESS, BATON_ERROR_NOT_SUPPORTED (the library has no shrink: NCCL before
 * 2.27), BATON_ERROR_INVALID_ARGUMENT (null out, null excluded_ranks with a non-zero count, a
 * rank out of range or listed twice, every rank excluded, this rank excluded),
 * BATON_ERROR_INVALID_HANDLE, BATON_ERROR_DRIVER. (Communicator::shrink) */
BATON_API baton_result baton_communicator_shrink(baton_communicator communicator,
                                                 const uint32_t* excluded_ranks,
                                                 size_t excluded_count, baton_communicator* out);

/** @} */

/** \name Collective commands
 * Recording calls (see "Recording calls" above) that each record one operation of
 * `communicator`, which must belong to the command buffer's device, as its buffers must. Counts
 * are in elements of `type`; a range is [offset, offset + n * baton_element_size(type)) of its
 * buffer. Consecutive collective commands of one command buffer go to the library as one group
 * (ncclGroupStart/End): sends and receives between ranks in one command buffer cannot deadlock.
 * Every rank must record the same collectives in the same order (and matching send/recv pairs);
 * mismatched calls stall until the communicator's timeout fails it. A submission with
 * collectives publishes its signals from the host once its work completed; a failed
 * communicator fails them instead.
 * Each returns BATON_SUCCESS, BATON_ERROR_INVALID_STATE (not recording, or the communicator
 * failed: its reason is in the message), BATON_ERROR_INVALID_HANDLE (the command buffer, the
 * communicator or a buffer), BATON_ERROR_DEVICE_MISMATCH (a communicator or buffer of another
 * device), BATON_ERROR_INVALID_ARGUMENT (count 0, a type or op that is not one of its values, a
 * root or peer outside 0..rank count-1, a range outside its buffer, source and destination
 * overlapping other than in place as the call allows), BATON_ERROR_NOT_SUPPORTED (the library is
 * known to refuse the operation on the type: the message names both and the library; see
 * CommandBuffer's collective commands). A rejected call records nothing. The
 * communicator and buffers stay the caller's; the recording keeps them alive while it is
 * pending.
 * @{ */

/** Every rank's dst receives the reduction of all ranks' src (count elements each). In place
 * when src and dst are the same range; otherwise they must not overlap.
 * (CommandBuffer::allReduce) */
BATON_API baton_result baton_command_buffer_all_reduce(baton_command_buffer command_buffer,
                                                       baton_communicator communicator,
                                                       baton_buffer src, uint64_t src_offset,
                                                       baton_buffer dst, uint64_t dst_offset,
                                                       uint64_t count, baton_element_type type,
                                                       baton_reduce_op op);

/** Every rank's dst receives rank root's src (count elements); src is read on the root only
 * (other ranks may pass their dst range). In place when src and dst are the same range.
 * (CommandBuffer::broadcast) */
BATON_API baton_result baton_command_buffer_broadcast(baton_command_buffer command_buffer,
                                                      baton_communicator communicator,
                                                      baton_buffer src, uint64_t src_offset,
                                                      baton_buffer dst, uint64_t dst_offset,
                                                      uint64_t count, baton_element_type type,
                                                      uint32_t root);

/** Rank root's dst receives the reduction of all ranks' src; dst is written on the root only
 * (other ranks may pass their src range). In place when src and dst are the same range.
 * (CommandBuffer::reduce) */
BATON_API baton_result baton_command_buffer_reduce(baton_command_buffer command_buffer,
                                                   baton_communicator communicator,
                                                   baton_buffer src, uint64_t src_offset,
                                                   baton_buffer dst, uint64_t dst_offset,
                                                   uint64_t count, baton_element_type type,
                                                   baton_reduce_op op, uint32_t root);

/** Every rank's dst (rank count * count elements) receives each rank r's src (count elements)
 * at element r * count. In place when src is dst's slot of this rank.
 * (CommandBuffer::allGather) */
BATON_API baton_result baton_command_buffer_all_gather(baton_command_buffer command_buffer,
                                                       baton_communicator communicator,
                                                       baton_buffer src, uint64_t src_offset,
                                                       baton_buffer dst, uint64_t dst_offset,
                                                       uint64_t count, baton_element_type type);

/** Rank r's dst (count elements) receives the reduction of slot r (elements r * count ..) of
 * every rank's src (rank count * count elements). In place when dst is src's slot of this rank.
 * (CommandBuffer::reduceScatter) */
BATON_API baton_result baton_command_buffer_reduce_scatter(baton_command_buffer command_buffer,
                                                           baton_communicator communicator,
                                                           baton_buffer src, uint64_t src_offset,
                                                           baton_buffer dst, uint64_t dst_offset,
                                                           uint64_t count, baton_element_type type,
                                                           baton_reduce_op op);

/** Rank r sends slot p of its src to rank p, which stores it in slot r of its dst; slots are
 * count elements, src and dst rank count * count each, not overlapping.
 * (CommandBuffer::allToAll) */
BATON_API baton_result baton_command_buffer_all_to_all(baton_command_buffer command_buffer,
                                                       baton_communicator communicator,
                                                       baton_buffer src, uint64_t src_offset,
                                                       baton_buffer dst, uint64_t dst_offset,
                                                       uint64_t count, baton_element_type type);

/** Sends count elements of src to rank peer, which records the matching
 * baton_command_buffer_recv. (CommandBuffer::send) */
BATON_API baton_result baton_command_buffer_send(baton_command_buffer command_buffer,
                                                 baton_communicator communicator, baton_buffer src,
                                                 uint64_t src_offset, uint64_t count,
                                                 baton_element_type type, uint32_t peer);

/** Receives count elements into dst from rank peer, which records the matching
 * baton_command_buffer_send. (CommandBuffer::recv) */
BATON_API baton_result baton_command_buffer_recv(baton_command_buffer command_buffer,
                                                 baton_communicator communicator, baton_buffer dst,
                                                 uint64_t dst_offset, uint64_t count,
                                                 baton_element_type type, uint32_t peer);
/** @} */

#ifdef __cplusplus
}  // extern "C"
#endif

/** \def BATON_C_STATIC_ASSERT(expr, message)
 * static_assert (C++) or _Static_assert (C11), for the checks that follow: the C types have the
 * sizes the ABI above assumes (an -fshort-enums build would break it). */
#ifdef __cplusplus
#define BATON_C_STATIC_ASSERT(expr, message) static_assert(expr, message)
#else
#define BATON_C_STATIC_ASSERT(expr, message) _Static_assert(expr, message)
#endif
BATON_C_STATIC_ASSERT(sizeof(baton_result) == 4, "baton_result must be 32 bits");
BATON_C_STATIC_ASSERT(sizeof(baton_backend_kind) == 4, "baton_backend_kind must be 32 bits");
BATON_C_STATIC_ASSERT(sizeof(baton_command_buffer_usage) == 4,
                      "baton_command_buffer_usage must be 32 bits");
BATON_C_STATIC_ASSERT(sizeof(baton_semaphore) == 8, "baton handles must be 64 bits");
BATON_C_STATIC_ASSERT(sizeof(baton_element_type) == 4, "baton_element_type must be 32 bits");
BATON_C_STATIC_ASSERT(sizeof(baton_reduce_op) == 4, "baton_reduce_op must be 32 bits");
BATON_C_STATIC_ASSERT(sizeof(baton_communicator_state) == 4,
                      "baton_communicator_state must be 32 bits");

#endif /* BATON_BATON_H_ */
