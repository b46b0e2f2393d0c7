// hello_timeline: two queues of one device and the host, chained by timeline semaphores.
//
//   host ──start=1──▶ queue 0 (producer) ──produced=1──▶ queue 1 (consumer)
//                        ▲                                   │
//                        └────────────consumed=1─────────────┘
//   queue 0 ──produced=2──▶ host
//
// The consumer's batch is submitted first, waiting for a value nobody has scheduled yet
// (wait-before-signal); the producer's second batch waits on the consumer (a cross-queue back
// edge). hostCall commands log each step with a timestamp; the program then checks that the
// steps happened in the only order the semaphores allow, and that the data the producer wrote is
// what the consumer copied out. Exit status 0 when both hold, 1 otherwise.
//
// Usage: hello_timeline [host|cuda|hip]   (default: the best backend present, CUDA first)
#include <baton/baton.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Every step, from any thread, with its time since the program started.
class EventLog {
 public:
  void add(const char* who, const char* what) {
    std::lock_guard<std::mutex> lock(mutex_);
    double us = std::chrono::duration<double, std::micro>(Clock::now() - start_).count();
    events_.push_back(std::string(who) + ": " + what);
    // Printed under the lock so that the printed order is the recorded order.
    std::printf("  %10.1f us  %-9s %s\n", us, who, what);
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }

 private:
  std::mutex mutex_;
  Clock::time_point start_ = Clock::now();
  std::vector<std::string> events_;
};

// What a hostCall command logs; the queue runs it in order with the rest of its batch.
struct Step {
  EventLog* log;
  const char* who;
  const char* what;
};

baton::Result logStep(void* userData) {
  const Step* step = static_cast<const Step*>(userData);
  step->log->add(step->who, step->what);
  return baton::Result::Success;
}

void onMessage(baton::MessageSeverity severity, const char* message, void*) {
  if (severity == baton::MessageSeverity::Info) return;
  std::fprintf(stderr, "[baton] %s\n", message);
}

// Every baton call here is expected to succeed; on an error, say which call and why, and stop.
#define CHECK(call)                                                       \
  do {                                                                    \
    baton::Result r_ = (call);                                            \
    if (baton::isError(r_)) {                                             \
      std::printf("FAILED: %s -> %s: %s\n", #call, baton::resultName(r_), \
                  baton::lastErrorMessage());                             \
      std::exit(1);                                                       \
    }                                                                     \
  } while (0)

constexpr uint64_t kSecond = 1000000000ull;
constexpr uint64_t kBytes = 1 << 20;
constexpr uint32_t kPattern = 0xBA7011EDu;

// Picks the device to run on: the backend named on the command line, or CUDA, then HIP, then the
// host. Says why a GPU backend was not taken, so a silent fallback to the host cannot mislead.
baton::PhysicalDevice choose(baton::Instance instance, const char* wanted) {
  uint32_t count = 0;
  CHECK(instance.enumerateBackends(&count, nullptr));
  std::vector<baton::BackendInfo> backends(count);
  CHECK(instance.enumerateBackends(&count, backends.data()));
  for (const baton::BackendInfo& b : backends) {
    if (b.kind == baton::BackendKind::Host) continue;
    if (!b.compiled)
      std::printf("backend %s: not compiled in\n", baton::backendName(b.kind));
    else if (!b.available)
      std::printf("backend %s: unavailable: %s\n", baton::backendName(b.kind), b.reason);
    else
      std::printf("backend %s: available, %u device(s)\n", baton::backendName(b.kind),
                  b.deviceCount);
  }

  CHECK(instance.enumeratePhysicalDevices(&count, nullptr));
  std::vector<baton::PhysicalDevice> devices(count);
  CHECK(instance.enumeratePhysicalDevices(&count, devices.data()));
  const baton::BackendKind order[] = {baton::BackendKind::Cuda, baton::BackendKind::Hip,
                                      baton::BackendKind::Host};
  for (baton::BackendKind kind : order) {
    if (wanted && std::strcmp(wanted, baton::backendName(kind)) != 0) continue;
    for (baton::PhysicalDevice device : devices) {
      baton::PhysicalDeviceProperties p;
      CHECK(device.getProperties(&p));
      if (p.backend == kind && p.maxQueues >= 2) return device;
    }
  }
  std::printf("FAILED: no %s device with two queues\n", wanted ? wanted : "");
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  const char* wanted = argc > 1 ? argv[1] : nullptr;
  if (wanted && (std::strcmp(wanted, "-h") == 0 || std::strcmp(wanted, "--help") == 0)) {
    std::printf("usage: %s [host|cuda|hip]\n", argv[0]);
    return 0;
  }

  baton::InstanceCreateInfo instanceInfo;
  instanceInfo.debugCallback = onMessage;
  baton::UniqueInstance instance;
  CHECK(baton::createInstance(instanceInfo, instance.put()));

  baton::PhysicalDevice physical = choose(*instance, wanted);
  baton::PhysicalDeviceProperties props;
  CHECK(physical.getProperties(&props));
  std::printf("using backend %s: %s\n\n", baton::backendName(props.backend), props.name);

  baton::DeviceCreateInfo deviceInfo;
  deviceInfo.queueCount = 2;
  baton::UniqueDevice device;
  CHECK(instance->createDevice(physical, deviceInfo, device.put()));
  baton::Queue producer, consumer;
  CHECK(device->getQueue(0, &producer));
  CHECK(device->getQueue(1, &consumer));

  baton::UniqueSemaphore start, produced, consumed;
  baton::SemaphoreCreateInfo semInfo;
  semInfo.debugName = "start";
  CHECK(instance->createSemaphore(semInfo, start.put()));
  semInfo.debugName = "produced";
  CHECK(instance->createSemaphore(semInfo, produced.put()));
  semInfo.debugName = "consumed";
  CHECK(instance->createSemaphore(semInfo, consumed.put()));

  // The producer fills device memory; the consumer copies it to host-visible memory the host
  // reads at the end: the semaphores order real data, not just callbacks.
  const bool withData = (props.capabilities & baton::kCapabilityDeviceMemory) &&
                        (props.capabilities & baton::kCapabilityHostPinnedMemory);
  baton::UniqueBuffer work, staging;
  if (withData) {
    CHECK(device->createBuffer({kBytes, baton::MemoryKind::Device}, work.put()));
    CHECK(device->createBuffer({kBytes, baton::MemoryKind::HostPinned}, staging.put()));
  }

  EventLog log;
  Step produceStep{&log, "queue 0", "producer runs (start reached 1), fills the buffer"};
  Step consumeStep{&log, "queue 1", "consumer runs (produced reached 1), copies the buffer"};
  Step backEdgeStep{&log, "queue 0", "producer sees consumed reach 1"};

  baton::UniqueCommandBuffer produceCmd, consumeCmd, backEdgeCmd;
  CHECK(device->createCommandBuffer(produceCmd.put()));
  CHECK(produceCmd->begin());
  CHECK(produceCmd->hostCall(logStep, &produceStep));
  if (withData) CHECK(produceCmd->fillBuffer(*work, 0, kBytes, kPattern));
  CHECK(produceCmd->end());
  CHECK(device->createCommandBuffer(consumeCmd.put()));
  CHECK(consumeCmd->begin());
  CHECK(consumeCmd->hostCall(logStep, &consumeStep));
  if (withData) CHECK(consumeCmd->copyBuffer(*work, 0, *staging, 0, kBytes));
  CHECK(consumeCmd->end());
  CHECK(device->createCommandBuffer(backEdgeCmd.put()));
  CHECK(backEdgeCmd->begin());
  CHECK(backEdgeCmd->hostCall(logStep, &backEdgeStep));
  CHECK(backEdgeCmd->end());

  std::printf("events (time since start, who, what):\n");

  // 1. The consumer first: it waits for produced=1, which no one has submitted a signal for.
  {
    baton::SemaphoreValue wait{*produced, 1}, signal{*consumed, 1};
    baton::CommandBuffer cmd = *consumeCmd;
    baton::SubmitInfo submit{wait, cmd, signal};
    log.add("host", "submits the consumer to queue 1 (waits produced=1: wait-before-signal)");
    CHECK(consumer.submit(submit));
  }
  // 2. The producer: starts when the host says so, then waits for the consumer.
  {
    baton::SemaphoreValue wait1{*start, 1}, signal1{*produced, 1};
    baton::SemaphoreValue wait2{*consumed, 1}, signal2{*produced, 2};
    baton::CommandBuffer cmd1 = *produceCmd, cmd2 = *backEdgeCmd;
    baton::SubmitInfo submits[] = {{wait1, cmd1, signal1}, {wait2, cmd2, signal2}};
    log.add("host", "submits the producer to queue 0 (waits start=1, then consumed=1)");
    CHECK(producer.submit(submits));
  }

  // 3. Everything is held: no queue may run before the host signals start.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  uint64_t producedValue = 0, consumedValue = 0;
  CHECK(produced->getValue(&producedValue));
  CHECK(consumed->getValue(&consumedValue));
  bool held = producedValue == 0 && consumedValue == 0 && log.events().size() == 2;
  log.add("host", held ? "after 20 ms nothing has run: both queues are held"
                       : "ERROR: work ran before the host signalled start");

  // 4. Release the chain and wait for its end on the host.
  log.add("host", "signals start=1");
  CHECK(start->signal(1));
  baton::SemaphoreValue done{*produced, 2};
  baton::Result waited = instance->waitSemaphores(done, baton::WaitMode::All, 10 * kSecond);
  CHECK(waited);
  log.add("host", waited == baton::Result::Success ? "wakes: produced reached 2"
                                                   : "ERROR: timed out waiting for produced=2");
  CHECK(device->waitIdle(10 * kSecond));

  // Verify: the order is the only one the semaphores allow, step for step.
  const std::vector<std::string> expected = {
      "host: submits the consumer to queue 1 (waits produced=1: wait-before-signal)",
      "host: submits the producer to queue 0 (waits start=1, then consumed=1)",
      "host: after 20 ms nothing has run: both queues are held",
      "host: signals start=1",
      std::string("queue 0: ") + produceStep.what,
      std::string("queue 1: ") + consumeStep.what,
      std::string("queue 0: ") + backEdgeStep.what,
      "host: wakes: produced reached 2",
  };
  bool ok = log.events() == expected;
  std::printf("\norder of events: %s\n", ok ? "as expected" : "WRONG");
  if (!ok) {
    std::printf("expected:\n");
    for (const std::string& e : expected) std::printf("  %s\n", e.c_str());
  }

  if (withData) {
    void* mapped = nullptr;
    CHECK(staging->map(&mapped));
    const uint32_t* words = static_cast<const uint32_t*>(mapped);
    size_t bad = 0;
    for (size_t i = 0; i < kBytes / 4; ++i) bad += words[i] != kPattern;
    std::printf("data copied by the consumer: %s (%zu of %" PRIu64 " words wrong)\n",
                bad == 0 ? "as the producer wrote it" : "WRONG", bad, kBytes / 4);
    ok = ok && bad == 0;
  } else {
    std::printf("data check skipped: the device has no host-pinned memory\n");
  }

  std::printf("%s on backend %s\n", ok ? "PASS" : "FAIL", baton::backendName(props.backend));
  return ok ? 0 : 1;
}
