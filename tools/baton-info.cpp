// baton-info: prints every backend baton knows (built in or not, available or why not) and every
// physical device with its properties and capability names. Exits 0 when it could ask (a backend
// being unavailable is information, not failure); 1 when the instance itself cannot be created.
#include <baton/baton.hpp>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#ifndef BATON_VERSION
#define BATON_VERSION "unknown"
#endif

namespace {

bool verbose = false;

// Info messages say which backend loaded from where and why one did not; only shown with -v
// because enumerateBackends already reports the outcome.
void onMessage(baton::MessageSeverity severity, const char* message, void*) {
  if (severity == baton::MessageSeverity::Info && !verbose) return;
  const char* tag = severity == baton::MessageSeverity::Error     ? "error"
                    : severity == baton::MessageSeverity::Warning ? "warning"
                                                                  : "info";
  std::fprintf(stderr, "[baton %s] %s\n", tag, message);
}

bool check(baton::Result result, const char* what) {
  if (!baton::isError(result)) return true;
  std::printf("  %s failed: %s (%s)\n", what, baton::resultName(result), baton::lastErrorMessage());
  return false;
}

void printMemory(uint64_t bytes) {
  if (bytes == 0) {
    std::printf("unknown\n");
    return;
  }
  std::printf("%.1f GiB (%" PRIu64 " bytes)\n", static_cast<double>(bytes) / (1ull << 30), bytes);
}

void printDevice(baton::PhysicalDevice device, uint32_t index) {
  baton::PhysicalDeviceProperties p;
  if (!check(device.getProperties(&p), "PhysicalDevice::getProperties")) return;
  std::printf("  [%u] %s #%u: %s\n", index, baton::backendName(p.backend), p.ordinal, p.name);
  std::printf("      uuid          ");
  for (int i = 0; i < 16; ++i) {
    std::printf("%02x", p.uuid[i]);
    // The 8-4-4-4-12 grouping that nvidia-smi and vulkaninfo print, so UUIDs can be compared.
    if (i == 3 || i == 5 || i == 7 || i == 9) std::printf("-");
  }
  std::printf("\n");
  if (p.arch[0]) std::printf("      arch          %s\n", p.arch);
  if (p.computeMajor == 0 && p.computeMinor == 0)
    std::printf("      compute       n/a\n");
  else
    std::printf("      compute       %u.%u\n", p.computeMajor, p.computeMinor);
  std::printf("      memory        ");
  printMemory(p.totalMemory);
  std::printf("      max queues    %u\n", p.maxQueues);
  // Two-call: ask for the length first, so that no capability name is ever cut off.
  size_t needed = baton::capabilityNames(p.capabilities, nullptr, 0);
  std::vector<char> names(needed + 1);
  baton::capabilityNames(p.capabilities, names.data(), names.size());
  std::printf("      capabilities  0x%" PRIx64 " %s\n", p.capabilities,
              names[0] ? names.data() : "(none)");
  // How this device's queues hand shared semaphores' values to other processes (docs/guide.md,
  // 'Across processes').
  const char* across = "host queues: values pass through the shared page";
  if (p.backend != baton::BackendKind::Host)
    across = (p.capabilities & baton::kCapabilityStreamMemOps64)
                 ? "shared semaphores GPU-side (64-bit stream memory operations)"
                 : "shared semaphores bridged by the host (no 64-bit stream memory operations)";
  std::printf("      processes     %s\n", across);
}

}  // namespace

int main(int argc, char** argv) {
  // Unbuffered: when run under a time limit, everything printed before a hang still arrives.
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-v") == 0 || std::strcmp(argv[i], "--verbose") == 0) {
      verbose = true;
    } else {
      std::printf(
          "usage: %s [-v]\n"
          "Lists baton's backends (compiled in? available, or why not), its physical devices\n"
          "and their capabilities. -v also prints the backends' loading messages.\n",
          argv[0]);
      return std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }

  std::printf("baton %s\n", BATON_VERSION);
  baton::InstanceCreateInfo info;
  info.debugCallback = onMessage;
  baton::UniqueInstance instance;
  baton::Result r = baton::createInstance(info, instance.put());
  if (baton::isError(r)) {
    std::printf("createInstance failed: %s (%s)\n", baton::resultName(r),
                baton::lastErrorMessage());
    return 1;
  }

  std::printf("\nBackends:\n");
  uint32_t count = 0;
  if (check(instance->enumerateBackends(&count, nullptr), "enumerateBackends")) {
    std::vector<baton::BackendInfo> backends(count);
    if (check(instance->enumerateBackends(&count, backends.data()), "enumerateBackends")) {
      for (uint32_t i = 0; i < count; ++i) {
        const baton::BackendInfo& b = backends[i];
        std::printf("  %-5s ", baton::backendName(b.kind));
        if (!b.compiled) {
          std::printf("not compiled in%s%s\n", b.reason[0] ? ": " : "", b.reason);
        } else if (b.available) {
          std::printf("available, %u device%s%s%s\n", b.deviceCount, b.deviceCount == 1 ? "" : "s",
                      b.reason[0] ? ": " : "", b.reason);
        } else {
          std::printf("compiled in, unavailable: %s\n", b.reason[0] ? b.reason : "(no reason)");
        }
      }
    }
  }

  // Collectives per backend: the library found (NCCL for CUDA, RCCL for HIP), its version, what
  // it can do and whether baton's collective calls block, or why there is none.
  std::printf("\nCollectives:\n");
  for (uint32_t k = 0; k < baton::kBackendKindCount; ++k) {
    const auto kind = static_cast<baton::BackendKind>(k);
    baton::CollectiveSupport c;
    if (!check(instance->getCollectiveSupport(kind, &c), "getCollectiveSupport")) continue;
    std::printf("  %-5s ", baton::backendName(kind));
    if (c.available)
      std::printf("%s %u.%u.%u (%s): revoke %s, shrink %s, calls %s\n",
                  kind == baton::BackendKind::Hip ? "RCCL" : "NCCL", c.version / 10000,
                  c.version % 10000 / 100, c.version % 100, c.library, c.canRevoke ? "yes" : "no",
                  c.canShrink ? "yes" : "no",
                  c.blockingCalls ? "blocking" : "non-blocking (BATON_NCCL_BLOCKING_CALLS=0)");
    else
      std::printf("unavailable: %s\n", c.reason);
  }

  std::printf("\nPhysical devices:\n");
  count = 0;
  if (check(instance->enumeratePhysicalDevices(&count, nullptr), "enumeratePhysicalDevices")) {
    std::vector<baton::PhysicalDevice> devices(count);
    if (check(instance->enumeratePhysicalDevices(&count, devices.data()),
              "enumeratePhysicalDevices")) {
      if (count == 0) std::printf("  (none)\n");
      for (uint32_t i = 0; i < count; ++i) printDevice(devices[i], i);
    }
  }
  return 0;
}
