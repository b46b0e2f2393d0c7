// Loading NCCL or RCCL, the ncclResult_t mapping and the type and op maps; see
// collective_library.hpp.
#include "collective_library.hpp"

#include <cstdio>
#include <mutex>
#include <string>
#include <type_traits>

namespace baton::stream {
namespace {

constexpr SymbolName kNames[] = {
#define BATON_NCCL_NAME(name) {#name, #name},
    BATON_NCCL_REQUIRED(BATON_NCCL_NAME) BATON_NCCL_OPTIONAL(BATON_NCCL_NAME)
#undef BATON_NCCL_NAME
};
static_assert(sizeof kNames / sizeof kNames[0] == static_cast<size_t>(NcclApi::Count));

void load(CollectiveLibrary& lib) {
  const bool hip = lib.backend == BackendKind::Hip;
  DriverLibrary dl = hip ? openDriverLibrary("BATON_RCCL_LIBRARY", {"librccl.so.1", "librccl.so"})
                         : openDriverLibrary("BATON_NCCL_LIBRARY", {"libnccl.so.2", "libnccl.so"});
  if (!dl.handle) {
    lib.reason = std::string(lib.name) + " could not be loaded (tried " + dl.tried + ")";
    if (hip)
      lib.reason +=
          "; Debian 12 packages no RCCL: install ROCm's librccl, or point BATON_RCCL_LIBRARY at it";
    return;
  }
  std::string missing;
  size_t i = 0;
  auto resolve = [&](auto& slot, bool required) {
    void* p = resolveSymbol(dl.handle, kNames[i++], required, &missing);
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(p);
  };
#define BATON_NCCL_RESOLVE_REQUIRED(name) resolve(lib.sym.name, true);
#define BATON_NCCL_RESOLVE_OPTIONAL(name) resolve(lib.sym.name, false);
  BATON_NCCL_REQUIRED(BATON_NCCL_RESOLVE_REQUIRED)
  BATON_NCCL_OPTIONAL(BATON_NCCL_RESOLVE_OPTIONAL)
#undef BATON_NCCL_RESOLVE_REQUIRED
#undef BATON_NCCL_RESOLVE_OPTIONAL
  if (!missing.empty()) {
    lib.reason = std::string(lib.name) + " (" + dl.path +
                 ") lacks required entry points: " + missing + "; NCCL 2.19 or later is needed";
    return;
  }
  if (lib.sym.ncclGetVersion(&lib.version) != ncclSuccess) {
    lib.reason = std::string(lib.name) + " (" + dl.path + "): ncclGetVersion failed";
    return;
  }
  lib.path = dl.path;
  lib.loaded = true;
}

}  // namespace

const CollectiveLibrary& collectiveLibrary(BackendKind backend) {
  static CollectiveLibrary libs[2];
  static std::once_flag once[2];
  const int i = backend == BackendKind::Hip ? 1 : 0;
  std::call_once(once[i], [&] {
    libs[i].backend = backend;
    libs[i].name = i ? "RCCL" : "NCCL";
    load(libs[i]);
  });
  return libs[i];
}

DriverFaults& collectiveFaults() {
  static DriverFaults* faults = new DriverFaults(kNames, sizeof kNames / sizeof kNames[0]);
  return *faults;
}

std::string ncclResultText(const CollectiveLibrary& lib, ncclResult_t result) {
  static const char* const kNames[] = {
      "ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
      "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError", "ncclInProgress"};
  std::string name = result >= 0 && result < static_cast<int>(sizeof kNames / sizeof kNames[0])
                         ? kNames[result]
                         : "ncclResult_t(" + std::to_string(static_cast<int>(result)) + ")";
  const char* text = lib.sym.ncclGetErrorString ? lib.sym.ncclGetErrorString(result) : nullptr;
  return text && *text ? name + " (" + text + ")" : name;
}

core::Status ncclStatus(const CollectiveLibrary& lib, ncclResult_t result, const char* api,
                        ncclComm_t comm) {
  if (result == ncclSuccess) return core::Status();
  std::string message = std::string(api) + " failed: " + ncclResultText(lib, result);
  const char* last = comm && lib.sym.ncclGetLastError ? lib.sym.ncclGetLastError(comm) : nullptr;
  if (last && *last) message += ": " + std::string(last);
  return core::Status(Result::ErrorDriver, message);
}

ncclDataType_t ncclType(ElementType type) {
  switch (type) {
    case ElementType::Int8: return ncclInt8;
    case ElementType::Uint8: return ncclUint8;
    case ElementType::Int32: return ncclInt32;
    case ElementType::Uint32: return ncclUint32;
    case ElementType::Int64: return ncclInt64;
    case ElementType::Uint64: return ncclUint64;
    case ElementType::Float16: return ncclFloat16;
    case ElementType::Float32: return ncclFloat32;
    case ElementType::Float64: return ncclFloat64;
    case ElementType::Bfloat16: return ncclBfloat16;
    case ElementType::Float8E4M3: return ncclFloat8e4m3;
    case ElementType::Float8E5M2: return ncclFloat8e5m2;
  }
  return ncclNumTypes;  // the frontend rejects unknown types before this
}

ncclRedOp_t ncclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Prod: return ncclProd;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Avg: return ncclAvg;
  }
  return ncclNumOps;
}

}  // namespace baton::stream
