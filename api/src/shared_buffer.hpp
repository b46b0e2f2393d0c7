// Buffers shared with other processes (kBufferShareable, Buffer::exportFd, Device::importBuffer):
// the backend-independent part.
//
// A shareable buffer's memory is a SharedMemory object of its backend, which core::Buffer owns
// and releases with its last reference (instead of DeviceImpl::free). What its descriptor is
// depends on what the backend can export:
//   - CUDA: the driver's POSIX descriptor of a cuMemCreate allocation. It says nothing about
//     itself, so the importer asks the driver (the allocation's device, its size to the
//     granularity: StreamDevice::importShared).
//   - the host backend and HIP: an *envelope*, a sealed memfd whose first page is an
//     EnvelopeHeader: what the buffer is (backend, device UUID, size, memory kind), so that an
//     import into the wrong device or with the wrong size is refused by name. On the host backend
//     the buffer's bytes follow the header page in the same memfd; on HIP the header carries the
//     IPC handle (hipIpcGetMemHandle) and the importers' count below.
//
// The IPC lifetime rule (HIP): an exporting allocation must outlive every mapping of it in other
// processes. The envelope keeps one slot per importing process (pid, start time, how many of its
// buffers map the memory). An importer claims its slot before it checks that the exporter is
// still live, and the exporter marks itself released before it looks at the slots, both with
// sequentially consistent operations: so either the importer sees the release and gives up, or
// the exporter sees the slot and holds the free back (HoldersWatch) until every slot is given
// back, or its process died (its start time no longer matches /proc).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "baton/buffer.hpp"
#include "baton/physical_device.hpp"
#include "object.hpp"
#include "status.hpp"

namespace baton::core {

// The memory of a shareable buffer (made by DeviceImpl::allocateShareable or importShared).
class SharedMemory : public Object {
 public:
  // A new descriptor for another process to import (close-on-exec; the caller owns it).
  virtual Status exportFd(int* fd) = 0;
};

// What Device::importBuffer asks a backend to map (validated: fd >= 0, size > 0, a known kind).
struct SharedImport {
  int fd = -1;  // borrowed
  uint64_t size = 0;
  MemoryKind memory = MemoryKind::Device;
};

// ---- envelopes ----------------------------------------------------------------------------------

constexpr uint64_t kEnvelopeHeaderSize = 4096;
constexpr uint32_t kMaxEnvelopeHolders = 64;

enum class EnvelopeLayout : uint32_t {
  HostMemory = 1,  // the buffer's bytes follow the header page in the memfd
  IpcHandle = 2,   // `handle` holds a driver IPC handle of the exporter's allocation
};

// One process that maps the memory through an import (the IPC layout).
struct EnvelopeHolder {
  std::atomic<uint32_t> state;  // kHolderFree, kHolderLive
  std::atomic<int32_t> pid;
  std::atomic<uint64_t> startTime;  // /proc/<pid>/stat's starttime: a recycled pid differs
  std::atomic<uint32_t> count;      // its importing buffers still alive
};

// The header page. Zero-filled by ftruncate; written by the exporter before the first descriptor
// leaves it (magic last), read-only afterwards but for the atomics.
struct EnvelopeHeader {
  uint64_t magic;
  uint32_t version;
  EnvelopeLayout layout;
  uint32_t backend;    // BackendKind
  uint32_t memory;     // MemoryKind
  uint64_t size;       // the buffer's size in bytes
  uint64_t dataBytes;  // HostMemory: the bytes after the header page
  uint8_t deviceUuid[16];
  char deviceName[64];  // for messages
  int32_t exporterPid;
  uint32_t reserved;
  uint64_t exporterStart;
  uint64_t exporterAddress;  // IpcHandle: the allocation's device address in the exporter
  std::atomic<uint32_t> exporterState;  // kExporterLive, then kExporterReleased
  uint32_t handleBytes;
  uint8_t handle[64];  // IpcHandle: the driver's IPC handle
  alignas(64) EnvelopeHolder holders[kMaxEnvelopeHolders];
};
static_assert(sizeof(EnvelopeHeader) <= kEnvelopeHeaderSize, "the header fits its page");

// A mapped envelope: its descriptor and header page, released (unmapped, closed) with the object.
class Envelope {
 public:
  Envelope() = default;
  Envelope(int fd, EnvelopeHeader* header) : fd_(fd), header_(header) {}
  ~Envelope();
  Envelope(Envelope&& o) noexcept;
  Envelope& operator=(Envelope&& o) noexcept;
  Envelope(const Envelope&) = delete;
  Envelope& operator=(const Envelope&) = delete;

  int fd() const noexcept { return fd_; }
  EnvelopeHeader* header() const noexcept { return header_; }
  // A new descriptor of it (Buffer::exportFd).
  Status exportFd(int* fd) const;

  // IpcHandle layout. The exporter: marks it released (no import is accepted from now on) and
  // says whether an importer still holds the memory (slots of dead processes are given back).
  bool releaseAndCheckHolders();
  // Whether an importer still holds the memory (the same reaping).
  bool holdersRemain();
  // An importer: counts this process as a holder, then checks the exporter is still live
  // (ErrorInvalidArgument when it was destroyed: the memory is being freed). *slot receives the
  // slot to give back with dropHolder.
  Status addHolder(uint32_t* slot);
  void dropHolder(uint32_t slot);

 private:
  int fd_ = -1;
  EnvelopeHeader* header_ = nullptr;
};

// What an exporter states about its buffer.
struct EnvelopeInfo {
  EnvelopeLayout layout = EnvelopeLayout::HostMemory;
  const PhysicalDeviceProperties* device = nullptr;
  uint64_t size = 0;
  MemoryKind memory = MemoryKind::Device;
  uint64_t dataBytes = 0;  // HostMemory: the memfd's bytes after the header page
};
// Makes a sealed memfd of kEnvelopeHeaderSize + info.dataBytes bytes whose header page describes
// the buffer; the caller fills the layout's own fields, then publishes it (publishEnvelope).
// ErrorOutOfHostMemory with the OS error when it cannot.
Status createEnvelope(const EnvelopeInfo& info, Envelope* out);
void publishEnvelope(Envelope& envelope);
// Maps the envelope behind `fd` (borrowed; the envelope holds a descriptor of its own) for an
// import into a device of `device` (with `label`), checking that it is one, of `layout`, and that
// it matches the device and `in` (size, memory kind): ErrorInvalidArgument for a descriptor
// that is not a baton buffer's (closed, a pipe, a file, a shared semaphore's), or another size or
// kind; ErrorDeviceMismatch for another backend's buffer or another device's.
Status openEnvelope(const SharedImport& in, const PhysicalDeviceProperties& device,
                    const std::string& label, EnvelopeLayout layout, Envelope* out);
// For a backend whose descriptors are the driver's (CUDA): ErrorDeviceMismatch or
// ErrorInvalidArgument naming what `fd` is when it is an envelope or a shared semaphore's page
// (which the driver would refuse with a less helpful error); Success otherwise.
Status refuseBatonDescriptor(int fd, const PhysicalDeviceProperties& device,
                             const std::string& label);

// Holds back `release` (freeing an exporter's IPC allocation) until no importer holds the
// envelope's memory any more, looking every 10 ms on the watchdog's thread; then runs it on the
// release thread (Watchdog::releaseLater: a free synchronizes with the device). Takes the
// envelope.
void releaseWhenUnheld(Envelope envelope, std::function<void()> release);

}  // namespace baton::core
