// A runtime-API kernel (compiled by nvcc, launched with <<<>>>) for the test that runs user code
// inside a native callback: it must run in baton's context, on baton's stream.
#include <cuda_runtime.h>

namespace {
__global__ void addOne(unsigned* data, unsigned count) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] += 1;
}
}  // namespace

extern "C" int batonTestAddOne(void* stream, unsigned long long data, unsigned count) {
  addOne<<<(count + 255) / 256, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      reinterpret_cast<unsigned*>(data), count);
  return static_cast<int>(cudaGetLastError());
}
