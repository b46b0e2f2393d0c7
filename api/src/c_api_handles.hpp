// Conversions between the C API's handles and results (baton/baton.h) and the C++ ones, shared
// by c_api.cpp and c_api_vulkan.cpp. A C handle holds the C++ handle's 64-bit value: as a pointer
// on 64-bit platforms, as uint64_t elsewhere (c_api.cpp checks the layouts).
#pragma once

#include <cstdint>
#include <type_traits>

#include "baton/baton.h"
#include "baton/result.hpp"

namespace baton::c_api {

template <class CHandle>
uint64_t rawHandle(CHandle handle) noexcept {
  if constexpr (std::is_pointer_v<CHandle>) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  } else {
    return handle;
  }
}

template <class CHandle>
CHandle toCHandle(uint64_t raw) noexcept {
  if constexpr (std::is_pointer_v<CHandle>) {
    return reinterpret_cast<CHandle>(static_cast<uintptr_t>(raw));
  } else {
    return raw;
  }
}

// A C handle as the C++ handle of the same object.
template <class CppHandle, class CHandle>
CppHandle toCpp(CHandle handle) noexcept {
  return CppHandle(rawHandle(handle));
}

// Where C++ writes a handle (or an array of them) for C: the C storage itself, which has the
// C++ handle's layout.
template <class CppHandle, class CHandle>
CppHandle* toCppOut(CHandle* out) noexcept {
  static_assert(sizeof(CppHandle) == sizeof(CHandle) && alignof(CppHandle) == alignof(CHandle));
  return reinterpret_cast<CppHandle*>(out);
}

inline baton_result toC(Result result) noexcept { return static_cast<baton_result>(result); }

}  // namespace baton::c_api
