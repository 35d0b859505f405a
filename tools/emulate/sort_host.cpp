// Host emulation of the sort lab's own kernels: the LSD radix sort (cuda/sort/radix.cu, variant
// 1 of sort, argsort and sort_pairs), the bitonic network (cuda/sort/bitonic.cu, variant 0) and
// the merge-path merge sort (cuda/sort/merge.cu, variant 3), driven by tools/emulate/sort.py,
// which writes kernel_gen.inc: each file from its anonymous namespace to its end -- the kernels,
// the grid rules, the passes' and stages' launches and buffers, glc_sort_lsd_radix,
// glc_sort_bitonic and glc_sort_merge_path themselves -- so that everything but the CUDA runtime
// is the real code.
// Launches run block after block; each CUDA thread of a block is a fiber; __syncthreads is a
// barrier of the block, and __match_any_sync and __shfl_up_sync meet the warp's 32 lanes at a
// barrier of the warp (a lane that misses one leaves the others waiting: a failure) and check
// that the mask names all 32. Every buffer, the caller's and the
// variant's scratch, is poisoned and followed by a guard zone that must stay untouched. Each sort
// is compared with a stable sort by the order bits of cuda/sort/sort.h, bit for bit. Speed and
// the memory model are not emulated: this checks the indexing, the guards and the stability, for
// every key dtype, both digit widths, the network and the merge sort, keys alone, argsort and
// pairs, ascending and descending; and onesweep's skipped passes (keys that differ in some bytes
// only), whose spare buffers must stay as poisoned when at most one pass runs.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <csetjmp>
#include <string>
#include <ucontext.h>
#include <vector>

#include <cuda/atomic>

#include "emu_cuda.h"
// sort.py turns each __shared__ variable into a call of emu_shared: one it misses fails here
#define __shared__ emu_shared_was_not_substituted
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#undef __host__
#define __host__

// Each CUDA thread is a fiber (ucontext) of one OS thread, run until it reaches a barrier (or
// waits, __nanosleep) and then the next: fast and deterministic, where a std::thread per CUDA
// thread spends its time in the kernel's futexes. Blocks run in waves of up to emu_wave at once
// (as many as 1024 fibers hold), each in its slot: its barriers, its warps' exchange and its
// shared memory (sort.py turns every __shared__ variable into the running slot's copy), so that
// a look-back across tiles finds predecessors that have published nothing yet, or only their
// aggregate.
dim3 threadIdx, blockIdx, blockDim, gridDim;
constexpr unsigned kFibers = 1024, kSlots = 4;
// A fiber starts on its own stack through makecontext/swapcontext once; after that, fibers and
// the scheduler switch with _setjmp/_longjmp, which save no signal mask: swapcontext's two
// sigprocmask system calls a switch took half of the emulation's time.
struct Fiber {
  ucontext_t context;
  jmp_buf jump;
  bool started = false;
  std::vector<char> stack = std::vector<char>(64 << 10);
  std::function<void()> body;
  unsigned thread = 0, block = 0, slot = 0;
  bool done = false;
};
std::vector<Fiber> emu_fibers(kFibers);
ucontext_t emu_scheduler;
jmp_buf emu_scheduler_jump;
unsigned emu_current, emu_slot;
long emu_errors = 0;
long emu_moves = 0;   // arrivals at barriers and fibers finished: a round without one is a deadlock
size_t emu_wave = 3;  // blocks a "wave": small, so that the emulated grid has several blocks

void emu_enter(unsigned fiber) {
  emu_current = fiber;
  threadIdx = dim3(emu_fibers[fiber].thread);
  blockIdx = dim3(emu_fibers[fiber].block);
  emu_slot = emu_fibers[fiber].slot;
}

void emu_yield() {
  const unsigned me = emu_current;
  if (!_setjmp(emu_fibers[me].jump)) _longjmp(emu_scheduler_jump, 1);
  emu_enter(me);  // the scheduler moved the globals to other fibers meanwhile
}

// A barrier of `members` fibers: each waits until the last one arrives.
struct Barrier {
  unsigned arrived = 0, generation = 0;
  void wait(unsigned members) {
    const unsigned mine = generation;
    ++emu_moves;
    if (++arrived == members) {
      arrived = 0;
      ++generation;
      return;
    }
    while (generation == mine) emu_yield();
  }
};
Barrier emu_block_barriers[kSlots], emu_warp_barriers[kSlots][32];
unsigned long long emu_slots[kSlots][1024];

template <typename T, int Id>
T &emu_shared() {
  alignas(16) static T slots[kSlots];
  return slots[emu_slot];
}

void __syncthreads() { emu_block_barriers[emu_slot].wait(blockDim.x); }

// A barrier that returns whether any thread's predicate held: votes cast after a first barrier
// (thread 0 has cleared the last call's), read after a second, cleared after a third.
int __syncthreads_or(int predicate) {
  static int votes[kSlots];
  __syncthreads();
  if (predicate) votes[emu_slot] = 1;
  __syncthreads();
  const int any = votes[emu_slot];
  __syncthreads();
  if (threadIdx.x == 0) votes[emu_slot] = 0;
  return any;
}

void emu_check_mask(unsigned mask, const char *what) {
  if (mask != 0xffffffffu && emu_errors++ < 5) fprintf(stderr, "%s with mask %08x\n", what, mask);
}

void emu_warp_wait() { emu_warp_barriers[emu_slot][threadIdx.x / 32].wait(32); }
void __syncwarp() { emu_warp_wait(); }
void __nanosleep(unsigned) { emu_yield(); }

// Every lane leaves v in its slot, meets its warp, and reads the slot of source(lane).
template <typename T, typename Source>
T emu_exchange(unsigned mask, T value, const char *what, Source source) {
  emu_check_mask(mask, what);
  unsigned long long *lanes = emu_slots[emu_slot] + threadIdx.x / 32 * 32;
  unsigned long long bits = 0;
  memcpy(&bits, &value, sizeof value);
  lanes[threadIdx.x % 32] = bits;
  emu_warp_wait();
  T out;
  memcpy(&out, &lanes[source(threadIdx.x % 32, lanes)], sizeof out);
  emu_warp_wait();
  return out;
}

unsigned __match_any_sync(unsigned mask, unsigned value) {
  unsigned peers = 0;
  emu_exchange(mask, value, "__match_any_sync", [&](unsigned lane, unsigned long long *lanes) {
    for (unsigned l = 0; l < 32; ++l)
      if (lanes[l] == value) peers |= 1u << l;
    return lane;
  });
  return peers;
}

unsigned long long __shfl_up_sync(unsigned mask, unsigned long long value, unsigned delta) {
  return emu_exchange(mask, value, "__shfl_up_sync", [&](unsigned lane, unsigned long long *) {
    return lane >= delta ? lane - delta : lane;
  });
}

unsigned __shfl_sync(unsigned mask, unsigned value, int source) {
  return emu_exchange(mask, value, "__shfl_sync",
                      [&](unsigned, unsigned long long *) { return source & 31; });
}

unsigned __ballot_sync(unsigned mask, int predicate) {
  unsigned ballot = 0;
  emu_exchange(mask, static_cast<unsigned>(predicate != 0), "__ballot_sync",
               [&](unsigned lane, unsigned long long *lanes) {
                 for (unsigned l = 0; l < 32; ++l) ballot |= static_cast<unsigned>(lanes[l]) << l;
                 return lane;
               });
  return ballot;
}

int __ffs(unsigned x) { return __builtin_ffs(static_cast<int>(x)); }
int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
int __popc(unsigned x) { return __builtin_popcount(x); }

unsigned atomicAdd(unsigned *address, unsigned value) {
  return __atomic_fetch_add(address, value, __ATOMIC_RELAXED);
}

unsigned long long atomicAdd(unsigned long long *address, unsigned long long value) {
  return __atomic_fetch_add(address, value, __ATOMIC_RELAXED);
}

extern "C" cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t) {
  memset(p, value, bytes);
  return cudaSuccess;
}

// The quicksort's read-back of its list lengths: launches have finished when they return.
cudaError_t cudaMemcpyAsync(void *to, const void *from, size_t bytes, cudaMemcpyKind,
                            cudaStream_t) {
  memcpy(to, from, bytes);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }

// ---- the runtime the pass logic calls: launches, scratch, errors ----

#include "cuda/sort/families.cuh"

int glc_fail(int code, const char *) { return code; }

#define GLC_TRY(code, call)       \
  do {                            \
    if (!(code)) (code) = (call); \
  } while (0)

inline size_t glc_blocks_to_cover(size_t n, int block) {
  return (n + static_cast<size_t>(block) - 1) / static_cast<size_t>(block);
}

template <auto kernel>
int glc_full_wave_blocks(int, size_t *blocks) {
  *blocks = emu_wave;
  return cudaSuccess;
}

constexpr size_t kGuard = 256;  // bytes after every buffer, which must stay as poisoned
constexpr unsigned char kPoison = 0xa5;

// Every buffer, the test's and the variant's: poisoned, with a guard zone after it.
struct EmuBuffer {
  std::vector<unsigned char> bytes;
  size_t size = 0;
  explicit EmuBuffer(size_t n) : bytes(n + kGuard, kPoison), size(n) {}
  bool guard_intact() const {
    return std::all_of(bytes.begin() + size, bytes.end(),
                       [](unsigned char b) { return b == kPoison; });
  }
};
std::vector<std::shared_ptr<EmuBuffer>> emu_buffers;  // all of one sort's, checked after it

struct GlcDeviceBuffer {
  void *ptr = nullptr;
  int allocate(size_t bytes, cudaStream_t) {
    emu_buffers.push_back(std::make_shared<EmuBuffer>(bytes));
    ptr = emu_buffers.back()->bytes.data();
    return cudaSuccess;
  }
  template <typename T>
  T *as() const {
    return static_cast<T *>(ptr);
  }
};

#include "cuda/sort/passes.cuh"  // after the emulated GlcDeviceBuffer, which it uses

void emu_fiber_entry() {
  emu_fibers[emu_current].body();
  emu_fibers[emu_current].done = true;
  ++emu_moves;
  _longjmp(emu_scheduler_jump, 1);  // never returns: uc_link's context would be stale
}

// Runs `count` fibers round-robin, from `first` on, until all have returned; false for a round
// in which none arrives anywhere or returns while some wait: a deadlock (a thread missing from a
// barrier, or a look-back waiting for a tile that never publishes).
bool emu_run(unsigned count, unsigned first) {
  for (unsigned f = 0; f < count; ++f) {
    Fiber &fiber = emu_fibers[f];
    fiber.done = false;
    fiber.started = false;
    getcontext(&fiber.context);
    fiber.context.uc_stack.ss_sp = fiber.stack.data();
    fiber.context.uc_stack.ss_size = fiber.stack.size();
    fiber.context.uc_link = &emu_scheduler;
    makecontext(&fiber.context, emu_fiber_entry, 0);
  }
  for (;;) {
    const long moves = emu_moves;
    bool all_done = true;
    for (unsigned k = 0; k < count; ++k) {
      const unsigned f = (first + k) % count;
      if (emu_fibers[f].done) continue;
      all_done = false;
      emu_enter(f);
      if (!_setjmp(emu_scheduler_jump)) {
        if (emu_fibers[f].started) _longjmp(emu_fibers[f].jump, 1);
        emu_fibers[f].started = true;
        swapcontext(&emu_scheduler, &emu_fibers[f].context);
      }
    }
    if (all_done) return true;
    if (emu_moves == moves) return false;
  }
}

// The grid in waves of blocks that run at once; each wave starts its round-robin at another
// fiber, so that the blocks take their tile ids (atomicAdd) in varying orders.
template <typename... Params, typename... Args>
int glc_launch(void (*kernel)(Params...), const char *name, dim3 grid, dim3 block, cudaStream_t,
               Args... args) {
  gridDim = grid;
  blockDim = block;
  const unsigned wave = static_cast<unsigned>(
      std::max<size_t>(1, std::min<size_t>({emu_wave, kSlots, kFibers / block.x})));
  for (unsigned b = 0; b < grid.x; b += wave) {
    const unsigned blocks = std::min(wave, grid.x - b);
    for (unsigned slot = 0; slot < blocks; ++slot) {
      emu_block_barriers[slot] = Barrier{};
      for (auto &w : emu_warp_barriers[slot]) w = Barrier{};
      for (unsigned t = 0; t < block.x; ++t) {
        Fiber &fiber = emu_fibers[slot * block.x + t];
        fiber.thread = t;
        fiber.block = b + slot;
        fiber.slot = slot;
        fiber.body = [=] { kernel(static_cast<Params>(args)...); };
      }
    }
    if (!emu_run(blocks * block.x, (b / wave * 97 + 13) % (blocks * block.x))) {
      printf("FAIL: %s hung in the wave of block %u\n", name, b);
      exit(1);
    }
  }
  return cudaSuccess;
}

#ifndef EMU_SORT_RUNTIME_ONLY  // quicksort_cdp_host.cpp: this runtime, its own kernels and main
#include "kernel_gen.inc"
#endif

// ---- the checks ----

template <typename Bits>
Bits order_of(Bits key, int dtype, bool descending) {
  Bits ordered;
  if constexpr (sizeof(Bits) == 8)
    ordered = glc_sort_order_bits64(key, dtype);
  else
    ordered = glc_sort_order_bits32(key, dtype);
  return descending ? ~ordered : ordered;
}

// Keys of the dtype: a few distinct values (ties), or random bits, with the float specials
// (NaN of both signs and two payloads, -0.0, +-inf) mixed in.
template <typename Bits>
std::vector<Bits> make_keys(size_t n, int dtype, bool few, std::mt19937_64 &rng) {
  std::vector<Bits> keys(n);
  std::vector<Bits> specials;
  if (sizeof(Bits) == 4 && dtype == GLC_F32)
    specials = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x80000000u, 0x00000000u,
                0x7f800000u, 0xff800000u, 0x3f800000u, 0xbf800000u};
  else if (dtype == GLC_F64)
    specials = {Bits(0x7ff8000000000000ull),
                Bits(0xfff8000000000000ull),
                Bits(0x7ff0000000000001ull),
                Bits(0x8000000000000000ull),
                Bits(0),
                Bits(0x7ff0000000000000ull),
                Bits(0xfff0000000000000ull),
                Bits(0x3ff0000000000000ull),
                Bits(0xbff0000000000000ull)};
  else
    specials = {Bits(0), Bits(1), Bits(~Bits(0)), Bits(Bits(1) << (8 * sizeof(Bits) - 1)),
                Bits(~(Bits(1) << (8 * sizeof(Bits) - 1)))};
  for (auto &k : keys) {
    const unsigned pick = rng() % 8;
    k = few ? specials[pick % 3] : pick < 3 ? specials[rng() % specials.size()] : Bits(rng());
  }
  return keys;
}

#ifndef EMU_SORT_RUNTIME_ONLY  // quicksort_cdp_host.cpp has its own checks and main
// The shapes of the quicksort's inputs beyond make_keys' random ones (few or not); kBytes (for
// onesweep's skipped passes): keys whose order bits differ only in the bytes of a mask.
enum Shape { kRandom, kSorted, kReversed, kAllEqual, kShapes, kBytes };

// A key whose order bits (ascending) are `ordered`: order_of's inverse, but for the keys it
// folds (-0.0, NaN).
template <typename Bits>
Bits key_with_order(Bits ordered, int dtype) {
  const Bits sign = Bits(1) << (8 * sizeof(Bits) - 1);
  if (dtype == GLC_U32) return ordered;
  if (dtype == GLC_F32 || dtype == GLC_F64) return (ordered & sign) ? ordered ^ sign : ~ordered;
  return ordered ^ sign;
}

// n keys whose order bits are one random value's but in the bytes of `varying` (bit b: byte b),
// which take one of 5 values each: ties, so stability shows.
template <typename Bits>
std::vector<Bits> keys_varying_in(size_t n, int dtype, unsigned varying, std::mt19937_64 &rng) {
  const Bits base = Bits(rng());
  std::vector<Bits> keys(n);
  for (auto &k : keys) {
    Bits ordered = base;
    for (unsigned b = 0; b < sizeof(Bits); ++b)
      if ((varying >> b) & 1u)
        ordered = (ordered & ~(Bits(0xff) << (8 * b))) | (Bits(rng() % 5 * 61) << (8 * b));
    k = key_with_order(ordered, dtype);
  }
  return keys;
}

// Onesweep's passes that run for these keys: those of the bytes in which their order bits differ.
template <typename Bits>
int passes_that_run(const std::vector<Bits> &keys, int dtype, bool descending) {
  int passes = 0;
  for (unsigned b = 0; b < sizeof(Bits); ++b)
    passes += std::any_of(keys.begin(), keys.end(), [&](Bits k) {
      return ((order_of(k, dtype, descending) ^ order_of(keys[0], dtype, descending)) >> (8 * b)) &
             0xff;
    });
  return passes;
}

bool untouched(const EmuBuffer &b) {
  return std::all_of(b.bytes.begin(), b.bytes.end(), [](unsigned char c) { return c == kPoison; });
}

// One sort through the variant (GLC_SORT_*; bits: lsd_radix's digit width, or the quicksort's
// level limit) against std::stable_sort by the order bits.
template <typename Bits>
bool check(int variant, int dtype, int bits, size_t n, int values_kind, bool descending, bool few,
           std::mt19937_64 &rng, Shape shape = kRandom, unsigned varying = 0) {
  std::vector<Bits> keys_host = shape == kBytes ? keys_varying_in<Bits>(n, dtype, varying, rng)
                                                : make_keys<Bits>(n, dtype, few, rng);
  if (shape == kSorted || shape == kReversed)
    std::stable_sort(keys_host.begin(), keys_host.end(), [&](Bits a, Bits b) {
      return order_of(a, dtype, shape == kReversed) < order_of(b, dtype, shape == kReversed);
    });
  if (shape == kAllEqual) std::fill(keys_host.begin(), keys_host.end(), keys_host[0]);
  emu_buffers.clear();
  GlcDeviceBuffer keys, keys_out, values, values_out;
  const int value_bytes = values_kind == 0 ? 0 : values_kind == 4 ? 4 : 8;
  const bool argsort = values_kind == -1;
  keys.allocate(n * sizeof(Bits), nullptr);
  memcpy(keys.ptr, keys_host.data(), n * sizeof(Bits));
  if (!argsort) keys_out.allocate(n * sizeof(Bits), nullptr);
  if (value_bytes) values_out.allocate(n * value_bytes, nullptr);
  if (value_bytes && !argsort) {
    values.allocate(n * value_bytes, nullptr);
    for (size_t i = 0; i < n; ++i) {  // each value names its key's position
      const unsigned long long v = i * 7 + 3;
      memcpy(static_cast<char *>(values.ptr) + i * value_bytes, &v, value_bytes);
    }
  }
  const glc_sort_call call = {dtype,      descending,     n,
                              keys.ptr,   keys_out.ptr,   value_bytes,
                              values.ptr, values_out.ptr, nullptr};
  const size_t callers_buffers = emu_buffers.size();
  if (variant == GLC_SORT_QUICKSORT)
    quicksort_with_levels(call, bits);
  else if (variant == GLC_SORT_BITONIC)
    glc_sort_bitonic(call);
  else if (variant == GLC_SORT_ONESWEEP)
    glc_sort_onesweep(call);
  else if (variant == GLC_SORT_LSD_RADIX)
    glc_sort_lsd_radix(call, bits);
  else
    glc_sort_merge_path(call);

  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return order_of(keys_host[a], dtype, descending) < order_of(keys_host[b], dtype, descending);
  });
  bool ok = true;
  for (size_t i = 0; i < n && ok; ++i) {
    const size_t from = order[i];
    if (keys_out.ptr && keys_out.as<Bits>()[i] != keys_host[from]) ok = false;
    if (argsort && values_out.as<unsigned long long>()[i] != from) ok = false;
    if (value_bytes && !argsort) {
      unsigned long long got = 0;
      memcpy(&got, static_cast<char *>(values_out.ptr) + i * value_bytes, value_bytes);
      const unsigned long long want = from * 7 + 3;
      if (got != (value_bytes == 4 ? want & 0xffffffffull : want)) ok = false;
    }
    if (!ok)
      printf(
          "FAIL variant %d dtype %d bits %d n %zu values %d descending %d few %d shape %d: "
          "position %zu\n",
          variant, dtype, bits, n, values_kind, descending, few, shape, i);
  }
  for (auto &b : emu_buffers)
    if (!b->guard_intact()) {
      printf(
          "FAIL variant %d dtype %d bits %d n %zu values %d descending %d: a write past a buffer\n",
          variant, dtype, bits, n, values_kind, descending);
      ok = false;
    }
  // Onesweep's buffers after its scratch: the spare keys, argsort's keys, the spare values. With
  // at most one pass to run, that pass writes the outputs and the spares stay as poisoned: the
  // passes that would move nothing were skipped.
  if (variant == GLC_SORT_ONESWEEP && passes_that_run(keys_host, dtype, descending) <= 1) {
    const EmuBuffer &key_spare = *emu_buffers.at(callers_buffers + 1);
    const EmuBuffer &value_spare = *emu_buffers.back();
    if (!untouched(key_spare) || (value_bytes && !untouched(value_spare))) {
      printf(
          "FAIL onesweep dtype %d n %zu values %d descending %d: %d pass(es) to run, yet the "
          "spare buffers were written\n",
          dtype, n, values_kind, descending, passes_that_run(keys_host, dtype, descending));
      ok = false;
    }
  }
  return ok;
}

// argv[1]: radix, bitonic, merge, onesweep, quicksort or all (the default).
int main(int argc, char **argv) {
  const std::string only = argc > 1 ? argv[1] : "all";
  std::mt19937_64 rng(12);
  long failures = 0, sorts = 0;
  // radix: 1, one round of 256 +-1, one block of 17 rounds ending mid-round, and 3 blocks of 17
  // rounds (a wave of 3) whose last ends mid-round; the network: no step, shared steps only, and
  // padded to 8192 and 16384 (global steps); the merge sort (tiles of 2048): one short tile, a
  // tile -1, 0 and +1, two tiles and a key (3 runs: a pass with a lone run), and 5 tiles and a
  // part (6 runs, then 3 of 4096, one of them lone, then 2: blocks that start mid-run)
  const std::vector<size_t> sizes = {1, 255, 257, 4097, 13000};
  const std::vector<size_t> merge_sizes = {1, 2047, 2048, 2049, 4097, 11017};
  // onesweep: one 8-byte-key tile (2304) + 1, one tile of 4-byte keys with 8-byte values
  // (3840) +- 1, one of 4-byte keys with 4-byte values (5120) +- 1, one of 4-byte keys alone
  // (6144) +- 1 and two exactly, and 4 to 12 tiles (two waves or more) whose last is partial
  const std::vector<size_t> onesweep_sizes = {1,    2305, 3839,  3841,  5119, 5121,
                                              6143, 6145, 12288, 13000, 27000};
  const struct {
    const char *name;
    int variant, bits;
    const std::vector<size_t> &sizes;
  } runs[] = {{"radix", GLC_SORT_LSD_RADIX, 4, sizes},
              {"radix", GLC_SORT_LSD_RADIX, 8, sizes},
              {"bitonic", GLC_SORT_BITONIC, 0, sizes},
              {"merge", GLC_SORT_MERGE_PATH, 0, merge_sizes},
              {"onesweep", GLC_SORT_ONESWEEP, 0, onesweep_sizes}};
  const struct {
    int dtype;
    bool wide;
  } dtypes[] = {
      {GLC_I32, false}, {GLC_U32, false}, {GLC_F32, false}, {GLC_I64, true}, {GLC_F64, true}};
  for (const auto &d : dtypes)
    for (const auto &run : runs)
      for (size_t n : run.sizes) {
        if (only != "all" && only != run.name) continue;
        for (int values_kind : {0, 4, -1, 8})
          for (bool descending : {false, true}) {
            if (values_kind != 0 && descending) continue;  // the value paths, ascending
            const bool few = (n + values_kind) % 2 == 0;
            const bool ok = d.wide ? check<unsigned long long>(run.variant, d.dtype, run.bits, n,
                                                               values_kind, descending, few, rng)
                                   : check<unsigned>(run.variant, d.dtype, run.bits, n, values_kind,
                                                     descending, few, rng);
            failures += !ok;
            ++sorts;
          }
      }
  // Onesweep's skipped passes: keys whose order bits differ in some bytes only (none: all equal;
  // the lowest: the upper passes skipped; the top: the lower ones; a middle one; two or three,
  // so that an even and an odd number of passes run, the first of them reading the inputs), for
  // keys, argsort and 4- and 8-byte values, both ways, each dtype, at one key, one tile +1 and
  // 27000 keys (4 to 12 tiles, two waves or more).
  const std::vector<unsigned> narrow_masks = {0x0, 0x1, 0x8, 0x4, 0x9, 0x7};
  const std::vector<unsigned> wide_masks = {0x00, 0x01, 0x80, 0x10, 0x0f, 0x85, 0x22};
  const size_t skip_sizes[] = {1, 2305, 6145, 27000};
  long skip_turn = 0;
  for (const auto &d : dtypes)
    for (unsigned varying : d.wide ? wide_masks : narrow_masks)
      for (int values_kind : {0, 4, -1, 8})
        for (bool descending : {false, true}) {
          if (only != "all" && only != "onesweep") continue;
          const size_t n = skip_sizes[(skip_turn + skip_turn / 8) % 4];  // each op, each size
          ++skip_turn;
          const bool ok =
              d.wide ? check<unsigned long long>(GLC_SORT_ONESWEEP, d.dtype, 0, n, values_kind,
                                                 descending, false, rng, kBytes, varying)
                     : check<unsigned>(GLC_SORT_ONESWEEP, d.dtype, 0, n, values_kind, descending,
                                       false, rng, kBytes, varying);
          failures += !ok;
          ++sorts;
        }
  // The quicksort: one and two keys, a leaf +-1, 4 tiles less 1 (a segment ending mid-tile),
  // and several levels; every shape, ties and float specials; then level limits of 1 and 2,
  // which leave segments to the merge-sort fallback (one or several merge passes).
  const size_t quicksort_sizes[] = {1, 2, 2047, 2048, 2049, 16383, 40000};
  long shape_turn = 0;
  for (const auto &d : dtypes)
    for (size_t n : quicksort_sizes)
      for (int values_kind : {0, 4, -1, 8})
        for (bool descending : {false, true}) {
          if (only != "all" && only != "quicksort") continue;
          if (values_kind != 0 && descending) continue;
          const Shape shape = static_cast<Shape>(shape_turn % kShapes);
          const bool few = shape_turn++ % 3 == 1;
          const bool ok = d.wide
                              ? check<unsigned long long>(GLC_SORT_QUICKSORT, d.dtype, 64, n,
                                                          values_kind, descending, few, rng, shape)
                              : check<unsigned>(GLC_SORT_QUICKSORT, d.dtype, 64, n, values_kind,
                                                descending, few, rng, shape);
          failures += !ok;
          ++sorts;
        }
  for (int levels : {1, 2})
    for (size_t n : {size_t(9000), size_t(40000)})
      for (int values_kind : {0, -1}) {
        if (only != "all" && only != "quicksort") continue;
        const bool descending = values_kind != 0;
        const bool ok = check<unsigned>(GLC_SORT_QUICKSORT, GLC_F32, levels, n, values_kind,
                                        descending, false, rng) &&
                        check<unsigned long long>(GLC_SORT_QUICKSORT, GLC_I64, levels, n,
                                                  values_kind, !descending, true, rng, kSorted);
        failures += !ok;
        ++sorts;
      }
  if (emu_errors) printf("FAIL: %ld warp intrinsics with a partial mask\n", emu_errors);
  printf("%ld sorts, %ld failed\n", sorts, failures);
  if (failures == 0 && emu_errors == 0) printf("all ok\n");
  return failures || emu_errors ? 1 : 0;
}
#endif
