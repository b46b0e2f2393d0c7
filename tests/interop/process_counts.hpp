// What the leak tests of the interop suites count: this process's open file descriptors and
// threads, read from /proc (Linux).
#pragma once

#include <dirent.h>

#include <chrono>
#include <cstddef>
#include <thread>

namespace baton::test {

inline size_t countEntries(const char* dir) {
  size_t n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// Includes the descriptor opendir itself holds while counting, the same on every call.
inline size_t openFds() { return countEntries("/proc/self/fd"); }
inline size_t threadCount() { return countEntries("/proc/self/task"); }

// Thread exit and /proc are not synchronous with join() to the microsecond: poll briefly.
inline bool threadCountReaches(size_t expected) {
  for (int i = 0; i < 200; ++i) {
    if (threadCount() == expected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace baton::test
