// Host emulation of the staged compaction kernel (cuda/scan/compact.cu, variant 3 of compact and
// nonzero), driven by tools/emulate/compact.py, which writes kernel_gen.inc: the kernel's own
// source, cut from compact.cu, with each __shared__ variable turned into a per-block slot of
// emu_shared. tile.cuh (the tile scan, the tile status and the look-back) is included as it is.
// Each CUDA thread is a std::thread; a warp's collectives (__shfl_up_sync, __shfl_xor_sync,
// __ballot_sync, __any_sync) meet its 32 lanes at a std::barrier, __syncthreads the block's 256.
// Blocks run in waves of kEmuBlocks at once, some stalled after taking their tile id (atomicAdd),
// so that a tile's look-back finds predecessors that have not yet published, or published only
// their aggregate; the order in which a wave's blocks take their tile ids varies from run to run.
// 16-byte loads and stores must be 16-byte aligned, the mask's word loads aligned to their size;
// the result is followed by sentinels that must stay untouched, and compared exactly (bit for bit)
// with the kept elements or their indices. Speed and the GPU's memory model are not emulated: this
// checks the flags, the block scan, the staging, the write-out's head, vectors and tail, and the
// count.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "emu_cuda.h"
#include "emu_blocks.h"

using std::min;

// The tile counter. The first tile of every wave stalls for up to 2 ms after taking its id (its
// other threads wait at the barrier after it): the second publishes its aggregate and waits for
// the first's prefix, the third finds the second with only its aggregate (or its prefix, when the
// first has finished) and the first with nothing, which the look-back's wait and its walk over
// aggregates must handle.
unsigned atomicAdd(unsigned *p, unsigned v) {
  const unsigned old = __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
  if (old % kEmuBlocks == 0)
    std::this_thread::sleep_for(std::chrono::microseconds(old * 7919 % 2000));
  return old;
}

#include "cuda/scan/tile.cuh"
#include "kernel_gen.inc"

using Status = glc_tile_status<long long>;
using Scratch = glc_look_back_scratch<Status>;

int emu_variant = 3;  // the compaction variant launch() runs: 3 staged, 4 counted_staged

// compact_ours's launch of variant 4: the tiles' counts, their exclusive scan (on the host here;
// the one-block Blelloch kernel is checked by the scan lab), then the staged scatter.
template <bool IndexOut, typename T>
void launch_counted(const T *x, const unsigned char *mask, size_t n, void *out, long long *count) {
  using S = glc_tile_shape<T>;
  const size_t tiles = (n + S::tile - 1) / S::tile;
  std::vector<long long> counts(tiles, -1), offsets(tiles, -1);
  const bool x_vectors = reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const bool mask_words = mask && reinterpret_cast<uintptr_t>(mask) % S::vec == 0;
  const bool mask_vectors =
      mask && reinterpret_cast<uintptr_t>(mask) % (S::tile / glc_tile_threads) == 0;
  run_blocks(tiles, 256,
             [&] { count_kept_tiles<T>(x, mask, n, x_vectors, mask_vectors, counts.data()); });
  long long running = 0;
  for (size_t b = 0; b < tiles; ++b) offsets[b] = running, running += counts[b];
  run_blocks(tiles, 256, [&] {
    scatter_staged<IndexOut, T>(x, mask, n, x_vectors, mask_words, out, offsets.data(), count);
  });
}

// compact_ours's launch of variant 3 (or 4: launch_counted), in waves of kEmuBlocks blocks.
template <bool IndexOut, typename T>
void launch(const T *x, const unsigned char *mask, size_t n, void *out, long long *count) {
  if (emu_variant == 4) return launch_counted<IndexOut, T>(x, mask, n, out, count);
  using S = glc_tile_shape<T>;
  const size_t tiles = (n + S::tile - 1) / S::tile;
  std::vector<unsigned long long> scratch((Scratch::bytes(tiles) + 7) / 8, 0x5a5a5a5a5a5a5a5aull);
  memset(scratch.data(), 0, Scratch::zeroed_bytes(tiles));
  unsigned *counter = Scratch::counter(scratch.data());
  const Status status = Scratch::status(scratch.data(), tiles);
  const bool x_vectors = reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const bool mask_words = mask && reinterpret_cast<uintptr_t>(mask) % S::vec == 0;
  run_blocks(tiles, 256, [&] {
    compact_staged<IndexOut, T, Status>(x, mask, n, x_vectors, mask_words, out, count, counter,
                                        tiles, status);
  });
}

template <typename T>
bool same_bits(T a, T b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

constexpr int kPad = 40;  // sentinels after the result

// One case: x at `x_shift` elements and the mask at `mask_shift` bytes past 16-byte boundaries,
// the result at `out_shift` elements past one, with exactly the kept count's room.
template <bool IndexOut, typename T>
bool check(const char *what, const std::vector<T> &xs, const std::vector<unsigned char> *mask,
           int x_shift, int mask_shift, int out_shift) {
  using Out = typename staged_types<IndexOut, T>::Out;
  const size_t n = xs.size();
  std::vector<T> x_store(n + 16 + x_shift);
  T *x =
      reinterpret_cast<T *>((reinterpret_cast<uintptr_t>(x_store.data()) + 15) / 16 * 16) + x_shift;
  std::copy(xs.begin(), xs.end(), x);
  std::vector<unsigned char> mask_store(n + 32);
  unsigned char *m = nullptr;
  if (mask) {
    m = reinterpret_cast<unsigned char *>((reinterpret_cast<uintptr_t>(mask_store.data()) + 15) /
                                          16 * 16) +
        mask_shift;
    std::copy(mask->begin(), mask->end(), m);
  }
  std::vector<Out> want;
  for (size_t i = 0; i < n; ++i) {
    const bool keep = mask ? (*mask)[i] != 0 : xs[i] != T(0);
    if (keep) want.push_back(IndexOut ? static_cast<Out>(i) : static_cast<Out>(xs[i]));
  }
  const Out sentinel = static_cast<Out>(-12345);
  std::vector<Out> out_store(want.size() + kPad + 16 / sizeof(Out) + out_shift, sentinel);
  Out *out =
      reinterpret_cast<Out *>((reinterpret_cast<uintptr_t>(out_store.data()) + 15) / 16 * 16) +
      out_shift;
  long long count = -1;
  launch<IndexOut, T>(x, m, n, out, &count);
  long wrong = 0;
  if (mask && emu_variant == 4) {  // the binding's sizing pass, on 2 blocks (grid-stride)
    unsigned long long counted = 0;
    const bool vectors = reinterpret_cast<uintptr_t>(m) % 16 == 0;
    run_blocks(2, 256, [&] { count_true(m, n, vectors, &counted); });
    if (counted != want.size() && wrong++ < 3)
      fprintf(stderr, "%s n %zu: count_true %llu, want %zu\n", what, n, counted, want.size());
  }
  if (count != static_cast<long long>(want.size())) {
    fprintf(stderr, "%s n %zu: count %lld, want %zu\n", what, n, count, want.size());
    wrong++;
  }
  for (size_t i = 0; i < want.size(); ++i)
    if (!same_bits(out[i], want[i]) && wrong++ < 3)
      fprintf(stderr, "%s n %zu: out[%zu] = %g, want %g\n", what, n, i, static_cast<double>(out[i]),
              static_cast<double>(want[i]));
  for (size_t i = want.size(); i < want.size() + kPad; ++i)
    if (!same_bits(out[i], sentinel) && wrong++ < 3)
      fprintf(stderr, "%s n %zu: written past the result's end at %zu\n", what, n, i);
  return wrong == 0;
}

// Elements with zeros (and, for floats, -0.0 and NaN: x != 0 drops the one, keeps the other).
template <typename T>
std::vector<T> values(size_t n, double zeros, std::mt19937 &rng) {
  constexpr bool floating = std::is_floating_point_v<T>;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::uniform_int_distribution<int> value(1, 1000);
  std::vector<T> x(n);
  for (auto &e : x) {
    const double p = u(rng);
    if (p < zeros)
      e = floating && u(rng) < 0.5 ? T(-0.0) : T(0);
    else if (floating && u(rng) < 0.01)
      e = static_cast<T>(NAN);
    else
      e = static_cast<T>(u(rng) < 0.5 ? -value(rng) : value(rng)) + (floating ? T(0.25) : T(0));
  }
  return x;
}

template <typename T>
int suite(std::mt19937 &rng, bool quick) {
  using S = glc_tile_shape<T>;
  const long long tile = static_cast<long long>(S::tile);
  std::vector<long long> sizes = {1,        2,    3,        31,           33,          255,
                                  tile - 1, tile, tile + 1, 3 * tile - 1, 3 * tile + 1};
  if (!quick) sizes.push_back(7 * tile + 13);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int failed = 0;
  for (long long n : sizes) {
    // masks: none kept, all kept, one kept, random at 3%, 50% and 97% (bytes 1, and some 2-255)
    for (int pattern = 0; pattern < 6; ++pattern) {
      std::vector<unsigned char> mask(n, 0);
      const double p[] = {0.0, 1.0, 0.0, 0.03, 0.5, 0.97};
      for (auto &b : mask) b = u(rng) < p[pattern] ? (u(rng) < 0.9 ? 1 : 2 + rng() % 254) : 0;
      if (pattern == 2) mask[rng() % n] = 1;
      const auto x = values<T>(n, 0.3, rng);
      const int shift = pattern % 2;  // misaligned x, mask and result every other case
      const int out_shift = static_cast<int>(rng() % (16 / sizeof(T)));
      failed += !check<false, T>("compact with a mask", x, &mask, 0, 0, out_shift);
      failed +=
          !check<false, T>("compact with a mask, misaligned", x, &mask, shift, 1 + shift, shift);
      // no mask: x != 0 at the same densities
      const auto y = values<T>(n, 1.0 - p[pattern], rng);
      failed += !check<false, T>("compact without a mask", y, nullptr, shift, 0, out_shift);
      failed += !check<true, T>("nonzero", y, nullptr, shift, 0, shift);
    }
  }
  return failed;
}

// Each suite seeds its own generator, so a suite's inputs are the same whichever part runs it.
int main(int argc, char **argv) {
  bool quick;
  int part, parts;
  if (!emu_args(argc, argv, &quick, &part, &parts)) return 2;
  const char *names[] = {"float32", "float64", "int32", "int64"};
  int failed = 0, index = 0;
  for (int variant : {3, 4}) {
    for (int type = 0; type < 4; ++type, ++index) {
      if (index % parts != part) continue;
      emu_variant = variant;
      std::mt19937 rng(11 + index);
      const int f = type == 0   ? suite<float>(rng, quick)
                    : type == 1 ? suite<double>(rng, quick)
                    : type == 2 ? suite<int>(rng, quick)
                                : suite<long long>(rng, quick);
      printf("variant %d %s: %s\n", variant, names[type], f ? "FAILED" : "ok");
      failed += f;
    }
  }
  if (emu_errors) failed++;
  printf("%s\n", failed ? "FAILED" : "all ok");
  return failed ? 1 : 0;
}
