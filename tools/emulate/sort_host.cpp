// Host emulation of the sort lab's own kernels: the LSD radix sort (cuda/sort/radix.cu, variant
// 1 of sort, argsort and sort_pairs) and the bitonic network (cuda/sort/bitonic.cu, variant 0),
// driven by tools/emulate/sort.py, which writes kernel_gen.inc: each file from its anonymous
// namespace to its end -- the kernels, the grid rules, the passes' and stages' launches and
// buffers, glc_sort_lsd_radix and glc_sort_bitonic themselves -- so that everything but the CUDA
// runtime is the real code.
// Launches run block after block; each CUDA thread of a block is a fiber; __syncthreads is a
// barrier of the block, and __match_any_sync and __shfl_up_sync meet the warp's 32 lanes at a
// barrier of the warp (a lane that misses one leaves the others waiting: a failure) and check
// that the mask names all 32. Every buffer, the caller's and the
// variant's scratch, is poisoned and followed by a guard zone that must stay untouched. Each sort
// is compared with a stable sort by the order bits of cuda/sort/sort.h, bit for bit. Speed and
// the memory model are not emulated: this checks the indexing, the guards and the stability, for
// every key dtype, both digit widths and the network, keys alone, argsort and pairs, ascending
// and descending.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <ucontext.h>
#include <vector>

#include "emu_cuda.h"
#define __shared__ static
#define __launch_bounds__(threads)
#undef __host__
#define __host__

// Each CUDA thread of a block is a fiber (ucontext) of one OS thread, run until it reaches a
// barrier and then the next: fast and deterministic, where a std::thread per CUDA thread spends
// its time in the kernel's futexes.
dim3 threadIdx, blockIdx, blockDim, gridDim;
struct Fiber {
  ucontext_t context;
  std::vector<char> stack = std::vector<char>(64 << 10);
  std::function<void()> body;
  bool done = false;
};
std::vector<Fiber> emu_fibers(1024);
ucontext_t emu_scheduler;
unsigned emu_current;
long emu_errors = 0;
long emu_moves = 0;   // arrivals at barriers and fibers finished: a round without one is a deadlock
size_t emu_wave = 3;  // blocks a "wave": small, so that the emulated grid has several blocks

void emu_yield() {
  threadIdx = dim3(emu_current);  // restored on the way back (the scheduler moves it)
  swapcontext(&emu_fibers[emu_current].context, &emu_scheduler);
  threadIdx = dim3(emu_current);
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
Barrier emu_block_barrier, emu_warp_barriers[32];
unsigned long long emu_slots[1024];

void __syncthreads() { emu_block_barrier.wait(blockDim.x); }

void emu_check_mask(unsigned mask, const char *what) {
  if (mask != 0xffffffffu && emu_errors++ < 5) fprintf(stderr, "%s with mask %08x\n", what, mask);
}

void emu_warp_wait() { emu_warp_barriers[threadIdx.x / 32].wait(32); }

unsigned __match_any_sync(unsigned mask, unsigned value) {
  emu_check_mask(mask, "__match_any_sync");
  const unsigned warp_base = threadIdx.x / 32 * 32;
  emu_slots[threadIdx.x] = value;
  emu_warp_wait();
  unsigned peers = 0;
  for (unsigned lane = 0; lane < 32; ++lane)
    if (emu_slots[warp_base + lane] == value) peers |= 1u << lane;
  emu_warp_wait();
  return peers;
}

unsigned long long __shfl_up_sync(unsigned mask, unsigned long long value, unsigned delta) {
  emu_check_mask(mask, "__shfl_up_sync");
  emu_slots[threadIdx.x] = value;
  emu_warp_wait();
  const unsigned lane = threadIdx.x % 32;
  const unsigned long long out = lane >= delta ? emu_slots[threadIdx.x - delta] : value;
  emu_warp_wait();
  return out;
}

int __popc(unsigned x) { return __builtin_popcount(x); }

unsigned atomicAdd(unsigned *address, unsigned value) {
  return __atomic_fetch_add(address, value, __ATOMIC_RELAXED);
}

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

void emu_fiber_entry() {
  emu_fibers[emu_current].body();
  emu_fibers[emu_current].done = true;  // then back to the scheduler through uc_link
  ++emu_moves;
}

// Runs the block's fibers round-robin until all have returned; false for a round in which none
// arrives anywhere or returns while some wait: a deadlock (a thread missing from a barrier).
bool emu_run_block(unsigned threads) {
  for (unsigned t = 0; t < threads; ++t) {
    Fiber &f = emu_fibers[t];
    f.done = false;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.data();
    f.context.uc_stack.ss_size = f.stack.size();
    f.context.uc_link = &emu_scheduler;
    makecontext(&f.context, emu_fiber_entry, 0);
  }
  for (;;) {
    const long moves = emu_moves;
    bool all_done = true;
    for (unsigned t = 0; t < threads; ++t) {
      if (emu_fibers[t].done) continue;
      all_done = false;
      emu_current = t;
      threadIdx = dim3(t);
      swapcontext(&emu_scheduler, &emu_fibers[t].context);
    }
    if (all_done) return true;
    if (emu_moves == moves) return false;
  }
}

template <typename... Params, typename... Args>
int glc_launch(void (*kernel)(Params...), const char *name, dim3 grid, dim3 block, cudaStream_t,
               Args... args) {
  gridDim = grid;
  blockDim = block;
  for (unsigned b = 0; b < grid.x; ++b) {
    blockIdx = dim3(b);
    emu_block_barrier = Barrier{};
    for (auto &w : emu_warp_barriers) w = Barrier{};
    for (unsigned t = 0; t < block.x; ++t)
      emu_fibers[t].body = [=] { kernel(static_cast<Params>(args)...); };
    if (!emu_run_block(block.x)) {
      printf("FAIL: %s hung in block %u\n", name, b);
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

// One sort through glc_sort_lsd_radix (bits 4 or 8) or glc_sort_bitonic (bits 0) against
// std::stable_sort by the order bits.
template <typename Bits>
bool check(int dtype, int bits, size_t n, int values_kind, bool descending, bool few,
           std::mt19937_64 &rng) {
  const std::vector<Bits> keys_host = make_keys<Bits>(n, dtype, few, rng);
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
  if (bits == 0)
    glc_sort_bitonic(call);
  else
    glc_sort_lsd_radix(call, bits);

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
      printf("FAIL dtype %d bits %d n %zu values %d descending %d few %d: position %zu\n", dtype,
             bits, n, values_kind, descending, few, i);
  }
  for (auto &b : emu_buffers)
    if (!b->guard_intact()) {
      printf("FAIL dtype %d bits %d n %zu values %d descending %d: a write past a buffer\n", dtype,
             bits, n, values_kind, descending);
      ok = false;
    }
  return ok;
}

#ifndef EMU_SORT_RUNTIME_ONLY
// argv[1]: radix, bitonic or all (the default).
int main(int argc, char **argv) {
  const std::string only = argc > 1 ? argv[1] : "all";
  std::mt19937_64 rng(12);
  long failures = 0, sorts = 0;
  // 1, one round of 256 +-1, one block of 17 rounds ending mid-round, and 3 blocks of 17 rounds
  // (a wave of 3) whose last ends mid-round; for the network: no step, shared steps only, and
  // padded to 8192 and 16384 (global steps)
  const size_t sizes[] = {1, 255, 257, 4097, 13000};
  const struct {
    int dtype;
    bool wide;
  } dtypes[] = {
      {GLC_I32, false}, {GLC_U32, false}, {GLC_F32, false}, {GLC_I64, true}, {GLC_F64, true}};
  for (const auto &d : dtypes)
    for (int bits : {4, 8, 0})  // 0: the bitonic network
      for (size_t n : sizes) {
        if (only != "all" && only != (bits ? "radix" : "bitonic")) continue;
        for (int values_kind : {0, 4, -1, 8})
          for (bool descending : {false, true}) {
            if (values_kind != 0 && descending) continue;  // the value paths, ascending
            const bool few = (n + values_kind) % 2 == 0;
            const bool ok =
                d.wide
                    ? check<unsigned long long>(d.dtype, bits, n, values_kind, descending, few, rng)
                    : check<unsigned>(d.dtype, bits, n, values_kind, descending, few, rng);
            failures += !ok;
            ++sorts;
          }
      }
  if (emu_errors) printf("FAIL: %ld warp intrinsics with a partial mask\n", emu_errors);
  printf("%ld sorts, %ld failed\n", sorts, failures);
  if (failures == 0 && emu_errors == 0) printf("all ok\n");
  return failures || emu_errors ? 1 : 0;
}
#endif
