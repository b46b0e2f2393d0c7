// The guide's "Threads, costs and knobs" and "Errors and messages" (docs/guide.md): the debug
// callback, per-thread messages and a device's host-wait spin. Built and run by meson test
// (suite guide); the regions between the [name] lines are the guide's code blocks
// (tests/docs/check_examples.py).
#include <atomic>
#include <baton/baton.hpp>
#include <cstdio>
#include <cstring>

#include "check.hpp"

namespace {

using guide::expect;
using guide::ok;

std::atomic<int> errorsSeen{0};

// [messages]
// Every message baton reports for this instance: errors (the text lastErrorMessage() gives),
// warnings and information such as which backends loaded. Called from any thread, baton's
// included, possibly concurrently; it must not call back into baton.
void onMessage(baton::MessageSeverity severity, const char* message, void*) {
  if (severity == baton::MessageSeverity::Error) errorsSeen.fetch_add(1);
  if (severity != baton::MessageSeverity::Info) std::fprintf(stderr, "%s\n", message);
}

bool createWithMessages(baton::UniqueInstance& instance) {
  baton::InstanceCreateInfo info;
  info.debugCallback = onMessage;
  baton::Result r = baton::createInstance(info, instance.put());
  if (baton::isError(r)) {
    // Every error also leaves its message for the calling thread.
    std::fprintf(stderr, "%s: %s\n", baton::resultName(r), baton::lastErrorMessage());
    return false;
  }
  return true;
}
// [messages]

}  // namespace

int main() {
  baton::UniqueInstance instance;
  expect(createWithMessages(instance), "createInstance");
  baton::PhysicalDevice physical = guide::hostPhysicalDevice(*instance);
  baton::UniqueDevice device;
  expect(ok(instance->createDevice(physical, {/*queueCount=*/1, "physics"}, device.put())),
         "createDevice");

  // A misuse: a signal that does not raise the value. The message names the semaphore.
  baton::UniqueSemaphore frame;
  expect(ok(instance->createSemaphore({5, "frame"}, frame.put())), "createSemaphore");
  expect(frame->signal(5) == baton::Result::ErrorNonIncreasingValue, "non-increasing signal");
  expect(std::strstr(baton::lastErrorMessage(), "frame") != nullptr, "the message names it");
  expect(errorsSeen.load() == 1, "the debug callback saw the error");

  // [spin]
  // A host wait on a GPU queue's signal spins on the driver's event for 50 µs by default, then
  // sleeps until the GPU's interrupt wakes it. Trade CPU for latency per device:
  baton::Result r = device->setHostWaitSpin(0);  // sleep at once: no CPU while waiting
  if (ok(r)) r = device->setHostWaitSpin(baton::kHostWaitSpinForever);    // see the GPU at once
  if (ok(r)) r = device->setHostWaitSpin(baton::kHostWaitSpinDefaultNs);  // back to 50 µs
  // [spin]
  expect(ok(r), "setHostWaitSpin");

  return guide::finish("threads");
}
