// The side-by-side probes' timer: the median of 9 runs, each timed by events on the legacy
// stream after `flush` (larger than the H100's 50 MiB L2) is overwritten, so that no run finds
// its input in L2.
#ifndef GPULAB_PROBE_MEDIAN_MS_CUH
#define GPULAB_PROBE_MEDIAN_MS_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

template <typename Run>
float probe_median_ms(void *flush, size_t flush_bytes, cudaEvent_t begin, cudaEvent_t end,
                      Run run) {
  std::vector<float> times;
  for (int r = 0; r < 9; ++r) {
    cudaMemsetAsync(flush, r, flush_bytes);
    cudaEventRecord(begin);
    run();
    cudaEventRecord(end);
    cudaEventSynchronize(end);
    float ms = 0;
    cudaEventElapsedTime(&ms, begin, end);
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

#endif
