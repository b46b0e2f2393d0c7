#include <algorithm>

#include "objects.hpp"
#include "report.hpp"
#include "trace.hpp"

namespace baton::core {

void ChildSet::add(uint64_t handle, ObjectType type) {
  std::lock_guard<std::mutex> lock(mutex_);
  children_.emplace_back(handle, type);
}

void ChildSet::remove(uint64_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(children_.begin(), children_.end(),
                         [&](const auto& c) { return c.first == handle; });
  if (it != children_.end()) {
    *it = children_.back();
    children_.pop_back();
  }
}

std::vector<std::pair<uint64_t, ObjectType>> ChildSet::takeAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(children_, {});
}

Instance::Instance(const InstanceCreateInfo& info)
    : callback_(info.debugCallback), userData_(info.debugUserData) {
  registerInstance(this);
  trace::instanceCreated(info.tracePath);
}

Instance::~Instance() {
  unregisterInstance(this);
  // After its devices (they hold references to it): the last instance's trace is complete.
  trace::instanceDestroyed();
}

void Instance::debug(MessageSeverity severity, const std::string& text) const {
  if (callback_) callback_(severity, text.c_str(), userData_);
}

}  // namespace baton::core
