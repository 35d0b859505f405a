// The memory lab's transfers that the copy engines do not carry: zero-copy (a kernel reading
// or writing mapped pinned host memory over the bus) and managed memory, which migrates page
// by page on first touch unless it is prefetched. Pinned and pageable copies are measured from
// Python through gpulab's own transfer paths (csrc/core/transfer.c) and raw cudaMemcpy.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda/core/errors.cuh"
#include "memory.h"
#include "cuda/core/resources.cuh"
#include "cuda/core/launch.cuh"

namespace {

// The word every measurement writes at index i: a hash, so that a misplaced or stale word is
// caught (a constant fill would not show a copy that landed at the wrong offset).
__host__ __device__ inline uint64_t pattern_word(uint64_t i) {
  uint64_t z = i + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__global__ void copy_vectors(const uint4 *__restrict__ src, uint4 *__restrict__ dst,
                             size_t vectors) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors;
       i += stride)
    dst[i] = src[i];
}

__global__ void fill_pattern(uint64_t *words, size_t n) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    words[i] = pattern_word(i);
}

// Reads every word (the "touch" of managed memory) and counts the ones that differ.
__global__ void count_mismatches(const uint64_t *words, size_t n, unsigned long long *bad) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  unsigned long long mine = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    mine += words[i] != pattern_word(i);
  if (mine) atomicAdd(bad, mine);
}

constexpr int block = 256;

// Written by the timed host reads so that they are not optimised away.
volatile uint64_t read_sink;

template <auto kernel>
int wave(size_t *grid) {
  return glc_full_wave_blocks<kernel>(block, grid);
}

int launch_fill(uint64_t *words, size_t n, cudaStream_t stream) {
  size_t grid = 0;
  int code = wave<fill_pattern>(&grid);
  return code ? code
              : glc_launch(fill_pattern, "fill_pattern", static_cast<unsigned>(grid), block, stream,
                           words, n);
}

int launch_copy(const void *src, void *dst, size_t bytes, cudaStream_t stream) {
  size_t grid = 0;
  int code = wave<copy_vectors>(&grid);
  return code ? code
              : glc_launch(copy_vectors, "copy_vectors", static_cast<unsigned>(grid), block, stream,
                           static_cast<const uint4 *>(src), static_cast<uint4 *>(dst), bytes / 16);
}

int launch_check(const uint64_t *words, size_t n, unsigned long long *bad, cudaStream_t stream) {
  size_t grid = 0;
  int code = wave<count_mismatches>(&grid);
  return code ? code
              : glc_launch(count_mismatches, "count_mismatches", static_cast<unsigned>(grid), block,
                           stream, words, n, bad);
}

// Zeroes *bad on the device, runs the check, and reads the count back.
int check_words(const uint64_t *words, size_t n, unsigned long long *bad_device,
                cudaStream_t stream, int *intact) {
  unsigned long long bad = 1;
  int code = glc_memset_async(bad_device, 0, sizeof bad, stream);
  GLC_TRY(code, launch_check(words, n, bad_device, stream));
  GLC_TRY(code,
          GLC_CUDA(cudaMemcpyAsync, &bad, bad_device, sizeof bad, cudaMemcpyDeviceToHost, stream));
  GLC_TRY(code, glc_stream_synchronize(stream));
  *intact = code == cudaSuccess && bad == 0;
  return code;
}

int valid_sizes(size_t bytes, int repeat, const char *call) {
  if (bytes == 0 || bytes % 16 != 0 || repeat < 1) return glc_fail(cudaErrorInvalidValue, call);
  return cudaSuccess;
}

}  // namespace

extern "C" int glc_memlab_mapped(int direction, size_t bytes, int repeat, float *samples,
                                 int *intact) {
  int code = valid_sizes(bytes, repeat, "glc_memlab_mapped(bytes)");
  if (code) return code;
  if (direction != GLC_MEMLAB_H2D && direction != GLC_MEMLAB_D2H)
    return glc_fail(cudaErrorInvalidValue, "glc_memlab_mapped(direction)");
  GlcStreams streams;
  GlcEvents events;
  GlcMappedBuffer host;
  GlcDeviceBuffer device, bad;
  GLC_TRY(code, streams.create(1));
  if (code) return code;
  cudaStream_t s = streams[0];
  GLC_TRY(code, events.create(2));
  GLC_TRY(code, host.allocate(bytes));
  GLC_TRY(code, device.allocate(bytes, s));
  GLC_TRY(code, bad.allocate(sizeof(unsigned long long), s));
  if (code) return code;
  size_t words = bytes / 8;
  bool to_device = direction == GLC_MEMLAB_H2D;
  if (to_device) {
    uint64_t *h = static_cast<uint64_t *>(host.host);
    for (size_t i = 0; i < words; ++i) h[i] = pattern_word(i);
  } else {
    code = launch_fill(device.as<uint64_t>(), words, s);
  }
  const void *src = to_device ? host.device : device.ptr;
  void *dst = to_device ? device.ptr : host.device;
  for (int r = -1; !code && r < repeat; ++r) {  // r = -1: the untimed run
    GLC_TRY(code, GLC_CUDA(cudaEventRecord, events[0], s));
    GLC_TRY(code, launch_copy(src, dst, bytes, s));
    GLC_TRY(code, GLC_CUDA(cudaEventRecord, events[1], s));
    float ms = 0;
    GLC_TRY(code, glc_elapsed_after(events[0], events[1], &ms));
    if (r >= 0) samples[r] = ms;
  }
  GLC_TRY(code, check_words(static_cast<const uint64_t *>(dst), words, bad.as<unsigned long long>(),
                            s, intact));
  return code;
}

extern "C" int glc_memlab_managed(int direction, int prefetch, size_t bytes, int repeat,
                                  float *samples, int *intact) {
  int code = valid_sizes(bytes, repeat, "glc_memlab_managed(bytes)");
  if (code) return code;
  if (direction != GLC_MEMLAB_H2D && direction != GLC_MEMLAB_D2H)
    return glc_fail(cudaErrorInvalidValue, "glc_memlab_managed(direction)");
  int device_id = 0;
  GLC_TRY(code, glc_get_device(&device_id));
  GlcStreams streams;
  GlcEvents events;
  GlcManagedBuffer managed;
  GlcDeviceBuffer bad;
  GLC_TRY(code, streams.create(1));
  if (code) return code;
  cudaStream_t s = streams[0];
  GLC_TRY(code, events.create(2));
  GLC_TRY(code, managed.allocate(bytes));
  GLC_TRY(code, bad.allocate(sizeof(unsigned long long), s));
  if (code) return code;
  size_t words = bytes / 8;
  uint64_t *w = static_cast<uint64_t *>(managed.ptr);
  cudaMemLocation on_device = {cudaMemLocationTypeDevice, device_id};
  cudaMemLocation on_host = {cudaMemLocationTypeHost, 0};
  int all_intact = 1;
  for (int r = -1; !code && r < repeat; ++r) {
    float ms = 0;
    int ok = 0;
    if (direction == GLC_MEMLAB_H2D) {
      // The host's writes leave every page resident on the host.
      for (size_t i = 0; i < words; ++i) w[i] = pattern_word(i);
      GLC_TRY(code, glc_memset_async(bad.ptr, 0, sizeof(unsigned long long), s));
      GLC_TRY(code, GLC_CUDA(cudaEventRecord, events[0], s));
      if (prefetch) GLC_TRY(code, GLC_CUDA(cudaMemPrefetchAsync, w, bytes, on_device, 0, s));
      GLC_TRY(code, launch_check(w, words, bad.as<unsigned long long>(), s));
      GLC_TRY(code, GLC_CUDA(cudaEventRecord, events[1], s));
      GLC_TRY(code, glc_elapsed_after(events[0], events[1], &ms));
      unsigned long long mismatches = 1;
      GLC_TRY(code, GLC_CUDA(cudaMemcpy, &mismatches, bad.ptr, sizeof mismatches,
                             cudaMemcpyDeviceToHost));
      ok = mismatches == 0;
    } else {
      // The kernel's writes leave every page resident on the device.
      GLC_TRY(code, launch_fill(w, words, s));
      GLC_TRY(code, glc_stream_synchronize(s));
      if (code) break;
      double t0 = glc_host_seconds();
      if (prefetch) {
        GLC_TRY(code, GLC_CUDA(cudaMemPrefetchAsync, w, bytes, on_host, 0, s));
        GLC_TRY(code, glc_stream_synchronize(s));
      }
      // The timed host read is a plain sum, so that the host's arithmetic does not pace it;
      // the words are checked afterwards, untimed.
      uint64_t sum = 0;
      if (!code)
        for (size_t i = 0; i < words; ++i) sum += w[i];
      ms = static_cast<float>((glc_host_seconds() - t0) * 1e3);
      read_sink = sum;
      size_t mismatches = 0;
      for (size_t i = 0; !code && i < words; ++i) mismatches += w[i] != pattern_word(i);
      ok = mismatches == 0;
    }
    all_intact &= ok;
    if (r >= 0) samples[r] = ms;
  }
  *intact = !code && all_intact;
  return code;
}
