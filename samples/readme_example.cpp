// The code example of README.md, compiled with the samples so that it cannot rot.
// Two queues and the host, one timeline semaphore; queue 1's batch is submitted before the
// batch on queue 0 that signals what it waits for (wait-before-signal).
#include <baton/baton.hpp>
#include <cstdio>

baton::Result sayHello(void*) {
  std::printf("hello from queue 1\n");
  return baton::Result::Success;
}

int main() {
  baton::UniqueInstance instance;
  if (baton::isError(baton::createInstance({}, instance.put()))) return 1;

  // Physical devices are listed host first; take the host's (see baton-info for the rest).
  uint32_t count = 1;
  baton::PhysicalDevice physical;
  (void)instance->enumeratePhysicalDevices(&count, &physical);  // NotReady: there were more

  baton::UniqueDevice device;
  baton::Queue queue0, queue1;
  baton::UniqueSemaphore timeline;
  baton::UniqueCommandBuffer hello;
  baton::Result r = instance->createDevice(physical, {/*queueCount=*/2}, device.put());
  if (!baton::isError(r)) r = device->getQueue(0, &queue0);
  if (!baton::isError(r)) r = device->getQueue(1, &queue1);
  if (!baton::isError(r)) r = instance->createSemaphore({/*initialValue=*/0}, timeline.put());
  if (!baton::isError(r)) r = device->createCommandBuffer(hello.put());
  if (!baton::isError(r)) r = hello->begin();
  if (!baton::isError(r)) r = hello->hostCall(sayHello, nullptr);
  if (!baton::isError(r)) r = hello->end();

  // Queue 1 waits for 1 before anyone has promised to signal it, then signals 2.
  baton::SemaphoreValue one{*timeline, 1}, two{*timeline, 2};
  baton::CommandBuffer commands = *hello;
  if (!baton::isError(r)) r = queue1.submit(baton::SubmitInfo{one, commands, two});
  // Queue 0 signals 1 (an empty batch: no waits, no command buffers).
  if (!baton::isError(r)) r = queue0.submit(baton::SubmitInfo{{}, {}, one});
  // The host waits for queue 1.
  if (!baton::isError(r)) r = timeline->wait(2, baton::kWaitForever);

  if (baton::isError(r)) {
    std::printf("%s: %s\n", baton::resultName(r), baton::lastErrorMessage());
    return 1;
  }
  return 0;
}
