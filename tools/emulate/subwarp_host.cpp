// Host emulation of the csr_subwarp SpMV kernel (cuda/sparse/csr.cu, variant 8 of spmv), driven by
// tools/emulate/subwarp.py, which writes kernel_gen.inc (the kernel's own source and its lanes
// rule, cut from csr.cu) and configs.inc (one SUITE line per lanes value of the variant table).
// Each CUDA thread of a block is a std::thread; __shfl_down_sync meets the group's lanes at a
// std::barrier of L participants (so a lane that leaves before its group's shuffle hangs the run,
// which the driver's timeout turns into a failure) and checks the mask and width it is given
// against the group's. Arrays (emu_spmv.h) are followed by NaN (indices by 0s), y starts NaN, and
// the entries past y must stay untouched: a read past a row or an array, or a row not written,
// shows in the results, which are compared with a float64 product within 2 n eps sum |a x| per row
// (n the row's length). Speed and the memory model are not emulated: this checks the indexing, the
// guards and the group reduction, on the CPU, for every lanes value, index type and value type.
#include <cuda_runtime.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>
#include <vector>
#include "emu_cuda.h"
#include "emu_spmv.h"
thread_local dim3 threadIdx;
dim3 blockIdx, blockDim;
int emu_width;                                            // the L of the launch
std::vector<std::unique_ptr<std::barrier<>>> emu_groups;  // one per group of the block
double emu_slots[1024];
std::atomic<long> emu_errors{0};

template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width) {
  const int lane = threadIdx.x % 32;
  const unsigned group = width == 32 ? 0xffffffffu : ((1u << width) - 1u) << (lane / width * width);
  if ((mask != group || width != emu_width) && emu_errors++ < 5)
    fprintf(stderr, "shuffle mask %08x width %d, the group's: %08x width %d\n", mask, width, group,
            emu_width);
  std::barrier<> &meet = *emu_groups[threadIdx.x / emu_width];
  emu_slots[threadIdx.x] = static_cast<double>(v);
  meet.arrive_and_wait();
  const bool inside = lane % width + delta < static_cast<unsigned>(width);
  const T out = inside ? static_cast<T>(emu_slots[threadIdx.x + delta]) : v;
  meet.arrive_and_wait();
  return out;
}

#include "kernel_gen.inc"

template <int L, typename I, typename T>
void launch(long long rows, const I *indptr, const I *indices, const T *data, const T *x, T *y,
            int block) {
  const long long groups_per_block = block / L;
  const long long grid = (rows + groups_per_block - 1) / groups_per_block;
  blockDim = dim3(block);
  emu_width = L;
  for (long long b = 0; b < grid; b++) {
    blockIdx = dim3(static_cast<unsigned>(b));
    emu_groups.clear();
    for (int g = 0; g < block / L; g++) emu_groups.emplace_back(new std::barrier<>(L));
    std::vector<std::thread> threads;
    for (int t = 0; t < block; t++)
      threads.emplace_back([=] {
        threadIdx = dim3(t);
        spmv_csr_subwarp<L, I, T>(rows, indptr, indices, data, x, y);
      });
    for (auto &t : threads) t.join();
  }
}

// One matrix (emu_spmv.h): its row lengths, columns drawn at random (repeats allowed).
template <int L, typename I, typename T>
bool check(const char *what, const std::vector<long long> &lengths, long long cols, int block,
           std::mt19937 &rng) {
  EmuCsr<I, T> m(lengths, cols, rng);
  launch<L, I, T>(m.rows, m.indptr.data(), m.indices.data(), m.data.data(), m.x.data(), m.y.data(),
                  block);
  char label[160];
  snprintf(label, sizeof label, "L=%d %s block %d", L, what, block);
  return m.wrong_rows(label) == 0;
}

template <int L, typename I, typename T>
int suite_types(std::mt19937 &rng) {
  int failed = 0;
  std::vector<long long> around;  // row lengths around the group and the pass sizes
  for (long long base : {0LL, 1LL, (long long)L, 2LL * L, 4LL * L, 8LL * L})
    for (long long d : {-1LL, 0LL, 1LL})
      if (base + d >= 0) around.push_back(base + d);
  std::vector<long long> empties = {0, 3, 0, 0, 1, 0};
  std::vector<long long> huge(37, 2);
  huge[17] = 3001;  // one row of thousands among short ones
  std::vector<long long> random(203);
  std::uniform_int_distribution<long long> length(0, 3 * L + 5);
  for (auto &n : random) n = length(rng);
  const std::vector<long long> one_by_n = {1000}, n_by_one = {1, 1, 0, 1, 1, 1, 0, 1, 1};
  const std::vector<long long> all_empty(5, 0);
  for (int block : {32, 64, 128}) {
    failed += !check<L, I, T>("around L", around, 50, block, rng);
    failed += !check<L, I, T>("empty rows", empties, 7, block, rng);
    failed += !check<L, I, T>("one huge row", huge, 4000, block, rng);
    failed += !check<L, I, T>("random lengths", random, 300, block, rng);
    failed += !check<L, I, T>("1 x N", one_by_n, 1000, block, rng);
    failed += !check<L, I, T>("N x 1", n_by_one, 1, block, rng);
    failed += !check<L, I, T>("all empty", all_empty, 3, block, rng);
    failed += !check<L, I, T>("no rows", {}, 3, block, rng);
  }
  return failed;
}

int main() {
  int failed = 0;
#define SUITE(L) failed += suite<L>();
#include "configs.inc"
  // The rule for lanes 0: the power of two nearest to half the mean row length (2 sqrt(2) L >=
  // mean), in 2..32: 2 up to mean 5, 4 up to 11, 8 up to 22, 16 up to 45, 32 past that.
  const long long rule[][3] = {
      {100, 0, 2},   {100, 100, 2},          {100, 500, 2},
      {10, 60, 4},   {10, 110, 4},           {10, 120, 8},
      {10, 220, 8},  {10, 230, 16},          {10, 450, 16},
      {10, 460, 32}, {1, 3000, 32},          {1, 1ll << 40, 32},
      {0, 0, 2},     {4194304, 62914560, 8}, {1 << 20, 5 * (1 << 20) - 4096, 2}};
  for (auto &r : rule)
    if (subwarp_lanes(r[0], r[1]) != r[2]) {
      fprintf(stderr, "lanes rule: rows %lld nnz %lld gave %d, want %lld\n", r[0], r[1],
              subwarp_lanes(r[0], r[1]), r[2]);
      failed++;
    }
  if (emu_errors) failed++;
  printf("%s\n", failed ? "FAILED" : "all ok");
  return failed ? 1 : 0;
}
