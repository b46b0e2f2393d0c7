// The backends compiled into this library. A backend plugs in here and nowhere else in the core.
#include <memory>
#include <vector>

#include "backend.hpp"

namespace baton::core {

std::unique_ptr<Backend> createHostBackend();
#if defined(BATON_HAVE_CUDA)
std::unique_ptr<Backend> createCudaBackend();
#endif
#if defined(BATON_HAVE_HIP)
std::unique_ptr<Backend> createHipBackend();
#endif

std::vector<std::unique_ptr<Backend>> createBackends() {
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(createHostBackend());
#if defined(BATON_HAVE_CUDA)
  backends.push_back(createCudaBackend());
#endif
#if defined(BATON_HAVE_HIP)
  backends.push_back(createHipBackend());
#endif
  return backends;
}

bool backendCompiled(BackendKind kind) {
  switch (kind) {
    case BackendKind::Host: return true;
#if defined(BATON_HAVE_CUDA)
    case BackendKind::Cuda: return true;
#endif
#if defined(BATON_HAVE_HIP)
    case BackendKind::Hip: return true;
#endif
    default: return false;
  }
}

}  // namespace baton::core
