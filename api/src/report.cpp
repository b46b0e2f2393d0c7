#include "report.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "objects.hpp"

namespace baton::core {
namespace {

thread_local std::string lastError;

std::mutex& instancesMutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}
std::vector<const Instance*>& instances() {
  static auto* v = new std::vector<const Instance*>;
  return *v;
}

}  // namespace

void registerInstance(const Instance* instance) {
  std::lock_guard<std::mutex> lock(instancesMutex());
  instances().push_back(instance);
}

void unregisterInstance(const Instance* instance) {
  std::lock_guard<std::mutex> lock(instancesMutex());
  auto& v = instances();
  v.erase(std::remove(v.begin(), v.end(), instance), v.end());
}

void message(const Instance* owner, MessageSeverity severity, const std::string& text) noexcept {
  try {
    if (owner) {
      owner->debug(severity, text);
      return;
    }
    std::lock_guard<std::mutex> lock(instancesMutex());
    for (const Instance* i : instances()) i->debug(severity, text);
  } catch (...) {
    // Reporting must never throw across the API (bad_alloc while formatting).
  }
}

Result report(const char* operation, const Instance* owner, const Status& status) noexcept {
  if (!status.isError()) return status.code();
  try {
    lastError = std::string("baton: ") + operation + ": " +
                (status.message().empty() ? resultName(status.code()) : status.message()) + " (" +
                resultName(status.code()) + ")";
    message(owner, MessageSeverity::Error, lastError);
  } catch (...) {
  }
  return status.code();
}

}  // namespace baton::core

namespace baton {

const char* lastErrorMessage() noexcept { return core::lastError.c_str(); }

const char* resultName(Result result) noexcept {
  switch (result) {
    case Result::Success: return "Success";
    case Result::NotReady: return "NotReady";
    case Result::Timeout: return "Timeout";
    case Result::ErrorInvalidArgument: return "ErrorInvalidArgument";
    case Result::ErrorInvalidHandle: return "ErrorInvalidHandle";
    case Result::ErrorDeviceMismatch: return "ErrorDeviceMismatch";
    case Result::ErrorNonIncreasingValue: return "ErrorNonIncreasingValue";
    case Result::ErrorSemaphoreFailed: return "ErrorSemaphoreFailed";
    case Result::ErrorDeviceLost: return "ErrorDeviceLost";
    case Result::ErrorOutOfHostMemory: return "ErrorOutOfHostMemory";
    case Result::ErrorOutOfDeviceMemory: return "ErrorOutOfDeviceMemory";
    case Result::ErrorBackendUnavailable: return "ErrorBackendUnavailable";
    case Result::ErrorNotSupported: return "ErrorNotSupported";
    case Result::ErrorHostCallFailed: return "ErrorHostCallFailed";
    case Result::ErrorObjectInUse: return "ErrorObjectInUse";
    case Result::ErrorDriver: return "ErrorDriver";
    case Result::ErrorInvalidState: return "ErrorInvalidState";
  }
  thread_local char buffer[32];
  std::snprintf(buffer, sizeof buffer, "Result(%d)", static_cast<int>(result));
  return buffer;
}

const char* backendName(BackendKind kind) noexcept {
  switch (kind) {
    case BackendKind::Host: return "host";
    case BackendKind::Cuda: return "cuda";
    case BackendKind::Hip: return "hip";
  }
  return "unknown";
}

size_t capabilityNames(uint64_t capabilities, char* buffer, size_t capacity) noexcept {
  static const struct {
    uint64_t bit;
    const char* name;
  } names[] = {
      {kCapabilityDeviceMemory, "device-memory"},
      {kCapabilityHostPinnedMemory, "host-pinned-memory"},
      {kCapabilityStreamOrderedAlloc, "stream-ordered-alloc"},
      {kCapabilityStreamMemOps64, "stream-mem-ops-64"},
      {kCapabilityNativeTimepointWaits, "native-timepoint-waits"},
      {kCapabilityExternalSemaphoreTimelineFd, "external-semaphore-timeline-fd"},
      {kCapabilityExternalMemoryOpaqueFd, "external-memory-opaque-fd"},
      {kCapabilityHostMappedDeviceMemory, "host-mapped-device-memory"},
      {kCapabilityGraphCommandBuffers, "graph-command-buffers"},
      {kCapabilityShareableMemory, "shareable-memory"},
  };
  std::string text;
  for (const auto& n : names) {
    if (!(capabilities & n.bit)) continue;
    if (!text.empty()) text += ", ";
    text += n.name;
  }
  if (capacity > 0 && buffer) {
    size_t n = std::min(capacity - 1, text.size());
    text.copy(buffer, n);
    buffer[n] = '\0';
  }
  return text.size();
}

}  // namespace baton
