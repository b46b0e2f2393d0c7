// Memory shared with other processes on CUDA and HIP (shared_buffer.hpp: kBufferShareable,
// Device::importBuffer), in the two ways the drivers offer, made by StreamDevice:
//   - VmmMemory: virtual memory management with POSIX descriptors (CUDA). The allocation is
//     cuMemCreate'd in whole granules, mapped into a reservation of this process and exported as
//     the driver's descriptor; an import maps the same allocation. The driver keeps the memory
//     until every handle, mapping and descriptor of it, in any process, is gone, so each side
//     releases its own and nothing is counted by baton.
//   - IpcExport / IpcImport: IPC memory handles (HIP 5.2). The exporter's hipMalloc allocation
//     travels as its IPC handle inside an envelope; the exporter's allocation must outlive every
//     importer's mapping, so the exporter's release is held back until the envelope's holders are
//     gone (releaseWhenUnheld). An import in the exporting process itself (which the drivers
//     refuse to open) uses the exporter's address, held the same way.
// Each object releases its memory with its last reference (the Buffer's, which submissions using
// it hold), in the device's context, held back while a capture is in progress on the device
// (DeviceShared::releaseMemory).
//
// A part of the stream machinery's one translation unit: included by stream_backend.cpp only,
// whose comment says why.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "backend.hpp"
#include "device_shared.hpp"
#include "shared_buffer.hpp"
#include "shared_timeline.hpp"
#include "stream_driver.hpp"

namespace baton::stream {
namespace {

class VmmMemory final : public core::SharedMemory {
 public:
  VmmMemory(std::shared_ptr<DeviceShared> shared, uint64_t handle, uint64_t address,
            uint64_t mapped)
      : shared_(std::move(shared)), handle_(handle), address_(address), mapped_(mapped) {}
  ~VmmMemory() override {
    if (importedFd_ >= 0) close(importedFd_);
    shared_->releaseMemory(
        [shared = shared_, handle = handle_, address = address_, mapped = mapped_] {
          ContextScope scope(shared->driver, shared->config.context, ContextScope::kRelease,
                             "releasing shared memory");
          (void)shared->driver.vmmUnmap(address, mapped);
          (void)shared->driver.vmmRelease(handle);
        });
  }

  // An allocation made here is exported by the driver; one imported is exported again as a
  // descriptor of the one it was imported from (the driver refuses to export an imported handle:
  // CUDA_ERROR_INVALID_VALUE on the H100).
  Status exportFd(int* fd) override {
    if (importedFd_ >= 0) {
      const int out = fcntl(importedFd_, F_DUPFD_CLOEXEC, 0);
      if (out < 0)
        return core::error(Result::ErrorOutOfHostMemory, "duplicating the descriptor failed: %s",
                           std::strerror(errno));
      *fd = out;
      return Status();
    }
    ContextScope scope(shared_->driver, shared_->config.context);
    BATON_TRY(scope.status());
    return shared_->driver.vmmExport(handle_, fd);
  }

  // A new allocation of `size` bytes (whole granules) on the device, mapped.
  static Status create(const std::shared_ptr<DeviceShared>& shared, uint64_t size,
                       core::Allocation* out, Ref<core::SharedMemory>* memory) {
    const DriverTable& d = shared->driver;
    const int ordinal = shared->config.ordinal;
    uint64_t bytes = 0, granule = 0;
    BATON_TRY(granules(d, ordinal, size, &bytes, &granule));
    uint64_t handle = 0;
    BATON_TRY(d.vmmCreate(ordinal, bytes, &handle));
    return map(shared, handle, size, bytes, out, memory);
  }

  // The allocation behind `in.fd`, mapped, once it is found to be on this device and of the size
  // asked for (to the granularity, which is all the driver tells).
  static Status import(const std::shared_ptr<DeviceShared>& shared,
                       const core::PhysicalDevice& physical, const std::string& label,
                       const core::SharedImport& in, core::Allocation* out,
                       Ref<core::SharedMemory>* memory) {
    const DriverTable& d = shared->driver;
    const int ordinal = shared->config.ordinal;
    BATON_TRY(core::refuseBatonDescriptor(in.fd, physical.properties, label));
    if (in.memory != MemoryKind::Device)
      return Status(Result::ErrorInvalidArgument,
                    core::format("the import asks for host-pinned memory; %s buffers share device "
                                 "memory only",
                                 d.name));
    uint64_t handle = 0;
    Status st = d.vmmImport(in.fd, &handle);
    if (!st.ok()) {
      if (st.code() != Result::ErrorInvalidArgument) return st;
      return Status(Result::ErrorInvalidArgument,
                    core::format("descriptor %d is not a shareable %s buffer's (%s)", in.fd, d.name,
                                 st.message().c_str()));
    }
    int where = -1;
    st = d.vmmDevice(handle, &where);
    if (st.ok() && where != ordinal)
      st = Status(Result::ErrorDeviceMismatch,
                  where < 0 ? core::format("the memory is not on a device; %s is %s device %d",
                                           label.c_str(), d.name, ordinal)
                            : core::format("the memory is on %s device %d, not on %s (device %d)",
                                           d.name, where, label.c_str(), ordinal));
    uint64_t bytes = 0, granule = 0;
    if (st.ok()) st = granules(d, ordinal, in.size, &bytes, &granule);
    if (st.ok()) {
      // The driver tells no allocation's size, but refuses to map beyond it: an allocation that
      // takes a granule more than the size asked for is another buffer's.
      uint64_t probe = 0;
      if (d.vmmMap(ordinal, handle, bytes + granule, &probe).ok()) {
        (void)d.vmmUnmap(probe, bytes + granule);
        st = sizeMismatch(in.size, bytes, "larger");
      }
    }
    if (!st.ok()) {
      (void)d.vmmRelease(handle);
      return st;
    }
    // Kept to export the memory again (exportFd).
    const int kept = fcntl(in.fd, F_DUPFD_CLOEXEC, 0);
    if (kept < 0) {
      (void)d.vmmRelease(handle);
      return core::error(Result::ErrorOutOfHostMemory, "duplicating the descriptor failed: %s",
                         std::strerror(errno));
    }
    st = map(shared, handle, in.size, bytes, out, memory);
    if (!st.ok()) {
      close(kept);
      // Mapping more than the allocation holds: CUDA_ERROR_INVALID_VALUE on the emulated driver,
      // CUDA_ERROR_NOT_SUPPORTED on the H100.
      if (st.code() == Result::ErrorDriver || st.code() == Result::ErrorNotSupported)
        return sizeMismatch(in.size, bytes, "smaller");
      return st;
    }
    static_cast<VmmMemory*>(memory->get())->importedFd_ = kept;
    return st;
  }

 private:
  // `size` rounded up to whole granules of the device (*bytes), and the granule.
  static Status granules(const DriverTable& d, int ordinal, uint64_t size, uint64_t* bytes,
                         uint64_t* granule) {
    uint64_t g = 0;
    BATON_TRY(d.vmmGranularity(ordinal, &g));
    if (g == 0) g = 1;
    *granule = g;
    *bytes = (size + g - 1) / g * g;
    if (*bytes < size)
      return Status(
          Result::ErrorOutOfDeviceMemory,
          core::format("a shared buffer of %llu bytes", static_cast<unsigned long long>(size)));
    return Status();
  }
  static Status sizeMismatch(uint64_t size, uint64_t bytes, const char* which) {
    return Status(Result::ErrorInvalidArgument,
                  core::format("size mismatch: the exported allocation is %s than the %llu bytes "
                               "asked for (%llu rounded up to the driver's granularity)",
                               which, static_cast<unsigned long long>(bytes),
                               static_cast<unsigned long long>(size)));
  }
  // Maps `handle` (taken: released on failure) and makes the memory object.
  static Status map(const std::shared_ptr<DeviceShared>& shared, uint64_t handle, uint64_t size,
                    uint64_t bytes, core::Allocation* out, Ref<core::SharedMemory>* memory) {
    uint64_t address = 0;
    Status st = shared->driver.vmmMap(shared->config.ordinal, handle, bytes, &address);
    if (!st.ok()) {
      (void)shared->driver.vmmRelease(handle);
      return st;
    }
    *memory = Ref<core::SharedMemory>::adopt(new VmmMemory(shared, handle, address, bytes));
    out->deviceAddress = address;
    out->size = size;
    return Status();
  }

  std::shared_ptr<DeviceShared> shared_;
  uint64_t handle_;
  uint64_t address_;
  uint64_t mapped_;
  int importedFd_ = -1;  // the descriptor it was imported from (a duplicate), or -1
};

// The exporter's side of IPC memory: its allocation and the envelope that carries the handle.
class IpcExport final : public core::SharedMemory {
 public:
  IpcExport(std::shared_ptr<DeviceShared> shared, uint64_t address, core::Envelope envelope)
      : shared_(std::move(shared)), address_(address), envelope_(std::move(envelope)) {}
  // The allocation is freed once no importer maps it any more (shared_buffer.hpp).
  ~IpcExport() override {
    core::releaseWhenUnheld(std::move(envelope_), [shared = shared_, address = address_] {
      core::Allocation a;
      a.deviceAddress = address;
      a.native = tagOf(MemoryTag::Device);
      shared->freeAllocation(a);
    });
  }
  Status exportFd(int* fd) override { return envelope_.exportFd(fd); }

  static Status create(const std::shared_ptr<DeviceShared>& shared,
                       const core::PhysicalDevice& physical, const BufferCreateInfo& info,
                       core::Allocation* out, Ref<core::SharedMemory>* memory) {
    const DriverTable& d = shared->driver;
    uint64_t address = 0;
    BATON_TRY(d.memAlloc(&address, info.size));
    uint8_t handle[DriverTable::kIpcHandleBytes] = {};
    Status st = d.ipcGetHandle(address, handle);
    core::Envelope envelope;
    if (st.ok()) {
      core::EnvelopeInfo e;
      e.layout = core::EnvelopeLayout::IpcHandle;
      e.device = &physical.properties;
      e.size = info.size;
      e.memory = info.memory;
      st = core::createEnvelope(e, &envelope);
    }
    if (!st.ok()) {
      (void)d.memFree(address);
      return st;
    }
    core::EnvelopeHeader& h = *envelope.header();
    h.exporterAddress = address;
    h.handleBytes = DriverTable::kIpcHandleBytes;
    std::memcpy(h.handle, handle, sizeof handle);
    core::publishEnvelope(envelope);
    *memory = Ref<core::SharedMemory>::adopt(new IpcExport(shared, address, std::move(envelope)));
    out->deviceAddress = address;
    out->size = info.size;
    return Status();
  }

 private:
  std::shared_ptr<DeviceShared> shared_;
  uint64_t address_;
  core::Envelope envelope_;
};

// An importer's side of IPC memory: its opening of the handle (none in the exporting process) and
// its holder slot, which holds the exporter's free back until this is released.
class IpcImport final : public core::SharedMemory {
 public:
  IpcImport(std::shared_ptr<DeviceShared> shared, core::Envelope envelope, uint32_t slot,
            uint64_t address, bool opened)
      : shared_(std::move(shared)),
        envelope_(std::make_shared<core::Envelope>(std::move(envelope))),
        slot_(slot),
        address_(address),
        opened_(opened) {}
  // Closed first, then the slot given back: the exporter frees only what nobody maps.
  ~IpcImport() override {
    shared_->releaseMemory([shared = shared_, envelope = envelope_, slot = slot_,
                            address = address_, opened = opened_] {
      if (opened) {
        ContextScope scope(shared->driver, shared->config.context, ContextScope::kRelease,
                           "closing shared IPC memory");
        (void)shared->driver.ipcCloseHandle(address);
      }
      envelope->dropHolder(slot);
    });
  }
  Status exportFd(int* fd) override { return envelope_->exportFd(fd); }

  static Status import(const std::shared_ptr<DeviceShared>& shared,
                       const core::PhysicalDevice& physical, const std::string& label,
                       const core::SharedImport& in, core::Allocation* out,
                       Ref<core::SharedMemory>* memory) {
    core::Envelope envelope;
    BATON_TRY(core::openEnvelope(in, physical.properties, label, core::EnvelopeLayout::IpcHandle,
                                 &envelope));
    uint32_t slot = 0;
    BATON_TRY(envelope.addHolder(&slot));
    const core::EnvelopeHeader& h = *envelope.header();
    const int self = getpid();
    uint64_t address = 0;
    bool opened = false;
    if (h.exporterPid == self && h.exporterStart == core::processStartTime(self)) {
      address = h.exporterAddress;  // this process's own allocation, held by the slot
    } else {
      ContextScope scope(shared->driver, shared->config.context);
      Status st = scope.status();
      if (st.ok()) st = shared->driver.ipcOpenHandle(h.handle, &address);
      if (!st.ok()) {
        envelope.dropHolder(slot);
        return st.context("opening the exporter's IPC memory handle");
      }
      opened = true;
    }
    *memory = Ref<core::SharedMemory>::adopt(
        new IpcImport(shared, std::move(envelope), slot, address, opened));
    out->deviceAddress = address;
    out->size = in.size;
    return Status();
  }

 private:
  std::shared_ptr<DeviceShared> shared_;
  std::shared_ptr<core::Envelope> envelope_;  // shared with the release, which outlives this
  uint32_t slot_;
  uint64_t address_;
  bool opened_;
};

}  // namespace
}  // namespace baton::stream
