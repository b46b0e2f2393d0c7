// The Khronos validation layer for every program that uses Vulkan in the tests and the demo
// (docs/testing.md, 'Vulkan validation layer'): core checks plus synchronization validation, with
// the layer's messages delivered to a VkDebugUtilsMessengerEXT this harness installs. An error
// fails the test that caused it (the gtest programs set onError to ADD_FAILURE) or the program's
// exit status (the demo, the guide's example). Nothing baton-specific lives here, so the layer's
// own reproducers (tests/interop/layer_repro.cpp) use it without linking baton.
//
// BATON_VULKAN_VALIDATION selects it: unset, "" or "0" off; "core" core checks only; "1" or
// "sync" core checks plus synchronization validation. When it is set and the layer is not
// installed, instance creation fails and says so: a run that asked for validation never passes
// without it. meson sets it for the Vulkan tests when the layer is found (option
// vulkan_validation).
//
// Settings: the layer's own settings file (tests/interop/vk_layer_settings.txt, through
// VK_LAYER_SETTINGS_PATH, which this harness sets unless the caller did) turns on fine-grained
// locking, and under synchronization validation the harness serializes host timeline calls
// (TimelineObserver): layer 1.3.239 otherwise stalls 10 s whenever a host wait races a host
// signal of another thread (LayerRepro.HostWaitsThatRaceHostSignalsStallUnlessLockedFinely).
//
// Filters: a message is filtered only when its VUID *and* the situation it describes match a
// rule of layerFalsePositives(), each of which names the reproducer that proves the layer wrong.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace baton::test {

struct ValidationMessage {
  VkDebugUtilsMessageSeverityFlagBitsEXT severity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT;
  std::string id;                    // the VUID or the layer's UNASSIGNED-... name
  std::string text;                  // the whole message
  std::vector<uint64_t> objects;     // the handles it names
  const char* filteredBy = nullptr;  // the reproducer of the rule that filtered it, or null

  bool error() const { return severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT; }
};

// A message proven to be the layer's, and the exact situation in which it is: `vuid` and
// `situation` must both match. `reproducer` is the test (tests/interop/layer_repro.cpp) that
// shows it without baton.
struct ValidationFilter {
  const char* vuid;
  bool (*situation)(const ValidationMessage&);
  const char* reproducer;
};

// What this process has seen each timeline semaphore reach, from calls that prove it: a host
// signal that returned VK_SUCCESS, a vkWaitSemaphores (all of them) that returned VK_SUCCESS, a
// vkGetSemaphoreCounterValue, and a semaphore's initial value. The filter of layer false
// positives for VUID-VkSemaphoreSignalInfo-value-03259 asks it whether a signal the layer calls
// pending can still be pending. Calls are observed where they are made through this harness: the
// program's own (vulkan_validation_hooks.cpp takes the loader's exports' place), and baton's
// (VulkanContext::view() hands baton getInstanceProcAddr below, which wraps the three timeline
// functions).
class TimelineObserver {
 public:
  static TimelineObserver& get() {
    static TimelineObserver* observer = new TimelineObserver;  // outlives every caller
    return *observer;
  }
  void reached(VkSemaphore s, uint64_t value) {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t& known = reached_[handle(s)];  // 0 when new: below any value reached
    if (value > known) known = value;
  }
  // A handle that is destroyed may come back for a new semaphore: forget it.
  void forget(VkSemaphore s) {
    std::lock_guard<std::mutex> lock(mutex_);
    reached_.erase(handle(s));
  }
  // The highest value seen reached; false when nothing was seen.
  bool known(uint64_t semaphore, uint64_t* value) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = reached_.find(semaphore);
    if (it == reached_.end()) return false;
    *value = it->second;
    return true;
  }

  // A vkGetInstanceProcAddr that hands out observing versions of vkSignalSemaphore,
  // vkWaitSemaphores and vkGetSemaphoreCounterValue (and their KHR names) through
  // vkGetDeviceProcAddr; everything else is the loader's.
  static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL getInstanceProcAddr(VkInstance instance,
                                                                      const char* name) {
    if (!std::strcmp(name, "vkGetDeviceProcAddr")) {
      real().getDeviceProcAddr =
          reinterpret_cast<PFN_vkGetDeviceProcAddr>(vkGetInstanceProcAddr(instance, name));
      return reinterpret_cast<PFN_vkVoidFunction>(&getDeviceProcAddr);
    }
    return vkGetInstanceProcAddr(instance, name);
  }

 private:
  // The handle as the layer's messages name it.
  static uint64_t handle(VkSemaphore s) { return reinterpret_cast<uint64_t>(s); }
  struct Real {
    PFN_vkGetDeviceProcAddr getDeviceProcAddr = nullptr;
    PFN_vkSignalSemaphore signal = nullptr;
    PFN_vkWaitSemaphores wait = nullptr;
    PFN_vkGetSemaphoreCounterValue value = nullptr;
  };
  // One device's entry points serve all: they are the loader's or the layer's, which dispatch
  // on the device.
  static Real& real() {
    static Real r;
    return r;
  }
  static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL getDeviceProcAddr(VkDevice device,
                                                                    const char* name) {
    PFN_vkVoidFunction f = real().getDeviceProcAddr(device, name);
    if (!f) return f;
    auto is = [&](const char* a) {
      return !std::strcmp(name, a) ||
             (!std::strncmp(name, a, std::strlen(a)) && !std::strcmp(name + std::strlen(a), "KHR"));
    };
    if (is("vkSignalSemaphore")) {
      real().signal = reinterpret_cast<PFN_vkSignalSemaphore>(f);
      return reinterpret_cast<PFN_vkVoidFunction>(&signal);
    }
    if (is("vkWaitSemaphores")) {
      real().wait = reinterpret_cast<PFN_vkWaitSemaphores>(f);
      return reinterpret_cast<PFN_vkVoidFunction>(&wait);
    }
    if (is("vkGetSemaphoreCounterValue")) {
      real().value = reinterpret_cast<PFN_vkGetSemaphoreCounterValue>(f);
      return reinterpret_cast<PFN_vkVoidFunction>(&value);
    }
    return f;
  }
  // Under synchronization validation (serialize), a host signal excludes every host wait and
  // counter read, and a wait with a timeout becomes a series of zero-timeout polls: a wait then
  // never returns in the middle of a signal's call. Layer 1.3.239's synchronization validation
  // stalls for 10 s and reports UNASSIGNED-VkSemaphore-state-timeout whenever one does
  // (LayerRepro.HostWaitsThatRaceHostSignalsStallUnlessLockedFinely).
  static VKAPI_ATTR VkResult VKAPI_CALL signal(VkDevice device, const VkSemaphoreSignalInfo* info) {
    return signalThrough(real().signal, device, info);
  }
  static VKAPI_ATTR VkResult VKAPI_CALL wait(VkDevice device, const VkSemaphoreWaitInfo* info,
                                             uint64_t timeout) {
    return waitThrough(real().wait, device, info, timeout);
  }
  static VKAPI_ATTR VkResult VKAPI_CALL value(VkDevice device, VkSemaphore s, uint64_t* v) {
    return valueThrough(real().value, device, s, v);
  }

 public:
  // The observing (and, under synchronization validation, serializing) versions of the three
  // calls over `next`: for baton's calls (above) and for a program's own calls to the loader's
  // exports (vulkan_validation_hooks.cpp).
  static VkResult signalThrough(PFN_vkSignalSemaphore next, VkDevice device,
                                const VkSemaphoreSignalInfo* info) {
    std::unique_lock<std::shared_mutex> lock(get().calls_, std::defer_lock);
    if (get().serialize) lock.lock();
    VkResult r = next(device, info);
    if (r == VK_SUCCESS) get().reached(info->semaphore, info->value);
    return r;
  }
  static VkResult waitThrough(PFN_vkWaitSemaphores next, VkDevice device,
                              const VkSemaphoreWaitInfo* info, uint64_t timeout) {
    VkResult r;
    if (!get().serialize || timeout == 0) {
      std::shared_lock<std::shared_mutex> lock(get().calls_, std::defer_lock);
      if (get().serialize) lock.lock();
      r = next(device, info, timeout);
    } else {
      const auto start = std::chrono::steady_clock::now();
      for (;;) {
        {
          std::shared_lock<std::shared_mutex> lock(get().calls_);
          r = next(device, info, 0);
        }
        if (r != VK_TIMEOUT) break;
        if (static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - start)
                                      .count()) >= timeout)
          break;
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
    if (r == VK_SUCCESS &&
        (!(info->flags & VK_SEMAPHORE_WAIT_ANY_BIT) || info->semaphoreCount == 1))
      for (uint32_t i = 0; i < info->semaphoreCount; ++i)
        get().reached(info->pSemaphores[i], info->pValues[i]);
    return r;
  }
  static VkResult valueThrough(PFN_vkGetSemaphoreCounterValue next, VkDevice device, VkSemaphore s,
                               uint64_t* v) {
    std::shared_lock<std::shared_mutex> lock(get().calls_, std::defer_lock);
    if (get().serialize) lock.lock();
    VkResult r = next(device, s, v);
    if (r == VK_SUCCESS) get().reached(s, *v);
    return r;
  }

  // Set while synchronization validation is on (VulkanValidation::prepare).
  std::atomic<bool> serialize{false};

 private:
  std::shared_mutex calls_;

  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, uint64_t> reached_;  // handle -> highest value seen
};

// The one filter rule (docs/testing.md, 'Vulkan validation layer').
// VUID-VkSemaphoreSignalInfo-value-03259 forbids a host signal at or above the value of a *pending*
// signal operation. Debian 12's layer (1.3.239) keeps signal operations pending that have executed,
// or that never existed:
//   - a host signal whose completion a racing vkWaitSemaphores for a lower value observed
//     (LayerRepro.HostWaitSatisfiedByAHigherHostSignalLeavesAPendingSignal; bridged interop);
//   - a queue signal whose completion came to light through another handle of the payload
//     (LayerRepro.SignalObservedThroughAnImportLeavesItPending; native interop with CUDA);
//   - on an exported timeline, the value a vkGetSemaphoreCounterValue read
//     (LayerRepro.ReadingAnExportedTimelineLeavesAPendingSignal; native interop, where baton reads
//     the value before each host signal it forwards).
// The rule filters the message only when the pending value it names is at most a value this
// semaphore was observed to have reached before (TimelineObserver): a signal operation of that
// value has then executed, or cannot be valid, so it is not pending, and the message is the
// layer's. A message naming a pending value above everything observed is not filtered.
inline bool pendingSignalAlreadyReached(const ValidationMessage& m) {
  static const char kPending[] = "pending signal operation (";
  const size_t at = m.text.find(kPending);
  if (at == std::string::npos || m.objects.empty()) return false;
  const uint64_t pending = std::strtoull(m.text.c_str() + at + sizeof kPending - 1, nullptr, 10);
  uint64_t reached = 0;
  return TimelineObserver::get().known(m.objects[0], &reached) && pending <= reached;
}

inline std::vector<ValidationFilter> layerFalsePositives() {
  return {{"VUID-VkSemaphoreSignalInfo-value-03259", &pendingSignalAlreadyReached,
           "tests/interop/layer_repro.cpp: LayerRepro.HostWaitSatisfiedByAHigherHostSignal"
           "LeavesAPendingSignal, .SignalObservedThroughAnImportLeavesItPending, "
           ".ReadingAnExportedTimelineLeavesAPendingSignal"}};
}

class VulkanValidation {
 public:
  enum class Mode { Off, Core, Sync };

  static Mode requested() {
    const char* v = std::getenv("BATON_VULKAN_VALIDATION");
    if (!v || !*v || !std::strcmp(v, "0") || !std::strcmp(v, "off")) return Mode::Off;
    if (!std::strcmp(v, "core")) return Mode::Core;
    return Mode::Sync;
  }
  static const char* name(Mode m) {
    return m == Mode::Off ? "off" : m == Mode::Core ? "core" : "core + synchronization";
  }

  explicit VulkanValidation(Mode mode = requested())
      : filters(layerFalsePositives()), mode_(mode) {}
  VulkanValidation(const VulkanValidation&) = delete;
  VulkanValidation& operator=(const VulkanValidation&) = delete;
  ~VulkanValidation() { detach(); }

  Mode mode() const { return mode_; }
  bool on() const { return mode_ != Mode::Off; }

  // Called for each unfiltered error (from whichever thread made the Vulkan call). The default
  // prints it; the gtest harness fails the running test.
  std::function<void(const ValidationMessage&)> onError;
  // Rules that filter proven layer false positives (see the file comment):
  // layerFalsePositives() unless the caller changes it.
  std::vector<ValidationFilter> filters;

  // Adds the layer, VK_EXT_debug_utils and (Sync) VK_EXT_validation_features to `info`, and the
  // messenger (for vkCreateInstance/vkDestroyInstance's own messages) and the feature enables
  // to its pNext chain. The arrays live in this object: keep it alive until vkCreateInstance
  // returns. Returns false, with the reason in *why, when the layer is not installed.
  bool prepare(VkInstanceCreateInfo& info, std::string* why) {
    if (!on()) return true;
    if (!std::getenv("VK_LAYER_SETTINGS_PATH")) {
#ifdef BATON_VK_LAYER_SETTINGS
      setenv("VK_LAYER_SETTINGS_PATH", BATON_VK_LAYER_SETTINGS, 0);
#endif
    }
    uint32_t count = 0;
    vkEnumerateInstanceLayerProperties(&count, nullptr);
    std::vector<VkLayerProperties> layers(count);
    vkEnumerateInstanceLayerProperties(&count, layers.data());
    bool found = false;
    for (const VkLayerProperties& l : layers) {
      if (!std::strcmp(l.layerName, kLayer)) {
        found = true;
        layerVersion_ = l.specVersion;
      }
    }
    if (!found) {
      *why = std::string("BATON_VULKAN_VALIDATION is set but ") + kLayer +
             " is not installed (Debian: vulkan-validationlayers)";
      return false;
    }
    layers_.assign(info.ppEnabledLayerNames, info.ppEnabledLayerNames + info.enabledLayerCount);
    layers_.push_back(kLayer);
    extensions_.assign(info.ppEnabledExtensionNames,
                       info.ppEnabledExtensionNames + info.enabledExtensionCount);
    extensions_.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    messengerInfo_ = messengerCreateInfo();
    messengerInfo_.pNext = info.pNext;
    const void* next = &messengerInfo_;
    if (mode_ == Mode::Sync) {
      TimelineObserver::get().serialize = true;
      extensions_.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
      enables_[0] = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
      features_ = VkValidationFeaturesEXT{};
      features_.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT;
      features_.pNext = next;
      features_.enabledValidationFeatureCount = 1;
      features_.pEnabledValidationFeatures = enables_;
      next = &features_;
    }
    info.pNext = next;
    info.enabledLayerCount = static_cast<uint32_t>(layers_.size());
    info.ppEnabledLayerNames = layers_.data();
    info.enabledExtensionCount = static_cast<uint32_t>(extensions_.size());
    info.ppEnabledExtensionNames = extensions_.data();
    return true;
  }

  // Installs the messenger on `instance` (made from an info that prepare() filled).
  void attach(VkInstance instance) {
    if (!on() || !instance) return;
    instance_ = instance;
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    const VkDebugUtilsMessengerCreateInfoEXT info = messengerCreateInfo();
    if (create) create(instance, &info, nullptr, &messenger_);
  }
  // Removes the messenger; call before vkDestroyInstance (whose own messages still reach this
  // object through the create info chained by prepare(), so keep it alive until then).
  void detach() {
    if (!messenger_) return;
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
    messenger_ = VK_NULL_HANDLE;
  }

  int errors() const { return errors_.load(); }      // unfiltered errors
  int filtered() const { return filtered_.load(); }  // errors filtered by a rule
  int messages() const { return messages_.load(); }  // everything the layer said
  std::vector<ValidationMessage> seen() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return seen_;
  }
  // Messages with this id so far.
  int count(const char* id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    int n = 0;
    for (const ValidationMessage& m : seen_) n += m.id == id;
    return n;
  }
  // Put before the summary line (the reproducers mark theirs, whose errors are expected).
  std::string label;
  // One line: the mode, the layer's version and the counts.
  std::string summary() const {
    char line[256];
    std::snprintf(line, sizeof line,
                  "vulkan validation (%s, layer %u.%u.%u): %d messages, %d errors, %d filtered",
                  name(mode_), VK_API_VERSION_MAJOR(layerVersion_),
                  VK_API_VERSION_MINOR(layerVersion_), VK_API_VERSION_PATCH(layerVersion_),
                  messages(), errors(), filtered());
    return label + line;
  }

  static constexpr const char* kLayer = "VK_LAYER_KHRONOS_validation";

 private:
  VkDebugUtilsMessengerCreateInfoEXT messengerCreateInfo() {
    VkDebugUtilsMessengerCreateInfoEXT info{};
    info.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    info.pfnUserCallback = &VulkanValidation::callback;
    info.pUserData = this;
    return info;
  }

  static VKAPI_ATTR VkBool32 VKAPI_CALL callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT,
                                                 const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                 void* user) {
    static_cast<VulkanValidation*>(user)->receive(severity, data);
    return VK_FALSE;  // never abort the call
  }

  void receive(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
               const VkDebugUtilsMessengerCallbackDataEXT* data) {
    ValidationMessage m;
    m.severity = severity;
    m.id = data->pMessageIdName ? data->pMessageIdName : "";
    m.text = data->pMessage ? data->pMessage : "";
    for (uint32_t i = 0; i < data->objectCount; ++i)
      m.objects.push_back(data->pObjects[i].objectHandle);
    if (m.error()) {
      for (const ValidationFilter& f : filters) {
        if (m.id == f.vuid && f.situation(m)) {
          m.filteredBy = f.reproducer;
          break;
        }
      }
    }
    ++messages_;
    if (m.error()) ++(m.filteredBy ? filtered_ : errors_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      seen_.push_back(m);
    }
    if (m.error() && !m.filteredBy) {
      if (onError)
        onError(m);
      else
        std::fprintf(stderr, "[vulkan validation] ERROR %s\n", m.text.c_str());
    } else {
      const std::string why =
          m.filteredBy
              ? std::string(" (filtered: a layer false positive, see ") + m.filteredBy + ")"
              : std::string();
      std::fprintf(stderr, "[vulkan validation] %s%s: %s\n", m.error() ? "error" : "warning",
                   why.c_str(), m.text.c_str());
    }
  }

  Mode mode_;
  uint32_t layerVersion_ = 0;
  std::vector<const char*> layers_, extensions_;
  VkDebugUtilsMessengerCreateInfoEXT messengerInfo_{};
  VkValidationFeaturesEXT features_{};
  VkValidationFeatureEnableEXT enables_[1] = {};
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::atomic<int> errors_{0}, filtered_{0}, messages_{0};
  mutable std::mutex mutex_;
  std::vector<ValidationMessage> seen_;
};

// For programs that are not gtest programs (the demo, the guide's Vulkan example): the process's
// validation, set up around their own vkCreateInstance (prepare, attach) and vkDestroyInstance
// (detach), and its verdict.
inline VulkanValidation& processValidation() {
  static VulkanValidation* validation = new VulkanValidation;  // outlives the instance
  return *validation;
}
// Prints the summary when validation is on and returns the status the program should exit
// with: 1 after any unfiltered validation error, `status` otherwise.
inline int validationExitStatus(int status) {
  VulkanValidation& v = processValidation();
  if (!v.on()) return status;
  std::fprintf(stderr, "%s\n", v.summary().c_str());
  return v.errors() > 0 ? 1 : status;
}

}  // namespace baton::test
