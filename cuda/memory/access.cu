// The memory lab's on-chip experiments from S1 part 2: how the addresses of a warp's accesses
// decide the cost of global loads (granularity), of shared-memory loads (banks) and of
// constant-memory loads (broadcast or serialised).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/core/errors.cuh"
#include "memory.h"
#include "cuda/core/resources.cuh"
#include "cuda/core/launch.cuh"

namespace {

// S1's testCoalesced / testMixed / testOffset / testScattered, with 64-bit indices (S1's int
// arithmetic overflows at id * 121 past 17 M elements). Each thread copies one int.
template <int Pattern>
__global__ void access_pattern(const int *in, int *out, size_t n, unsigned offset) {
  size_t block_offset = static_cast<size_t>(blockIdx.x) * blockDim.x;
  size_t warp_offset = 32 * (threadIdx.x / 32);
  unsigned lane = threadIdx.x % 32;
  size_t id;
  if (Pattern == GLC_PATTERN_COALESCED) id = block_offset + warp_offset + lane;
  if (Pattern == GLC_PATTERN_MIXED) id = block_offset + warp_offset + (lane * 7) % 32;
  if (Pattern == GLC_PATTERN_OFFSET) id = (block_offset + warp_offset + lane) * offset;
  if (Pattern == GLC_PATTERN_SCATTERED) id = (block_offset + warp_offset + lane) * 121;
  id %= n;
  out[id] = in[id];
}

template <int Pattern>
int launch_access(const int *in, int *out, size_t n, unsigned offset, cudaStream_t s) {
  size_t grid = glc_blocks_to_cover(n, 256);
  if (grid > glc_max_grid_x) return glc_fail(cudaErrorInvalidValue, "glc_memlab_access(n)");
  return glc_launch(access_pattern<Pattern>, "access_pattern", static_cast<unsigned>(grid), 256, s,
                    in, out, n, offset);
}

int launch_pattern(int pattern, const int *in, int *out, size_t n, unsigned offset,
                   cudaStream_t s) {
  switch (pattern) {
    case GLC_PATTERN_COALESCED:
      return launch_access<GLC_PATTERN_COALESCED>(in, out, n, offset, s);
    case GLC_PATTERN_MIXED:
      return launch_access<GLC_PATTERN_MIXED>(in, out, n, offset, s);
    case GLC_PATTERN_OFFSET:
      return launch_access<GLC_PATTERN_OFFSET>(in, out, n, offset, s);
    default:
      return launch_access<GLC_PATTERN_SCATTERED>(in, out, n, offset, s);
  }
}

constexpr int tile_words = 32 * 32;

// Every warp reads its tile at word (lane * stride + k) % 1024: the bank is that word % 32, so
// gcd(stride, 32) lanes share a bank and their loads are serialised.
__global__ void bank_stride(int stride, int iterations, float *out) {
  __shared__ float tile[tile_words];
  for (int i = threadIdx.x; i < tile_words; i += blockDim.x) tile[i] = static_cast<float>(i);
  __syncthreads();
  unsigned lane = threadIdx.x % 32;
  unsigned base = lane * static_cast<unsigned>(stride);
  float sum = 0;
  for (int k = 0; k < iterations; ++k) sum += tile[(base + k) % tile_words];
  out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}

constexpr int table_words = 2048;  // 8 KiB: stays in the constant cache and in L1
__constant__ float constant_table[table_words];

// Mode 0/2: the index depends on k only, so a warp reads one address (constant memory then
// broadcasts it). Mode 1/3: the 32 lanes read 32 different addresses (constant memory then
// serialises them, one address per pass).
__global__ void table_reads(int mode, int iterations, const float *__restrict__ global_table,
                            float *out) {
  unsigned lane = threadIdx.x % 32;
  unsigned spread = (mode == 1 || mode == 3) ? lane * 33 : 0;
  bool from_constant = mode < 2;
  float sum = 0;
  for (int k = 0; k < iterations; ++k) {
    unsigned i = (k + spread) % table_words;
    sum += from_constant ? constant_table[i] : global_table[i];
  }
  out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}

// Runs launch() once untimed and `repeat` times between events on one stream.
template <typename Launch>
int time_repeats(GlcStreams &streams, int repeat, float *samples, Launch &&launch) {
  GlcEvents events;
  int code = events.create(2);
  cudaStream_t s = streams[0];
  for (int r = -1; !code && r < repeat; ++r) {
    GLC_TRY(code, GLC_CUDA(cudaEventRecord, events[0], s));
    GLC_TRY(code, launch(s));
    GLC_TRY(code, GLC_CUDA(cudaEventRecord, events[1], s));
    float ms = 0;
    GLC_TRY(code, glc_elapsed_after(events[0], events[1], &ms));
    if (r >= 0) samples[r] = ms;
  }
  return code;
}

// Blocks of 256 threads, enough to fill every SM several times.
int on_chip_grid(size_t *grid) {
  int sms = 0;
  int code = glc_current_sm_count(&sms);
  *grid = static_cast<size_t>(sms) * 8;
  return code;
}

}  // namespace

extern "C" int glc_memlab_access(int pattern, int offset, size_t n, int repeat, float *samples) {
  if (pattern < GLC_PATTERN_COALESCED || pattern > GLC_PATTERN_SCATTERED || n == 0 || repeat < 1 ||
      (pattern == GLC_PATTERN_OFFSET && offset < 1))
    return glc_fail(cudaErrorInvalidValue, "glc_memlab_access(arguments)");
  GlcStreams streams;
  GlcDeviceBuffer in, out;
  int code = streams.create(1);
  if (code) return code;
  GLC_TRY(code, in.allocate(n * sizeof(int), streams[0]));
  GLC_TRY(code, out.allocate(n * sizeof(int), streams[0]));
  GLC_TRY(code, glc_memset_async(in.ptr, 1, n * sizeof(int), streams[0]));
  GLC_TRY(code, glc_memset_async(out.ptr, 0, n * sizeof(int), streams[0]));
  if (code) return code;
  return time_repeats(streams, repeat, samples, [&](cudaStream_t s) {
    return launch_pattern(pattern, in.as<int>(), out.as<int>(), n, static_cast<unsigned>(offset),
                          s);
  });
}

extern "C" int glc_memlab_bank(int stride, int iterations, int repeat, float *samples) {
  if (stride < 1 || stride > 1024 || iterations < 1 || repeat < 1)
    return glc_fail(cudaErrorInvalidValue, "glc_memlab_bank(arguments)");
  GlcStreams streams;
  GlcDeviceBuffer out;
  size_t grid = 0;
  int code = streams.create(1);
  GLC_TRY(code, on_chip_grid(&grid));
  GLC_TRY(code, out.allocate(grid * 256 * sizeof(float), streams[0]));
  if (code) return code;
  return time_repeats(streams, repeat, samples, [&](cudaStream_t s) {
    return glc_launch(bank_stride, "bank_stride", static_cast<unsigned>(grid), 256, s, stride,
                      iterations, out.as<float>());
  });
}

extern "C" int glc_memlab_constant(int mode, int iterations, int repeat, float *samples,
                                   double *loads) {
  if (mode < 0 || mode > 3 || iterations < 1 || repeat < 1)
    return glc_fail(cudaErrorInvalidValue, "glc_memlab_constant(arguments)");
  GlcStreams streams;
  GlcDeviceBuffer table, out;
  size_t grid = 0;
  int code = streams.create(1);
  GLC_TRY(code, on_chip_grid(&grid));
  GLC_TRY(code, table.allocate(table_words * sizeof(float), streams[0]));
  GLC_TRY(code, out.allocate(grid * 256 * sizeof(float), streams[0]));
  if (code) return code;
  float values[table_words];
  for (int i = 0; i < table_words; ++i) values[i] = 1.0f / (1 + i);
  GLC_TRY(code, GLC_CUDA(cudaMemcpyToSymbolAsync, constant_table, values, sizeof values, 0,
                         cudaMemcpyHostToDevice, streams[0]));
  GLC_TRY(code, GLC_CUDA(cudaMemcpyAsync, table.ptr, values, sizeof values, cudaMemcpyHostToDevice,
                         streams[0]));
  GLC_TRY(code, glc_stream_synchronize(streams[0]));
  if (code) return code;
  *loads = static_cast<double>(grid) * 256 * iterations;
  return time_repeats(streams, repeat, samples, [&](cudaStream_t s) {
    return glc_launch(table_reads, "table_reads", static_cast<unsigned>(grid), 256, s, mode,
                      iterations, table.as<const float>(), out.as<float>());
  });
}
