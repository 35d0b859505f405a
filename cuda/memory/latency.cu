// The memory lab's latency staircase (S0): one thread follows a chain of dependent loads, so
// each load waits for the one before and the time per load is the latency of wherever the
// chain's working set lives: L1, L2, or device memory behind a TLB miss.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/core/errors.cuh"
#include "memory.h"
#include "cuda/core/resources.cuh"
#include "cuda/core/launch.cuh"

namespace {

// words[i * stride_words] = successor[i] * stride_words.
__global__ void place_nodes(const uint32_t *successor, size_t nodes, uint32_t stride_words,
                            uint32_t *words) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < nodes;
       i += stride)
    words[i * stride_words] = successor[i] * stride_words;
}

// Follows `steps` links from *position and leaves where it stopped there, so that each pass
// continues the walk. Plain loads (cached in L1, unlike volatile or .cg ones).
__global__ void chase(const uint32_t *words, size_t steps, uint32_t *position) {
  uint32_t p = *position;
  for (size_t i = 0; i < steps; ++i) p = words[p];
  *position = p;
}

}  // namespace

extern "C" int glc_memlab_chase(const uint32_t *successor, size_t nodes, size_t stride_words,
                                size_t words, size_t warm_steps, size_t steps, int repeat,
                                float *samples, uint32_t *final_node) {
  if (nodes == 0 || stride_words == 0 || stride_words > UINT32_MAX || words > UINT32_MAX ||
      nodes > (words + stride_words - 1) / stride_words || steps == 0 || repeat < 1)
    return glc_fail(cudaErrorInvalidValue, "glc_memlab_chase(arguments)");
  // All of the SM's unified L1/shared storage as L1: the chase uses no shared memory.
  int code =
      GLC_CUDA(cudaFuncSetAttribute, chase, cudaFuncAttributePreferredSharedMemoryCarveout, 0);
  GlcStreams streams;
  GlcEvents events;
  GlcDeviceBuffer chain, array, position;
  GLC_TRY(code, streams.create(1));
  if (code) return code;
  cudaStream_t s = streams[0];
  GLC_TRY(code, events.create(2));
  GLC_TRY(code, chain.allocate(nodes * sizeof(uint32_t), s));
  GLC_TRY(code, array.allocate(words * sizeof(uint32_t), s));
  GLC_TRY(code, position.allocate(sizeof(uint32_t), s));
  GLC_TRY(code, glc_memset_async(position.ptr, 0, sizeof(uint32_t), s));  // node 0
  GLC_TRY(code, GLC_CUDA(cudaMemcpyAsync, chain.ptr, successor, nodes * sizeof(uint32_t),
                         cudaMemcpyHostToDevice, s));
  GLC_TRY(code, glc_launch(place_nodes, "place_nodes", 1024, 256, s, chain.as<const uint32_t>(),
                           nodes, static_cast<uint32_t>(stride_words), array.as<uint32_t>()));
  // The untimed pass (warm_steps loads, the whole chain when it is short enough) leaves caches
  // and TLBs holding what a long walk keeps there; the timed passes continue from where it
  // stopped, so that an array larger than the warmed part is timed on nodes never touched.
  if (warm_steps)
    GLC_TRY(code, glc_launch(chase, "chase", 1, 1, s, array.as<const uint32_t>(), warm_steps,
                             position.as<uint32_t>()));
  for (int r = 0; !code && r < repeat; ++r) {
    GLC_TRY(code, GLC_CUDA(cudaEventRecord, events[0], s));
    GLC_TRY(code, glc_launch(chase, "chase", 1, 1, s, array.as<const uint32_t>(), steps,
                             position.as<uint32_t>()));
    GLC_TRY(code, GLC_CUDA(cudaEventRecord, events[1], s));
    GLC_TRY(code, glc_elapsed_after(events[0], events[1], &samples[r]));
  }
  uint32_t last = 0;
  GLC_TRY(code,
          GLC_CUDA(cudaMemcpyAsync, &last, position.ptr, sizeof last, cudaMemcpyDeviceToHost, s));
  GLC_TRY(code, glc_stream_synchronize(s));
  if (!code) *final_node = last / static_cast<uint32_t>(stride_words);
  return code;
}
