// Loading NCCL or RCCL, what the library refuses (the rule table), the ncclResult_t mapping and
// the type and op maps; see collective_library.hpp.
#include "collective_library.hpp"

#include <dlfcn.h>

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
  lib.rccl = dlsym(dl.handle, "ncclAllToAllv") != nullptr;
  lib.path = dl.path;
  lib.loaded = true;
}

// ---- what the library refuses that baton can know before a call -------------------------------
//
// NCCL refuses these at the call (ncclInvalidArgument), which baton makes when the submission runs:
// without the table an engine would learn of them only from a failed semaphore. From NCCL's source
// (src/enqueue.cc: ArgsCheck, taskAppend, hostToDevRedOp; src/device/onerank.cu:
// ncclLaunchOneRank) and release notes; the H100 and H200 runs with 2.28.3 and 2.28.9 refused the
// one-rank average of float8 as the source says. A rule stays open-ended (toVersion 0) while the
// newest source read still refuses: bound it once a release lifts it.

constexpr uint32_t bit(core::CollectiveOp op) { return 1u << static_cast<uint32_t>(op); }
constexpr uint32_t bit(ElementType type) { return 1u << static_cast<uint32_t>(type); }
constexpr uint32_t bit(ReduceOp op) { return 1u << static_cast<uint32_t>(op); }

constexpr uint32_t kAllOps = 0xFFu;
// The calls that run NCCL's reduction kernels (allGather, broadcast, all-to-all and point-to-point
// move bytes only).
constexpr uint32_t kReducing = bit(core::CollectiveOp::AllReduce) |
                               bit(core::CollectiveOp::Reduce) |
                               bit(core::CollectiveOp::ReduceScatter);
constexpr uint32_t kFloat8 = bit(ElementType::Float8E4M3) | bit(ElementType::Float8E5M2);
constexpr uint32_t kAnyReduce = 0xFFu;

enum class When : uint8_t {
  Always,
  OneRank,          // the communicator has one rank
  DeviceBelowSm90,  // this rank's GPU is below compute capability 9.0
};

struct Rule {
  uint32_t ops, types, reduces;  // bits of CollectiveOp, ElementType, ReduceOp
  int fromVersion, toVersion;    // ncclGetVersion codes, inclusive; toVersion 0: no upper bound
  When when;
  const char* why;  // completes "<library> ..."
};

constexpr Rule kNcclRules[] = {
    // ncclFloat8e4m3 and ncclFloat8e5m2 came with 2.24; before, ArgsCheck finds type 10 or 11
    // out of range.
    {kAllOps, kFloat8, kAnyReduce, 0, 22399, When::Always, "has no float8 types before 2.24"},
    // taskAppend: "FP8 reduction support begins with sm90 capable devices" (the communicator's
    // lowest compute capability: another rank's GPU is known only to the call).
    {kReducing, kFloat8, kAnyReduce, 22400, 0, When::DeviceBelowSm90,
     "reduces float8 only on GPUs of compute capability 9.0 or later, on every rank"},
    // With one rank NCCL does not run its reduction kernels: ncclLaunchOneRank copies the input,
    // or scales it for avg (a pre-multiplied sum), and has no scaling kernel for the float8 types.
    {kReducing, kFloat8, bit(ReduceOp::Avg), 22400, 0, When::OneRank,
     "averages float8 only with two or more ranks (with one it scales the input outside its "
     "reduction kernels, and that path has no float8 kernel)"},
};

bool applies(const Rule& rule, const CollectiveLibrary& lib, const CollectiveCallShape& call) {
  if (!(rule.ops & bit(call.op)) || !(rule.types & bit(call.type))) return false;
  if ((bit(call.op) & kReducing) && !(rule.reduces & bit(call.reduce))) return false;
  if (lib.version < rule.fromVersion || (rule.toVersion && lib.version > rule.toVersion))
    return false;
  switch (rule.when) {
    case When::Always: return true;
    case When::OneRank: return call.rankCount == 1;
    case When::DeviceBelowSm90: return call.computeMajor != 0 && call.computeMajor < 9;
  }
  return false;
}

}  // namespace

core::Status checkSupported(const CollectiveLibrary& lib, const CollectiveCallShape& call) {
  if (!lib.loaded || lib.rccl) return core::Status();
  for (const Rule& rule : kNcclRules) {
    if (!applies(rule, lib, call)) continue;
    const bool reduces = bit(call.op) & kReducing;
    std::string what = std::string(core::collectiveOpName(call.op)) + " " +
                       (reduces ? std::string(reduceOpName(call.reduce)) + " of " : "") +
                       elementTypeName(call.type);
    std::string where;
    if (rule.when == When::OneRank) where = " on a communicator of one rank";
    if (rule.when == When::DeviceBelowSm90)
      where = core::format(" on this rank's GPU (compute capability %u.%u)", call.computeMajor,
                           call.computeMinor);
    return core::error(Result::ErrorNotSupported,
                       "%s is not supported by NCCL %d.%d.%d (%s)%s: NCCL %s, and refuses the "
                       "call with ncclInvalidArgument",
                       what.c_str(), lib.version / 10000, lib.version % 10000 / 100,
                       lib.version % 100, lib.path.c_str(), where.c_str(), rule.why);
  }
  return core::Status();
}

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
                        ncclComm_t comm, const char* lastError) {
  if (result == ncclSuccess) return core::Status();
  std::string message = std::string(api) + " failed: " + ncclResultText(lib, result);
  const char* last = lastError && *lastError            ? lastError
                     : comm && lib.sym.ncclGetLastError ? lib.sym.ncclGetLastError(comm)
                                                        : nullptr;
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
