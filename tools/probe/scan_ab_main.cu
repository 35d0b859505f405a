// The driver of tools/probe/scan_ab.py: an inclusive sum of 2^k float32 (or int32 into int64)
// by scan variant 5 of the shuffle.cu it is linked with (glc_scan_shuffle), by
// cub::DeviceScan::InclusiveSum on the same data, and a device-to-device cudaMemcpy of x's bytes
// (the copy ceiling), each timed by events over 9 runs with the L2 flushed before each (medians),
// after one checked run of ours and of CUB. GB/s count one read of x and one write of y (the
// copy's: one read and one write of x's bytes).
//     scan_ab_main LOG2N f32|i32 NAME
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/scan/families.cuh"
#include "cuda/scan/scan.h"
#include "median_ms.cuh"

namespace {

struct to_int64 {
  __host__ __device__ long long operator()(int v) const { return v; }
};

// Exact comparisons: the float32 data are small integers, whose sums stay far below 2^24 in
// magnitude over 2^28 of them (a random walk), so every order of summation gives the same bits.
template <typename In, typename Acc>
long long first_wrong(const std::vector<In> &x, const std::vector<Acc> &y) {
  Acc run = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    run += static_cast<Acc>(x[i]);
    if (memcmp(&run, &y[i], sizeof run) != 0) return static_cast<long long>(i);
  }
  return -1;
}

template <typename In, typename Acc>
int probe(int log2n, const char *name) {
  const bool floats = sizeof(In) == sizeof(Acc);
  const size_t n = size_t(1) << log2n;
  std::vector<In> host(n);
  std::mt19937 rng(1);
  for (auto &v : host)
    v = floats ? static_cast<In>(static_cast<int>(rng() % 5) - 2) : static_cast<In>(rng());
  In *x = nullptr;
  Acc *y = nullptr;
  void *flush = nullptr, *temp = nullptr, *copy = nullptr;
  const size_t flush_bytes = size_t(256) << 20;  // past the H100's 50 MiB L2
  if (cudaMalloc(&x, n * sizeof(In)) || cudaMalloc(&y, n * sizeof(Acc)) ||
      cudaMalloc(&copy, n * sizeof(In)) || cudaMalloc(&flush, flush_bytes)) {
    fprintf(stderr, "%s: cudaMalloc failed\n", name);
    return 2;
  }
  cudaMemcpy(x, host.data(), n * sizeof(In), cudaMemcpyHostToDevice);
  cudaEvent_t begin, end;
  cudaEventCreate(&begin);
  cudaEventCreate(&end);
  auto median_ms = [&](auto run) { return probe_median_ms(flush, flush_bytes, begin, end, run); };
  const int dtype = floats ? GLC_F32 : GLC_I32;
  auto ours = [&] {
    return glc_scan_shuffle(GLC_SCAN_DECOUPLED_LOOKBACK, GLC_SCAN_SUM, 1, dtype, n, x, y, 0);
  };
  auto in = thrust::make_transform_iterator(x, to_int64{});
  size_t temp_bytes = 0;
  auto cub_sum = [&] {
    if constexpr (sizeof(In) == sizeof(Acc))
      return cub::DeviceScan::InclusiveSum(temp, temp_bytes, x, y, static_cast<long long>(n));
    else
      return cub::DeviceScan::InclusiveSum(temp, temp_bytes, in, y, static_cast<long long>(n));
  };
  cub_sum();
  cudaMalloc(&temp, temp_bytes);
  std::vector<Acc> got(n);
  const int code = ours();
  cudaDeviceSynchronize();
  cudaMemcpy(got.data(), y, n * sizeof(Acc), cudaMemcpyDeviceToHost);
  const long long wrong = code == 0 ? first_wrong(host, got) : 0;
  cudaMemset(y, 0, n * sizeof(Acc));
  cub_sum();
  cudaDeviceSynchronize();
  cudaMemcpy(got.data(), y, n * sizeof(Acc), cudaMemcpyDeviceToHost);
  const long long cub_wrong = first_wrong(host, got);
  const float ours_ms = median_ms(ours);
  const float cub_ms = median_ms(cub_sum);
  const float copy_ms =
      median_ms([&] { cudaMemcpyAsync(copy, x, n * sizeof(In), cudaMemcpyDeviceToDevice, 0); });
  const double bytes = static_cast<double>(n) * (sizeof(In) + sizeof(Acc));
  const double copy_gbs = 2.0 * n * sizeof(In) / copy_ms / 1e6;
  const double ours_gbs = bytes / ours_ms / 1e6, cub_gbs = bytes / cub_ms / 1e6;
  const char *verdict = code != 0 ? "FAILED" : wrong >= 0 || cub_wrong >= 0 ? "WRONG" : "ok";
  printf(
      "%-12s 2^%d %-14s %-6s variant5 %.3f ms %5.0f GB/s %.3f of copy | cub %.3f ms %5.0f GB/s "
      "%.3f | copy %.3f ms %5.0f GB/s\n",
      name, log2n, floats ? "float32" : "int32->int64", verdict, ours_ms, ours_gbs,
      ours_gbs / copy_gbs, cub_ms, cub_gbs, cub_gbs / copy_gbs, copy_ms, copy_gbs);
  if (code != 0) fprintf(stderr, "%s: glc_scan_shuffle returned %d\n", name, code);
  if (wrong >= 0) fprintf(stderr, "%s: variant 5 wrong from y[%lld]\n", name, wrong);
  if (cub_wrong >= 0) fprintf(stderr, "%s: cub wrong from y[%lld]\n", name, cub_wrong);
  cudaFree(temp);
  cudaFree(flush);
  cudaFree(copy);
  cudaFree(y);
  cudaFree(x);
  return verdict[0] == 'o' ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  const int log2n = argc > 1 ? atoi(argv[1]) : 26;
  const bool int32 = argc > 2 && strcmp(argv[2], "i32") == 0;
  const char *name = argc > 3 ? argv[3] : "shuffle";
  return int32 ? probe<int, long long>(log2n, name) : probe<float, float>(log2n, name);
}
