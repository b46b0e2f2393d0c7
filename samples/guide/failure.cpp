// The guide's "Failure" (docs/guide.md): a failed semaphore fails its waiters and, through the
// submissions that waited on it, their signals; a host call that returns an error fails its
// submission. Built and run by meson test (suite guide); the regions between the [name] lines
// are the guide's code blocks (tests/docs/check_examples.py).
#include <baton/baton.hpp>
#include <cstdio>
#include <cstring>

#include "check.hpp"

namespace {

using guide::expect;
using guide::ok;

// [host-call-error]
baton::Result decodeAsset(void*) {
  // ... the file turned out to be corrupt ...
  return baton::Result::ErrorInvalidArgument;  // fails the submission's signals
}
// [host-call-error]

}  // namespace

int main() {
  baton::UniqueInstance instance;
  expect(ok(baton::createInstance({}, instance.put())), "createInstance");
  baton::PhysicalDevice physical = guide::hostPhysicalDevice(*instance);
  baton::UniqueDevice device;
  expect(ok(instance->createDevice(physical, {/*queueCount=*/1}, device.put())), "createDevice");
  baton::Queue queue;
  expect(ok(device->getQueue(0, &queue)), "getQueue");
  baton::UniqueSemaphore upstream, downstream;
  expect(ok(instance->createSemaphore({0, "upstream"}, upstream.put())), "upstream");
  expect(ok(instance->createSemaphore({0, "downstream"}, downstream.put())), "downstream");

  // [propagate]
  // A batch waits for upstream 1 and would signal downstream 1.
  baton::SemaphoreValue in{*upstream, 1}, out{*downstream, 1};
  baton::Result r = queue.submit(baton::SubmitInfo{in, {}, out});
  // The producer of upstream gives up, with a reason.
  if (ok(r)) r = upstream->fail("physics step diverged");
  // The held batch never runs; its signal fails in turn, and every waiter returns at once.
  baton::Result waited = downstream->wait(1, baton::kWaitForever);  // ErrorSemaphoreFailed
  char reason[256];
  if (ok(r)) r = downstream->getFailureReason(reason, sizeof reason);
  // reason names the failed wait and "physics step diverged"; so does
  // baton::lastErrorMessage() right after the wait.
  // [propagate]
  expect(ok(r), "submit, fail, getFailureReason");
  expect(waited == baton::Result::ErrorSemaphoreFailed, "the waiter returned the failure");
  expect(std::strstr(reason, "physics step diverged") != nullptr, "the reason travels");
  std::printf("downstream failed: %s\n", reason);

  baton::UniqueSemaphore loaded;
  expect(ok(instance->createSemaphore({0, "loaded"}, loaded.put())), "loaded");
  baton::UniqueCommandBuffer decode;
  expect(ok(device->createCommandBuffer(decode.put())), "createCommandBuffer");
  expect(ok(decode->begin()) && ok(decode->hostCall(decodeAsset, nullptr)) && ok(decode->end()),
         "record");
  baton::CommandBuffer commands = *decode;
  baton::SemaphoreValue loadedOne{*loaded, 1};
  expect(ok(queue.submit(baton::SubmitInfo{{}, commands, loadedOne})), "submit decode");
  baton::Result decoded = loaded->wait(1, baton::kWaitForever);
  expect(decoded == baton::Result::ErrorSemaphoreFailed, "the host call's error failed it");
  std::printf("loaded failed: %s\n", baton::lastErrorMessage());
  // The queue and the device go on: a failure is not device loss.
  baton::UniqueSemaphore next;
  expect(ok(instance->createSemaphore({}, next.put())), "next");
  baton::SemaphoreValue nextOne{*next, 1};
  expect(ok(queue.submit(baton::SubmitInfo{{}, {}, nextOne})), "submit after failures");
  expect(ok(next->wait(1, baton::kWaitForever)), "the queue still runs");

  return guide::finish("failure");
}
