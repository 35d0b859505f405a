// The driver of tools/probe/onesweep_ab.py: sorts 2^k random int32 keys with the onesweep.cu it
// is linked with and with cub::DeviceRadixSort::SortKeys, each timed by events over 9 runs with
// the L2 flushed before each (medians), after one checked run of ours.
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/sort/families.cuh"
#include "median_ms.cuh"

namespace {

// Up to 2^26 keys: equal to std::sort's result. Past that (std::sort takes tens of seconds on
// the host): in order, and the same keys by their sum and xor.
bool sorted_right(const std::vector<int> &in, const std::vector<int> &out) {
  if (in.size() <= (size_t(1) << 26)) {
    std::vector<int> want(in);
    std::sort(want.begin(), want.end());
    return memcmp(want.data(), out.data(), in.size() * sizeof(int)) == 0;
  }
  unsigned long long sum_in = 0, sum_out = 0, xor_in = 0, xor_out = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    sum_in += static_cast<unsigned>(in[i]), xor_in ^= static_cast<unsigned>(in[i]) * 0x9e3779b1ull;
    sum_out += static_cast<unsigned>(out[i]),
        xor_out ^= static_cast<unsigned>(out[i]) * 0x9e3779b1ull;
    if (i > 0 && out[i - 1] > out[i]) return false;
  }
  return sum_in == sum_out && xor_in == xor_out;
}

}  // namespace

int main(int argc, char **argv) {
  const int log2n = argc > 1 ? atoi(argv[1]) : 26;
  const char *name = argc > 2 ? argv[2] : "onesweep";
  const size_t n = size_t(1) << log2n;
  std::vector<int> keys(n), got(n);
  std::mt19937 rng(1);
  for (auto &k : keys) k = static_cast<int>(rng());
  int *in = nullptr, *out = nullptr;
  void *flush = nullptr, *temp = nullptr;
  const size_t flush_bytes = size_t(256) << 20;  // past the H100's 50 MiB L2
  if (cudaMalloc(&in, n * sizeof(int)) || cudaMalloc(&out, n * sizeof(int)) ||
      cudaMalloc(&flush, flush_bytes)) {
    fprintf(stderr, "%s: cudaMalloc failed\n", name);
    return 2;
  }
  cudaMemcpy(in, keys.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  glc_sort_call call = {GLC_I32, false, n, in, out, 0, nullptr, nullptr, 0};
  cudaEvent_t begin, end;
  cudaEventCreate(&begin);
  cudaEventCreate(&end);
  auto median_ms = [&](auto sort) { return probe_median_ms(flush, flush_bytes, begin, end, sort); };
  const int code = glc_sort_onesweep(call);
  cudaDeviceSynchronize();
  cudaMemcpy(got.data(), out, n * sizeof(int), cudaMemcpyDeviceToHost);
  const bool ok = code == 0 && sorted_right(keys, got);
  const float ours = median_ms([&] { glc_sort_onesweep(call); });
  size_t temp_bytes = 0;
  cub::DeviceRadixSort::SortKeys(temp, temp_bytes, in, out, static_cast<int>(n));
  cudaMalloc(&temp, temp_bytes);
  const float cub = median_ms(
      [&] { cub::DeviceRadixSort::SortKeys(temp, temp_bytes, in, out, static_cast<int>(n)); });
  printf("%-12s 2^%d int32  %s  onesweep %.3f ms  cub %.3f ms  cub/onesweep %.3f\n", name, log2n,
         ok ? "ok   " : "WRONG", ours, cub, cub / ours);
  cudaFree(temp);
  cudaFree(flush);
  cudaFree(out);
  cudaFree(in);
  return ok ? 0 : 1;
}
