// histogram_rgb variants 0-1: S4 section 8's per-channel histograms of an RGB image (3 x 256
// bins, pixels interleaved R, G, B). Variant 0 is S4's kernel with global atomics (S4 builds a
// per-block histogram in global memory; "we could further improve performance by moving from
// global to shared memory"), variant 1 does that move, with the lab's bandwidth recipe
// (docs/labs/histogram.md).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "binning.cuh"
#include "cuda/core/launch.cuh"

namespace {

constexpr int rgb_bins = 3 * GLC_HISTOGRAM_RGB_BINS;

// The bin of one channel value within its channel: uint8 v is bin v; float32 v is bin
// floor(v * 256) clamped to [0, 255] (S4's (unsigned)(256 * v) for v in [0, 1)); NaN: -1.
__device__ __forceinline__ int channel_bin(uint8_t v) { return v; }
__device__ __forceinline__ int channel_bin(float v) {
  if (v != v) return -1;
  const float scaled = floorf(__fmul_rn(v, 256.0f));  // exact: a power of two
  return scaled < 0.0f ? 0 : scaled > 255.0f ? 255 : static_cast<int>(scaled);
}

// Variant 0: each pixel adds one to the 64-bit global count of its bin in each channel.
template <typename T>
__global__ void rgb_global_atomic(const T *__restrict__ img, size_t pixels,
                                  unsigned long long *counts) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t p = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < pixels;
       p += stride) {
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      const int b = channel_bin(img[3 * p + c]);
      if (b >= 0) atomicAdd(counts + c * GLC_HISTOGRAM_RGB_BINS + b, 1ull);
    }
  }
}

// Variant 1: a per-block 3 x 256 histogram in shared memory with one column per lane
// (counts[bin][lane], 96 KiB: lane l adds only to bank l, so no warp's atomics conflict,
// whatever the image), merged once per block. uint8 images are read 16 bytes per load; byte j
// of the image belongs to channel j % 3, and since 16 = 1 (mod 3), the vector starting at byte
// head + 16 v starts in channel (head + v) % 3. float32 images are read one value at a time.
template <typename T>
__global__ void __launch_bounds__(1024)
    rgb_privatized(const T *__restrict__ img, size_t elements, size_t head, size_t vectors,
                   unsigned long long *counts) {
  extern __shared__ unsigned columns[];  // [3 * 256][32]
  const unsigned lane = threadIdx.x & 31;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int k = threadIdx.x; k < rgb_bins * 32; k += blockDim.x) columns[k] = 0;
  __syncthreads();  // zeroed before any thread counts
  auto count = [&](int channel, T v) {
    const int b = channel_bin(v);
    if (b >= 0) atomicAdd(columns + ((channel * GLC_HISTOGRAM_RGB_BINS + b) << 5 | lane), 1u);
  };
  if constexpr (sizeof(T) == 1) {
    const uint4 *body = reinterpret_cast<const uint4 *>(img + head);
    const size_t tail = head + 16 * vectors;
    if (tid < head) count(static_cast<int>(tid % 3), img[tid]);
    if (tid < elements - tail) count(static_cast<int>((tail + tid) % 3), img[tail + tid]);
    // The channel of each vector's first byte, kept up to date by adding stride % 3 per step
    // instead of a 64-bit modulo per vector.
    const int stride_channels = static_cast<int>(stride % 3);
    int first_channel = static_cast<int>((head + tid) % 3);
    for (size_t v = tid; v < vectors; v += stride) {
      const uint4 r = __ldcs(body + v);
      const unsigned words[4] = {r.x, r.y, r.z, r.w};
      // the column address of value 0 of the channel of bytes j = 0, 1, 2 (mod 3)
      unsigned base[3];
#pragma unroll
      for (int c = 0; c < 3; ++c) {
        int channel = first_channel + c;
        if (channel >= 3) channel -= 3;
        base[c] = (static_cast<unsigned>(channel * GLC_HISTOGRAM_RGB_BINS) << 5) | lane;
      }
#pragma unroll
      for (int j = 0; j < 16; ++j)
        atomicAdd(columns + base[j % 3] + (((words[j / 4] >> (8 * (j % 4))) & 255u) << 5), 1u);
      first_channel += stride_channels;
      if (first_channel >= 3) first_channel -= 3;
    }
  } else {
    for (size_t i = tid; i < elements; i += stride) count(static_cast<int>(i % 3), img[i]);
  }
  __syncthreads();  // every count is in before the merge reads it
  // Thread k sums bin k's columns starting at column k: the lanes of a warp read 32 banks.
  for (int k = threadIdx.x; k < rgb_bins; k += blockDim.x) {
    unsigned sum = 0;
    for (int c = 0; c < 32; ++c) sum += columns[k << 5 | ((c + k) & 31)];
    if (sum) atomicAdd(counts + k, static_cast<unsigned long long>(sum));
  }
}

template <typename T>
int launch_rgb(int variant, int block, size_t pixels, const T *img, unsigned long long *counts,
               cudaStream_t stream) {
  const size_t elements = 3 * pixels;
  unsigned grid = 0;
  if (variant == GLC_HISTOGRAM_RGB_GLOBAL_ATOMIC) {
    auto kernel = rgb_global_atomic<T>;
    int code = histogram_grid(kernel, block, 0, pixels, elements, &grid);
    return code ? code
                : glc_launch(kernel, "rgb_global_atomic", grid, block, stream, img, pixels, counts);
  }
  auto kernel = rgb_privatized<T>;
  const size_t shared = rgb_bins * 32 * sizeof(unsigned);
  int code = GLC_CUDA(cudaFuncSetAttribute, kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                      static_cast<int>(shared));
  if (code) return code;
  size_t head = 0, vectors = 0;
  if (sizeof(T) == 1) {
    const uintptr_t misaligned = reinterpret_cast<uintptr_t>(img) % 16;
    head = misaligned ? 16 - misaligned : 0;
    if (head > elements) head = elements;
    vectors = (elements - head) / 16;
  }
  const size_t work = sizeof(T) == 1 ? vectors + 1 : elements;
  code = histogram_grid(kernel, block, shared, work, elements, &grid);
  return code ? code
              : glc_launch_shared(kernel, "rgb_privatized", grid, block,
                                  static_cast<unsigned>(shared), stream, img, elements, head,
                                  vectors, counts);
}

}  // namespace

extern "C" int glc_histogram_rgb(int variant, int block, int dtype, size_t pixels, const void *img,
                                 long long *counts, glc_stream stream) {
  if (variant != GLC_HISTOGRAM_RGB_GLOBAL_ATOMIC && variant != GLC_HISTOGRAM_RGB_PRIVATIZED)
    return glc_fail(cudaErrorInvalidValue, "glc_histogram_rgb(variant)");
  if (block < 32 || block > 1024 || (block & (block - 1)) != 0)
    return glc_fail(cudaErrorInvalidValue, "glc_histogram_rgb(block)");
  if (dtype != GLC_U8 && dtype != GLC_F32)
    return glc_fail(cudaErrorInvalidValue, "glc_histogram_rgb(dtype)");
  if (!glc_all_aligned(sizeof(long long), counts))
    return glc_fail(cudaErrorInvalidValue, "glc_histogram_rgb(counts)");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  int code = glc_memset_async(counts, 0, rgb_bins * sizeof(long long), stream);
  if (code || pixels == 0) return code;
  auto *out = reinterpret_cast<unsigned long long *>(counts);
  if (!glc_all_aligned(dtype == GLC_U8 ? 1 : sizeof(float), img))
    return glc_fail(cudaErrorInvalidValue, "glc_histogram_rgb(img)");
  if (dtype == GLC_U8)
    return launch_rgb(variant, block, pixels, static_cast<const uint8_t *>(img), out, s);
  return launch_rgb(variant, block, pixels, static_cast<const float *>(img), out, s);
}
