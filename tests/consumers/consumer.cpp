// The program every C++ consumer of an installed (or subproject) baton builds: tests/consumers/
// run.sh compiles it through CMake (find_package), an outer Meson project (baton as a
// subproject) and pkg-config, and runs it. A host queue waits for a semaphore value before the
// host signals it (wait-before-signal), runs a host call and signals the next value; the host
// waits for that. It also checks that baton/version.hpp agrees with the version the build
// system reported (BATON_CONSUMER_EXPECTED_VERSION). Exits 0 on success, 1 with a message else.
#include <atomic>
#include <baton/baton.hpp>
#include <cstdio>
#include <cstring>

#ifndef BATON_CONSUMER_NAME
#error "BATON_CONSUMER_NAME: which consumer this is (cmake, meson, pkg-config)"
#endif
#ifndef BATON_CONSUMER_EXPECTED_VERSION
#error "BATON_CONSUMER_EXPECTED_VERSION: the version the build system reported for baton"
#endif

namespace {

int fail(const char* what, baton::Result r) {
  std::printf("consumer %s: FAILED: %s: %s: %s\n", BATON_CONSUMER_NAME, what, baton::resultName(r),
              baton::lastErrorMessage());
  return 1;
}

baton::Result mark(void* ran) {
  static_cast<std::atomic<bool>*>(ran)->store(true);
  return baton::Result::Success;
}

}  // namespace

int main() {
  // The header's macros against the build system's version (pkg-config's --modversion,
  // CMake's baton_VERSION, the Meson dependency's version()).
  char composed[64];
  std::snprintf(composed, sizeof composed, "%d.%d.%d", BATON_VERSION_MAJOR, BATON_VERSION_MINOR,
                BATON_VERSION_PATCH);
  static_assert(BATON_VERSION_NUMBER ==
                    BATON_VERSION_MAJOR * 10000 + BATON_VERSION_MINOR * 100 + BATON_VERSION_PATCH,
                "BATON_VERSION_NUMBER");
  if (std::strcmp(BATON_VERSION_STRING, BATON_CONSUMER_EXPECTED_VERSION) != 0 ||
      std::strcmp(composed, BATON_CONSUMER_EXPECTED_VERSION) != 0) {
    std::printf("consumer %s: FAILED: baton/version.hpp says %s (%s), the build system %s\n",
                BATON_CONSUMER_NAME, BATON_VERSION_STRING, composed,
                BATON_CONSUMER_EXPECTED_VERSION);
    return 1;
  }

  baton::UniqueInstance instance;
  baton::InstanceCreateInfo instanceInfo;
  instanceInfo.backendMask = baton::backendBit(baton::BackendKind::Host);
  baton::Result r = baton::createInstance(instanceInfo, instance.put());
  if (baton::isError(r)) return fail("createInstance", r);

  uint32_t count = 1;
  baton::PhysicalDevice physical;  // the host's: physical devices are listed host first
  (void)instance->enumeratePhysicalDevices(&count, &physical);  // NotReady: there were more
  if (count != 1) {
    std::printf("consumer %s: FAILED: no physical device\n", BATON_CONSUMER_NAME);
    return 1;
  }

  baton::UniqueDevice device;
  baton::Queue queue;
  baton::UniqueSemaphore timeline;
  baton::UniqueCommandBuffer commands;
  std::atomic<bool> ran{false};
  if (baton::isError(r = instance->createDevice(physical, {}, device.put())))
    return fail("createDevice", r);
  if (baton::isError(r = device->getQueue(0, &queue))) return fail("getQueue", r);
  if (baton::isError(r = instance->createSemaphore({}, timeline.put())))
    return fail("createSemaphore", r);
  if (baton::isError(r = device->createCommandBuffer(commands.put())))
    return fail("createCommandBuffer", r);
  if (baton::isError(r = commands->begin())) return fail("begin", r);
  if (baton::isError(r = commands->hostCall(mark, &ran))) return fail("hostCall", r);
  if (baton::isError(r = commands->end())) return fail("end", r);

  baton::SemaphoreValue one{*timeline, 1}, two{*timeline, 2};
  baton::CommandBuffer recorded = *commands;
  if (baton::isError(r = queue.submit(baton::SubmitInfo{one, recorded, two})))
    return fail("submit", r);
  if (baton::isError(r = timeline->signal(1))) return fail("signal", r);
  if (baton::isError(r = timeline->wait(2, 10'000'000'000ull)))  // 10 s
    return fail("wait", r);
  if (r == baton::Result::Timeout) return fail("wait (timed out after 10 s)", r);
  uint64_t value = 0;
  if (baton::isError(r = timeline->getValue(&value))) return fail("getValue", r);
  if (value != 2 || !ran.load()) {
    std::printf("consumer %s: FAILED: value %llu (expected 2), host call %s\n", BATON_CONSUMER_NAME,
                static_cast<unsigned long long>(value), ran.load() ? "ran" : "did not run");
    return 1;
  }
  std::printf("consumer %s: baton %s: host queue and semaphore ok\n", BATON_CONSUMER_NAME,
              BATON_VERSION_STRING);
  return 0;
}
