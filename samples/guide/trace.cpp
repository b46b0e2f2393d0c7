// The guide's "The timeline trace" (docs/guide.md): a trace written by an instance. Built and
// run by meson test (suite guide) with the file to write as its argument; the region between
// the [name] lines is the guide's code block (tests/docs/check_examples.py).
#include <baton/baton.hpp>
#include <cstdio>

#include "check.hpp"

namespace {

using guide::ok;

// [trace]
// Records what baton's queues and threads do, and writes it to `path` (Chrome trace-event JSON:
// open it in the Perfetto UI, or draw it with tools/baton-trace-render) when the last instance
// is destroyed. BATON_TRACE=<path> in the environment does the same without code.
baton::Result runTraced(const char* path) {
  baton::InstanceCreateInfo info;
  info.tracePath = path;  // copied
  baton::UniqueInstance instance;
  baton::Result r = baton::createInstance(info, instance.put());
  uint32_t count = 1;
  baton::PhysicalDevice physical;
  if (ok(r)) (void)instance->enumeratePhysicalDevices(&count, &physical);
  baton::UniqueDevice device;
  baton::Queue queue;
  baton::UniqueSemaphore done;
  if (ok(r)) r = instance->createDevice(physical, {1, "traced"}, device.put());
  if (ok(r)) r = device->getQueue(0, &queue);
  if (ok(r)) r = instance->createSemaphore({0, "done"}, done.put());
  baton::SemaphoreValue one{*done, 1};
  if (ok(r)) r = queue.submit(baton::SubmitInfo{{}, {}, one});  // a slice on the queue's track
  if (ok(r)) r = done->wait(1, baton::kWaitForever);            // a slice on this thread's
  return r;
}  // the instance is destroyed here: the file is written
// [trace]

}  // namespace

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "guide-trace.json";
  if (baton::isError(runTraced(path))) {
    std::printf("FAILED: %s\n", baton::lastErrorMessage());
    return 1;
  }
  // The session's file exists and holds trace events.
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) {
    std::printf("FAILED: %s was not written\n", path);
    return 1;
  }
  char head[64] = {};
  size_t n = std::fread(head, 1, sizeof head - 1, f);
  std::fclose(f);
  if (n == 0 || head[0] != '{') {
    std::printf("FAILED: %s is not a JSON object\n", path);
    return 1;
  }
  std::printf("trace: ok (%s)\n", path);
  return 0;
}
