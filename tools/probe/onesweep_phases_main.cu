// The driver of tools/probe/onesweep_phases.py: sorts 2^k random int32 keys through the
// instrumented onesweep, once and then three times, and prints the phases of the three and
// their time.
#include <cstdio>
#include <random>
#include <vector>
#include "cuda/sort/families.cuh"
extern "C" void onesweep_probe_report();
int main(int argc, char **argv) {
  const size_t n = size_t(1) << (argc > 1 ? atoi(argv[1]) : 26);
  std::vector<unsigned> h(n);
  std::mt19937 rng(1);
  for (auto &v : h) v = rng();
  unsigned *in, *out;
  cudaMalloc(&in, n * 4);
  cudaMalloc(&out, n * 4);
  cudaMemcpy(in, h.data(), n * 4, cudaMemcpyHostToDevice);
  glc_sort_call call = {GLC_I32, false, n, in, out, 0, nullptr, nullptr, 0};
  glc_sort_onesweep(call);
  cudaDeviceSynchronize();
  onesweep_probe_report();
  cudaEvent_t begin, end;
  cudaEventCreate(&begin);
  cudaEventCreate(&end);
  cudaEventRecord(begin);
  for (int r = 0; r < 3; ++r) glc_sort_onesweep(call);
  cudaEventRecord(end);
  cudaEventSynchronize(end);
  float ms = 0;
  cudaEventElapsedTime(&ms, begin, end);
  // against the uninstrumented sort's time (sort_lab.py), the probe's own cost
  printf("n = 2^%d, 3 sorts, %.3f ms a sort with the probe:\n", argc > 1 ? atoi(argv[1]) : 26,
         ms / 3);
  onesweep_probe_report();
  return 0;
}
