// The guide's "Timelines and wait-before-signal" (docs/guide.md): one timeline semaphore, two
// queues of the host backend and the host. Built and run by meson test (suite guide); the
// regions between the [name] lines are the guide's code blocks (tests/docs/check_examples.py).
#include <baton/baton.hpp>
#include <cstdio>

#include "check.hpp"

using guide::expect;
using guide::ok;

int main() {
  baton::UniqueInstance instance;
  expect(baton::createInstance({}, instance.put()) == baton::Result::Success, "createInstance");
  baton::PhysicalDevice host = guide::hostPhysicalDevice(*instance);
  baton::UniqueDevice device;
  expect(instance->createDevice(host, {/*queueCount=*/2}, device.put()) == baton::Result::Success,
         "createDevice");
  baton::Queue producer, consumer;
  expect(device->getQueue(0, &producer) == baton::Result::Success, "getQueue 0");
  expect(device->getQueue(1, &consumer) == baton::Result::Success, "getQueue 1");

  // [values]
  baton::UniqueSemaphore frame;
  baton::SemaphoreCreateInfo info;
  info.initialValue = 0;
  info.debugName = "frame";  // names it in every message about it
  baton::Result r = instance->createSemaphore(info, frame.put());

  // The host signals and reads the value; it only ever rises.
  if (r == baton::Result::Success) r = frame->signal(1);
  uint64_t value = 0;
  if (r == baton::Result::Success) r = frame->getValue(&value);  // value == 1
  // A signal that does not raise the value is refused, and nothing changes.
  baton::Result again = frame->signal(1);  // ErrorNonIncreasingValue
  // A wait for W is met by any value >= W: 1 is already met by 1.
  if (r == baton::Result::Success) r = frame->wait(1, /*timeoutNs=*/0);
  // [values]
  expect(r == baton::Result::Success && value == 1, "signal, getValue, wait");
  expect(again == baton::Result::ErrorNonIncreasingValue, "a non-increasing signal is refused");

  // [wait-before-signal]
  // The consumer's batch waits for 3 before anyone has promised to signal 3: it is held.
  baton::SemaphoreValue three{*frame, 3}, four{*frame, 4};
  r = consumer.submit(baton::SubmitInfo{three, {}, four});
  // Its queue stays in order: this batch runs after the held one.
  baton::UniqueSemaphore later;
  if (r == baton::Result::Success) r = instance->createSemaphore({}, later.put());
  baton::SemaphoreValue laterOne{*later, 1};
  if (r == baton::Result::Success) r = consumer.submit(baton::SubmitInfo{{}, {}, laterOne});
  // Nothing has run yet: a poll (timeout 0) of 4 times out, which is a result, not an error.
  baton::Result poll = frame->wait(4, 0);  // Timeout
  // The producer signals 3; that releases the consumer, which signals 4.
  if (r == baton::Result::Success) r = producer.submit(baton::SubmitInfo{{}, {}, three});
  if (r == baton::Result::Success) r = frame->wait(4, baton::kWaitForever);
  if (r == baton::Result::Success) r = later->wait(1, baton::kWaitForever);
  // [wait-before-signal]
  expect(poll == baton::Result::Timeout, "the held batch had not run");
  expect(r == baton::Result::Success, "wait-before-signal released the consumer");

  return guide::finish("timeline");
}
