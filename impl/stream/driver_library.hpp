// What the CUDA and HIP backends share about their driver libraries (docs/architecture.md, 'Layers
// and files'): opening the library at run time, naming its entry points, and the fault injection
// that tests use at the one wrapper around every driver call. Each backend keeps its own X-macro
// symbol table (the entry points and their types differ); this file holds the logic around it,
// once.
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
// absent and `required`. For tests: an optional entry point named (API or symbol name) in
// BATON_DRIVER_HIDE_SYMBOLS (comma-separated) is treated as absent, so that what a driver
// without it gets (a capability not advertised, a clear refusal) can be checked on a driver that
// has it.
void* resolveSymbol(void* library, const SymbolName& name, bool required, std::string* missing);

// How many times an entry point was called while DriverFaults recorded calls.
struct CallCount {
  const char* api;  // the documented name ("cuEventRecord")
  uint64_t calls;
};

// Injected driver failures, by entry point (an index into the backend's SymbolName table) and
// occurrence: `count` calls after `skip` successful ones return `result` without calling the
// driver. `result` is the driver's own error code (CUresult, hipError_t) as an int.
// Besides those, for the fault sweep (tests/faults): call counting per entry point, so that a
// test can enumerate the (entry point, occurrence) pairs a workload really makes, and seeded
// random faults, where every call fails with a given probability.
class DriverFaults {
 public:
  DriverFaults(const SymbolName* names, size_t count);

  // Arms a fault for the entry point named `api` (its documented name or its symbol). Returns
  // false for an unknown name or a zero count.
  bool inject(const char* api, int result, uint32_t skip, uint32_t count);
  // The same, but the driver is called and its result then replaced by `result`: an error that
  // a call reports after doing its work (the driver reports errors of earlier asynchronous work
  // from unrelated calls, cuMemFree and cuStreamDestroy included). For release entry points, so
  // that a test injects there without leaking the driver's object itself.
  bool injectAfterCall(const char* api, int result, uint32_t skip, uint32_t count);
  // Removes every fault (the random ones too) and resets fired(); call counting is left as it is.
  void clear();
  // Starts (resetting every count to zero) or stops counting the calls of each entry point.
  // Counted: every call that reaches the wrapper while counting, including those that an
  // injected fault then fails.
  void record(bool on);
  // The entry points called at least once since counting last started, in table order.
  std::vector<CallCount> counts() const;
  // Makes every call fail with `result` with probability `probability` (0..1), drawn from a
  // PRNG seeded with `seed` (the same seed and call sequence fail the same calls). Replaces an
  // earlier random mode; a probability <= 0 ends it. Occurrence faults (inject) are checked first.
  // Entry points that release a driver object (names with Destroy, Free or Release) are called
  // first and their result then replaced, as injectAfterCall does: failing them before the call
  // would leak the driver's own object, which no caller could prevent. The queue-ordered frees
  // (cuMemFreeAsync, hipFreeAsync) fail before the call, as other entry points do: baton frees
  // the memory of a failed one itself.
  void injectRandom(uint64_t seed, double probability, int result);
  // Faults that fired since the last clear().
  uint64_t fired() const { return fired_.load(std::memory_order_relaxed); }

  // The hot-path check: one relaxed load while nothing is armed (no fault, no random mode, no
  // call counting).
  bool armed() const noexcept { return armed_.load(std::memory_order_relaxed); }
  // Whether call `api` fails now, and with which result; *afterCall (when not null) says
  // whether the driver is to be called first (injectAfterCall).
  bool take(size_t api, int* result, bool* afterCall = nullptr);
  // The same, as the driver's own result type (CUresult, hipError_t).
  template <class DriverResult>
  bool takeAs(size_t api, DriverResult* result, bool* afterCall = nullptr) {
    int r = 0;
    if (!take(api, &r, afterCall)) return false;
    *result = static_cast<DriverResult>(r);
    return true;
  }

 private:
  struct Fault {
    size_t api;
    int result;
    uint32_t skip;
    uint32_t count;
    bool afterCall;
  };
  bool add(const char* api, int result, uint32_t skip, uint32_t count, bool afterCall);
  // armed_ = any fault, random mode or counting; called with mutex_ held.
  void updateArmed();

  const SymbolName* names_;
  size_t count_;
  std::atomic<bool> armed_{false};
  std::atomic<uint64_t> fired_{0};
  mutable std::mutex mutex_;
  std::vector<Fault> faults_;
  bool recording_ = false;
  std::vector<uint64_t> calls_;  // per entry point, while recording_
  std::vector<bool> releases_;   // per entry point: it releases a driver object
  // Random mode: a call fails when the next draw of the PRNG (splitmix64) is below threshold_.
  uint64_t randomState_ = 0;
  uint64_t randomThreshold_ = 0;  // 0: off
  int randomResult_ = 0;
};

// Calls fn(args...), the driver entry point `api`, unless `faults` has a fault armed for it, whose
// result (CUresult, hipError_t) is then returned instead: the one wrapper around every driver call
// (the only place a driver call can fail on purpose, for the tests). While nothing is armed it
// costs one relaxed load.
template <class DriverResult, class Api, class Fn, class... Args>
inline DriverResult callDriver(DriverFaults& faults, Api api, Fn fn, Args... args) {
  if (faults.armed()) [[unlikely]] {
    DriverResult injected;
    bool afterCall = false;
    if (faults.takeAs(static_cast<size_t>(api), &injected, &afterCall)) {
      if (afterCall) (void)fn(args...);
      return injected;
    }
  }
  return fn(args...);
}

}  // namespace baton::stream
