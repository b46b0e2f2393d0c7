// The API fuzzer's semaphore operations (fuzz_session.hpp): create (with a debug name and a
// random initial value), destroy (also while waited on), host signal (increasing, equal, lower, 0,
// UINT64_MAX), fail, query, and host waits through the instance, a device or the semaphore itself
// (ALL/ANY, short timeouts). fuzz_checker checks each result against the semaphore's model.
#include "fuzz_session.hpp"

namespace baton_fuzz {

void Session::createSemaphore() {
  const size_t start = in_.below(kSemaphores);
  const uint64_t initial = in_.below(4) == 0 ? in_.u64() : in_.below(4);
  for (size_t k = 0; k < kSemaphores; ++k) {
    SemaphoreModel& s = semaphores_[(start + k) % kSemaphores];
    if (s.alive) continue;
    const uint32_t id = nextId_++;
    const std::string name = "s" + std::to_string(id);
    SemaphoreCreateInfo info;
    info.initialValue = initial;
    info.debugName = name.c_str();
    Semaphore h;
    Result r = instance_.createSemaphore(info, &h);
    checkDefined(r, "createSemaphore");
    if (r != Result::Success) violation("createSemaphore returned %s", resultName(r));
    s.created(h, id, initial);
    trace("createSemaphore %s initial %llu", s.name.c_str(),
          static_cast<unsigned long long>(initial));
    return;
  }
}

void Session::destroySemaphore() {
  SemaphoreModel& s = pickSemaphore();
  Result r = watched("Semaphore::destroy", [&] { return s.handle.destroy(); });
  trace("destroy %s -> %s", s.name.c_str(), resultName(r));
  checkDefined(r, "Semaphore::destroy");
  if (s.alive ? (r != Result::Success && r != Result::ErrorObjectInUse)
              : r != Result::ErrorInvalidHandle)
    violation("destroy of %s semaphore %s returned %s", s.alive ? "a live" : "a dead",
              s.name.c_str(), resultName(r));
  s.alive = false;
}

void Session::hostSignal() {
  SemaphoreModel& s = pickSemaphore();
  const uint64_t v = signalValue(s);
  Result r = watched("Semaphore::signal", [&] { return s.handle.signal(v); });
  trace("signal %s %llu -> %s", s.name.c_str(), static_cast<unsigned long long>(v), resultName(r));
  s.onSignal(r, v);
  if (r == Result::Success) {
    uint64_t now = 0;
    s.refresh(&now);
    if (!s.failed && now < v)
      violation("after signal(%llu) of %s returned, getValue read %llu",
                static_cast<unsigned long long>(v), s.name.c_str(),
                static_cast<unsigned long long>(now));
  }
}

void Session::hostFail() {
  SemaphoreModel& s = pickSemaphore();
  const std::string reason = "fuzz fail #" + std::to_string(in_.u8());
  Result r = s.handle.fail(reason.c_str());
  trace("fail %s '%s' -> %s", s.name.c_str(), reason.c_str(), resultName(r));
  s.onFail(r, reason);
  if (r == Result::Success) {
    char text[256];
    Result rr = s.handle.getFailureReason(text, sizeof text);
    s.onFailureReason(rr, text);
    if (!s.refresh())
      violation("%s was failed by the host but getValue does not report it", s.name.c_str());
  }
}

void Session::query() {
  SemaphoreModel& s = pickSemaphore();
  uint64_t v = 0;
  s.refresh(&v);
  char text[256] = {};
  Result r = s.handle.getFailureReason(text, sizeof text);
  s.onFailureReason(r, text);
  trace("query %s -> %llu%s", s.name.c_str(), static_cast<unsigned long long>(v),
        s.failed ? " (failed)" : "");
}

void Session::hostWait() {
  bool valid = true;
  Entries waits = waitList(4, &valid);
  const WaitMode mode = in_.u8() & 1 ? WaitMode::Any : WaitMode::All;
  const uint64_t t = timeout();
  const uint8_t how = in_.below(3);
  // Through the instance, a device, or (one entry) the semaphore itself.
  Result r;
  if (how == 1 && devices_[0].alive) {
    r = watched("Device::waitSemaphores",
                [&] { return devices_[0].handle.waitSemaphores(waits.values, mode, t); });
    if (r == Result::ErrorDeviceLost) return;  // a lost device answers first
  } else if (how == 2 && waits.values.size() == 1) {
    r = watched("Semaphore::wait",
                [&] { return waits.values[0].semaphore.wait(waits.values[0].value, t); });
  } else {
    r = watched("Instance::waitSemaphores",
                [&] { return instance_.waitSemaphores(waits.values, mode, t); });
  }
  trace("wait %s of %zu (timeout %llu ns) -> %s", mode == WaitMode::All ? "ALL" : "ANY",
        waits.values.size(), static_cast<unsigned long long>(t), resultName(r));
  checkWaitResult(r, waitModels(waits), mode, valid);
}

}  // namespace baton_fuzz
