// The C API of the collectives (baton/baton.h, "collectives"; baton/communicator.hpp): as in
// c_api.cpp, each function converts its arguments and calls the C++ function of the same name,
// so results, validation and messages are the C++ ones. Nothing here can throw.
//
// Handles, the device array of baton_instance_create_communicators, the excluded ranks of
// baton_communicator_shrink and baton_communicator_id are handed to C++ in place (their layouts
// are checked below); create-infos and baton_collective_support are converted field by field
// (a null create-info gives the C++ defaults); enums are cast, an unknown value passing through
// for C++'s validation to report.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "baton/baton.h"
#include "baton/baton.hpp"
#include "c_api_handles.hpp"

namespace {

using baton::Buffer;
using baton::CommandBuffer;
using baton::Communicator;
using baton::CommunicatorId;
using baton::Device;
using baton::ElementType;
using baton::Instance;
using baton::ReduceOp;
using baton::Result;
using baton::Span;

// ---- the correspondence the conversions rely on ------------------------------------------------

#define BATON_C_SAME_VALUE(cValue, cppValue)                                            \
  static_assert(static_cast<int64_t>(cValue) == static_cast<int64_t>(cppValue), #cValue \
                " "                                                                     \
                "differs from " #cppValue)

BATON_C_SAME_VALUE(BATON_COMMUNICATOR_ID_SIZE, baton::kCommunicatorIdSize);

BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_INT8, ElementType::Int8);
BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_UINT8, ElementType::Uint8);
BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_INT32, ElementType::Int32);
BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_UINT32, ElementType::Uint32);
BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_INT64, ElementType::Int64);
BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_UINT64, ElementType::Uint64);
BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_FLOAT16, ElementType::Float16);
BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_FLOAT32, ElementType::Float32);
BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_FLOAT64, ElementType::Float64);
BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_BFLOAT16, ElementType::Bfloat16);
BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_FLOAT8_E4M3, ElementType::Float8E4M3);
BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_FLOAT8_E5M2, ElementType::Float8E5M2);
BATON_C_SAME_VALUE(BATON_ELEMENT_TYPE_COUNT, baton::kElementTypeCount);
static_assert(sizeof(baton_element_type) == sizeof(ElementType));

BATON_C_SAME_VALUE(BATON_REDUCE_OP_SUM, ReduceOp::Sum);
BATON_C_SAME_VALUE(BATON_REDUCE_OP_PROD, ReduceOp::Prod);
BATON_C_SAME_VALUE(BATON_REDUCE_OP_MAX, ReduceOp::Max);
BATON_C_SAME_VALUE(BATON_REDUCE_OP_MIN, ReduceOp::Min);
BATON_C_SAME_VALUE(BATON_REDUCE_OP_AVG, ReduceOp::Avg);
BATON_C_SAME_VALUE(BATON_REDUCE_OP_COUNT, baton::kReduceOpCount);
static_assert(sizeof(baton_reduce_op) == sizeof(ReduceOp));

BATON_C_SAME_VALUE(BATON_COMMUNICATOR_STATE_READY, baton::CommunicatorState::Ready);
BATON_C_SAME_VALUE(BATON_COMMUNICATOR_STATE_FAILED, baton::CommunicatorState::Failed);
static_assert(sizeof(baton_communicator_state) == sizeof(baton::CommunicatorState));

BATON_C_SAME_VALUE(BATON_SPLIT_NO_COLOR, baton::kSplitNoColor);
static_assert(BATON_COLLECTIVE_TIMEOUT_DEFAULT_NS == baton::kCollectiveTimeoutDefaultNs);

#undef BATON_C_SAME_VALUE

// C and C++ objects that are handed over in place.
template <class C, class Cpp>
constexpr bool kSameLayout = sizeof(C) == sizeof(Cpp) && alignof(C) == alignof(Cpp) &&
                             std::is_standard_layout_v<Cpp>&& std::is_trivially_copyable_v<Cpp>;

static_assert(kSameLayout<baton_communicator, Communicator>);
static_assert(kSameLayout<baton_device, Device>);
static_assert(kSameLayout<baton_communicator_id, CommunicatorId>);
static_assert(offsetof(baton_communicator_id, bytes) == offsetof(CommunicatorId, bytes));
static_assert(sizeof(baton_communicator_id::bytes) == sizeof(CommunicatorId::bytes));

// The create-infos are converted field by field; a binding that mirrors either struct still
// sees the one layout.
static_assert(sizeof(baton_communicator_create_info) == sizeof(baton::CommunicatorCreateInfo));
static_assert(offsetof(baton_communicator_create_info, id) ==
              offsetof(baton::CommunicatorCreateInfo, id));
static_assert(offsetof(baton_communicator_create_info, rank) ==
              offsetof(baton::CommunicatorCreateInfo, rank));
static_assert(offsetof(baton_communicator_create_info, rank_count) ==
              offsetof(baton::CommunicatorCreateInfo, rankCount));
static_assert(offsetof(baton_communicator_create_info, timeout_ns) ==
              offsetof(baton::CommunicatorCreateInfo, timeoutNs));
static_assert(offsetof(baton_communicator_create_info, debug_name) ==
              offsetof(baton::CommunicatorCreateInfo, debugName));
static_assert(sizeof(baton_communicator_group_create_info) ==
              sizeof(baton::CommunicatorGroupCreateInfo));
static_assert(offsetof(baton_communicator_group_create_info, timeout_ns) ==
              offsetof(baton::CommunicatorGroupCreateInfo, timeoutNs));
static_assert(offsetof(baton_communicator_group_create_info, debug_name) ==
              offsetof(baton::CommunicatorGroupCreateInfo, debugName));
static_assert(sizeof(baton_collective_support) == sizeof(baton::CollectiveSupport));
static_assert(offsetof(baton_collective_support, backend) ==
              offsetof(baton::CollectiveSupport, backend));
static_assert(offsetof(baton_collective_support, available) ==
              offsetof(baton::CollectiveSupport, available));
static_assert(offsetof(baton_collective_support, version) ==
              offsetof(baton::CollectiveSupport, version));
static_assert(offsetof(baton_collective_support, library) ==
              offsetof(baton::CollectiveSupport, library));
static_assert(offsetof(baton_collective_support, reason) ==
              offsetof(baton::CollectiveSupport, reason));
static_assert(offsetof(baton_collective_support, can_revoke) ==
              offsetof(baton::CollectiveSupport, canRevoke));
static_assert(offsetof(baton_collective_support, can_shrink) ==
              offsetof(baton::CollectiveSupport, canShrink));
static_assert(offsetof(baton_collective_support, blocking_calls) ==
              offsetof(baton::CollectiveSupport, blockingCalls));
static_assert(sizeof(baton_collective_support) == sizeof(baton::CollectiveSupport));

// ---- conversions ------------------------------------------------------------------------------

using baton::c_api::toC;
using baton::c_api::toCpp;
using baton::c_api::toCppOut;

baton::CommunicatorCreateInfo toCpp(const baton_communicator_create_info* info) noexcept {
  baton::CommunicatorCreateInfo out;
  if (info) {
    static_assert(sizeof out.id.bytes == sizeof info->id.bytes);
    std::memcpy(out.id.bytes, info->id.bytes, sizeof out.id.bytes);
    out.rank = info->rank;
    out.rankCount = info->rank_count;
    out.timeoutNs = info->timeout_ns;
    out.debugName = info->debug_name;
  }
  return out;
}

baton::CommunicatorGroupCreateInfo toCpp(
    const baton_communicator_group_create_info* info) noexcept {
  baton::CommunicatorGroupCreateInfo out;
  if (info) {
    out.timeoutNs = info->timeout_ns;
    out.debugName = info->debug_name;
  }
  return out;
}

void toC(const baton::CollectiveSupport& in, baton_collective_support* out) noexcept {
  out->backend = static_cast<baton_backend_kind>(in.backend);
  out->available = in.available;
  out->version = in.version;
  static_assert(sizeof out->library == sizeof in.library && sizeof out->reason == sizeof in.reason);
  std::memcpy(out->library, in.library, sizeof out->library);
  std::memcpy(out->reason, in.reason, sizeof out->reason);
  out->can_revoke = in.canRevoke;
  out->can_shrink = in.canShrink;
  out->blocking_calls = in.blockingCalls;
}

ElementType toCpp(baton_element_type type) noexcept { return static_cast<ElementType>(type); }
ReduceOp toCpp(baton_reduce_op op) noexcept { return static_cast<ReduceOp>(op); }

}  // namespace

extern "C" {

// ---- names ------------------------------------------------------------------------------------

uint64_t baton_element_size(baton_element_type type) { return baton::elementSize(toCpp(type)); }

const char* baton_element_type_name(baton_element_type type) {
  return baton::elementTypeName(toCpp(type));
}

const char* baton_reduce_op_name(baton_reduce_op op) { return baton::reduceOpName(toCpp(op)); }

// ---- instance ---------------------------------------------------------------------------------

baton_result baton_instance_get_collective_support(baton_instance instance,
                                                   baton_backend_kind backend,
                                                   baton_collective_support* support) {
  baton::CollectiveSupport cpp;
  Result r = toCpp<Instance>(instance).getCollectiveSupport(
      static_cast<baton::BackendKind>(backend), support ? &cpp : nullptr);
  if (!baton::isError(r)) toC(cpp, support);
  return toC(r);
}

baton_result baton_instance_create_communicator_id(baton_instance instance,
                                                   baton_backend_kind backend,
                                                   baton_communicator_id* id) {
  return toC(toCpp<Instance>(instance).createCommunicatorId(
      static_cast<baton::BackendKind>(backend), reinterpret_cast<CommunicatorId*>(id)));
}

baton_result baton_instance_create_communicators(baton_instance instance,
                                                 const baton_device* devices, size_t device_count,
                                                 const baton_communicator_group_create_info* info,
                                                 baton_communicator* communicators) {
  return toC(toCpp<Instance>(instance).createCommunicators(
      Span<const Device>(reinterpret_cast<const Device*>(devices), device_count), toCpp(info),
      toCppOut<Communicator>(communicators)));
}

// ---- device -----------------------------------------------------------------------------------

baton_result baton_device_create_communicator(baton_device device,
                                              const baton_communicator_create_info* info,
                                              baton_communicator* communicator) {
  return toC(
      toCpp<Device>(device).createCommunicator(toCpp(info), toCppOut<Communicator>(communicator)));
}

// ---- communicator -----------------------------------------------------------------------------

baton_result baton_communicator_destroy(baton_communicator communicator) {
  return toC(toCpp<Communicator>(communicator).destroy());
}

baton_result baton_communicator_get_rank(baton_communicator communicator, uint32_t* rank) {
  return toC(toCpp<Communicator>(communicator).getRank(rank));
}

baton_result baton_communicator_get_rank_count(baton_communicator communicator, uint32_t* count) {
  return toC(toCpp<Communicator>(communicator).getRankCount(count));
}

baton_result baton_communicator_get_device(baton_communicator communicator, baton_device* device) {
  return toC(toCpp<Communicator>(communicator).getDevice(toCppOut<Device>(device)));
}

baton_result baton_communicator_get_state(baton_communicator communicator,
                                          baton_communicator_state* state) {
  baton::CommunicatorState cpp = baton::CommunicatorState::Ready;
  Result r = toCpp<Communicator>(communicator).getState(state ? &cpp : nullptr);
  if (!baton::isError(r)) *state = static_cast<baton_communicator_state>(cpp);
  return toC(r);
}

baton_result baton_communicator_get_failure_reason(baton_communicator communicator, char* buffer,
                                                   size_t capacity) {
  return toC(toCpp<Communicator>(communicator).getFailureReason(buffer, capacity));
}

baton_result baton_communicator_split(baton_communicator communicator, int32_t color, int32_t key,
                                      baton_communicator* out) {
  return toC(toCpp<Communicator>(communicator).split(color, key, toCppOut<Communicator>(out)));
}

baton_result baton_communicator_shrink(baton_communicator communicator,
                                       const uint32_t* excluded_ranks, size_t excluded_count,
                                       baton_communicator* out) {
  return toC(toCpp<Communicator>(communicator)
                 .shrink(Span<const uint32_t>(excluded_ranks, excluded_count),
                         toCppOut<Communicator>(out)));
}

// ---- collective commands ----------------------------------------------------------------------

baton_result baton_command_buffer_all_reduce(baton_command_buffer command_buffer,
                                             baton_communicator communicator, baton_buffer src,
                                             uint64_t src_offset, baton_buffer dst,
                                             uint64_t dst_offset, uint64_t count,
                                             baton_element_type type, baton_reduce_op op) {
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .allReduce(toCpp<Communicator>(communicator), toCpp<Buffer>(src), src_offset,
                            toCpp<Buffer>(dst), dst_offset, count, toCpp(type), toCpp(op)));
}

baton_result baton_command_buffer_broadcast(baton_command_buffer command_buffer,
                                            baton_communicator communicator, baton_buffer src,
                                            uint64_t src_offset, baton_buffer dst,
                                            uint64_t dst_offset, uint64_t count,
                                            baton_element_type type, uint32_t root) {
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .broadcast(toCpp<Communicator>(communicator), toCpp<Buffer>(src), src_offset,
                            toCpp<Buffer>(dst), dst_offset, count, toCpp(type), root));
}

baton_result baton_command_buffer_reduce(baton_command_buffer command_buffer,
                                         baton_communicator communicator, baton_buffer src,
                                         uint64_t src_offset, baton_buffer dst, uint64_t dst_offset,
                                         uint64_t count, baton_element_type type,
                                         baton_reduce_op op, uint32_t root) {
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .reduce(toCpp<Communicator>(communicator), toCpp<Buffer>(src), src_offset,
                         toCpp<Buffer>(dst), dst_offset, count, toCpp(type), toCpp(op), root));
}

baton_result baton_command_buffer_all_gather(baton_command_buffer command_buffer,
                                             baton_communicator communicator, baton_buffer src,
                                             uint64_t src_offset, baton_buffer dst,
                                             uint64_t dst_offset, uint64_t count,
                                             baton_element_type type) {
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .allGather(toCpp<Communicator>(communicator), toCpp<Buffer>(src), src_offset,
                            toCpp<Buffer>(dst), dst_offset, count, toCpp(type)));
}

baton_result baton_command_buffer_reduce_scatter(baton_command_buffer command_buffer,
                                                 baton_communicator communicator, baton_buffer src,
                                                 uint64_t src_offset, baton_buffer dst,
                                                 uint64_t dst_offset, uint64_t count,
                                                 baton_element_type type, baton_reduce_op op) {
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .reduceScatter(toCpp<Communicator>(communicator), toCpp<Buffer>(src), src_offset,
                                toCpp<Buffer>(dst), dst_offset, count, toCpp(type), toCpp(op)));
}

baton_result baton_command_buffer_all_to_all(baton_command_buffer command_buffer,
                                             baton_communicator communicator, baton_buffer src,
                                             uint64_t src_offset, baton_buffer dst,
                                             uint64_t dst_offset, uint64_t count,
                                             baton_element_type type) {
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .allToAll(toCpp<Communicator>(communicator), toCpp<Buffer>(src), src_offset,
                           toCpp<Buffer>(dst), dst_offset, count, toCpp(type)));
}

baton_result baton_command_buffer_send(baton_command_buffer command_buffer,
                                       baton_communicator communicator, baton_buffer src,
                                       uint64_t src_offset, uint64_t count, baton_element_type type,
                                       uint32_t peer) {
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .send(toCpp<Communicator>(communicator), toCpp<Buffer>(src), src_offset, count,
                       toCpp(type), peer));
}

baton_result baton_command_buffer_recv(baton_command_buffer command_buffer,
                                       baton_communicator communicator, baton_buffer dst,
                                       uint64_t dst_offset, uint64_t count, baton_element_type type,
                                       uint32_t peer) {
  return toC(toCpp<CommandBuffer>(command_buffer)
                 .recv(toCpp<Communicator>(communicator), toCpp<Buffer>(dst), dst_offset, count,
                       toCpp(type), peer));
}

}  // extern "C"
