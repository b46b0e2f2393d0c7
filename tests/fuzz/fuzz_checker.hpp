// The fuzzer's invariant checker: what it knows about each semaphore from the calls it made, the
// checks every result goes through, the per-input trace printed with a violation, and the
// watchdog that turns a hang into a crash. fuzz_checker_test.cpp (meson test fuzz-checker) feeds
// it histories that break each invariant and checks that it reports every one, and that it
// accepts a valid history.
//
// The model is deliberately one-sided: it keeps bounds that the semantics (docs/guide.md, 'The
// model') guarantee whatever the scheduling, so a violation is a bug, never a race of the harness:
//   - observed: a lower bound of the value (the highest value seen, or guaranteed by a
//     successful signal or ALL wait); values never go backwards, so every read is >= it;
//   - maxRequested: an upper bound (the initial value and every value anyone was asked to
//     signal: successful host signals, signals of accepted submissions, allocas and deallocas,
//     signals recorded into host callbacks); no read may exceed it;
//   - failed: known failed (a failure was seen); it must stay failed, keep its first reason and
//     keep the value the failure found.
#pragma once

#include <baton/baton.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace baton_fuzz {

// Appends a line to the current input's trace (printed with any violation or hang); with
// BATON_FUZZ_TRACE=1 in the environment it is also printed at once. Thread safe.
void trace(const char* format, ...) __attribute__((format(printf, 1, 2)));
// Starts a new input: clears the trace.
void resetTrace();

// Prints "baton-fuzz: INVARIANT VIOLATION: <text>", the trace, and aborts (a crash for
// libFuzzer, a failed test for the replay); with a finding handler set, passes the text to it
// first (see setFindingHandler). Thread safe.
[[noreturn]] void violation(const char* format, ...) __attribute__((format(printf, 1, 2)));

// What violation() and the watchdog found.
enum class Finding { Violation, Hang };
// Receives findings instead of the default (print the finding and the trace, abort), for the
// checker's own test. For a Violation it is called on the checking thread and must not return
// (it throws; if it returns, violation() aborts as usual). For a Hang it is called on the
// watchdog's thread; when it returns, the watchdog stops watching that operation.
using FindingHandler = void (*)(Finding finding, const std::string& text);
void setFindingHandler(FindingHandler handler);  // null: the default

// Every call's result must be one of the enumerators of baton::Result, and an error must come
// with a message (lastErrorMessage() on the calling thread). `op` names the call.
void checkDefined(baton::Result result, const char* op);

// The watchdog: a thread that aborts with the trace when one operation (begin..end) runs longer
// than BATON_FUZZ_HANG_SECONDS (default 20). Host waits in the harness are bounded, so only a
// hang in baton can trip it.
void watchdogBegin(const char* op);
void watchdogEnd();
// Overrides BATON_FUZZ_HANG_SECONDS (for the checker's test).
void setHangLimitMs(int64_t milliseconds);

// What the harness knows about one semaphore slot.
struct SemaphoreModel {
  baton::Semaphore handle;  // null: never created; with alive false: a destroyed (stale) handle
  bool alive = false;
  uint32_t id = 0;  // creation number, so that pending signals know which semaphore they meant
  uint64_t observed = 0;
  uint64_t maxRequested = 0;
  uint64_t maxWaited = 0;  // the highest value any wait named (the drain signals up to it)
  bool failed = false;
  bool frozenKnown = false;  // a failed getValue reported the value the failure left
  uint64_t frozenValue = 0;
  baton::Result failureCode = baton::Result::Success;
  std::string failureReason;  // the first reason seen ("" until read)
  std::string name;

  void created(baton::Semaphore h, uint32_t newId, uint64_t initialValue);
  void requested(uint64_t value) {
    if (value > maxRequested) maxRequested = value;
  }
  void waited(uint64_t value) {
    if (value > maxWaited) maxWaited = value;
  }
  // Each checks one call's result against the model and updates it.
  void onGetValue(baton::Result r, uint64_t value);
  void onSignal(baton::Result r, uint64_t value);
  void onFail(baton::Result r, const std::string& reason);
  void onFailureReason(baton::Result r, const char* text);
  // Reads the value through getValue (checked) and returns true when the semaphore is failed.
  bool refresh(uint64_t* value = nullptr);
  // Once the work that carried an accepted signal of `value` is over (its queue idle, its device
  // destroyed): the semaphore reached the value or failed, else a signal was lost. Reads the
  // value through refresh(); `when` names the moment in the report.
  void checkSignalSettled(uint64_t value, const char* when);
};

// Whether r is a failure result a failed semaphore reports (its failure code).
bool isFailureCode(baton::Result r);

// One entry of a host wait the harness made: the model of its semaphore and the value.
struct WaitEntryModel {
  SemaphoreModel* semaphore;
  uint64_t value;
};

// A host wait over `entries` (WaitMode All or Any) returned r; `valid` is false when an entry
// names a destroyed or null semaphore. Success needs every (All) or some (Any) value to have
// been requested; Timeout is wrong when the values were already observed (a reached wait stays
// satisfied) or a known failure went unreported; a failure result needs an entry that is failed
// (read through refresh()). A successful All wait raises each model's observed value.
void checkWaitResult(baton::Result r, const std::vector<WaitEntryModel>& entries,
                     baton::WaitMode mode, bool valid);

// A waitIdle made after every waited value was signalled or failed (the end-of-input drain)
// returned r: it must not time out (a lost signal or a hang).
void checkDrained(baton::Result r, const char* op);

}  // namespace baton_fuzz
