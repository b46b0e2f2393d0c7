// Tone-maps the accumulated particle light into the RGBA8 frame: 1 - exp(-light * exposure),
// then gamma 2.2, over a faint background.
#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(binding = 0, r32ui) uniform readonly uimage2DArray accumulation;
layout(binding = 1, rgba8) uniform writeonly image2D frame;
layout(push_constant) uniform Push { float exposure; } push;

void main() {
  ivec2 pixel = ivec2(gl_GlobalInvocationID.xy);
  if (any(greaterThanEqual(pixel, imageSize(frame)))) return;
  vec3 light = vec3(imageLoad(accumulation, ivec3(pixel, 0)).r,
                    imageLoad(accumulation, ivec3(pixel, 1)).r,
                    imageLoad(accumulation, ivec3(pixel, 2)).r) / 256.0;
  vec3 colour = vec3(0.0015, 0.0015, 0.004) + (1.0 - exp(-light * push.exposure));
  imageStore(frame, pixel, vec4(pow(clamp(colour, 0.0, 1.0), vec3(1.0 / 2.2)), 1.0));
}
