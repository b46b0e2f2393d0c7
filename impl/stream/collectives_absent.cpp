// The collective engine of a build without nccl.h (collectives.hpp): collectives are reported
// unavailable, saying why, and nothing else of the engine is reachable (no communicator exists,
// so no collective command can be recorded).
#include "collectives.hpp"

namespace baton::stream {
namespace {

constexpr char kReason[] =
    "baton was built without nccl.h (NCCL's header, also used for RCCL): rebuild with it in the "
    "CUDA toolkit's include directory (-Dcudatoolkit_include_dir) to use collectives";

}  // namespace

core::Status createCommunicatorId(BackendKind, CommunicatorId*) {
  return core::Status(Result::ErrorNotSupported, kReason);
}

core::Status createCommunicator(const CollectiveDevice&, const core::CommunicatorSetup&,
                                Ref<core::CommunicatorImpl>*) {
  return core::Status(Result::ErrorNotSupported, kReason);
}

core::Status createCommunicators(const std::vector<CollectiveDevice>&,
                                 const std::vector<core::CommunicatorSetup>&,
                                 std::vector<Ref<core::CommunicatorImpl>>*) {
  return core::Status(Result::ErrorNotSupported, kReason);
}

core::Status enqueueCollectives(const core::Command*, size_t, const DriverTable&, void*,
                                CollectiveClaim&, const std::string&, uint64_t) {
  return core::Status(Result::ErrorNotSupported, kReason);
}

core::Status checkGraphCapture(const core::Command*, size_t, size_t) {
  return core::Status(Result::ErrorNotSupported, kReason);
}

void setRevokeDisabledForTests(bool) {}
void setInProcessGraphCaptureAllowedForTests(bool) {}
DriverFaults* collectiveFaultsForTests() { return nullptr; }

}  // namespace baton::stream
