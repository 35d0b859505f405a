/* The memory lab's host side: the pointer chains that both the GPU and the CPU chase, the CPU's
 * own latency staircase, and the host's read/write/copy bandwidth, so that CPU-only users see
 * their own cache hierarchy. */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "cpu.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* splitmix64: a fast generator whose every seed gives a full-quality stream. */
static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int glcpu_chase_chain(uint32_t *successor, size_t nodes, int shuffle, uint64_t seed) {
  if (nodes == 0 || nodes > UINT32_MAX) return -1;
  if (!shuffle) {
    for (size_t i = 0; i < nodes; i++) successor[i] = (uint32_t)((i + 1) % nodes);
    return 0;
  }
  /* Sattolo's algorithm on the identity: a uniformly random permutation i -> successor[i] with
   * a single cycle, so that the chain from node 0 visits every node before it returns. */
  for (size_t i = 0; i < nodes; i++) successor[i] = (uint32_t)i;
  uint64_t state = seed;
  for (size_t i = nodes - 1; i > 0; i--) {
    size_t j = (size_t)(next_random(&state) % i); /* j < i: Sattolo, not Fisher-Yates */
    uint32_t t = successor[i];
    successor[i] = successor[j];
    successor[j] = t;
  }
  return 0;
}

int glcpu_chase(const uint32_t *successor, size_t nodes, size_t stride_words, uint32_t *words,
                size_t warm_steps, size_t steps, int repeat, double *seconds,
                uint32_t *final_node) {
  if (nodes == 0 || stride_words == 0 || steps == 0 || repeat < 1) return -1;
  for (size_t i = 0; i < nodes; i++)
    words[i * stride_words] = successor[i] * (uint32_t)stride_words;
  /* As on the GPU (cuda/memory/latency.cu): an untimed warm walk, then timed passes that go on
   * from where the last one stopped. */
  volatile uint32_t sink;
  uint32_t p = 0;
  for (size_t i = 0; i < warm_steps; i++) p = words[p];
  for (int r = 0; r < repeat; r++) {
    double t0 = now_seconds();
    for (size_t i = 0; i < steps; i++) p = words[p];
    seconds[r] = now_seconds() - t0;
    sink = p; /* keeps each pass's result observable */
  }
  (void)sink;
  *final_node = p / (uint32_t)stride_words;
  return 0;
}

uint32_t glcpu_chain_walk(const uint32_t *successor, size_t steps) {
  uint32_t p = 0;
  for (size_t i = 0; i < steps; i++) p = successor[p];
  return p;
}

/* The chunk of [0, bytes) that thread `t` of `threads` owns, on 64-byte boundaries. */
static void thread_slice(size_t bytes, int t, int threads, size_t *begin, size_t *end) {
  size_t lines = bytes / 64, per = lines / (size_t)threads, extra = lines % (size_t)threads;
  size_t first = (size_t)t * per + ((size_t)t < extra ? (size_t)t : extra);
  size_t count = per + ((size_t)t < extra);
  *begin = first * 64;
  *end = t == threads - 1 ? bytes : (first + count) * 64;
}

static volatile uint64_t read_sink;

int glcpu_bandwidth(int kind, void *a, const void *b, size_t bytes, double *seconds) {
  if (kind < 0 || kind > 2 || bytes == 0) return -1;
  uint64_t total = 0;
  double t0 = now_seconds();
#pragma omp parallel reduction(+ : total)
  {
    int t = 0, threads = 1;
#ifdef _OPENMP
    t = omp_get_thread_num();
    threads = omp_get_num_threads();
#endif
    size_t begin, end;
    thread_slice(bytes, t, threads, &begin, &end);
    if (kind == GLCPU_BW_READ) {
      const uint64_t *w = (const uint64_t *)((const char *)b + begin);
      size_t n = (end - begin) / 8;
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      size_t i = 0;
      for (; i + 4 <= n; i += 4) {
        s0 += w[i];
        s1 += w[i + 1];
        s2 += w[i + 2];
        s3 += w[i + 3];
      }
      for (; i < n; i++) s0 += w[i];
      total += s0 + s1 + s2 + s3;
    } else if (kind == GLCPU_BW_WRITE) {
      memset((char *)a + begin, t + 1, end - begin);
    } else {
      memcpy((char *)a + begin, (const char *)b + begin, end - begin);
    }
  }
  *seconds = now_seconds() - t0;
  read_sink = total;
  return 0;
}
