// What the two Vulkan counterparts share (bridge.hpp's VulkanMirror, fd_timeline.hpp's
// VulkanFdTimeline): the forwarding state of a baton semaphore kept on one timeline with a Vulkan
// semaphore — which values went to Vulkan, which came from it, which a queue signalled GPU-side —
// and the three moves every such counterpart makes: reach a value Vulkan reached, stop when the
// Vulkan side fails, and skip the values a queue already signalled in stream order.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "external_timeline.hpp"
#include "semaphore.hpp"

namespace baton::interop {

class ForwardingTimeline : public core::ExternalTimeline {
 public:
  void onDeviceSignal(uint64_t value) override;

 protected:
  explicit ForwardingTimeline(uint64_t initialValue)
      : forwarded_(initialValue), observed_(initialValue) {}

  // Vulkan reached (at least) `value`: reached in baton unless known already, detached, stopped
  // or failed. Called with mutex_ not held.
  void observe(uint64_t value);
  // The Vulkan side failed (`why`): forwarding stops and the baton semaphore fails with `why`.
  void lose(const std::string& why);
  // Under mutex_: whether a queue signalled `value` GPU-side (then it is the Vulkan semaphore's
  // already, and forwarded_ rises to it); forgets the GPU-side signals up to `value` either way.
  bool takeDeviceSignal(uint64_t value);
  // Forwarding `value` failed (`problem`, mutex_ not held; stopped_ set): says so and fails the
  // semaphore, so that the two sides never silently diverge.
  static void forwardingFailed(core::Semaphore& semaphore, const std::string& problem);

  std::mutex mutex_;  // serialises forwarding; guards the fields below
  bool attached_ = false;
  bool detached_ = false;
  bool stopped_ = false;  // the baton semaphore failed (or Vulkan was lost): forwarding ended
  uint64_t forwarded_;    // the highest value baton passed to Vulkan (or a queue signalled)
  uint64_t observed_;     // the highest value seen reached on the Vulkan side
  std::vector<uint64_t> deviceSignalled_;  // enqueued GPU-side signals not reached yet (native)
  core::Semaphore* semaphore_ = nullptr;   // valid from attach() until detach() returns
};

}  // namespace baton::interop
