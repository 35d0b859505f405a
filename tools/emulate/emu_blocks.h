// What the host emulations of the scan lab's tile kernels (tools/emulate/compact_host.cpp,
// scan_host.cpp) share: the threads' indices, blocks of std::threads that run kEmuBlocks at once,
// each with its own slot of shared memory (emu_shared, which tools/emulate/host_toolchain.py's
// per_block_shared turns every __shared__ variable into), the block's barrier, the warps'
// collectives (each a std::barrier of its 32 lanes, the full mask required) and the intrinsics
// the kernels use. Each emulation adds its own atomicAdd on the tile counter (where it stalls
// claims) and its launch. Include after emu_cuda.h.
#ifndef GPULAB_TOOLS_EMULATE_EMU_BLOCKS_H
#define GPULAB_TOOLS_EMULATE_EMU_BLOCKS_H
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __launch_bounds__(...)
#define __align__(n) alignas(n)

thread_local dim3 threadIdx, blockIdx;
dim3 blockDim(256), gridDim;
std::atomic<long> emu_errors{0};

// The command line of the scan lab's emulations: "quick" (fewer and shorter sizes) and
// "part=K/N" (only the suites whose index is K modulo N, so that a test can run them as N
// processes). False, the reason on stderr, for anything else.
inline bool emu_args(int argc, char **argv, bool *quick, int *part, int *parts) {
  *quick = false, *part = 0, *parts = 1;
  for (int a = 1; a < argc; ++a) {
    if (!strcmp(argv[a], "quick"))
      *quick = true;
    else if (sscanf(argv[a], "part=%d/%d", part, parts) != 2 || *parts < 1 || *part < 0 ||
             *part >= *parts) {
      fprintf(stderr, "%s: arguments are quick and part=K/N (0 <= K < N), not %s\n", argv[0],
              argv[a]);
      return false;
    }
  }
  return true;
}

constexpr int kEmuBlocks = 3;  // blocks that run at once
thread_local int emu_slot;     // the running block's slot, 0..kEmuBlocks-1: its shared memory

struct emu_block {
  std::barrier<> block;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  unsigned long long slots[1024];
  explicit emu_block(int threads) : block(threads) {
    for (int w = 0; w < threads / 32; ++w) warps.emplace_back(new std::barrier<>(32));
  }
};
emu_block *emu_blocks[kEmuBlocks];

void emu_error(const char *what) {
  if (emu_errors++ < 5) fprintf(stderr, "%s\n", what);
}

template <typename T, int Id>
T &emu_shared() {
  alignas(16) static T slots[kEmuBlocks];
  return slots[emu_slot];
}

void __syncthreads() { emu_blocks[emu_slot]->block.arrive_and_wait(); }
void __nanosleep(unsigned) { std::this_thread::yield(); }
int __popc(unsigned v) { return __builtin_popcount(v); }
int __ffs(unsigned v) { return __builtin_ffs(static_cast<int>(v)); }

unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}

// Every lane leaves v in its slot; each reads the slot of source(lane).
template <typename T, typename Source>
T emu_warp(unsigned mask, T v, Source source) {
  if (mask != 0xffffffffu) emu_error("a warp collective without the full mask");
  emu_block &b = *emu_blocks[emu_slot];
  const int lane = threadIdx.x % 32, first = threadIdx.x - lane;
  std::barrier<> &meet = *b.warps[threadIdx.x / 32];
  unsigned long long bits = 0;
  memcpy(&bits, &v, sizeof v);
  b.slots[threadIdx.x] = bits;
  meet.arrive_and_wait();
  T out;
  const unsigned long long got = b.slots[first + source(lane)];
  memcpy(&out, &got, sizeof out);
  meet.arrive_and_wait();
  return out;
}

template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta) {
  return emu_warp(mask, v, [&](int lane) {
    return lane >= static_cast<int>(delta) ? lane - static_cast<int>(delta) : lane;
  });
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int offset) {
  return emu_warp(mask, v, [&](int lane) { return lane ^ offset; });
}
unsigned __ballot_sync(unsigned mask, int predicate) {
  if (mask != 0xffffffffu) emu_error("a warp collective without the full mask");
  emu_block &b = *emu_blocks[emu_slot];
  const int first = threadIdx.x - threadIdx.x % 32;
  std::barrier<> &meet = *b.warps[threadIdx.x / 32];
  b.slots[threadIdx.x] = predicate != 0;
  meet.arrive_and_wait();
  unsigned ballot = 0;
  for (int l = 0; l < 32; ++l) ballot |= static_cast<unsigned>(b.slots[first + l]) << l;
  meet.arrive_and_wait();
  return ballot;
}
int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
unsigned __vcmpne4(unsigned a, unsigned b) {
  unsigned r = 0;
  for (int i = 0; i < 32; i += 8)
    if (((a >> i) & 255u) != ((b >> i) & 255u)) r |= 255u << i;
  return r;
}

template <typename T>
T __ldcs(const T *p) {
  if (reinterpret_cast<uintptr_t>(p) % sizeof(T)) emu_error("a misaligned vector load");
  return *p;
}
template <typename T>
void __stcs(T *p, T v) {
  if (reinterpret_cast<uintptr_t>(p) % sizeof(T)) emu_error("a misaligned vector store");
  *p = v;
}

// Runs kernel() as `blocks` blocks of `threads` threads (each a std::thread), kEmuBlocks at a
// time, each running block in its own slot.
template <typename Kernel>
void run_blocks(size_t blocks, int threads, Kernel kernel) {
  gridDim = dim3(static_cast<unsigned>(blocks));
  blockDim = dim3(threads);
  for (size_t wave = 0; wave < blocks; wave += kEmuBlocks) {
    std::vector<std::thread> running;
    for (int slot = 0; slot < kEmuBlocks && wave + slot < blocks; ++slot) {
      emu_blocks[slot] = new emu_block(threads);
      for (int t = 0; t < threads; ++t)
        running.emplace_back([=] {
          emu_slot = slot;
          threadIdx = dim3(t);
          blockIdx = dim3(static_cast<unsigned>(wave + slot));
          kernel();
        });
    }
    for (auto &t : running) t.join();
    for (int slot = 0; slot < kEmuBlocks && wave + slot < blocks; ++slot) delete emu_blocks[slot];
  }
}

#endif
