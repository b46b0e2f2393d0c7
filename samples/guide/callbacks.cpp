// The guide's "Host calls and native callbacks" (docs/guide.md): a native callback that gets
// the queue's stream, and what baton calls a callback may make. Runs on the first GPU device
// when one is present (the native stream is then a CUstream or hipStream_t), else on the host
// backend. Built and run by meson test (suite guide); the regions between the [name] lines are
// the guide's code blocks (tests/docs/check_examples.py).
#include <baton/baton.hpp>
#include <cstdio>
#include <vector>

#include "check.hpp"

namespace {

using guide::expect;
using guide::ok;

// [native]
// Runs when the submission is issued, in queue order, with the queue's native stream: enqueue
// your kernels or library calls there and return. Never block on other baton work here.
baton::Result simulate(const baton::NativeQueue& queue, void* userData) {
  auto* launches = static_cast<int*>(userData);
  switch (queue.backend) {
    case baton::BackendKind::Cuda:
      // CUstream stream = static_cast<CUstream>(queue.stream);
      // step<<<blocks, threads, 0, stream>>>(...);  or cuLaunchKernel(..., stream, ...)
      break;
    case baton::BackendKind::Hip:
      // hipStream_t stream = static_cast<hipStream_t>(queue.stream);
      // hipLaunchKernelGGL(step, blocks, threads, 0, stream, ...);
      break;
    case baton::BackendKind::Host:
      // No stream (queue.stream is null): the callback's own work is the work.
      break;
  }
  ++*launches;
  return baton::Result::Success;
}
// [native]

// [reentry]
struct Inside {
  baton::Queue queue;
  baton::Semaphore extra;
  baton::Result waitIdle = baton::Result::Success;
  baton::Result submit = baton::Result::Success;
};

// A host call may signal, query and wait for semaphores and submit to any queue, its own
// included. What would wait for its own device is refused at once: waiting for the queue to be
// idle would wait for this very call.
baton::Result reenter(void* userData) {
  auto* inside = static_cast<Inside*>(userData);
  inside->waitIdle = inside->queue.waitIdle();  // ErrorInvalidState, at once
  baton::SemaphoreValue one{inside->extra, 1};
  inside->submit = inside->queue.submit(baton::SubmitInfo{{}, {}, one});  // Success
  return baton::Result::Success;
}
// [reentry]

}  // namespace

int main() {
  baton::UniqueInstance instance;
  expect(ok(baton::createInstance({}, instance.put())), "createInstance");
  // The first GPU device if there is one (the host's is listed first).
  uint32_t count = 0;
  expect(ok(instance->enumeratePhysicalDevices(&count, nullptr)), "count devices");
  std::vector<baton::PhysicalDevice> physicals(count);
  expect(ok(instance->enumeratePhysicalDevices(&count, physicals.data())), "list devices");
  baton::PhysicalDevice physical = physicals[0];
  if (count > 1) physical = physicals[1];
  baton::PhysicalDeviceProperties properties;
  expect(ok(physical.getProperties(&properties)), "getProperties");
  std::printf("callbacks on %s (%s)\n", properties.name, baton::backendName(properties.backend));

  baton::UniqueDevice device;
  expect(ok(instance->createDevice(physical, {/*queueCount=*/1}, device.put())), "createDevice");
  baton::Queue queue;
  expect(ok(device->getQueue(0, &queue)), "getQueue");
  baton::UniqueSemaphore done, extra;
  expect(ok(instance->createSemaphore({}, done.put())), "done");
  expect(ok(instance->createSemaphore({}, extra.put())), "extra");

  int launches = 0;
  Inside inside{queue, *extra};
  baton::UniqueCommandBuffer step;
  expect(ok(device->createCommandBuffer(step.put())), "createCommandBuffer");
  expect(ok(step->begin()) && ok(step->native(simulate, &launches)) &&
             ok(step->hostCall(reenter, &inside)) && ok(step->end()),
         "record");
  baton::CommandBuffer commands = *step;
  baton::SemaphoreValue doneOne{*done, 1};
  expect(ok(queue.submit(baton::SubmitInfo{{}, commands, doneOne})), "submit");
  expect(ok(done->wait(1, baton::kWaitForever)), "the submission completes");
  expect(ok(extra->wait(1, baton::kWaitForever)), "the submission made inside ran");
  expect(launches == 1, "the native callback ran once");
  expect(inside.waitIdle == baton::Result::ErrorInvalidState, "waitIdle inside is refused");
  expect(inside.submit == baton::Result::Success, "submit inside is honoured");

  return guide::finish("callbacks");
}
