/* Host primitives: OpenMP introspection, a parallel memcpy (pinned staging buffers) and memset
 * (fresh results faulted in), and FP32 and FP64 FMA loops that measure the CPU's arithmetic
 * ceilings. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "host.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this a single memcpy beats waking the thread team. */
#define PARALLEL_COPY_MIN_BYTES ((size_t)1 << 20)
/* Slice boundaries fall on destination page boundaries, so no two threads ever write the same
 * page (or cache line) and each slice's memcpy streams over whole pages. */
#define PARALLEL_COPY_ALIGN ((uintptr_t)4096)
/* Fewer threads for mid-sized copies: a slice much smaller than this is dominated by the
 * thread's wake-up latency rather than by memory bandwidth. */
#define PARALLEL_COPY_MIN_SLICE_BYTES ((size_t)256 << 10)

/* Independent chains per thread; run_fma_chains says why 16 is latency-bound, not peak. */
#define FMA_CHAINS 64

int glcpu_openmp(void) {
#ifdef _OPENMP
  return 1;
#else
  return 0;
#endif
}

int glcpu_max_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

#ifdef _OPENMP
/* Offset of the start of slice `slice` out of `slices`: the even split point rounded up to the
 * next destination page boundary, clamped to [0, bytes]. */
static size_t copy_slice_start(uintptr_t dst_address, size_t bytes, int slice, int slices) {
  if (slice <= 0) return 0;
  if (slice >= slices) return bytes;
  const uintptr_t even_split = dst_address + (bytes / (size_t)slices) * (size_t)slice;
  const uintptr_t page_aligned =
      (even_split + PARALLEL_COPY_ALIGN - 1) & ~(PARALLEL_COPY_ALIGN - 1);
  const size_t offset = (size_t)(page_aligned - dst_address);
  return offset < bytes ? offset : bytes;
}
#endif

static void write_slice(char *dst, const char *src, int value, size_t bytes) {
  if (src)
    memcpy(dst, src, bytes);
  else
    memset(dst, value, bytes);
}

/* memcpy from src, or memset to value where src is NULL, one slice a thread. */
static void parallel_write(void *dst, const void *src, int value, size_t bytes) {
#ifdef _OPENMP
  if (bytes >= PARALLEL_COPY_MIN_BYTES) {
    size_t wanted_threads = bytes / PARALLEL_COPY_MIN_SLICE_BYTES;
    const size_t max_threads = (size_t)omp_get_max_threads();
    if (wanted_threads > max_threads) wanted_threads = max_threads;
    if (wanted_threads > 1) {
      const uintptr_t dst_address = (uintptr_t)dst;
      /* One region, one slice per thread. The split uses the team size actually granted, which
       * may be smaller than requested (nested regions, OMP_DYNAMIC). */
#pragma omp parallel num_threads((int)wanted_threads)
      {
        const int slices = omp_get_num_threads();
        const int slice = omp_get_thread_num();
        const size_t begin = copy_slice_start(dst_address, bytes, slice, slices);
        const size_t end = copy_slice_start(dst_address, bytes, slice + 1, slices);
        if (end > begin)
          write_slice((char *)dst + begin, src ? (const char *)src + begin : NULL, value,
                      end - begin);
      }
      return;
    }
  }
#endif
  if (bytes > 0) write_slice(dst, src, value, bytes);
}

void glcpu_parallel_copy(void *dst, const void *src, size_t bytes) {
  parallel_write(dst, src, 0, bytes);
}

void glcpu_parallel_fill(void *dst, int value, size_t bytes) {
  parallel_write(dst, NULL, value, bytes);
}

/* Written by every call so that the chains have an observable result. */
static volatile double fma_sink;

/* One fused multiply-add per chain per step. The map x -> x*0.999999 + 0.000001 has 1 as an
 * attracting fixed point, so values starting near 1 stay there: no overflow, no denormals,
 * and hence no microcode assists to distort the timing. Without hardware FMA in the target
 * (plain x86-64), fmaf would be a libm call per element; a separate multiply and add does the
 * same two flops and still vectorizes. */
static inline float fma_step(float value) {
#if defined(__FMA__) || defined(__FP_FAST_FMAF)
  return fmaf(value, 0.999999f, 0.000001f);
#else
  return value * 0.999999f + 0.000001f;
#endif
}

/* The same step in double (fma, __FP_FAST_FMA). */
static inline double fma64_step(double value) {
#if defined(__FMA__) || defined(__FP_FAST_FMA)
  return fma(value, 0.999999, 0.000001);
#else
  return value * 0.999999 + 0.000001;
#endif
}

/* FMA_CHAINS independent chains per thread: 64 floats are 8 AVX2 (16 SSE) vectors per step,
 * enough to cover FMA latency times the FMA ports, so the loop measures throughput (16 chains
 * measured 2.5x lower on the H100 host: latency-bound). The FP64 loop keeps the same number of
 * vectors, and so the same registers, with half as many chains.
 *
 * The inner loop has no "omp simd" on purpose: gcc 12 then fully unrolls it and SLP-vectorizes
 * the step, keeping the chains in registers, whereas with the pragma (and -march=x86-64-v3) it
 * reloads and stores the chain array through the stack every other step, which puts
 * store-forwarding latency on the chain.
 *
 * A macro, as C has no templates: the two precisions differ only in the type, the count and
 * the step. */
#define FMA64_CHAINS (FMA_CHAINS / 2)
#define DEFINE_RUN_FMA_CHAINS(name, real, chain_count, step)                                 \
  static double name(long iterations, int seed) {                                            \
    real chains[chain_count];                                                                \
    for (int chain = 0; chain < chain_count; ++chain)                                        \
      chains[chain] = (real)1 + (real)1e-3 * (real)(chain + seed);                           \
    for (long i = 0; i < iterations; ++i) {                                                  \
      for (int chain = 0; chain < chain_count; ++chain) chains[chain] = step(chains[chain]); \
    }                                                                                        \
    real checksum = 0;                                                                       \
    for (int chain = 0; chain < chain_count; ++chain) checksum += chains[chain];             \
    return checksum;                                                                         \
  }
DEFINE_RUN_FMA_CHAINS(run_fma_chains, float, FMA_CHAINS, fma_step)
DEFINE_RUN_FMA_CHAINS(run_fma64_chains, double, FMA64_CHAINS, fma64_step)

/* run(iterations, seed) on every OpenMP thread at once; the flops of them all, with
 * chain_count chains each. */
static double on_every_thread(double (*run)(long, int), long iterations, int chain_count) {
  if (iterations <= 0) return 0.0;
  int threads = 1;
  double checksum = 0.0;
#ifdef _OPENMP
#pragma omp parallel reduction(+ : checksum)
  {
#pragma omp single
    threads = omp_get_num_threads();
    checksum += run(iterations, omp_get_thread_num());
  }
#else
  checksum = run(iterations, 0);
#endif
  fma_sink = checksum;
  return 2.0 * chain_count * (double)iterations * (double)threads;
}

double glcpu_fma_loop(long iterations) {
  return on_every_thread(run_fma_chains, iterations, FMA_CHAINS);
}

double glcpu_fma64_loop(long iterations) {
  return on_every_thread(run_fma64_chains, iterations, FMA64_CHAINS);
}
