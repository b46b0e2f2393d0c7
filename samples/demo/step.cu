// The demo's CUDA step: the kernel doing what stepCpu in baton_demo.cpp does (particles.hpp holds
// the physics both use), one thread per particle, and its launcher. Compiled by nvcc with
// --fmad=false so that, like the host build, no multiply-add is contracted.
#include <cuda_runtime.h>

#include "particles.hpp"

namespace {

using baton_demo::Attractor;
using baton_demo::Particle;

// Reads slot `in`, writes slot `out` (different slots of the ring: no aliasing). The attractors
// are recomputed per thread: six sinf/cosf per substep are cheap next to the memory traffic, and
// it keeps the launch free of a parameter upload.
__global__ void stepKernel(const Particle* __restrict__ in, Particle* __restrict__ out,
                           uint32_t count, float t0, float dt, uint32_t substeps) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  Particle p = in[i];
  for (uint32_t s = 0; s < substeps; ++s) {
    Attractor a[3];
    baton_demo::attractorsAt(baton_demo::substepTime(t0, s, dt), a);
    baton_demo::advance(p, a, dt);
  }
  out[i] = p;
}

}  // namespace

// Called from a baton native() callback with baton's stream, in baton's (primary) context: it
// only enqueues (no synchronisation: the stream orders the step between the timeline's waits and
// signals). Returns 0 or the cudaError_t of the launch.
extern "C" int batonDemoStepCuda(void* stream, uint64_t in, uint64_t out, uint32_t count, float t0,
                                 float dt, uint32_t substeps) {
  if (count == 0) return 0;
  constexpr uint32_t kBlock = 256;
  stepKernel<<<(count + kBlock - 1) / kBlock, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      reinterpret_cast<const Particle*>(in), reinterpret_cast<Particle*>(out), count, t0, dt,
      substeps);
  return static_cast<int>(cudaGetLastError());
}

namespace {

// The post-process: a tone map (a soft shoulder that keeps highlights from clipping) and a
// vignette, in place on the frame Vulkan drew, read and written through the surface of the frame
// image that baton imported (NativeImageLevel::surfaceObject). RGBA8 UNORM: 4 bytes a texel, the
// surface's x is in bytes.
__global__ void toneMapKernel(cudaSurfaceObject_t frame, uint32_t size) {
  const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= size || y >= size) return;
  uchar4 c = surf2Dread<uchar4>(frame, x * 4, y);
  const float dx = (x + 0.5f) / size - 0.5f, dy = (y + 0.5f) / size - 0.5f;
  const float vignette = 1.0f - 0.9f * (dx * dx + dy * dy);
  auto map = [vignette](unsigned char v) {
    const float f = v / 255.0f * 1.6f;
    const float toned = f / (1.0f + 0.6f * f) * vignette;
    return static_cast<unsigned char>(fminf(toned, 1.0f) * 255.0f + 0.5f);
  };
  surf2Dwrite(make_uchar4(map(c.x), map(c.y), map(c.z), c.w), frame, x * 4, y);
}

}  // namespace

// Called from a baton native() callback, as the step: enqueues the tone map of the size x size
// frame behind `surface` (a CUsurfObject) on `stream`. Returns 0 or the cudaError_t of the launch.
extern "C" int batonDemoToneMapCuda(void* stream, uint64_t surface, uint32_t size) {
  const dim3 block(16, 16), grid((size + 15) / 16, (size + 15) / 16);
  toneMapKernel<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<cudaSurfaceObject_t>(surface), size);
  return static_cast<int>(cudaGetLastError());
}
