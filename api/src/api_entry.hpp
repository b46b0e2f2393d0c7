// Shared shape of every public entry point: look handles up, validate, call the core, and
// report the outcome (report.hpp). No exception leaves an entry point.
#pragma once

#include <new>

#include "handle_table.hpp"
#include "objects.hpp"
#include "report.hpp"

namespace baton::core {

// Runs body(owner), where the body sets `owner` to the instance its objects belong to as soon as
// it knows it, and reports the returned Status.
template <class Body>
Result entry(const char* operation, Body&& body) noexcept {
  const Instance* owner = nullptr;
  Status status;
  try {
    status = body(owner);
  } catch (const std::bad_alloc&) {
    status = Status(Result::ErrorOutOfHostMemory, "out of host memory");
  } catch (...) {
    status = Status(Result::ErrorDriver, "unexpected internal exception");
  }
  return report(operation, owner, status);
}

template <class T>
Ref<T> find(uint64_t handle, ObjectType type, const char* what, Status* status) {
  return lookupAs<T>(handle, type, what, status);
}

// For objects used only until the entry point returns (see HandleTable::Pin).
inline HandleTable::Pin pin(uint64_t handle, ObjectType type, const char* what, Status* status) {
  return HandleTable::get().pin(handle, type, what, status);
}

#define BATON_NULL_CHECK(ptr, what) \
  if (!(ptr)) return ::baton::core::error(::baton::Result::ErrorInvalidArgument, "%s is null", what)

}  // namespace baton::core

// Entry-point files define baton:: methods; these core names are unambiguous there.
namespace baton {
using core::Command;
using core::CommandList;
using core::Deadline;
using core::entry;
using core::error;
using core::find;
using core::format;
using core::HandleTable;
using core::hostWait;
using core::HostWaitEntry;
using core::makeRef;
using core::Object;
using core::ObjectType;
using core::pin;
using core::Ref;
using core::Status;
using core::Submission;
}  // namespace baton
