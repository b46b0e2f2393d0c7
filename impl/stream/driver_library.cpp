// Driver library loading and fault injection shared by the CUDA and HIP backends; see
// driver_library.hpp.
#include "driver_library.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace baton::stream {

DriverLibrary openDriverLibrary(const char* overrideEnv,
                                std::initializer_list<const char*> candidates) {
  std::vector<std::string> paths;
  if (const char* env = std::getenv(overrideEnv); env && *env) paths.push_back(env);
  for (const char* c : candidates) paths.push_back(c);
  DriverLibrary out;
  for (const std::string& path : paths) {
    out.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (out.handle) {
      out.path = path;
      break;
    }
    const char* err = dlerror();
    out.tried += (out.tried.empty() ? "" : "; ") + path + ": " + (err ? err : "not found");
  }
  return out;
}

namespace {
bool hidden(const SymbolName& name) {
  const char* list = std::getenv("BATON_DRIVER_HIDE_SYMBOLS");
  if (!list || !*list) return false;
  const std::string names = std::string(",") + list + ",";
  for (const char* n : {name.api, name.symbol})
    if (names.find(std::string(",") + n + ",") != std::string::npos) return true;
  return false;
}
}  // namespace

void* resolveSymbol(void* library, const SymbolName& name, bool required, std::string* missing) {
  void* p = required || !hidden(name) ? dlsym(library, name.symbol) : nullptr;
  if (!p && required) *missing += (missing->empty() ? "" : ", ") + std::string(name.symbol);
  return p;
}

DriverFaults::DriverFaults(const SymbolName* names, size_t count)
    : names_(names), count_(count), calls_(count, 0), releases_(count, false) {
  for (size_t i = 0; i < count; ++i) {
    for (const char* word : {"Destroy", "Free", "Release"})
      if (std::strstr(names[i].api, word)) releases_[i] = true;
    // Not the queue-ordered frees (cuMemFreeAsync, hipFreeAsync): baton releases the memory of
    // one that fails itself (Issuer, Dealloca), so failing them before the call leaks nothing,
    // and failing them after it would have the memory freed twice.
    if (std::strstr(names[i].api, "FreeAsync")) releases_[i] = false;
  }
}

bool DriverFaults::inject(const char* api, int result, uint32_t skip, uint32_t count) {
  return add(api, result, skip, count, false);
}

bool DriverFaults::injectAfterCall(const char* api, int result, uint32_t skip, uint32_t count) {
  return add(api, result, skip, count, true);
}

bool DriverFaults::add(const char* api, int result, uint32_t skip, uint32_t count, bool afterCall) {
  if (!api || count == 0) return false;
  for (size_t i = 0; i < count_; ++i) {
    if (std::strcmp(names_[i].api, api) != 0 && std::strcmp(names_[i].symbol, api) != 0) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    faults_.push_back({i, result, skip, count, afterCall});
    armed_.store(true, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void DriverFaults::updateArmed() {
  armed_.store(!faults_.empty() || recording_ || randomThreshold_ != 0, std::memory_order_relaxed);
}

void DriverFaults::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  faults_.clear();
  randomThreshold_ = 0;
  updateArmed();
  fired_.store(0, std::memory_order_relaxed);
}

void DriverFaults::record(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (on) std::fill(calls_.begin(), calls_.end(), 0);
  recording_ = on;
  updateArmed();
}

std::vector<CallCount> DriverFaults::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CallCount> out;
  for (size_t i = 0; i < count_; ++i)
    if (calls_[i] > 0) out.push_back({names_[i].api, calls_[i]});
  return out;
}

void DriverFaults::injectRandom(uint64_t seed, double probability, int result) {
  std::lock_guard<std::mutex> lock(mutex_);
  randomState_ = seed;
  randomResult_ = result;
  if (!(probability > 0))
    randomThreshold_ = 0;
  else if (probability >= 1)
    randomThreshold_ = UINT64_MAX;
  else  // at least 1, so that a tiny probability still arms the mode
    randomThreshold_ = std::max<uint64_t>(1, static_cast<uint64_t>(probability * 0x1p64));
  updateArmed();
}

bool DriverFaults::take(size_t api, int* result, bool* afterCall) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (recording_ && api < count_) ++calls_[api];
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (it->api != api) continue;
    if (it->skip > 0) {
      --it->skip;
      return false;
    }
    *result = it->result;
    if (afterCall) *afterCall = it->afterCall;
    if (--it->count == 0) faults_.erase(it);
    updateArmed();
    fired_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (randomThreshold_ != 0) {
    // splitmix64 (Steele, Lea, Flood 2014): one state word, full period, good enough to pick calls.
    uint64_t z = (randomState_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    if (z < randomThreshold_) {
      *result = randomResult_;
      if (afterCall) *afterCall = api < count_ && releases_[api];
      fired_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

}  // namespace baton::stream
