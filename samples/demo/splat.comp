// Splats each particle additively into a 3-layer (R, G, B) 32-bit accumulation image, in 1/256
// units of colour, with integer atomics: the result is independent of the order particles land.
#version 450
layout(local_size_x = 256) in;

struct Particle {
  vec2 position;  // the visible square is [-1, 1]^2
  vec2 velocity;
};
layout(std430, binding = 0) readonly buffer Particles { Particle particles[]; };
layout(binding = 1, r32ui) uniform uimage2DArray accumulation;
layout(push_constant) uniform Push { uint count; } push;

// Slow particles deep blue, then violet and orange, the fastest pale yellow.
vec3 palette(float t) {
  const vec3 stops[4] = vec3[4](vec3(0.10, 0.22, 1.00), vec3(0.65, 0.20, 0.95),
                                vec3(1.00, 0.45, 0.10), vec3(1.00, 0.90, 0.45));
  float x = clamp(t, 0.0, 1.0) * 3.0;
  int i = min(int(x), 2);
  return mix(stops[i], stops[i + 1], x - float(i));
}

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= push.count) return;
  Particle p = particles[i];
  ivec2 size = imageSize(accumulation).xy;
  ivec2 pixel = ivec2((p.position * vec2(0.5, -0.5) + 0.5) * vec2(size));
  if (any(lessThan(pixel, ivec2(0))) || any(greaterThanEqual(pixel, size))) return;
  vec3 colour = palette((length(p.velocity) - 0.6) * 0.6);
  uvec3 amount = uvec3(colour * 256.0);
  imageAtomicAdd(accumulation, ivec3(pixel, 0), amount.r);
  imageAtomicAdd(accumulation, ivec3(pixel, 1), amount.g);
  imageAtomicAdd(accumulation, ivec3(pixel, 2), amount.b);
}
