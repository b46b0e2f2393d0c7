// Driver library loading and fault injection shared by the CUDA and HIP backends; see
// driver_library.hpp.
#include "driver_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

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

void* resolveSymbol(void* library, const SymbolName& name, bool required, std::string* missing) {
  void* p = dlsym(library, name.symbol);
  if (!p && required) *missing += (missing->empty() ? "" : ", ") + std::string(name.symbol);
  return p;
}

bool DriverFaults::inject(const char* api, int result, uint32_t skip, uint32_t count) {
  if (!api || count == 0) return false;
  for (size_t i = 0; i < count_; ++i) {
    if (std::strcmp(names_[i].api, api) != 0 && std::strcmp(names_[i].symbol, api) != 0) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    faults_.push_back({i, result, skip, count});
    armed_.store(true, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void DriverFaults::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  faults_.clear();
  armed_.store(false, std::memory_order_relaxed);
  fired_.store(0, std::memory_order_relaxed);
}

bool DriverFaults::take(size_t api, int* result) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (it->api != api) continue;
    if (it->skip > 0) {
      --it->skip;
      return false;
    }
    *result = it->result;
    if (--it->count == 0) faults_.erase(it);
    if (faults_.empty()) armed_.store(false, std::memory_order_relaxed);
    fired_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

}  // namespace baton::stream
