// What the CUDA and HIP backends share about their driver libraries (DESIGN §4): opening the
// library at run time, naming its entry points, and the fault injection that tests use at the one
// wrapper around every driver call (DESIGN §8). Each backend keeps its own X-macro symbol table
// (the entry points and their types differ); this file holds the logic around it, once.
//
// Thread safety: openDriverLibrary may be called from any thread (dlopen is thread safe);
// DriverFaults is thread safe throughout.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>
#include <vector>

namespace baton::stream {

// An entry point as its documentation names it ("cuMemAlloc") and the symbol the library exports
// for the header it was compiled against ("cuMemAlloc_v2"; the same for HIP).
struct SymbolName {
  const char* api;
  const char* symbol;
};

struct DriverLibrary {
  void* handle = nullptr;  // from dlopen; never closed (driver threads outlive our objects)
  std::string path;        // the candidate that loaded
  std::string tried;       // "<path>: <dlerror>; ..." for each candidate that did not
};

// Opens the first candidate that loads, trying the path in environment variable `overrideEnv`
// first when it is set and not empty (BATON_CUDA_DRIVER, BATON_HIP_DRIVER), then `candidates`
// in order. handle is null when none loaded; `tried` then says why for each.
DriverLibrary openDriverLibrary(const char* overrideEnv,
                                std::initializer_list<const char*> candidates);

// Looks up `name.symbol` in `library`; appends it to `missing` (comma-separated) when it is
// absent and `required`.
void* resolveSymbol(void* library, const SymbolName& name, bool required, std::string* missing);

// Injected driver failures, by entry point (an index into the backend's SymbolName table) and
// occurrence: `count` calls after `skip` successful ones return `result` without calling the
// driver. `result` is the driver's own error code (CUresult, hipError_t) as an int.
class DriverFaults {
 public:
  DriverFaults(const SymbolName* names, size_t count) : names_(names), count_(count) {}

  // Arms a fault for the entry point named `api` (its documented name or its symbol). Returns
  // false for an unknown name or a zero count.
  bool inject(const char* api, int result, uint32_t skip, uint32_t count);
  // Removes every fault and resets fired().
  void clear();
  // Faults that fired since the last clear().
  uint64_t fired() const { return fired_.load(std::memory_order_relaxed); }

  // The hot-path check: one relaxed load while nothing is armed.
  bool armed() const noexcept { return armed_.load(std::memory_order_relaxed); }
  // Whether call `api` fails now, and with which result.
  bool take(size_t api, int* result);
  // The same, as the driver's own result type (CUresult, hipError_t).
  template <class DriverResult>
  bool takeAs(size_t api, DriverResult* result) {
    int r = 0;
    if (!take(api, &r)) return false;
    *result = static_cast<DriverResult>(r);
    return true;
  }

 private:
  struct Fault {
    size_t api;
    int result;
    uint32_t skip;
    uint32_t count;
  };
  const SymbolName* names_;
  size_t count_;
  std::atomic<bool> armed_{false};
  std::atomic<uint64_t> fired_{0};
  std::mutex mutex_;
  std::vector<Fault> faults_;
};

// Calls fn(args...), the driver entry point `api`, unless `faults` has a fault armed for it, whose
// result (CUresult, hipError_t) is then returned instead: the one wrapper around every driver call
// (DESIGN §8). While nothing is armed it costs one relaxed load.
template <class DriverResult, class Api, class Fn, class... Args>
inline DriverResult callDriver(DriverFaults& faults, Api api, Fn fn, Args... args) {
  if (faults.armed()) [[unlikely]] {
    DriverResult injected;
    if (faults.takeAs(static_cast<size_t>(api), &injected)) return injected;
  }
  return fn(args...);
}

}  // namespace baton::stream
