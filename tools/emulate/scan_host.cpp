// Host emulation of scan variant 5 (cuda/scan/shuffle.cu): the one-tile look-back kernel
// (decoupled_lookback, its tile staged in shared memory) on its own shape (lookback_shape: 256
// threads x 9 rounds where input and accumulator are 4 bytes, 256 x 6 for int32 sums into int64,
// 256 x 4 otherwise), driven by
// tools/emulate/scan.py, which writes kernel_gen.inc: the tiles' loads and stores and variant 5,
// cut from shuffle.cu, with each __shared__ variable turned into a per-block slot of emu_shared.
// tile.cuh (the tile status and the look-back) is included as it is; the copies into shared
// memory are emulated below (the bulk copy of sm_90, or each thread's cp.async).
// Each CUDA thread is a std::thread; a warp's collectives meet its 32 lanes at a std::barrier,
// __syncthreads the block's threads. Blocks run kEmuBlocks at once, in waves; some claims of a tile
// id stall (atomicAdd), so that look-backs meet predecessors with nothing or only an aggregate
// published, and the order in which a wave's blocks take their ids varies from run to run.
// 16-byte loads and stores must be 16-byte aligned; y is followed by sentinels that must stay
// untouched. Results are compared with a serial scan: exactly where it is exact (integers,
// max/min, and float sums of small integers), within the look-back's rounding bound
// (tests/references/scan.py) for float sums of random values. Speed and the GPU's memory model
// are not emulated: this checks the shape's indexing, the tile scan, the look-back's use, the
// stores' full, partial and scalar paths and the tile count.
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
#include <type_traits>
#include <vector>

#include "emu_cuda.h"
#include "emu_blocks.h"

// The tile counter. Claims of ids that are a multiple of 5 (a seed shifts which) stall up to
// 2 ms: the claiming block then lags, its successors look back past tiles with nothing or only
// an aggregate published, and the blocks' ids interleave unevenly.
unsigned emu_stall_seed = 0;
unsigned atomicAdd(unsigned *p, unsigned v) {
  const unsigned old = __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
  if ((old + emu_stall_seed) % 5 == 0)
    std::this_thread::sleep_for(std::chrono::microseconds((old + emu_stall_seed) * 7919 % 2000));
  return old;
}

// shuffle.cu's copies into shared memory (not cut from it), either way the GPU makes them: as on
// sm_90 (the default), thread 0 issues one bulk copy of the tile, which lands when the first
// thread waits for it, and a wait with no copy issued is an error (it would hang on the GPU); or,
// with EMU_STAGE_PER_THREAD, as before sm_90, each thread's 16-byte copies land only at its own
// wait. Either way a read of the stage before its landing sees what an earlier block left there.
using stage_barrier = unsigned long long;
#ifdef EMU_STAGE_PER_THREAD
constexpr bool stage_by_thread_0 = false;
#else
constexpr bool stage_by_thread_0 = true;
#endif
struct emu_bulk_copy {
  std::atomic<int> state{0};  // 0 none, 1 issued, 2 landing, 3 landed
  void *dst = nullptr;
  const void *src = nullptr;
  unsigned bytes = 0;
};
emu_bulk_copy emu_bulk_copies[kEmuBlocks];
thread_local std::vector<std::pair<void *, const void *>> emu_pending_copies;

void stage_barrier_init(stage_barrier *) { emu_bulk_copies[emu_slot].state.store(0); }
void stage_bulk(void *dst, const void *src, unsigned bytes, stage_barrier *) {
  if (!stage_by_thread_0 || threadIdx.x != 0) emu_error("a bulk copy not from thread 0");
  if (reinterpret_cast<uintptr_t>(dst) % 16 || reinterpret_cast<uintptr_t>(src) % 16 || bytes % 16)
    emu_error("a misaligned bulk copy");
  emu_bulk_copy &c = emu_bulk_copies[emu_slot];
  c.dst = dst;
  c.src = src;
  c.bytes = bytes;
  c.state.store(1);
}
unsigned long long stage_evict_first_policy() { return 0; }
void stage_copy16(void *dst, const void *src, unsigned long long) {
  if (stage_by_thread_0) emu_error("a per-thread copy where thread 0 copies in bulk");
  if (reinterpret_cast<uintptr_t>(dst) % 16 || reinterpret_cast<uintptr_t>(src) % 16)
    emu_error("a misaligned 16-byte cp.async");
  emu_pending_copies.emplace_back(dst, src);
}
void stage_wait(stage_barrier *) {
  if (!stage_by_thread_0) {
    for (auto [dst, src] : emu_pending_copies) memcpy(dst, src, 16);
    emu_pending_copies.clear();
    return;
  }
  emu_bulk_copy &c = emu_bulk_copies[emu_slot];
  int issued = 1;
  if (c.state.compare_exchange_strong(issued, 2)) {
    memcpy(c.dst, c.src, c.bytes);
    c.state.store(3);
    return;
  }
  if (issued == 0) {
    emu_error("a wait for the stage with no bulk copy issued");
    return;
  }
  while (c.state.load() != 3) std::this_thread::yield();
}

#include "cuda/scan/ops.cuh"
#include "cuda/scan/tile.cuh"
#include "kernel_gen.inc"

// shuffle_scan's launch of variant 5: one block a tile, kEmuBlocks at a time, on the kernel's
// shape.
template <typename Op, typename In, typename Acc>
void launch(const In *x, Acc *y, size_t n, bool inclusive) {
  using S = lookback_shape<In, Acc>;
  using Status = glc_tile_status<Acc>;
  using Scratch = glc_look_back_scratch<Status>;
  const size_t tiles = (n + S::tile - 1) / S::tile;
  std::vector<unsigned long long> scratch((Scratch::bytes(tiles) + 7) / 8, 0x5a5a5a5a5a5a5a5aull);
  memset(scratch.data(), 0, Scratch::zeroed_bytes(tiles));
  unsigned *counter = Scratch::counter(scratch.data());
  const Status status = Scratch::status(scratch.data(), tiles);
  const bool vector_ok =
      reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  run_blocks(tiles, S::threads, [&] {
    decoupled_lookback<Op, In, Acc, Status, S>(x, y, n, vector_ok, inclusive, counter, status);
  });
  if (*counter != tiles) emu_error("the tile counter does not end at the number of tiles");
}

template <typename T>
bool same_bits(T a, T b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

constexpr int kPad = 40;  // sentinels after y

// The serial scan in Acc, and for sums of floats also in double with sum(|x|) for the bound.
template <typename Op, typename In, typename Acc>
void reference(const std::vector<In> &xs, bool inclusive, std::vector<Acc> &want,
               std::vector<double> &exact, std::vector<double> &magnitude) {
  Acc run = Op::template identity<Acc>();
  double run_exact = 0, run_magnitude = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!inclusive)
      want.push_back(run), exact.push_back(run_exact), magnitude.push_back(run_magnitude);
    run = Op::apply(run, static_cast<Acc>(xs[i]));
    run_exact += static_cast<double>(xs[i]);
    run_magnitude += std::fabs(static_cast<double>(xs[i]));
    if (inclusive)
      want.push_back(run), exact.push_back(run_exact), magnitude.push_back(run_magnitude);
  }
}

// One case: x at x_shift elements and y at y_shift elements past 16-byte boundaries.
// rounding: float sums of values that round, checked against the bound instead of exactly.
template <typename Op, typename In, typename Acc>
bool check(const char *what, const std::vector<In> &xs, bool inclusive, int x_shift, int y_shift,
           bool rounding) {
  const size_t n = xs.size();
  std::vector<In> x_store(n + 16 + x_shift);
  In *x = reinterpret_cast<In *>((reinterpret_cast<uintptr_t>(x_store.data()) + 15) / 16 * 16) +
          x_shift;
  std::copy(xs.begin(), xs.end(), x);
  const Acc sentinel = static_cast<Acc>(-12345);
  std::vector<Acc> y_store(n + kPad + 16 + y_shift, sentinel);
  Acc *y = reinterpret_cast<Acc *>((reinterpret_cast<uintptr_t>(y_store.data()) + 15) / 16 * 16) +
           y_shift;
  launch<Op, In, Acc>(x, y, n, inclusive);
  std::vector<Acc> want;
  std::vector<double> exact, magnitude;
  reference<Op, In, Acc>(xs, inclusive, want, exact, magnitude);
  // tests/references/scan.py's depth of the look-back's sums: a prefix and an aggregate a tile
  const double depth = 2.0 * std::ceil(n / 2048.0) + 64;
  long wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    bool ok = same_bits(y[i], want[i]);
    if (!ok && rounding) {
      const double steps = std::min(static_cast<double>(i + 1), depth);
      const double eps = std::numeric_limits<Acc>::epsilon();
      ok = std::fabs(static_cast<double>(y[i]) - exact[i]) <= eps * steps * magnitude[i];
    }
    if (!ok && wrong++ < 3)
      fprintf(stderr, "%s n %zu %s x+%d y+%d: y[%zu] = %.17g, want %.17g\n", what, n,
              inclusive ? "inclusive" : "exclusive", x_shift, y_shift, i, static_cast<double>(y[i]),
              static_cast<double>(want[i]));
  }
  for (size_t i = n; i < n + kPad; ++i)
    if (!same_bits(y[i], sentinel) && wrong++ < 3)
      fprintf(stderr, "%s n %zu: written past y's end at %zu\n", what, n, i);
  return wrong == 0;
}

// Values whose float sums are exact in any order (small integers), or, with `rounding`, random
// ones; int32 sums near the int32 limits (their int64 sums overflow int32 at once), int64 ones
// past 2^40; for max/min a NaN now and then in floats.
template <typename Op, typename In>
std::vector<In> values(size_t n, bool rounding, std::mt19937 &rng) {
  std::vector<In> x(n);
  std::uniform_int_distribution<int> small(-8, 8);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<long long> big(-(1ll << 40), 1ll << 40);
  std::uniform_int_distribution<int> any_int(INT_MIN, INT_MAX);
  constexpr bool sum = std::is_same_v<Op, glc_scan_sum>;
  for (auto &e : x) {
    if constexpr (std::is_floating_point_v<In>)
      e = rounding ? static_cast<In>(normal(rng)) : static_cast<In>(small(rng));
    else if constexpr (sizeof(In) == 4)
      e = sum ? any_int(rng) : any_int(rng);
    else
      e = sum ? big(rng) : static_cast<In>(big(rng)) * 1000;
  }
  if constexpr (std::is_floating_point_v<In>)
    if (!sum && n > 1000 && rng() % 2) x[rng() % n] = static_cast<In>(NAN);
  return x;
}

template <typename Op, typename In>
int suite(const char *what, std::mt19937 &rng, bool quick) {
  using Acc = typename glc_scan_acc<In, Op>::type;
  using S = lookback_shape<In, Acc>;
  const long long tile = static_cast<long long>(S::tile);
  std::vector<long long> sizes = {1, 33, tile - 1, tile, tile + 1, 3 * tile - 1, 3 * tile + 1};
  if (!quick) sizes.push_back(7 * tile + 13);
  const bool long_run = std::is_same_v<Op, glc_scan_sum> && (sizeof(In) == 4 || !quick);
  if (long_run) sizes.push_back(50 * tile + 17);
  int failed = 0;
  for (long long n : sizes) {
    const bool big = n > 8 * tile;
    for (int inclusive = 1; inclusive >= 0; --inclusive) {
      if (big && quick && !inclusive) continue;
      const auto x = values<Op, In>(n, false, rng);
      // 16-byte vectors; then y off its boundary, then x off its (the scalar path for every tile)
      failed += !check<Op, In, Acc>(what, x, inclusive, 0, 0, false);
      if (!big) failed += !check<Op, In, Acc>(what, x, inclusive, 0, 1, false);
      if (!big && n <= 3 * tile + 1) failed += !check<Op, In, Acc>(what, x, inclusive, 1, 0, false);
      if (std::is_floating_point_v<In> && std::is_same_v<Op, glc_scan_sum> && !big)
        failed += !check<Op, In, Acc>(what, values<Op, In>(n, true, rng), inclusive, 0, 0, true);
    }
  }
  printf("%-22s %s (tile %d x %d = %lld)\n", what, failed ? "FAILED" : "ok", S::threads, S::rounds,
         tile);
  fflush(stdout);
  return failed;
}

// Each suite seeds its own generator, so a suite's inputs are the same whichever part runs it.
int main(int argc, char **argv) {
  bool quick;
  int part, parts;
  if (!emu_args(argc, argv, &quick, &part, &parts)) return 2;
  emu_stall_seed =
      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count() % 5);
  using Suite = int (*)(const char *, std::mt19937 &, bool);
  const struct {
    const char *what;
    Suite run;
  } suites[] = {
      {"float32 sum", suite<glc_scan_sum, float>},
      {"float32 max", suite<glc_scan_max, float>},
      {"float32 min", suite<glc_scan_min, float>},
      {"float64 sum", suite<glc_scan_sum, double>},
      {"float64 max", suite<glc_scan_max, double>},
      {"float64 min", suite<glc_scan_min, double>},
      {"int32 -> int64 sum", suite<glc_scan_sum, int>},
      {"int32 max", suite<glc_scan_max, int>},
      {"int32 min", suite<glc_scan_min, int>},
      {"int64 sum", suite<glc_scan_sum, long long>},
      {"int64 max", suite<glc_scan_max, long long>},
      {"int64 min", suite<glc_scan_min, long long>},
  };
  int failed = 0, index = 0;
  for (const auto &s : suites) {
    if (index % parts == part) {
      std::mt19937 rng(5 + index);
      failed += s.run(s.what, rng, quick);
    }
    ++index;
  }
  if (emu_errors) failed++;
  printf("%s\n", failed ? "FAILED" : "all ok");
  return failed ? 1 : 0;
}
