// The collective library of a stream backend (docs/architecture.md, 'Collectives and the
// watchdog'): NCCL for CUDA, RCCL for HIP — the same API and symbol names — loaded at run time like
// the drivers, so that libbaton never links it and a machine without it runs everything else.
//
// The entry points are listed once, in X-macros: REQUIRED ones must all resolve or collectives are
// unavailable; OPTIONAL ones may be null (ncclCommShrink: NCCL 2.27; ncclCommRevoke: 2.28.9,
// absent from 2.28.3; ncclAlltoAll: 2.28). Every call goes through BATON_NCCL, the one wrapper
// where tests inject faults (collectiveFaults).
//
// Only the collective engine's translation units include this header (it includes nccl.h, which
// includes the CUDA runtime's headers: never in a unit that includes HIP's).
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>

#include "baton/communicator.hpp"
#include "baton/fwd.hpp"
#include "driver_library.hpp"
#include "objects.hpp"
#include "status.hpp"

// clang-format off
#define BATON_NCCL_REQUIRED(X)                                                              \
  X(ncclGetVersion) X(ncclGetUniqueId) X(ncclGetErrorString) X(ncclGetLastError)            \
  X(ncclCommInitRankConfig) X(ncclCommFinalize) X(ncclCommDestroy) X(ncclCommAbort)         \
  X(ncclCommSplit) X(ncclCommGetAsyncError) X(ncclCommCount) X(ncclCommUserRank)            \
  X(ncclGroupStart) X(ncclGroupEnd)                                                         \
  X(ncclAllReduce) X(ncclBroadcast) X(ncclReduce) X(ncclAllGather) X(ncclReduceScatter)     \
  X(ncclSend) X(ncclRecv)

#define BATON_NCCL_OPTIONAL(X) X(ncclCommShrink) X(ncclCommRevoke) X(ncclAlltoAll)
// clang-format on

namespace baton::stream {

// One enumerator per entry point, for fault injection.
enum class NcclApi : uint16_t {
#define BATON_NCCL_ENUM(name) name,
  BATON_NCCL_REQUIRED(BATON_NCCL_ENUM) BATON_NCCL_OPTIONAL(BATON_NCCL_ENUM)
#undef BATON_NCCL_ENUM
      Count
};

struct NcclSymbols {
#define BATON_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  BATON_NCCL_REQUIRED(BATON_NCCL_MEMBER)
  BATON_NCCL_OPTIONAL(BATON_NCCL_MEMBER)
#undef BATON_NCCL_MEMBER
};

// A backend's collective library, loaded once per process on first use and never unloaded.
struct CollectiveLibrary {
  BackendKind backend = BackendKind::Cuda;
  const char* name = "NCCL";  // "NCCL", "RCCL": used in messages
  bool loaded = false;
  NcclSymbols sym;
  int version = 0;     // ncclGetVersion
  std::string path;    // the candidate that loaded
  std::string reason;  // why not loaded
  // AMD's RCCL rather than NVIDIA's NCCL, whichever backend loaded it (the tests run the HIP
  // backend on NCCL through a HIP-over-CUDA library): RCCL exports ncclAllToAllv, which NCCL has
  // never had. The rules of checkSupported are NCCL's.
  bool rccl = false;
};

// Loads (once) and returns the library of `backend` (Cuda: $BATON_NCCL_LIBRARY, libnccl.so.2;
// Hip: $BATON_RCCL_LIBRARY, librccl.so.1). Thread safe.
const CollectiveLibrary& collectiveLibrary(BackendKind backend);

// The fault injection wrapper's state, shared by both libraries (tests only).
DriverFaults& collectiveFaults();

// ncclResult_t -> Status naming the call, the library's error name and its description, and the
// library's last error text: `lastError` when given (read where the call was made), else the
// communicator's when `comm` is given. Success, or ErrorDriver (ncclInvalidArgument and
// ncclInvalidUsage too: baton validates before it calls, and refuses what the library is known
// not to support (checkSupported), so they are the library's verdict on something baton cannot
// see, such as ids that do not match or another rank's GPU).
core::Status ncclStatus(const CollectiveLibrary& lib, ncclResult_t result, const char* api,
                        ncclComm_t comm = nullptr, const char* lastError = nullptr);
// "ncclRemoteError (remote process exited or there was a network error)".
std::string ncclResultText(const CollectiveLibrary& lib, ncclResult_t result);

// One collective call, as checkSupported needs it.
struct CollectiveCallShape {
  core::CollectiveOp op = core::CollectiveOp::AllReduce;
  ElementType type = ElementType::Float32;
  ReduceOp reduce = ReduceOp::Sum;  // read for the reducing operations only
  uint32_t rankCount = 0;           // the communicator's
  // This rank's GPU (PhysicalDeviceProperties::computeMajor, computeMinor); 0.0: not known.
  uint32_t computeMajor = 0, computeMinor = 0;
};

// ErrorNotSupported, naming the operation, the type and the library (name, version, path), when
// `lib` is known to refuse `call` (the rule table in collective_library.cpp, from the library's
// documentation and source); Success otherwise, also where only the call itself can tell (another
// rank's GPU, RCCL's own rules). Thread safe.
core::Status checkSupported(const CollectiveLibrary& lib, const CollectiveCallShape& call);

ncclDataType_t ncclType(ElementType type);
ncclRedOp_t ncclOp(ReduceOp op);

}  // namespace baton::stream

// Calls a library entry point through the fault-injection wrapper; yields its ncclResult_t.
#define BATON_NCCL(lib, name, ...)                                               \
  ::baton::stream::callDriver<ncclResult_t>(::baton::stream::collectiveFaults(), \
                                            ::baton::stream::NcclApi::name,      \
                                            (lib).sym.name __VA_OPT__(, ) __VA_ARGS__)
