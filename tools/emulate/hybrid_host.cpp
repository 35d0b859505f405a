// Host emulation of the csr_hybrid SpMV kernels (cuda/sparse/hybrid.cu, variant 9 of spmv), driven
// by tools/emulate/hybrid.py, which writes kernel_gen.inc (the kernels and their constants, cut
// from hybrid.cu) and configs.inc (one SUITE line per lanes value of the variant table). Each CUDA
// thread is a std::thread (emu_blocks.h); a group's __shfl_sync and __shfl_down_sync meet its L
// lanes at a barrier of their own, with the mask and width checked against the group's, and
// warp_sum meets the warp's 32 lanes. The launches are hybrid.cu's: the rows kernel over every
// row, then, where a row passes the chunk, the chunks kernel on a small fixed grid. The matrices
// and the check of y are emu_spmv.h's; the chunk list is followed by a guard that must stay
// untouched. Speed and the memory model are not emulated: this checks the split between the
// kernels, the chunk list and its bound, on the CPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "emu_cuda.h"
#include "emu_blocks.h"
#include "emu_spmv.h"

using std::min;

int emu_width;  // the L of the rows kernel's launch
// one barrier per group of L lanes, per running block's slot
std::vector<std::unique_ptr<std::barrier<>>> emu_groups[kEmuBlocks];

template <typename T>
T atomicAdd(T *p, T v) {
  return std::atomic_ref<T>(*p).fetch_add(v);
}

// The group's lanes leave v in their slots; each reads the slot of source(lane in the group).
template <typename T, typename Source>
T emu_group(unsigned mask, T v, int width, Source source) {
  const int lane = threadIdx.x % 32;
  const unsigned group = width == 32 ? 0xffffffffu : ((1u << width) - 1u) << (lane / width * width);
  if (mask != group || width != emu_width) emu_error("a group shuffle with another mask or width");
  emu_block &b = *emu_blocks[emu_slot];
  std::barrier<> &meet = *emu_groups[emu_slot][threadIdx.x / width];
  unsigned long long bits = 0;
  memcpy(&bits, &v, sizeof v);
  b.slots[threadIdx.x] = bits;
  meet.arrive_and_wait();
  const int first = threadIdx.x - lane % width;
  T out;
  const unsigned long long got = b.slots[first + source(lane % width)];
  memcpy(&out, &got, sizeof out);
  meet.arrive_and_wait();
  return out;
}

template <typename T>
T __shfl_sync(unsigned mask, T v, int src, int width) {
  return emu_group(mask, v, width, [&](int) { return src; });
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width) {
  return emu_group(mask, v, width, [&](int lane) {
    return lane + static_cast<int>(delta) < width ? lane + static_cast<int>(delta) : lane;
  });
}

template <typename T>
T warp_sum(T v) {  // cuda/sparse/kernels.cuh's
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

#include "kernel_gen.inc"

// One matrix (emu_spmv.h) through hybrid.cu's launches: the list and its counter only where a
// row passes the chunk; the list followed by a guard that must stay untouched.
template <int L, typename I, typename T>
bool check(const char *what, const std::vector<long long> &lengths, long long cols, int block,
           std::mt19937 &rng) {
  EmuCsr<I, T> m(lengths, cols, rng);
  char label[160];
  snprintf(label, sizeof label, "L=%d %s block %d", L, what, block);
  const bool long_rows = m.max_row > kHybridChunk;
  const size_t capacity = hybrid_chunk_capacity(m.nnz);
  const Chunk guard{-7, -7};
  std::vector<Chunk> list(capacity + kEmuPad, guard);
  unsigned long long count = 0;
  Chunk *chunks = long_rows ? list.data() : nullptr;
  unsigned long long *counter = long_rows ? &count : nullptr;
  emu_width = L;
  for (int s = 0; s < kEmuBlocks; s++) {
    emu_groups[s].clear();
    for (int g = 0; g < block / L; g++) emu_groups[s].emplace_back(new std::barrier<>(L));
  }
  const size_t grid = (static_cast<size_t>(m.rows) * L + block - 1) / block;
  run_blocks(grid, block, [&] {
    spmv_hybrid_rows<L, I, T>(m.rows, m.indptr.data(), m.indices.data(), m.data.data(), m.x.data(),
                              m.y.data(), chunks, counter);
  });
  long wrong = 0;
  if (long_rows) {
    if (count > capacity && wrong++ < 3)
      fprintf(stderr, "%s: %llu chunks past the list's %zu\n", label, count, capacity);
    run_blocks(3, kLongBlock, [&] {
      spmv_hybrid_chunks<I, T>(m.indptr.data(), m.indices.data(), m.data.data(), m.x.data(),
                               m.y.data(), list.data(), &count);
    });
    for (size_t i = capacity; i < list.size(); i++)
      if ((list[i].row != guard.row || list[i].begin != guard.begin) && wrong++ < 3)
        fprintf(stderr, "%s: the chunk list written past its capacity at %zu\n", label, i);
  }
  return wrong + m.wrong_rows(label) == 0;
}

template <int L, typename I, typename T>
int suite_types(std::mt19937 &rng) {
  int failed = 0;
  const long long c = kHybridChunk;
  // rows around one, two and three chunks among short and empty ones, first and last
  const std::vector<long long> around = {3,     c - 1,     0, c,         1, c + 1,
                                         2 * c, 2 * c + 1, 0, 3 * c - 1, 5};
  const std::vector<long long> long_first = {3 * c + 7, 1, 2, 0, 4}, long_last = {2, 0, 1, c + 3};
  std::vector<long long> short_rows(150);
  std::uniform_int_distribution<long long> length(0, 3 * L + 5);
  for (auto &n : short_rows) n = length(rng);
  std::vector<long long> hubs = short_rows;
  hubs[7] = 4 * c + 11, hubs[80] = c + 1, hubs[149] = 2 * c;
  for (int block : {64, 128}) {
    failed += !check<L, I, T>("around the chunk", around, 9000, block, rng);
    failed += !check<L, I, T>("a long first row", long_first, 9000, block, rng);
    failed += !check<L, I, T>("a long last row", long_last, 3000, block, rng);
    failed += !check<L, I, T>("short rows only", short_rows, 300, block, rng);
    failed += !check<L, I, T>("hubs among short rows", hubs, 9000, block, rng);
    failed += !check<L, I, T>("no rows", {}, 3, block, rng);
  }
  return failed;
}

int main() {
  int failed = 0;
#define SUITE(L) failed += suite<L>();
#include "configs.inc"
  if (emu_errors) failed++;
  printf("%s\n", failed ? "FAILED" : "all ok");
  return failed ? 1 : 0;
}
