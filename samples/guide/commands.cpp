// The guide's "Queues, submissions and command buffers" (docs/guide.md): buffers, a recorded
// command buffer submitted twice, a host call, and queue-ordered allocation, on the host backend.
// Built and run by meson test (suite guide); the regions between the [name] lines are the guide's
// code blocks (tests/docs/check_examples.py).
#include <baton/baton.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "check.hpp"

namespace {

using guide::expect;
using guide::ok;

// [host-call]
// Runs on a baton thread when the queue reaches it, after the commands recorded before it.
baton::Result countFrame(void* userData) {
  ++*static_cast<int*>(userData);
  return baton::Result::Success;  // an error code here would fail the submission's signals
}
// [host-call]

}  // namespace

int main() {
  baton::UniqueInstance instance;
  expect(ok(baton::createInstance({}, instance.put())), "createInstance");
  baton::PhysicalDevice physical = guide::hostPhysicalDevice(*instance);
  baton::UniqueDevice device;
  expect(ok(instance->createDevice(physical, {/*queueCount=*/1}, device.put())), "createDevice");
  baton::Queue queue;
  expect(ok(device->getQueue(0, &queue)), "getQueue");
  baton::UniqueSemaphore done;
  expect(ok(instance->createSemaphore({}, done.put())), "createSemaphore");

  // [record]
  // Two 4 KiB buffers the host can map (HostPinned is always mappable).
  baton::UniqueBuffer staging, target;
  baton::BufferCreateInfo bufferInfo{4096, baton::MemoryKind::HostPinned};
  baton::Result r = device->createBuffer(bufferInfo, staging.put());
  if (ok(r)) r = device->createBuffer(bufferInfo, target.put());

  // Record once: fill, a small update, a copy, then a host call. Commands run in order.
  int frames = 0;
  const uint32_t header[2] = {0xba70u, 1u};
  baton::UniqueCommandBuffer upload;
  if (ok(r)) r = device->createCommandBuffer(upload.put());
  if (ok(r)) r = upload->begin();
  if (ok(r)) r = upload->fillBuffer(*staging, 0, 4096, 0x01010101u);
  if (ok(r)) r = upload->updateBuffer(*staging, 0, sizeof header, header);  // copied now
  if (ok(r)) r = upload->copyBuffer(*staging, 0, *target, 0, 4096);
  if (ok(r)) r = upload->hostCall(countFrame, &frames);
  if (ok(r)) r = upload->end();

  // Submit it as often as you like: each submission keeps the recording it was given.
  baton::CommandBuffer commands = *upload;
  for (uint64_t frame = 1; frame <= 3 && ok(r); ++frame) {
    baton::SemaphoreValue signal{*done, frame};
    r = queue.submit(baton::SubmitInfo{{}, commands, signal});
  }
  if (ok(r)) r = done->wait(3, baton::kWaitForever);  // frames == 3 afterwards

  // Ordered by the semaphore, the host may now read what the queue wrote.
  void* mapped = nullptr;
  if (ok(r)) r = target->map(&mapped);
  // [record]
  expect(ok(r), "record, submit three times, wait, map");
  expect(frames == 3, "the host call ran once per submission");
  if (mapped != nullptr) {
    uint32_t words[3];
    std::memcpy(words, mapped, sizeof words);
    expect(words[0] == 0xba70u && words[1] == 1u && words[2] == 0x01010101u,
           "the copy carried the fill and the update");
  }

  // [alloca]
  // Memory that exists only between two points of the queue's timeline: allocated once
  // `done` reaches 3, freed after the work that signals 5; neither call blocks.
  baton::Buffer scratch;
  baton::SemaphoreValue afterUpload{*done, 3}, allocated{*done, 4}, finished{*done, 5};
  r = queue.allocaBuffer(afterUpload, {1 << 20, baton::MemoryKind::Device}, allocated, &scratch);
  // ... submissions that wait for 4 use `scratch` and signal 5 ...
  if (ok(r)) r = queue.submit(baton::SubmitInfo{allocated, {}, finished});
  if (ok(r)) r = queue.deallocaBuffer(finished, scratch, {});  // consumes the handle
  if (ok(r)) r = queue.waitIdle();
  // [alloca]
  expect(ok(r), "alloca, use, dealloca");

  return guide::finish("commands");
}
