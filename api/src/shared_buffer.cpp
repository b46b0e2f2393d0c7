#include "shared_buffer.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "baton/instance.hpp"
#include "shared_timeline.hpp"
#include "watchdog.hpp"

namespace baton::core {

namespace {

constexpr uint64_t kBufferMagic = 0x314642544e4f5442ull;  // "BTONTBF1"
constexpr uint32_t kVersion = 1;
constexpr uint32_t kHolderFree = 0, kHolderClaiming = 1, kHolderLive = 2;
constexpr uint32_t kExporterLive = 1, kExporterReleased = 2;
// How often a held-back free looks whether the importers are gone.
constexpr uint64_t kHolderCheckPeriodNs = 10'000'000;

const char* kindName(uint32_t memory) {
  return memory == static_cast<uint32_t>(MemoryKind::HostPinned) ? "host-pinned" : "device";
}

std::string uuidText(const uint8_t* uuid) {
  std::string s;
  for (int i = 0; i < 16; ++i) s += format("%02x", uuid[i]);
  return s;
}

// What the header says about the buffer's device, for messages: "cuda device 'NAME' (uuid ...)".
std::string deviceText(const EnvelopeHeader& h) {
  const auto backend = static_cast<BackendKind>(h.backend);
  return format("a %s device '%.*s' (UUID %s)", backendName(backend),
                static_cast<int>(strnlen(h.deviceName, sizeof h.deviceName)), h.deviceName,
                uuidText(h.deviceUuid).c_str());
}

// The first 8 bytes of `fd` when it is a sealed regular file of at least `minBytes` (what baton's
// descriptors are), else 0; *size receives the file's size.
uint64_t peekMagic(int fd, uint64_t* size) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  *size = static_cast<uint64_t>(st.st_size);
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
    return 0;
  uint64_t magic = 0;
  if (pread(fd, &magic, sizeof magic, 0) != static_cast<ssize_t>(sizeof magic)) return 0;
  return magic;
}

// Gives back the slots of importing processes that died (their start time no longer matches).
// Returns whether a live one remains.
bool reapAndCheck(EnvelopeHeader& h) {
  bool held = false;
  for (EnvelopeHolder& slot : h.holders) {
    const uint32_t state = slot.state.load(std::memory_order_seq_cst);
    if (state == kHolderFree) continue;
    if (state == kHolderClaiming) {  // an import in progress: it will look at the exporter next
      held = true;
      continue;
    }
    const int pid = slot.pid.load(std::memory_order_relaxed);
    const uint64_t start = slot.startTime.load(std::memory_order_relaxed);
    if (processStartTime(pid) == start) {
      held = true;
      continue;
    }
    uint32_t expected = kHolderLive;  // died holding the memory: its mappings died with it
    if (slot.state.compare_exchange_strong(expected, kHolderClaiming, std::memory_order_acq_rel)) {
      slot.count.store(0, std::memory_order_relaxed);
      slot.state.store(kHolderFree, std::memory_order_release);
    }
  }
  return held;
}

}  // namespace

Envelope::~Envelope() {
  if (header_) munmap(header_, kEnvelopeHeaderSize);
  if (fd_ >= 0) close(fd_);
}
Envelope::Envelope(Envelope&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), header_(std::exchange(o.header_, nullptr)) {}
Envelope& Envelope::operator=(Envelope&& o) noexcept {
  std::swap(fd_, o.fd_);
  std::swap(header_, o.header_);
  return *this;
}

Status Envelope::exportFd(int* fd) const {
  const int out = fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (out < 0)
    return error(Result::ErrorOutOfHostMemory, "duplicating the buffer's descriptor failed: %s",
                 std::strerror(errno));
  *fd = out;
  return Status();
}

bool Envelope::releaseAndCheckHolders() {
  header_->exporterState.store(kExporterReleased, std::memory_order_seq_cst);
  return reapAndCheck(*header_);
}

bool Envelope::holdersRemain() { return reapAndCheck(*header_); }

Status Envelope::addHolder(uint32_t* out) {
  EnvelopeHeader& h = *header_;
  const int pid = getpid();
  const uint64_t start = processStartTime(pid);
  // This process's slot, counted (several imports of one process share it), or a free one.
  uint32_t slot = kMaxEnvelopeHolders;
  for (;;) {
    for (uint32_t i = 0; i < kMaxEnvelopeHolders; ++i) {
      EnvelopeHolder& s = h.holders[i];
      if (s.state.load(std::memory_order_acquire) != kHolderLive ||
          s.pid.load(std::memory_order_relaxed) != pid ||
          s.startTime.load(std::memory_order_relaxed) != start)
        continue;
      // Claimed again through the claiming state, so that a reaper never frees a slot this
      // process is counting itself into.
      uint32_t expected = kHolderLive;
      if (!s.state.compare_exchange_strong(expected, kHolderClaiming, std::memory_order_seq_cst))
        continue;
      s.count.fetch_add(1, std::memory_order_relaxed);
      slot = i;
      break;
    }
    if (slot != kMaxEnvelopeHolders) break;
    for (uint32_t i = 0; i < kMaxEnvelopeHolders; ++i) {
      EnvelopeHolder& s = h.holders[i];
      uint32_t expected = kHolderFree;
      if (!s.state.compare_exchange_strong(expected, kHolderClaiming, std::memory_order_seq_cst))
        continue;
      s.pid.store(pid, std::memory_order_relaxed);
      s.startTime.store(start, std::memory_order_relaxed);
      s.count.store(1, std::memory_order_relaxed);
      slot = i;
      break;
    }
    if (slot != kMaxEnvelopeHolders) break;
    // Every slot was taken: give back those of dead processes, and try again if one was.
    reapAndCheck(h);
    bool freed = false;
    for (EnvelopeHolder& s : h.holders) freed |= s.state.load() == kHolderFree;
    if (!freed)
      return error(Result::ErrorOutOfHostMemory,
                   "a shared buffer is mapped by at most %u processes at once",
                   kMaxEnvelopeHolders);
  }
  // Claimed (seq_cst) before the exporter's state is read (seq_cst): an exporter that releases
  // after this sees the claim and holds its free back (shared_buffer.hpp).
  const bool live = h.exporterState.load(std::memory_order_seq_cst) == kExporterLive;
  h.holders[slot].state.store(kHolderLive, std::memory_order_seq_cst);
  if (!live) {
    dropHolder(slot);
    return Status(Result::ErrorInvalidArgument,
                  "the exporting buffer was destroyed: its IPC memory is being freed and takes no "
                  "new importers (the exporter's buffer must outlive every import)");
  }
  *out = slot;
  return Status();
}

void Envelope::dropHolder(uint32_t slot) {
  EnvelopeHolder& s = header_->holders[slot];
  for (;;) {
    uint32_t expected = kHolderLive;
    if (s.state.compare_exchange_weak(expected, kHolderClaiming, std::memory_order_seq_cst)) break;
  }
  if (s.count.fetch_sub(1, std::memory_order_relaxed) == 1) {
    s.state.store(kHolderFree, std::memory_order_seq_cst);
    return;
  }
  s.state.store(kHolderLive, std::memory_order_seq_cst);
}

Status createEnvelope(const EnvelopeInfo& info, Envelope* out) {
  int fd = memfd_create("baton-shared-buffer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return error(Result::ErrorOutOfHostMemory, "memfd_create for a shared buffer failed: %s",
                 std::strerror(errno));
  const uint64_t total = kEnvelopeHeaderSize + info.dataBytes;
  if (total < info.dataBytes || ftruncate(fd, static_cast<off_t>(total)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int e = errno;
    close(fd);
    return error(Result::ErrorOutOfHostMemory, "sizing a shared buffer's memfd (%llu bytes): %s",
                 static_cast<unsigned long long>(total), std::strerror(e));
  }
  void* m = mmap(nullptr, kEnvelopeHeaderSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    const int e = errno;
    close(fd);
    return error(Result::ErrorOutOfHostMemory, "mapping a shared buffer's header: %s",
                 std::strerror(e));
  }
  auto* h = static_cast<EnvelopeHeader*>(m);
  h->version = kVersion;
  h->layout = info.layout;
  h->backend = static_cast<uint32_t>(info.device->backend);
  h->memory = static_cast<uint32_t>(info.memory);
  h->size = info.size;
  h->dataBytes = info.dataBytes;
  std::memcpy(h->deviceUuid, info.device->uuid, sizeof h->deviceUuid);
  // Cut to the field (zero-filled, so terminated): it only names the device in messages.
  std::memcpy(h->deviceName, info.device->name,
              strnlen(info.device->name, sizeof h->deviceName - 1));
  h->exporterPid = getpid();
  h->exporterStart = processStartTime(h->exporterPid);
  h->exporterState.store(kExporterLive, std::memory_order_relaxed);
  *out = Envelope(fd, h);
  return Status();
}

void publishEnvelope(Envelope& envelope) {
  std::atomic_ref<uint64_t>(envelope.header()->magic)
      .store(kBufferMagic, std::memory_order_release);
}

Status openEnvelope(const SharedImport& in, const PhysicalDeviceProperties& device,
                    const std::string& label, EnvelopeLayout layout, Envelope* out) {
  uint64_t fileSize = 0;
  const uint64_t magic = peekMagic(in.fd, &fileSize);
  if (magic == kSharedTimelineMagic)
    return error(Result::ErrorInvalidArgument,
                 "descriptor %d is a shared semaphore's (Instance::importSemaphore takes it), not "
                 "a buffer's",
                 in.fd);
  // A CUDA buffer's descriptor is the driver's and says nothing about itself: it lands here too.
  if (magic != kBufferMagic || fileSize < kEnvelopeHeaderSize)
    return error(Result::ErrorInvalidArgument,
                 "descriptor %d is not a shareable buffer's that %s can import (Buffer::exportFd "
                 "makes those; a CUDA buffer's descriptor is imported by CUDA devices only)",
                 in.fd, label.c_str());
  const int fd = fcntl(in.fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    return error(Result::ErrorOutOfHostMemory, "duplicating descriptor %d: %s", in.fd,
                 std::strerror(errno));
  void* m = mmap(nullptr, kEnvelopeHeaderSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    const int e = errno;
    close(fd);
    return error(Result::ErrorInvalidArgument, "mapping a shared buffer's header: %s",
                 std::strerror(e));
  }
  Envelope envelope(fd, static_cast<EnvelopeHeader*>(m));  // releases both on the way out
  const EnvelopeHeader& h = *envelope.header();
  if (h.version != kVersion)
    return error(Result::ErrorInvalidArgument,
                 "the descriptor is a shared buffer's of another baton version (%u, this is %u)",
                 h.version, kVersion);
  if (h.backend != static_cast<uint32_t>(device.backend))
    return error(Result::ErrorDeviceMismatch,
                 "the buffer's memory belongs to %s; %s is a %s device: import it into a device of "
                 "the backend that exported it",
                 deviceText(h).c_str(), label.c_str(), backendName(device.backend));
  if (std::memcmp(h.deviceUuid, device.uuid, sizeof device.uuid) != 0)
    return error(Result::ErrorDeviceMismatch,
                 "the buffer's memory belongs to %s, not to %s (UUID %s): import it into a "
                 "device of that GPU",
                 deviceText(h).c_str(), label.c_str(), uuidText(device.uuid).c_str());
  if (h.memory != static_cast<uint32_t>(in.memory))
    return error(Result::ErrorInvalidArgument,
                 "the exported buffer's memory is %s memory; the import asks for %s memory",
                 kindName(h.memory), kindName(static_cast<uint32_t>(in.memory)));
  if (h.size != in.size)
    return error(Result::ErrorInvalidArgument,
                 "size mismatch: the exported buffer has %llu bytes; the import asks for %llu",
                 static_cast<unsigned long long>(h.size), static_cast<unsigned long long>(in.size));
  if (h.layout != layout ||
      (layout == EnvelopeLayout::HostMemory &&
       (h.dataBytes < h.size || fileSize != kEnvelopeHeaderSize + h.dataBytes)))
    return error(Result::ErrorInvalidArgument, "the shared buffer's descriptor is malformed");
  *out = std::move(envelope);
  return Status();
}

Status refuseBatonDescriptor(int fd, const PhysicalDeviceProperties& device,
                             const std::string& label) {
  uint64_t fileSize = 0;
  const uint64_t magic = peekMagic(fd, &fileSize);
  if (magic == kSharedTimelineMagic)
    return error(Result::ErrorInvalidArgument,
                 "descriptor %d is a shared semaphore's (Instance::importSemaphore takes it), not "
                 "a buffer's",
                 fd);
  if (magic != kBufferMagic || fileSize < kEnvelopeHeaderSize) return Status();
  void* m = mmap(nullptr, kEnvelopeHeaderSize, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return Status();
  const std::string owner = deviceText(*static_cast<const EnvelopeHeader*>(m));
  munmap(m, kEnvelopeHeaderSize);
  return error(Result::ErrorDeviceMismatch,
               "the buffer's memory belongs to %s; %s is a %s device: import it into a device of "
               "the backend that exported it",
               owner.c_str(), label.c_str(), backendName(device.backend));
}

void releaseWhenUnheld(Envelope envelope, std::function<void()> release) {
  if (!envelope.releaseAndCheckHolders()) {
    Watchdog::releaseLater(std::move(release));
    return;
  }
  struct Pending {
    Envelope envelope;
    std::function<void()> release;
  };
  auto pending = std::make_shared<Pending>(Pending{std::move(envelope), std::move(release)});
  Watchdog::watch(
      [pending](uint64_t) {
        if (pending->envelope.holdersRemain()) return true;
        Watchdog::releaseLater(std::move(pending->release));
        return false;
      },
      kHolderCheckPeriodNs);
}

}  // namespace baton::core
