// Small kernels for the CUDA tests and benchmarks, as PTX text that the driver compiles at load
// time (cuModuleLoadData): no nvcc needed, and they run on any GPU of compute capability 7.5+.
//   baton_wait_flag(u32* flag)   spins until *flag != 0 (a GPU-side gate the host opens)
//   baton_bad_write(u32* address) stores to `address` (an invalid one makes a sticky fault)
//   baton_spin_ns(u64 ns)         busy-waits ns nanoseconds of %globaltimer
//   baton_empty()                 does nothing
#pragma once

namespace baton_test {

inline constexpr const char kPtxKernels[] = R"PTX(
.version 7.0
.target sm_75
.address_size 64

.visible .entry baton_wait_flag(.param .u64 flag)
{
  .reg .pred %p;
  .reg .b32 %r;
  .reg .b64 %rd;
  ld.param.u64 %rd, [flag];
WAIT:
  ld.volatile.global.u32 %r, [%rd];
  setp.eq.u32 %p, %r, 0;
  @%p bra WAIT;
  ret;
}

.visible .entry baton_bad_write(.param .u64 address)
{
  .reg .b32 %r;
  .reg .b64 %rd;
  ld.param.u64 %rd, [address];
  mov.u32 %r, 42;
  st.global.u32 [%rd], %r;
  ret;
}

.visible .entry baton_spin_ns(.param .u64 ns)
{
  .reg .pred %p;
  .reg .b64 %t0, %t1, %d, %n;
  ld.param.u64 %n, [ns];
  mov.u64 %t0, %globaltimer;
SPIN:
  mov.u64 %t1, %globaltimer;
  sub.u64 %d, %t1, %t0;
  setp.lt.u64 %p, %d, %n;
  @%p bra SPIN;
  ret;
}

.visible .entry baton_empty()
{
  ret;
}
)PTX";

}  // namespace baton_test
