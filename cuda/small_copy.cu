// A copy done by a kernel instead of the copy engine, for a few bytes into mapped pinned memory:
// a launch costs less than setting up a DMA (DeviceArray.item(), benchmarks/call_overhead.py).
#include "launch.cuh"

namespace {

__global__ void copy_bytes(unsigned char *dst, const unsigned char *src, size_t bytes) {
  for (size_t i = threadIdx.x; i < bytes; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

extern "C" int glc_copy_by_kernel(void *dst, const void *src, size_t bytes, glc_stream stream) {
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return glc_fail(cudaErrorInvalidValue, "copy_bytes");
  return glc_launch(copy_bytes, "copy_bytes", 1, 32, static_cast<cudaStream_t>(stream),
                    static_cast<unsigned char *>(dst), static_cast<const unsigned char *>(src),
                    bytes);
}
