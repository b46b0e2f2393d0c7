// Public entry points of Communicator, and the calls of Device and Instance that make
// communicators (baton/communicator.hpp). The backend's collective engine (impl/stream/
// collectives) does the library calls; this validates and keeps the handles.
#include <algorithm>
#include <cstring>

#include "api_entry.hpp"
#include "baton/communicator.hpp"
#include "baton/device.hpp"
#include "baton/instance.hpp"
#include "trace.hpp"

namespace baton {

const char* elementTypeName(ElementType type) noexcept {
  switch (type) {
    case ElementType::Int8: return "int8";
    case ElementType::Uint8: return "uint8";
    case ElementType::Int32: return "int32";
    case ElementType::Uint32: return "uint32";
    case ElementType::Int64: return "int64";
    case ElementType::Uint64: return "uint64";
    case ElementType::Float16: return "float16";
    case ElementType::Float32: return "float32";
    case ElementType::Float64: return "float64";
    case ElementType::Bfloat16: return "bfloat16";
    case ElementType::Float8E4M3: return "float8e4m3";
    case ElementType::Float8E5M2: return "float8e5m2";
  }
  return "?";
}

const char* reduceOpName(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Avg: return "avg";
  }
  return "?";
}

namespace core {

const char* collectiveOpName(CollectiveOp op) noexcept {
  switch (op) {
    case CollectiveOp::AllReduce: return "allReduce";
    case CollectiveOp::Broadcast: return "broadcast";
    case CollectiveOp::Reduce: return "reduce";
    case CollectiveOp::AllGather: return "allGather";
    case CollectiveOp::ReduceScatter: return "reduceScatter";
    case CollectiveOp::AllToAll: return "allToAll";
    case CollectiveOp::Send: return "send";
    case CollectiveOp::Recv: return "recv";
  }
  return "?";
}

// The library's communicator ends with the last reference: a handle destroyed explicitly has
// done so already (destroy() is idempotent); one destroyed with its device is aborted or
// finalized here.
Communicator::~Communicator() {
  if (impl) (void)impl->destroy();
}

Status Communicator::usable() const {
  std::string reason;
  if (impl->failed(&reason))
    return error(Result::ErrorInvalidState, "%s failed: %s", label.c_str(), reason.c_str());
  return Status();
}

}  // namespace core

namespace {

Ref<core::Communicator> findCommunicator(uint64_t handle, Status* st) {
  return find<core::Communicator>(handle, ObjectType::Communicator, "communicator", st);
}

std::string communicatorLabel(const char* debugName, uint32_t rank, uint32_t count,
                              const core::Device& dev) {
  if (debugName && *debugName)
    return format("communicator '%s' (rank %u of %u, %s)", debugName, rank, count,
                  dev.label().c_str());
  return format("communicator (rank %u of %u, %s)", rank, count, dev.label().c_str());
}

uint64_t resolveTimeout(uint64_t timeoutNs) {
  return timeoutNs ? timeoutNs : kCollectiveTimeoutDefaultNs;
}

// Publishes a communicator the backend made as a handle, a child of its device.
// Its label says the rank and count the library gave it (a split or shrink renumbers), for the
// backend's messages too.
Status publish(Ref<core::Device> dev, Ref<core::CommunicatorImpl> impl, uint64_t timeoutNs,
               const char* debugName, Communicator* out) {
  const uint32_t rank = impl->rank, count = impl->rankCount;
  std::string label = communicatorLabel(debugName, rank, count, *dev);
  impl->label = label;
  Ref<core::Communicator> comm = makeRef<core::Communicator>(
      dev, std::move(impl), rank, count, timeoutNs, debugName ? debugName : "", std::move(label));
  uint64_t h = HandleTable::get().insert(comm, ObjectType::Communicator);
  if (!h) return Status(Result::ErrorOutOfHostMemory, "handle table is full");
  comm->handle = h;
  dev->children.add(h, ObjectType::Communicator);
  *out = Communicator(h);
  return Status();
}

// The instance's backend of `kind`, loaded; null with *st set when it is not.
core::Backend* loadedBackend(const core::Instance& inst, BackendKind kind, Status* st) {
  const uint32_t k = static_cast<uint32_t>(kind);
  if (k >= kBackendKindCount) {
    *st = error(Result::ErrorInvalidArgument, "unknown backend kind %u", k);
    return nullptr;
  }
  if (!inst.backendInfos[k].available && kind != BackendKind::Host) {
    *st = error(Result::ErrorNotSupported, "the %s backend is not available: %s", backendName(kind),
                inst.backendInfos[k].reason);
    return nullptr;
  }
  for (const auto& b : inst.backends)
    if (b->kind() == kind) return b.get();
  *st = error(Result::ErrorNotSupported, "the %s backend is not compiled into this build",
              backendName(kind));
  return nullptr;
}

}  // namespace

Result Instance::getCollectiveSupport(BackendKind backend, CollectiveSupport* out) const noexcept {
  return entry("Instance::getCollectiveSupport", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Instance> inst = find<core::Instance>(handle_, ObjectType::Instance, "instance", &st);
    if (!inst) return st;
    owner = inst.get();
    BATON_NULL_CHECK(out, "collective support output pointer");
    *out = CollectiveSupport();
    out->backend = backend;
    core::Backend* b = loadedBackend(*inst, backend, &st);
    if (!b) {
      if (st.code() == Result::ErrorInvalidArgument) return st;
      core::copyText(out->reason, sizeof out->reason, st.message());
      return Status();
    }
    *out = b->collectiveSupport();
    return Status();
  });
}

Result Instance::createCommunicatorId(BackendKind backend, CommunicatorId* id) const noexcept {
  return entry("Instance::createCommunicatorId", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Instance> inst = find<core::Instance>(handle_, ObjectType::Instance, "instance", &st);
    if (!inst) return st;
    owner = inst.get();
    BATON_NULL_CHECK(id, "communicator id output pointer");
    core::Backend* b = loadedBackend(*inst, backend, &st);
    if (!b) return st;
    return b->createCommunicatorId(id);
  });
}

Result Instance::createCommunicators(Span<const Device> devices,
                                     const CommunicatorGroupCreateInfo& info,
                                     Communicator* communicators) const noexcept {
  return entry("Instance::createCommunicators", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Instance> inst = find<core::Instance>(handle_, ObjectType::Instance, "instance", &st);
    if (!inst) return st;
    owner = inst.get();
    BATON_NULL_CHECK(communicators, "communicators output pointer");
    if (devices.size() == 0) return Status(Result::ErrorInvalidArgument, "no devices");
    BATON_NULL_CHECK(devices.data(), "devices");
    if (devices.size() > UINT32_MAX)
      return Status(Result::ErrorInvalidArgument, "too many devices");
    for (size_t i = 0; i < devices.size(); ++i) communicators[i] = Communicator();
    std::vector<Ref<core::Device>> devs;
    std::vector<core::DeviceImpl*> impls;
    for (size_t i = 0; i < devices.size(); ++i) {
      Ref<core::Device> dev =
          find<core::Device>(devices[i].raw(), ObjectType::Device, "device", &st);
      if (!dev) return st.context(format("device %zu", i));
      if (dev->instance() != inst.get())
        return error(Result::ErrorDeviceMismatch, "device %zu (%s) belongs to another instance", i,
                     dev->label().c_str());
      if (i && dev->backend() != devs[0]->backend())
        return error(Result::ErrorDeviceMismatch,
                     "device %zu (%s) is of another backend than device 0 (%s)", i,
                     dev->label().c_str(), devs[0]->label().c_str());
      for (size_t j = 0; j < i; ++j)
        if (devs[j]->physical() == dev->physical())
          return error(Result::ErrorInvalidArgument,
                       "devices %zu and %zu are on the same physical device (%s:%u): a group has "
                       "one rank per GPU",
                       j, i, backendName(dev->backend()), dev->physical()->ordinal);
      if (dev->lost()) return dev->lostStatus();
      impls.push_back(dev->impl());
      devs.push_back(std::move(dev));
    }
    core::Backend* b = devs[0]->physical()->backend;
    const uint64_t timeoutNs = resolveTimeout(info.timeoutNs);
    CommunicatorId id;
    BATON_TRY(b->createCommunicatorId(&id));
    std::vector<core::CommunicatorSetup> setups(devs.size());
    for (size_t i = 0; i < devs.size(); ++i) {
      setups[i].id = id;
      setups[i].rank = static_cast<uint32_t>(i);
      setups[i].rankCount = static_cast<uint32_t>(devs.size());
      setups[i].timeoutNs = timeoutNs;
      setups[i].label = communicatorLabel(info.debugName, static_cast<uint32_t>(i),
                                          static_cast<uint32_t>(devs.size()), *devs[i]);
    }
    std::vector<Ref<core::CommunicatorImpl>> made;
    BATON_TRY(b->createCommunicators(impls, setups, &made));
    for (size_t i = 0; i < devs.size(); ++i) {
      Status s = publish(devs[i], std::move(made[i]), timeoutNs, info.debugName, &communicators[i]);
      if (!s.ok()) {
        for (size_t j = 0; j < i; ++j) (void)communicators[j].destroy();
        for (size_t j = 0; j < devs.size(); ++j) communicators[j] = Communicator();
        return s;
      }
    }
    return Status();
  });
}

Result Device::createCommunicator(const CommunicatorCreateInfo& info,
                                  Communicator* communicator) const noexcept {
  return entry("Device::createCommunicator", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Device> dev = find<core::Device>(handle_, ObjectType::Device, "device", &st);
    if (!dev) return st;
    owner = dev->instance();
    BATON_NULL_CHECK(communicator, "communicator output pointer");
    *communicator = Communicator();
    if (info.rankCount == 0) return Status(Result::ErrorInvalidArgument, "rankCount is 0");
    if (info.rank >= info.rankCount)
      return error(Result::ErrorInvalidArgument,
                   "rank %u is out of range: the group has %u rank(s)", info.rank, info.rankCount);
    if (info.rankCount > static_cast<uint32_t>(INT32_MAX))
      return error(Result::ErrorInvalidArgument, "rankCount %u is too large", info.rankCount);
    if (dev->lost()) return dev->lostStatus();
    core::CommunicatorSetup setup;
    setup.id = info.id;
    setup.rank = info.rank;
    setup.rankCount = info.rankCount;
    setup.timeoutNs = resolveTimeout(info.timeoutNs);
    setup.label = communicatorLabel(info.debugName, info.rank, info.rankCount, *dev);
    Ref<core::CommunicatorImpl> impl;
    BATON_TRY(dev->impl()->createCommunicator(setup, &impl));
    return publish(dev, std::move(impl), setup.timeoutNs, info.debugName, communicator);
  });
}

Result Communicator::destroy() const noexcept {
  Ref<core::Instance> keepAlive;
  return entry("Communicator::destroy", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<Object> o =
        HandleTable::get().remove(handle_, ObjectType::Communicator, "communicator", &st);
    if (!o) return st;
    auto* comm = static_cast<core::Communicator*>(o.get());
    keepAlive = Ref<core::Instance>(comm->device->instance());
    owner = keepAlive.get();
    comm->device->children.remove(handle_);
    return comm->impl->destroy().context("destroying " + comm->label);
  });
}

// The queries: look the communicator up, check the output pointer, fill it.
#define BATON_COMMUNICATOR_QUERY(NAME, OUT, BODY)                                   \
  return entry("Communicator::" NAME, [&](const core::Instance*& owner) -> Status { \
    Status st;                                                                      \
    Ref<core::Communicator> comm = findCommunicator(handle_, &st);                  \
    if (!comm) return st;                                                           \
    owner = comm->device->instance();                                               \
    BATON_NULL_CHECK(OUT, #OUT);                                                    \
    BODY;                                                                           \
    return Status();                                                                \
  })

Result Communicator::getRank(uint32_t* rank) const noexcept {
  BATON_COMMUNICATOR_QUERY("getRank", rank, *rank = comm->rank);
}

Result Communicator::getRankCount(uint32_t* count) const noexcept {
  BATON_COMMUNICATOR_QUERY("getRankCount", count, *count = comm->rankCount);
}

Result Communicator::getDevice(Device* device) const noexcept {
  BATON_COMMUNICATOR_QUERY("getDevice", device, *device = Device(comm->device->handle));
}

Result Communicator::getState(CommunicatorState* state) const noexcept {
  BATON_COMMUNICATOR_QUERY(
      "getState", state,
      *state = comm->impl->failed(nullptr) ? CommunicatorState::Failed : CommunicatorState::Ready);
}

Result Communicator::getFailureReason(char* reason, size_t size) const noexcept {
  BATON_COMMUNICATOR_QUERY("getFailureReason", reason, {
    if (size == 0) return Status(Result::ErrorInvalidArgument, "reason size is 0");
    std::string text;
    comm->impl->failed(&text);
    core::copyText(reason, size, text);
  });
}

#undef BATON_COMMUNICATOR_QUERY

Result Communicator::split(int32_t color, int32_t key, Communicator* out) const noexcept {
  return entry("Communicator::split", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Communicator> comm = findCommunicator(handle_, &st);
    if (!comm) return st;
    owner = comm->device->instance();
    BATON_NULL_CHECK(out, "communicator output pointer");
    *out = Communicator();
    if (color < 0 && color != kSplitNoColor)
      return error(Result::ErrorInvalidArgument, "color %d is negative (kSplitNoColor is %d)",
                   color, kSplitNoColor);
    BATON_TRY(comm->usable());
    Ref<core::CommunicatorImpl> made;
    BATON_TRY(
        comm->impl->split(color, key, comm->label + format(" split by color %d", color), &made)
            .context("splitting " + comm->label));
    if (!made) return Status();  // kSplitNoColor
    return publish(comm->device, std::move(made), comm->timeoutNs, comm->name.c_str(), out);
  });
}

Result Communicator::shrink(Span<const uint32_t> excludedRanks, Communicator* out) const noexcept {
  return entry("Communicator::shrink", [&](const core::Instance*& owner) -> Status {
    Status st;
    Ref<core::Communicator> comm = findCommunicator(handle_, &st);
    if (!comm) return st;
    owner = comm->device->instance();
    BATON_NULL_CHECK(out, "communicator output pointer");
    *out = Communicator();
    if (excludedRanks.size()) BATON_NULL_CHECK(excludedRanks.data(), "excluded ranks");
    std::vector<int> excluded;
    for (uint32_t r : excludedRanks) {
      if (r >= comm->rankCount)
        return error(Result::ErrorInvalidArgument,
                     "excluded rank %u is out of range: %s has %u rank(s)", r, comm->label.c_str(),
                     comm->rankCount);
      if (r == comm->rank)
        return error(Result::ErrorInvalidArgument,
                     "excluded rank %u is this communicator's own rank: only survivors shrink", r);
      if (std::find(excluded.begin(), excluded.end(), static_cast<int>(r)) != excluded.end())
        return error(Result::ErrorInvalidArgument, "excluded rank %u is listed twice", r);
      excluded.push_back(static_cast<int>(r));
    }
    Ref<core::CommunicatorImpl> made;
    BATON_TRY(comm->impl->shrink(excluded, comm->label + " shrunk", &made)
                  .context("shrinking " + comm->label));
    return publish(comm->device, std::move(made), comm->timeoutNs, comm->name.c_str(), out);
  });
}

}  // namespace baton
