// Timelines shared with other processes (docs/architecture.md, 'Across processes'): a semaphore
// whose state lives in a page of shared memory that every process holding it maps.
//
// The page (`memfd_create`, sealed against resizing; its descriptor is what Semaphore::exportFd
// hands out) holds the 64-bit value, the failure (a code, a reason, the value it stopped at) and
// one slot per process that holds the semaphore (its pid and start time, the highest value it
// submitted a signal of, the highest value one of its waiters waits for). In each process the
// semaphore is an ordinary core Semaphore with a SharedTimeline counterpart:
//   - values reached here (host signals, queues' completions) raise the page's value atomically
//     (never lower it) and wake the peers' watchers with a futex on the page (onReached);
//   - values reached elsewhere come in through refresh() (reads that must not lag) and a watcher
//     thread that sleeps on that futex while something here waits (onWaitLinked);
//   - per device, queues wait for and write the value word GPU-side with 64-bit stream memory
//     operations (DeviceImpl::importSharedWord), where the device has them; elsewhere values
//     pass through the host as above;
//   - a failure here writes the page's failure record, then a marker into the value word that
//     releases every GPU-side wait in every process (the drivers compare cyclically: the marker,
//     2^62, is within 2^63 above every value a shared timeline may hold, kSharedValueLimit); a
//     failure there fails the semaphore here when it is seen (refresh, the watcher, the
//     watchdog), and submissions whose GPU-side wait the marker released fail their signals
//     (the completion thread refreshes before it decides);
//   - the watchdog looks every kPeerCheckPeriodNs at the other processes' slots: a process that
//     died (the robust mutex its watcher thread holds is owner-dead, which the kernel marks early
//     in the process's exit; or, where no watcher holds it, its pidfd is readable) with a signal
//     of a value above the current one submitted, or
//     while waits for such values were pending, fails the semaphore with a reason naming the
//     process and the value; one that died with nothing pending only gives its slot back.
#pragma once

#include <cstdint>
#include <string>

#include "object.hpp"
#include "status.hpp"

namespace baton::core {

class Instance;
class Semaphore;

// The highest value a shared timeline may hold (above it the drivers' cyclic comparison could not
// order waits against the failure marker).
constexpr uint64_t kSharedValueLimit = (uint64_t{1} << 62) - 1;
// How often the watchdog looks for dead peers: within 100 ms of a death its peers' waits fail.
constexpr uint64_t kPeerCheckPeriodNs = 10'000'000;

// Makes `semaphore` (not yet published) shareable: a new page holding its initial value.
// ErrorInvalidArgument for an initial value above kSharedValueLimit; ErrorOutOfHostMemory (with
// the OS error) when no page can be made.
Status makeShareable(Semaphore& semaphore);
// Makes `semaphore` (not yet published) the local view of the shared timeline whose page is `fd`
// (borrowed: the caller keeps it): its value and failure are the page's. ErrorInvalidArgument
// for a descriptor that is not a shared timeline's page (closed, another kind of file, a page of
// another version), ErrorTooManyObjects when every process slot is taken.
Status attachShared(Semaphore& semaphore, int fd);
// A new descriptor of the page (the caller owns it), or ErrorInvalidArgument when the semaphore is
// not shared.
Status exportShared(Semaphore& semaphore, int* fd);
// Whether the semaphore is shared with other processes.
bool isShared(const Semaphore& semaphore) noexcept;
// A process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or 0 when the
// process does not exist: with the pid, what tells a process from a later one given its pid.
uint64_t processStartTime(int pid);
// The magic number at the start of a shared timeline's page (Semaphore::exportFd's descriptor).
constexpr uint64_t kSharedTimelineMagic = 0x314c544e4f544142ull;  // "BATONTL1"

}  // namespace baton::core
