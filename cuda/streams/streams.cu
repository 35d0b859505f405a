// The streams lab: copy/compute overlap over chunks and streams, concurrent kernels, the cost of
// streams and events, CUDA graphs against plain launches, events across streams (producer/consumer)
// and S2's row-split matvec over several streams.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda/core/errors.cuh"
#include "streams.h"
#include "cuda/core/resources.cuh"
#include "cuda/core/launch.cuh"

namespace {

__device__ inline uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// S1's sleeping kernel: one warp that sleeps until ns nanoseconds have passed. It occupies a
// slot on one SM and no arithmetic units, so that k of them can only overlap through streams.
__global__ void sleep_for(uint64_t ns) {
  uint64_t start = global_ns();
  while (global_ns() - start < ns) __nanosleep(1000);
}

// out = f(in), f = `intensity` dependent FMAs: intensity moves the kernel from memory-bound
// (a few flops per 8 bytes) to compute-bound, across S0's r >= c / b rule.
__global__ void fma_stage(const float *__restrict__ in, float *__restrict__ out, size_t n,
                          int intensity) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = in[i];
    for (int k = 0; k < intensity; ++k) v = fmaf(v, 0.999f, 0.001f);
    out[i] = v;
  }
}

int launch_stage(const float *in, float *out, size_t n, int intensity, cudaStream_t s) {
  size_t grid = 0;
  int code = glc_full_wave_blocks<fma_stage>(256, &grid);
  if (code) return code;
  grid = std::max<size_t>(1, std::min(grid, glc_blocks_to_cover(n, 256)));
  return glc_launch(fma_stage, "fma_stage", static_cast<unsigned>(grid), 256, s, in, out, n,
                    intensity);
}

uint64_t ns_of_ms(double ms) { return static_cast<uint64_t>(ms * 1e6); }

// Makes every stream of `streams` wait for the event recorded now on `from`.
int fork(cudaStream_t from, const GlcStreams &streams, cudaEvent_t event) {
  int code = GLC_CUDA(cudaEventRecord, event, from);
  for (cudaStream_t s : streams.s) GLC_TRY(code, GLC_CUDA(cudaStreamWaitEvent, s, event, 0));
  return code;
}

// Makes `into` wait for everything queued so far on every stream of `streams`.
int join(const GlcStreams &streams, const GlcEvents &done, cudaStream_t into) {
  int code = cudaSuccess;
  for (size_t i = 0; i < streams.s.size(); ++i) {
    GLC_TRY(code, GLC_CUDA(cudaEventRecord, done[i], streams[i]));
    GLC_TRY(code, GLC_CUDA(cudaStreamWaitEvent, into, done[i], 0));
  }
  return code;
}

__global__ void tick(unsigned long long *counter) { *counter += 1; }

// Chunk c's word i: a value that a chunk left unwritten (zero) or written by another chunk
// cannot have.
__device__ inline uint32_t chunk_word(uint32_t chunk, size_t i) {
  return (chunk + 1) * 0x9E3779B1u ^ static_cast<uint32_t>(i) * 0x85EBCA77u | 1u;
}

// The producer's work for one chunk: sleep (the deliberate delay), then write the chunk.
__global__ void produce(uint32_t *chunk_data, uint32_t chunk, size_t elems, uint64_t delay_ns) {
  if (delay_ns) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
      uint64_t start = global_ns();
      while (global_ns() - start < delay_ns) __nanosleep(1000);
    }
    __syncthreads();
  }
  for (size_t i = threadIdx.x; i < elems; i += blockDim.x) chunk_data[i] = chunk_word(chunk, i);
}

// The consumer: marks the chunk bad when any word is not the producer's.
__global__ void consume(const uint32_t *chunk_data, uint32_t chunk, size_t elems, int *bad) {
  int wrong = 0;
  for (size_t i = threadIdx.x; i < elems; i += blockDim.x)
    wrong |= chunk_data[i] != chunk_word(chunk, i);
  wrong = __syncthreads_or(wrong);
  if (threadIdx.x == 0) bad[chunk] = wrong;
}

// One warp per row: lanes stride over the row's columns, then a shuffle reduction.
__global__ void matvec_rows(const float *__restrict__ a, const float *__restrict__ x,
                            float *__restrict__ y, size_t rows, size_t cols) {
  size_t row = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  unsigned lane = threadIdx.x % 32;
  if (row >= rows) return;  // whole warps leave together: rows are per warp
  const float *r = a + row * cols;
  float sum = 0;
  for (size_t j = lane; j < cols; j += 32) sum += r[j] * x[j];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[row] = sum;
}

}  // namespace

extern "C" int glc_streamlab_overlap(const float *host_in, float *host_out, size_t n, int chunks,
                                     int streams, int breadth_first, int intensity,
                                     glc_overlap_times *times, float *timeline) {
  if (n == 0 || chunks < 1 || static_cast<size_t>(chunks) > n || streams < 1 || intensity < 0)
    return glc_fail(cudaErrorInvalidValue, "glc_streamlab_overlap(arguments)");
  GlcStreams lanes;  // lanes[0] also carries the serial run
  GlcEvents marks, done, stages;
  GlcDeviceBuffer in, out;
  int code = lanes.create(streams);
  GLC_TRY(code, marks.create(6));
  GLC_TRY(code, done.create(static_cast<size_t>(streams)));
  if (timeline) GLC_TRY(code, stages.create(static_cast<size_t>(chunks) * 6));
  if (code) return code;
  cudaStream_t s0 = lanes[0];
  size_t bytes = n * sizeof(float);
  GLC_TRY(code, in.allocate(bytes, s0));
  GLC_TRY(code, out.allocate(bytes, s0));

  // Serial: the whole array through each stage in turn, on one stream.
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, marks[0], s0));
  GLC_TRY(code, glc_memcpy_async(in.ptr, host_in, bytes, s0));
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, marks[1], s0));
  GLC_TRY(code, launch_stage(in.as<float>(), out.as<float>(), n, intensity, s0));
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, marks[2], s0));
  GLC_TRY(code, glc_memcpy_async(host_out, out.ptr, bytes, s0));
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, marks[3], s0));
  GLC_TRY(code, glc_elapsed_after(marks[0], marks[3], &times->serial_ms));
  GLC_TRY(code, GLC_CUDA(cudaEventElapsedTime, &times->h2d_ms, marks[0], marks[1]));
  GLC_TRY(code, GLC_CUDA(cudaEventElapsedTime, &times->kernel_ms, marks[1], marks[2]));
  GLC_TRY(code, GLC_CUDA(cudaEventElapsedTime, &times->d2h_ms, marks[2], marks[3]));
  if (code) return code;

  // Chunked: chunk c on stream c % streams; the last chunk takes the remainder.
  size_t per_chunk = n / static_cast<size_t>(chunks);
  auto issue = [&](int c, int stage) {
    cudaStream_t s = lanes[static_cast<size_t>(c % streams)];
    size_t first = static_cast<size_t>(c) * per_chunk;
    size_t count = c == chunks - 1 ? n - first : per_chunk;
    int rc = cudaSuccess;
    if (timeline) GLC_TRY(rc, GLC_CUDA(cudaEventRecord, stages[(c * 3 + stage) * 2], s));
    if (stage == 0)
      GLC_TRY(rc,
              glc_memcpy_async(in.as<float>() + first, host_in + first, count * sizeof(float), s));
    if (stage == 1)
      GLC_TRY(rc,
              launch_stage(in.as<float>() + first, out.as<float>() + first, count, intensity, s));
    if (stage == 2)
      GLC_TRY(rc, glc_memcpy_async(host_out + first, out.as<float>() + first, count * sizeof(float),
                                   s));
    if (timeline) GLC_TRY(rc, GLC_CUDA(cudaEventRecord, stages[(c * 3 + stage) * 2 + 1], s));
    return rc;
  };
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, marks[4], s0));
  GLC_TRY(code, fork(s0, lanes, marks[4]));
  if (breadth_first) {
    for (int stage = 0; stage < 3; ++stage)
      for (int c = 0; c < chunks; ++c) GLC_TRY(code, issue(c, stage));
  } else {
    for (int c = 0; c < chunks; ++c)
      for (int stage = 0; stage < 3; ++stage) GLC_TRY(code, issue(c, stage));
  }
  GLC_TRY(code, join(lanes, done, s0));
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, marks[5], s0));
  GLC_TRY(code, glc_elapsed_after(marks[4], marks[5], &times->overlapped_ms));
  for (size_t i = 0; timeline && !code && i < stages.e.size(); ++i)
    GLC_TRY(code, GLC_CUDA(cudaEventElapsedTime, &timeline[i], marks[4], stages[i]));
  return code;
}

extern "C" int glc_streamlab_concurrent(int kernels, double duration_ms, float *one_stream_ms,
                                        float *many_streams_ms) {
  if (kernels < 1 || kernels > 1024 || !(duration_ms >= 0) || duration_ms > 10000)
    return glc_fail(cudaErrorInvalidValue, "glc_streamlab_concurrent(arguments)");
  GlcStreams lanes;
  GlcEvents marks, done;
  int code = lanes.create(kernels);
  GLC_TRY(code, marks.create(4));
  GLC_TRY(code, done.create(static_cast<size_t>(kernels)));
  if (code) return code;
  uint64_t ns = ns_of_ms(duration_ms);
  cudaStream_t s0 = lanes[0];
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, marks[0], s0));
  for (int k = 0; k < kernels; ++k)
    GLC_TRY(code, glc_launch(sleep_for, "sleep_for", 1, 32, s0, ns));
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, marks[1], s0));
  GLC_TRY(code, glc_elapsed_after(marks[0], marks[1], one_stream_ms));
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, marks[2], s0));
  GLC_TRY(code, fork(s0, lanes, marks[2]));
  for (int k = 0; k < kernels; ++k)
    GLC_TRY(code, glc_launch(sleep_for, "sleep_for", 1, 32, lanes[static_cast<size_t>(k)], ns));
  GLC_TRY(code, join(lanes, done, s0));
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, marks[3], s0));
  GLC_TRY(code, glc_elapsed_after(marks[2], marks[3], many_streams_ms));
  return code;
}

extern "C" int glc_streamlab_object_cost(int count, double *stream_create_us,
                                         double *stream_destroy_us, double *event_create_us,
                                         double *event_destroy_us) {
  if (count < 1 || count > 100000)
    return glc_fail(cudaErrorInvalidValue, "glc_streamlab_object_cost(count)");
  std::vector<cudaStream_t> streams(static_cast<size_t>(count), nullptr);
  std::vector<cudaEvent_t> events(static_cast<size_t>(count), nullptr);
  int code = cudaSuccess, made = 0;
  double t0 = glc_host_seconds();
  for (; made < count && !code; ++made) code = GLC_CUDA(cudaStreamCreate, &streams[made]);
  double t1 = glc_host_seconds();
  if (code) --made;  // the failed create made nothing
  for (int i = 0; i < made; ++i) GLC_TRY(code, GLC_CUDA(cudaStreamDestroy, streams[i]));
  double t2 = glc_host_seconds();
  *stream_create_us = (t1 - t0) * 1e6 / count;
  *stream_destroy_us = (t2 - t1) * 1e6 / count;
  if (code) return code;
  t0 = glc_host_seconds();
  for (made = 0; made < count && !code; ++made) code = GLC_CUDA(cudaEventCreate, &events[made]);
  t1 = glc_host_seconds();
  if (code) --made;
  for (int i = 0; i < made; ++i) GLC_TRY(code, GLC_CUDA(cudaEventDestroy, events[i]));
  t2 = glc_host_seconds();
  *event_create_us = (t1 - t0) * 1e6 / count;
  *event_destroy_us = (t2 - t1) * 1e6 / count;
  return code;
}

extern "C" int glc_streamlab_graph(int kernels, int repeat, double *launch_us, double *graph_us,
                                   double *instantiate_us, uint64_t *counted) {
  if (kernels < 1 || kernels > 1000000 || repeat < 1)
    return glc_fail(cudaErrorInvalidValue, "glc_streamlab_graph(arguments)");
  GlcStreams lanes;
  GlcDeviceBuffer counter;
  int code = lanes.create(1);
  if (code) return code;
  cudaStream_t s = lanes[0];
  GLC_TRY(code, counter.allocate(sizeof(unsigned long long), s));
  GLC_TRY(code, glc_memset_async(counter.ptr, 0, sizeof(unsigned long long), s));
  GLC_TRY(code, glc_stream_synchronize(s));
  if (code) return code;
  auto launch_all = [&] {
    int rc = cudaSuccess;
    for (int k = 0; k < kernels && !rc; ++k)
      rc = glc_launch(tick, "tick", 1, 1, s, counter.as<unsigned long long>());
    return rc;
  };
  // Plain launches: the first round is untimed (it loads the module and warms the driver).
  std::vector<double> plain, replay;
  for (int r = -1; r < repeat && !code; ++r) {
    double t0 = glc_host_seconds();
    GLC_TRY(code, launch_all());
    GLC_TRY(code, glc_stream_synchronize(s));
    if (r >= 0) plain.push_back((glc_host_seconds() - t0) * 1e6 / kernels);
  }
  if (code) return code;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  double t0 = glc_host_seconds();
  code = GLC_CUDA(cudaStreamBeginCapture, s, cudaStreamCaptureModeThreadLocal);
  if (!code) {
    int launched = launch_all();
    code = GLC_CUDA(cudaStreamEndCapture, s, &graph);
    if (launched) code = launched;
  }
  GLC_TRY(code, GLC_CUDA(cudaGraphInstantiate, &exec, graph, 0ull));
  *instantiate_us = (glc_host_seconds() - t0) * 1e6;
  for (int r = -1; r < repeat && !code; ++r) {
    double t1 = glc_host_seconds();
    GLC_TRY(code, GLC_CUDA(cudaGraphLaunch, exec, s));
    GLC_TRY(code, glc_stream_synchronize(s));
    if (r >= 0) replay.push_back((glc_host_seconds() - t1) * 1e6 / kernels);
  }
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  if (code) return code;
  std::sort(plain.begin(), plain.end());
  std::sort(replay.begin(), replay.end());
  *launch_us = plain[plain.size() / 2];
  *graph_us = replay[replay.size() / 2];
  unsigned long long total = 0;
  GLC_TRY(code,
          GLC_CUDA(cudaMemcpyAsync, &total, counter.ptr, sizeof total, cudaMemcpyDeviceToHost, s));
  GLC_TRY(code, glc_stream_synchronize(s));
  *counted = total;
  return code;
}

extern "C" int glc_streamlab_producer_consumer(int chunks, size_t chunk_elems, double delay_ms,
                                               int wait, int *bad_chunks) {
  if (chunks < 1 || chunks > 4096 || chunk_elems == 0 || !(delay_ms >= 0) || delay_ms > 1000)
    return glc_fail(cudaErrorInvalidValue, "glc_streamlab_producer_consumer(arguments)");
  GlcStreams lanes;  // 0: producer, 1: consumer
  GlcEvents ready;
  GlcDeviceBuffer data, bad;
  int code = lanes.create(2);
  GLC_TRY(code, ready.create(static_cast<size_t>(chunks)));
  if (code) return code;
  cudaStream_t producer = lanes[0], consumer = lanes[1];
  size_t bytes = static_cast<size_t>(chunks) * chunk_elems * sizeof(uint32_t);
  GLC_TRY(code, data.allocate(bytes, producer));
  GLC_TRY(code, bad.allocate(static_cast<size_t>(chunks) * sizeof(int), producer));
  GLC_TRY(code, glc_memset_async(data.ptr, 0, bytes, producer));
  GLC_TRY(code, glc_memset_async(bad.ptr, 0, static_cast<size_t>(chunks) * sizeof(int), producer));
  // Both streams start from the zeroed buffers.
  GLC_TRY(code, glc_stream_synchronize(producer));
  if (code) return code;
  uint64_t delay_ns = ns_of_ms(delay_ms);
  for (int c = 0; c < chunks && !code; ++c) {
    uint32_t *chunk_data = data.as<uint32_t>() + static_cast<size_t>(c) * chunk_elems;
    GLC_TRY(code, glc_launch(produce, "produce", 1, 256, producer, chunk_data,
                             static_cast<uint32_t>(c), chunk_elems, delay_ns));
    GLC_TRY(code, GLC_CUDA(cudaEventRecord, ready[static_cast<size_t>(c)], producer));
    if (wait)
      GLC_TRY(code, GLC_CUDA(cudaStreamWaitEvent, consumer, ready[static_cast<size_t>(c)], 0));
    GLC_TRY(code, glc_launch(consume, "consume", 1, 256, consumer,
                             static_cast<const uint32_t *>(chunk_data), static_cast<uint32_t>(c),
                             chunk_elems, bad.as<int>()));
  }
  std::vector<int> flags(static_cast<size_t>(chunks), 1);
  GLC_TRY(code, glc_stream_synchronize(producer));
  GLC_TRY(code, GLC_CUDA(cudaMemcpyAsync, flags.data(), bad.ptr, flags.size() * sizeof(int),
                         cudaMemcpyDeviceToHost, consumer));
  GLC_TRY(code, glc_stream_synchronize(consumer));
  if (!code) *bad_chunks = static_cast<int>(std::count(flags.begin(), flags.end(), 1));
  return code;
}

extern "C" int glc_streamlab_matvec(const float *a, const float *x, float *y, size_t rows,
                                    size_t cols, int streams, float *ms) {
  if (rows == 0 || cols == 0 || streams < 1 || static_cast<size_t>(streams) > rows)
    return glc_fail(cudaErrorInvalidValue, "glc_streamlab_matvec(arguments)");
  GlcStreams lanes;
  GlcEvents marks, done;
  GlcDeviceBuffer da, dx, dy;
  int code = lanes.create(streams);
  GLC_TRY(code, marks.create(3));
  GLC_TRY(code, done.create(static_cast<size_t>(streams)));
  if (code) return code;
  cudaStream_t s0 = lanes[0];
  GLC_TRY(code, da.allocate(rows * cols * sizeof(float), s0));
  GLC_TRY(code, dx.allocate(cols * sizeof(float), s0));
  GLC_TRY(code, dy.allocate(rows * sizeof(float), s0));
  GLC_TRY(code, glc_stream_synchronize(s0));
  if (code) return code;
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, marks[0], s0));
  // x goes first, on stream 0; every stream's kernel waits for it.
  GLC_TRY(code, glc_memcpy_async(dx.ptr, x, cols * sizeof(float), s0));
  GLC_TRY(code, fork(s0, lanes, marks[1]));
  size_t per = (rows + streams - 1) / static_cast<size_t>(streams);
  for (int k = 0; k < streams && !code; ++k) {
    size_t first = static_cast<size_t>(k) * per;
    if (first >= rows) break;
    size_t count = std::min(per, rows - first);
    cudaStream_t s = lanes[static_cast<size_t>(k)];
    GLC_TRY(code, glc_memcpy_async(da.as<float>() + first * cols, a + first * cols,
                                   count * cols * sizeof(float), s));
    size_t grid = glc_blocks_to_cover(count * 32, 256);
    GLC_TRY(code, glc_launch(matvec_rows, "matvec_rows", static_cast<unsigned>(grid), 256, s,
                             da.as<const float>() + first * cols, dx.as<const float>(),
                             dy.as<float>() + first, count, cols));
    GLC_TRY(code, glc_memcpy_async(y + first, dy.as<float>() + first, count * sizeof(float), s));
  }
  GLC_TRY(code, join(lanes, done, s0));
  GLC_TRY(code, GLC_CUDA(cudaEventRecord, marks[2], s0));
  GLC_TRY(code, glc_elapsed_after(marks[0], marks[2], ms));
  return code;
}
