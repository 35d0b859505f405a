/* The scalar mirrors' pool: GL_MIRROR_SLOTS slots in one mapped, portable pinned allocation, made
 * on first use and kept for the process, like the staging ring. */
#include <string.h>
#include <time.h>

#include "mirror.h"

#include "cuda/core/gpulab_core.h"

#define GL_MIRROR_SLOTS 256
/* How long item() waits for a slot before copying the value instead. */
#define GL_MIRROR_WAIT_NS 50000

static glc_scalar_mirror *pool_host = NULL, *pool_device = NULL;
static int pool_failed = 0;
static int free_slots[GL_MIRROR_SLOTS];
static int n_free = 0;
static unsigned next_tag = 0;
static size_t stats_taken = 0, stats_read = 0;

static int pool_ready(void) {
  if (pool_host) return 1;
  if (pool_failed) return 0;
  void *host = NULL, *device = NULL;
  if (glc_host_alloc(&host, GL_MIRROR_SLOTS * sizeof(glc_scalar_mirror)) ||
      glc_host_device_pointer(&device, host)) {
    if (host) glc_host_free(host);
    pool_failed = 1; /* no mirrors then: item() copies, as it would anyway */
    return 0;
  }
  pool_host = host;
  pool_device = device;
  for (int i = 0; i < GL_MIRROR_SLOTS; i++) free_slots[i] = GL_MIRROR_SLOTS - 1 - i;
  n_free = GL_MIRROR_SLOTS;
  return 1;
}

int gl_mirror_take(glc_scalar_mirror **host, glc_scalar_mirror **device, unsigned *tag) {
  if (!pool_ready() || n_free == 0) return 0;
  int slot = free_slots[--n_free];
  if (++next_tag == 0) next_tag = 1; /* 0 is what a fresh slot holds */
  *host = pool_host + slot;
  *device = pool_device + slot;
  *tag = next_tag;
  stats_taken++;
  return 1;
}

void gl_mirror_release(glc_scalar_mirror *host) {
  if (host && n_free < GL_MIRROR_SLOTS) free_slots[n_free++] = (int)(host - pool_host);
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The kernel writes tag_before, the value and tag_after in that order, fenced; reading them in the
 * opposite order, a value read between two matching tags is the one this call's kernel wrote. */
int gl_mirror_read(const glc_scalar_mirror *host, unsigned tag, void *dst, size_t bytes) {
  const volatile glc_scalar_mirror *m = host;
  long long deadline = 0;
  for (unsigned spins = 0;; spins++) {
    if (__atomic_load_n(&m->tag_after, __ATOMIC_ACQUIRE) == tag) break;
    if ((spins & 63) == 63) {
      long long t = now_ns();
      if (!deadline) deadline = t + GL_MIRROR_WAIT_NS;
      if (t > deadline) return 0;
    }
  }
  unsigned long long value = __atomic_load_n(&m->value, __ATOMIC_ACQUIRE);
  if (__atomic_load_n(&m->tag_before, __ATOMIC_ACQUIRE) != tag) return 0;
  memcpy(dst, &value, bytes);
  stats_read++;
  return 1;
}

void gl_mirror_stats(size_t *taken, size_t *read) {
  *taken = stats_taken;
  *read = stats_read;
}
