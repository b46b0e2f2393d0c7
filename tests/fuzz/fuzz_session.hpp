// The API fuzzer's session: what one input drives. A Session decodes the input's bytes into a
// sequence of public baton calls on one backend, keeps what it made in slots (semaphores with
// their models, devices and their queues, command buffers, buffers, the signals of accepted
// submissions) and checks every result with fuzz_checker. Shared by the files that implement it:
//   fuzz_session.cpp         set-up, operand decoding, the operation loop, the end of input
//                            (drain, teardown), and the entry points (runOneInput, libFuzzer's)
//   fuzz_ops_semaphores.cpp  semaphore operations and host waits
//   fuzz_ops_commands.cpp    command buffers, recording (with callback actions), submits
//   fuzz_ops_devices.cpp     devices, buffers, queue-ordered allocation, waitIdle, huge lists
// One binary is the libFuzzer target (baton-fuzz, built with clang) and the corpus replay test
// (baton-fuzz-replay, fuzz_replay_main.cpp).
//
// Input format (every read past the end gives 0, so every byte string is an input):
//   byte 0   backend: even = host, odd = cuda (BATON_FUZZ_BACKEND=host|cuda|hip overrides;
//            an unavailable backend falls back to host unless the variable names it)
//   byte 1   config: bits 0-1 end of input (0, 3: signal every waited value, then check that
//            every queue goes idle and no submitted signal was lost; 1: the same after failing
//            every semaphore; 2: tear down with work still pending); bit 2: destroy children one
//            by one before the instance (else the instance destroys them); bits 3-4: queues of
//            the first device - 1
//   then operations: an opcode byte (modulo 20) and its operands (see Session::step).
// Each input builds its own instance and destroys it, with everything in it, before returning.
#pragma once

#include <baton/baton.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "fuzz_checker.hpp"

namespace baton_fuzz {

using namespace baton;

// The backend the replay asks for (fuzz_replay_main.cpp); empty: BATON_FUZZ_BACKEND or byte 0.
extern std::string gBackendOverride;

// Runs one input (a fresh instance, the operations, the end of input, teardown). Returns 0.
int runOneInput(const uint8_t* data, size_t size);

constexpr size_t kSemaphores = 8;
constexpr size_t kDevices = 2;
constexpr size_t kCommandBuffers = 6;
constexpr size_t kBuffers = 6;
constexpr uint32_t kMaxQueuesUsed = 4;
constexpr size_t kMaxOps = 256;
// The finite timeouts host waits use: a poll, and short sleeps.
constexpr uint64_t kTimeouts[] = {0, 1000, 100000, 1000000, 3000000};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(u8()) << (8 * i);
    return v;
  }
  size_t below(size_t n) { return n ? u8() % n : 0; }
  std::vector<uint8_t> bytes(size_t n) {
    std::vector<uint8_t> out(n);
    for (auto& b : out) b = u8();
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// What a recorded host call or native callback does when it runs (on a baton thread).
struct CallbackAction {
  enum Kind : uint8_t { Return, Signal, Fail, Query, Wait, Sleep, kKinds };
  Kind kind = Return;
  Semaphore semaphore;
  uint64_t value = 0;
  Result ret = Result::Success;
  BackendKind backend = BackendKind::Host;
};

// The callbacks host calls and native callbacks record; user data is a CallbackAction.
Result hostCallFn(void* user);
Result nativeFn(const NativeQueue& queue, void* user);

struct DeviceSlot {
  Device handle;
  bool alive = false;
  uint32_t id = 0;
  std::vector<Queue> queues;  // kept after destroy: stale handles
};

enum class CbState { Initial, Recording, Ended };

struct CommandBufferSlot {
  CommandBuffer handle;
  bool alive = false;
  uint32_t deviceId = 0;
  CbState state = CbState::Initial;
};

struct BufferSlot {
  Buffer handle;
  bool alive = false;
  uint32_t deviceId = 0;
  uint64_t size = 0;
  bool queueOrdered = false;
};

// A signal of an accepted submission: once its queue is idle or its device destroyed, the
// semaphore must have reached the value or failed (nothing is lost).
struct PendingSignal {
  size_t slot;
  uint32_t semaphoreId;
  uint64_t value;
  uint32_t deviceId;
};

// A picked queue: the handle and whether the harness expects it to be valid.
struct QueuePick {
  Queue queue;
  bool valid = false;
  uint32_t deviceId = 0;
};

class Session {
 public:
  Session(const uint8_t* data, size_t size) : in_(data, size) {}
  void run();

 private:
  bool setUp();
  void step(size_t index);
  void finish();

  // Operands.
  SemaphoreModel& pickSemaphore(size_t* slot = nullptr);
  uint64_t signalValue(const SemaphoreModel& s);
  uint64_t waitValue(const SemaphoreModel& s);
  QueuePick pickQueue();
  uint64_t timeout() { return kTimeouts[in_.below(std::size(kTimeouts))]; }

  // A list of {semaphore, value} for a wait or submission; *valid false when it names a
  // destroyed or null semaphore. With `increasing` (signal lists), *increasing false when a
  // value is known not to be above the semaphore's value.
  struct Entries {
    std::vector<SemaphoreValue> values;
    std::vector<size_t> slots;
  };
  Entries entryList(size_t maxCount, bool* valid, bool* increasing);
  Entries waitList(size_t maxCount, bool* valid) { return entryList(maxCount, valid, nullptr); }
  Entries signalList(size_t maxCount, bool* valid, bool* increasing) {
    return entryList(maxCount, valid, increasing);
  }
  void accepted(const Entries& signals, uint32_t deviceId);
  // The models of a wait list's entries, for checkWaitResult (fuzz_checker.hpp).
  std::vector<WaitEntryModel> waitModels(const Entries& waits);

  // Operations.
  void createSemaphore();
  void destroySemaphore();
  void hostSignal();
  void hostFail();
  void query();
  void hostWait();
  void createDevice(uint32_t queueCount);
  void destroyDevice(DeviceSlot& d);
  void createCommandBuffer();
  void destroyCommandBuffer();
  void record();
  void submit();
  void createBuffer();
  void destroyBuffer();
  void mapBuffer();
  void alloca();
  void dealloca();
  void waitIdle();
  void hugeLists();
  void checkSignalsOf(uint32_t deviceId, const char* when);

  Reader in_;
  BackendKind backend_ = BackendKind::Host;
  uint8_t config_ = 0;
  Instance instance_;
  PhysicalDevice physical_;
  uint32_t maxQueues_ = 1;  // PhysicalDeviceProperties::maxQueues
  bool streamOrderedAlloc_ = false;
  uint32_t nextId_ = 1;
  SemaphoreModel semaphores_[kSemaphores];
  DeviceSlot devices_[kDevices];
  CommandBufferSlot commandBuffers_[kCommandBuffers];
  BufferSlot buffers_[kBuffers];
  std::vector<PendingSignal> pending_;
  // Callback contexts live until the instance is gone (no callback can run after that).
  std::deque<CallbackAction> actions_;
};

template <class F>
auto watched(const char* op, F&& f) {
  watchdogBegin(op);
  auto r = f();
  watchdogEnd();
  return r;
}

}  // namespace baton_fuzz
