// The n-body tuning sweep: every configuration of variant 5 (bodies per thread x j unroll x block
// size) and, for reference, the plain variants, at N = 16384 and N = 131072, in one process. It
// calls the C ABI directly (glc_nbody_accel), so that it can try the j unroll of variant 5, which
// the registry fixes; the best configuration becomes variant 5's default (nbody_accel.cu).
//
// Build (no GPU needed) and run on the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I. benchmarks/nbody_tune.cu cuda/nbody/nbody.cu \
//        cuda/nbody/accel.cu cuda/core/runtime.cu cuda/core/inspect.cu -o nbody_tune &&
//        ./nbody_tune
// Output: one CSV line per configuration: n,variant,block,unroll,bodies,median_ms,min_ms,ginter_s
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "cuda/nbody/nbody.h"

namespace {

struct Config {
  int variant, block, unroll, bodies;
};

// Median and min of `repeat` event-timed calls after one warm-up call; -1 if the call failed.
void time_config(const Config &c, size_t n, const float *pos, const float *mass, float *acc,
                 cudaStream_t stream, int repeat, double *median_ms, double *min_ms) {
  *median_ms = *min_ms = -1.0;
  int code = glc_nbody_accel(c.variant, c.block, c.unroll, c.bodies, n, pos, mass, 0.0025f, 1.0f,
                             acc, stream);
  if (code != 0 || cudaStreamSynchronize(stream) != cudaSuccess) {
    std::printf("# refused: v%d block %d unroll %d bodies %d: %s (%s)\n", c.variant, c.block,
                c.unroll, c.bodies, glc_error_name(code), glc_failed_call());
    return;
  }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    cudaEventRecord(start, stream);
    glc_nbody_accel(c.variant, c.block, c.unroll, c.bodies, n, pos, mass, 0.0025f, 1.0f, acc,
                    stream);
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float t = 0.f;
    cudaEventElapsedTime(&t, start, stop);
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  *median_ms = ms[ms.size() / 2];
  *min_ms = ms.front();
}

}  // namespace

int main() {
  glc_device_props props;
  if (glc_device_props_get(0, &props) != 0) {
    std::printf("no device\n");
    return 1;
  }
  std::printf("# %s, %d SMs, SM clock %d MHz (peak), FP32 lanes/SM %d\n", props.name,
              props.multiprocessors, props.clock_khz / 1000, props.fp32_per_sm_per_clock);
  glc_pool_init(0);
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  std::vector<Config> configs;
  for (int b : {1, 2, 4, 8})
    for (int u : {1, 2, 4, 8})
      for (int block : {64, 128, 256}) configs.push_back({5, block, u, b});
  for (int u : {1, 2, 4, 8, 16}) configs.push_back({3, 256, u, 1});
  configs.push_back({2, 256, 1, 1});
  configs.push_back({4, 256, 4, 1});
  configs.push_back({1, 256, 4, 1});
  configs.push_back({0, 256, 1, 1});
  std::printf("n,variant,block,unroll,bodies,median_ms,min_ms,ginter_s\n");
  for (size_t n : {size_t{16384}, size_t{131072}}) {
    std::mt19937 gen(42);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> host(4 * n);
    for (float &x : host) x = u(gen);
    float *pos, *mass, *acc;
    cudaMalloc(&pos, 3 * n * sizeof(float));
    cudaMalloc(&mass, n * sizeof(float));
    cudaMalloc(&acc, 3 * n * sizeof(float));
    cudaMemcpy(pos, host.data(), 3 * n * sizeof(float), cudaMemcpyHostToDevice);
    for (size_t i = 0; i < n; ++i) host[i] = 1.0f / n;
    cudaMemcpy(mass, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    int repeat = n > 20000 ? 5 : 20;
    for (const Config &c : configs) {
      double med, mn;
      time_config(c, n, pos, mass, acc, stream, repeat, &med, &mn);
      if (med > 0)
        std::printf("%zu,%d,%d,%d,%d,%.4f,%.4f,%.1f\n", n, c.variant, c.block, c.unroll, c.bodies,
                    med, mn, static_cast<double>(n) * n / (med * 1e-3) / 1e9);
      std::fflush(stdout);
    }
    cudaFree(pos);
    cudaFree(mass);
    cudaFree(acc);
  }
  return 0;
}
