// What the guide's examples share: each runs what its section of docs/guide.md shows and checks
// the outcome, so that meson test fails when an example stops doing what the guide says.
#pragma once

#include <baton/baton.hpp>
#include <cstdio>

namespace guide {

// How many checks failed so far.
inline int failures = 0;

// Counts a failed check, printing what failed and the last baton error of this thread.
inline void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAILED: %s (%s)\n", what, baton::lastErrorMessage());
    ++failures;
  }
}

// The examples' shorthand: true for the results that are not errors (Success, NotReady, Timeout).
inline bool ok(baton::Result r) { return !baton::isError(r); }

// The host backend's physical device, which enumeratePhysicalDevices lists first.
inline baton::PhysicalDevice hostPhysicalDevice(baton::Instance instance) {
  uint32_t count = 1;
  baton::PhysicalDevice host;
  (void)instance.enumeratePhysicalDevices(&count, &host);  // NotReady: there were more
  return host;
}

// main's result: 0 when every check held.
inline int finish(const char* example) {
  if (failures == 0) std::printf("%s: ok\n", example);
  return failures == 0 ? 0 : 1;
}

}  // namespace guide
