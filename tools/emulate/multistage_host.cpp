// Host emulation of the multistage SGEMM kernel (cuda/linalg/matmul_multistage.cu), driven by
// tools/emulate/multistage.py, which writes kernel_gen.inc (the kernel's own source with cp.async,
// __syncthreads and shared memory swapped for the functions below) and configs.inc (one SUITE line
// per configuration of the variant table). Each CUDA thread is a std::thread, a block's barrier a
// std::barrier; cp.async copies land either at issue ("early") or only at the wait that covers
// them ("late", the latest the hardware may); shared memory starts as NaN, so a read of a slice
// that has not landed shows in C; every copy's source is checked against A's and B's extents,
// every destination against the shared buffer, and nothing may be written past C. Results are
// compared with a float64 product within 2 k eps sum |a b|. Speed and the hardware's memory
// model are not emulated: this checks the indexing and the pipeline's order, not the GPU.
#include <cuda_runtime.h>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>
#include <atomic>
#include <cstdint>
#include "emu_cuda.h"
thread_local dim3 threadIdx, blockIdx;
dim3 gridDim;
float *emu_shared;
size_t emu_shared_floats;
std::barrier<> *emu_barrier;
bool emu_late;  // copies land at the wait (late) or at issue (early)
const float *g_a_lo, *g_a_hi, *g_b_lo, *g_b_hi;
std::atomic<long> emu_errors{0};
struct copy {
  float *dst;
  const float *src;
  int n;
  bool in;
};
thread_local std::vector<copy> cur;
thread_local std::vector<std::vector<copy>> groups;
void check_src(const float *src, int n) {
  bool ok = (src >= g_a_lo && src + n <= g_a_hi) || (src >= g_b_lo && src + n <= g_b_hi);
  if (!ok && emu_errors++ < 5) fprintf(stderr, "out-of-range copy source\n");
}
void do_copy(const copy &c) {
  if (c.dst < emu_shared || c.dst + c.n > emu_shared + emu_shared_floats) {
    if (emu_errors++ < 5) fprintf(stderr, "out-of-range shared write\n");
    return;
  }
  if ((reinterpret_cast<uintptr_t>(c.dst) % (4 * c.n)) ||
      (reinterpret_cast<uintptr_t>(c.src) % (4 * c.n))) {
    if (emu_errors++ < 5) fprintf(stderr, "misaligned copy %d\n", c.n);
  }
  for (int i = 0; i < c.n; ++i) c.dst[i] = c.in ? c.src[i] : 0.0f;
}
void emu_issue(float *dst, const float *src, int n, bool in) {
  if (in) check_src(src, n);
  copy c{dst, src, n, in};
  if (emu_late)
    cur.push_back(c);
  else
    do_copy(c);
}
void emu_cp_async4(float *dst, const float *src, bool in) { emu_issue(dst, src, 1, in); }
void emu_cp_async16(float *dst, const float *src, bool in) { emu_issue(dst, src, 4, in); }
void emu_commit() {
  groups.push_back(cur);
  cur.clear();
}
void emu_wait(int pending) {
  while ((int)groups.size() > pending) {
    for (auto &c : groups.front()) do_copy(c);
    groups.erase(groups.begin());
  }
}
void emu_sync() { emu_barrier->arrive_and_wait(); }
#define __syncthreads emu_sync
#include "kernel_gen.inc"

template <int BM, int WARPS, int BK, int STAGES>
bool run(size_t m, size_t n, size_t k, int offset, unsigned grid_y_cap, bool late) {
  using S = multistage_shape<BM, WARPS, BK, STAGES>;
  std::mt19937 rng(m * 131 + n * 7 + k);
  std::normal_distribution<float> nd;
  std::vector<float> A(m * k + 8), B(k * n + 8), C(m * n + 8, NAN);
  for (auto &x : A) x = nd(rng);
  for (auto &x : B) x = nd(rng);
  // 16-byte aligned bases, then offset floats in
  float *a = A.data(), *b = B.data(), *c = C.data();
  while (reinterpret_cast<uintptr_t>(a) % 16) ++a;
  while (reinterpret_cast<uintptr_t>(b) % 16) ++b;
  while (reinterpret_cast<uintptr_t>(c) % 16) ++c;
  // offset 1: B's and C's 4-byte paths (16-byte copies and stores need 16-byte alignment)
  a += offset;
  b += offset;
  c += offset;
  g_a_lo = a;
  g_a_hi = a + m * k;
  g_b_lo = b;
  g_b_hi = b + k * n;
  const int vector = ((reinterpret_cast<uintptr_t>(b) % 16 == 0 && n % 4 == 0) ? 1 : 0) |
                     ((reinterpret_cast<uintptr_t>(c) % 16 == 0 && n % 4 == 0) ? 2 : 0);
  std::vector<float> smem(S::SHARED_BYTES / 4 + 4);
  emu_shared = smem.data();
  while (reinterpret_cast<uintptr_t>(emu_shared) % 16) ++emu_shared;
  emu_shared_floats = S::SHARED_BYTES / 4;
  emu_late = late;
  const unsigned gx = (n + S::BN - 1) / S::BN;
  const unsigned gy = std::min<unsigned>((m + S::BM - 1) / S::BM, grid_y_cap);
  gridDim = dim3(gx, gy);
  for (unsigned by = 0; by < gy; ++by)
    for (unsigned bx = 0; bx < gx; ++bx) {
      for (size_t i = 0; i < emu_shared_floats; ++i) emu_shared[i] = NAN;  // stale reads show
      std::barrier<> bar(S::THREADS);
      emu_barrier = &bar;
      std::vector<std::thread> ts;
      for (int t = 0; t < S::THREADS; ++t)
        ts.emplace_back([=] {
          threadIdx = dim3(t);
          blockIdx = dim3(bx, by);
          groups.clear();
          cur.clear();
          sgemm_multistage<BM, WARPS, BK, STAGES>(m, n, k, a, b, c, vector);
          if (!groups.empty() || !cur.empty()) {
            bool real = false;
            for (auto &g : groups) real |= !g.empty();
            real |= !cur.empty();
            if (real && emu_errors++ < 5) fprintf(stderr, "copies pending at exit\n");
          }
        });
      for (auto &t : ts) t.join();
    }
  long bad = 0;
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double want = 0, scale = 0;
      for (size_t p = 0; p < k; ++p) {
        want += (double)a[i * k + p] * b[p * n + j];
        scale += std::fabs((double)a[i * k + p] * b[p * n + j]);
      }
      const double got = c[i * n + j];
      if (!(std::fabs(got - want) <= 2 * k * 6e-8 * scale + 1e-30)) {
        if (bad++ < 3) fprintf(stderr, "  C[%zu][%zu] = %g, want %g\n", i, j, got, want);
      }
    }
  // nothing written past C
  for (size_t i = m * n; i < m * n + 4 && c + i < C.data() + C.size(); ++i)
    if (!std::isnan(c[i])) {
      bad++;
      fprintf(stderr, "  write past C\n");
    }
  const bool ok = bad == 0 && emu_errors == 0;
  printf("<%d,%d,%d,%d> %zux%zux%zu off %d gy %u %s: %s\n", BM, WARPS, BK, STAGES, m, k, n, offset,
         gy, late ? "late" : "early", ok ? "ok" : "FAIL");
  emu_errors = 0;
  return ok;
}

template <int BM, int W, int BK, int ST>
bool suite() {
  bool ok = true;
  struct shape {
    size_t m, k, n;
    int off;
    unsigned gy;
    bool late;
  };
  const shape shapes[] = {{1, 1, 1, 0, 65535, true},
                          {130, 9, 131, 0, 65535, true},
                          {129, 70, 132, 0, 1, true},
                          {200, 33, 388, 1, 65535, false},
                          {256, 16, 256, 0, 65535, false},
                          {300, 41, 260, 1, 1, true},
                          {5, 8, 7, 0, 65535, true},
                          {140, 17, 20, 0, 65535, false},
                          // a 256-row tile and one row past it; two whole 256 x 128 tiles down,
                          // exact in k; a 256-row tile half full (128 rows: a 128-row tile's
                          // whole-tile test would pass); three 256-row tiles (the last ragged) on
                          // one grid row
                          {257, 24, 130, 1, 65535, true},
                          {512, 16, 256, 0, 65535, false},
                          {384, 8, 132, 0, 65535, true},
                          {513, 40, 129, 0, 1, true},
                          // the whole-slice loop (whole row and column tiles, B on the 16-byte
                          // grain): two 128-row tiles in one block's loop (gy 1) with a ragged
                          // last slice of k; whole slices to the end of k over three 128-row
                          // tiles (of two 256-row tiles the second is half full: the general
                          // loop alone); a ragged third column tile beside two whole ones
                          {256, 101, 256, 0, 1, true},
                          {384, 96, 384, 0, 65535, false},
                          {131, 64, 260, 0, 1, true}};
  for (auto s : shapes) ok &= run<BM, W, BK, ST>(s.m, s.n, s.k, s.off, s.gy, s.late);
  return ok;
}

int main() {
  bool ok = true;
#define SUITE(BM, W, BK, ST) ok &= suite<BM, W, BK, ST>();
#include "configs.inc"
#undef SUITE
  printf(ok ? "ALL OK\n" : "SOME FAILED\n");
  return ok ? 0 : 1;
}
