// values[i] = values[i] * 3 + add: a result that shows whether, and how often, the pass ran.
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Data { uint values[]; };
layout(push_constant) uniform Push { uint add; };

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < values.length()) values[i] = values[i] * 3u + add;
}
