// The demo's physics, shared by the host step (baton_demo.cpp) and the CUDA step (step.cu), so
// that both backends step the same system with the same float expressions. Plain C++ for the
// host compiler; nvcc also compiles it for the device.
#pragma once

#include <math.h>

#include <cstdint>

#if defined(__CUDACC__)
#define BATON_DEMO_HD __host__ __device__
#else
#define BATON_DEMO_HD
#endif

namespace baton_demo {

struct Particle {
  float x, y, vx, vy;
};

// Three attractors: a heavy core and two lighter bodies orbiting it, pulling the disc into
// spiral arms. Positions depend on time only, so every backend steps the same system.
struct Attractor {
  float x, y, mass;
};

// cosf/sinf/sqrtf rather than std::: the same single-precision functions on the host (glibc)
// and in device code (CUDA's, within 2 ulp unless nvcc is given fast-math, which it is not).
BATON_DEMO_HD inline void attractorsAt(float t, Attractor out[3]) {
  out[0] = {0.0f, 0.0f, 0.55f};
  out[1] = {0.55f * cosf(1.9f * t), 0.55f * sinf(1.9f * t), 0.22f};
  out[2] = {0.32f * cosf(-3.1f * t + 2.0f), 0.32f * sinf(-3.1f * t + 2.0f), 0.12f};
}

// One substep of one particle.
BATON_DEMO_HD inline void advance(Particle& p, const Attractor a[3], float dt) {
  float ax = 0, ay = 0;
  for (int j = 0; j < 3; ++j) {
    float dx = a[j].x - p.x, dy = a[j].y - p.y;
    float r2 = dx * dx + dy * dy + 0.004f;  // softening: no singular kicks
    float inv = a[j].mass / (r2 * sqrtf(r2));
    ax += dx * inv;
    ay += dy * inv;
  }
  p.vx = (p.vx + ax * dt) * 0.9995f;
  p.vy = (p.vy + ay * dt) * 0.9995f;
  p.x += p.vx * dt;
  p.y += p.vy * dt;
}

// Substep s of a frame starting at t0 is at t0 + s*dt (s converted to float, as on every side).
BATON_DEMO_HD inline float substepTime(float t0, uint32_t s, float dt) {
  return t0 + static_cast<float>(s) * dt;
}

}  // namespace baton_demo
