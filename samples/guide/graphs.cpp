// The guide's "Graph command buffers" (docs/guide.md): a frame's pass recorded once as a graph
// command buffer — a fill, a capturable native callback and an infallible host call — and
// submitted three times. On the first GPU device when there is one (CUDA or HIP graphs), else on
// the host backend, which replays it.
#include <baton/baton.hpp>
#include <cstdio>
#include <vector>

#include "check.hpp"

using guide::expect;
using guide::ok;

namespace {

// [graph]
// Capturable: it only enqueues work on the stream it is given, makes no synchronising call and
// enqueues the same work every time. In a graph command buffer it runs once, inside end(), and
// every submission replays what it enqueued.
baton::Result shade(const baton::NativeQueue& queue, void* userData) {
  ++*static_cast<int*>(userData);  // counts the calls: 1 on CUDA and HIP, 1 per submission on host
  // CUDA: shade<<<blocks, threads, 0, static_cast<CUstream>(queue.stream)>>>(...);
  (void)queue;
  return baton::Result::Success;
}

// Bookkeeping that cannot fail the frame: kHostCallInfallible keeps it inside the graph, and the
// submission's signal is published GPU-side.
baton::Result frameDone(void* userData) {
  ++*static_cast<int*>(userData);
  return baton::Result::Success;
}

baton::Result recordPass(baton::CommandBuffer pass, baton::Buffer target, int* shades,
                         int* frames) {
  baton::Result r = pass.begin();
  if (baton::isError(r)) return r;
  if (baton::isError(r = pass.fillBuffer(target, 0, 4096, 0))) return r;
  if (baton::isError(r = pass.native(shade, shades, baton::kNativeCapturable))) return r;
  if (baton::isError(r = pass.hostCall(frameDone, frames, baton::kHostCallInfallible))) return r;
  return pass.end();  // CUDA / HIP: builds and instantiates the graph here
}
// [graph]

}  // namespace

int main() {
  baton::UniqueInstance instance;
  expect(ok(baton::createInstance({}, instance.put())), "createInstance");
  uint32_t count = 0;
  expect(ok(instance->enumeratePhysicalDevices(&count, nullptr)), "count devices");
  std::vector<baton::PhysicalDevice> physicals(count);
  expect(ok(instance->enumeratePhysicalDevices(&count, physicals.data())), "list devices");
  baton::PhysicalDevice physical = physicals[count > 1 ? 1 : 0];
  baton::PhysicalDeviceProperties properties;
  expect(ok(physical.getProperties(&properties)), "getProperties");
  const bool graphs = properties.capabilities & baton::kCapabilityGraphCommandBuffers;
  std::printf("graph command buffers on %s (%s): %s\n", properties.name,
              baton::backendName(properties.backend), graphs ? "driver graphs" : "replayed");

  baton::UniqueDevice device;
  expect(ok(instance->createDevice(physical, {/*queueCount=*/1}, device.put())), "createDevice");
  baton::Queue queue;
  expect(ok(device->getQueue(0, &queue)), "getQueue");
  baton::BufferCreateInfo bufferInfo;
  bufferInfo.size = 4096;
  baton::UniqueBuffer target;
  expect(ok(device->createBuffer(bufferInfo, target.put())), "createBuffer");
  baton::UniqueSemaphore done;
  expect(ok(instance->createSemaphore({}, done.put())), "semaphore");

  baton::CommandBufferCreateInfo info;
  info.usage = baton::CommandBufferUsage::Graph;
  info.debugName = "pass";
  baton::UniqueCommandBuffer pass;
  expect(ok(device->createCommandBuffer(info, pass.put())), "createCommandBuffer (graph)");
  int shades = 0, frames = 0;
  expect(ok(recordPass(*pass, *target, &shades, &frames)), "record and end");
  baton::CommandBuffer commands = *pass;
  for (uint64_t frame = 1; frame <= 3; ++frame) {
    baton::SemaphoreValue signal{*done, frame};
    expect(ok(queue.submit(baton::SubmitInfo{{}, commands, signal})), "submit");
  }
  expect(ok(done->wait(3, baton::kWaitForever)), "the three submissions complete");
  expect(frames == 3, "the host call ran once per submission");
  expect(shades == (graphs ? 1 : 3), "the native callback ran once (graphs) or per submission");
  return guide::finish("graphs");
}
