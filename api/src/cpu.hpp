// Hints to the CPU for the threads' hand-offs: a pause for spin loops, and a prefetch for writing
// for memory another core wrote last.
#pragma once

namespace baton::core {

// A pause instruction for spin loops.
inline void cpuRelax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Starts moving the cache line at `p` to this core for writing (exclusive), so that a store to it
// soon after does not stall while another core gives it up. On x86-64, __builtin_prefetch(p, 1)
// emits a read prefetch (prefetcht0) unless the target has PREFETCHW, after which a store still
// waits for the other core's copy to be invalidated; PREFETCHW itself executes on every x86-64
// CPU (a no-op on those without it).
inline void prefetchForWrite(const void* p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1);
#endif
}

}  // namespace baton::core
