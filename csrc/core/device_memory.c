/* Device memory for DeviceArrays and the binding's scratch: CUDA's stream-ordered pool, with a
 * small cache in front of it (below). In exact allocation mode (runtime.h) every buffer comes
 * from the pool at its exact size and nothing is cached, so that compute-sanitizer sees the
 * true end of each one. */
#include "device_memory.h"

#include "runtime.h"

/* Recently freed small blocks of the library's stream, handed to the next allocation of the
 * same size class on that stream without a CUDA call. Stream order makes the reuse safe, as in
 * CUDA's own pool; skipping cudaMallocAsync and cudaFreeAsync saves about 1 us of a 4-5 us
 * asynchronous call (docs/labs/saxpy.md). Only the library's stream, which lives as long as
 * the process: a user stream's handle could be reused by a new stream after it is destroyed.
 * The GIL guards the cache. */
#define BLOCK_CACHE_SLOTS 16
#define BLOCK_CACHE_MAX_BYTES (1u << 20)
#define BLOCK_CACHE_GRAIN 512

static struct {
  void *ptr[BLOCK_CACHE_SLOTS];
  size_t bytes[BLOCK_CACHE_SLOTS];
  int count;
  size_t total;
} block_cache;

static size_t block_class(size_t bytes) {
  return (bytes + BLOCK_CACHE_GRAIN - 1) / BLOCK_CACHE_GRAIN * BLOCK_CACHE_GRAIN;
}

int gl_device_alloc(void **ptr, size_t bytes, glc_stream stream) {
  if (gl_exact_alloc()) return glc_malloc_async(ptr, bytes, stream);
  size_t cls = block_class(bytes);
  if (bytes && cls <= BLOCK_CACHE_MAX_BYTES && stream == gl_library_stream()) {
    for (int i = block_cache.count - 1; i >= 0; i--) {
      if (block_cache.bytes[i] != cls) continue;
      *ptr = block_cache.ptr[i];
      block_cache.total -= cls;
      block_cache.count--;
      block_cache.ptr[i] = block_cache.ptr[block_cache.count];
      block_cache.bytes[i] = block_cache.bytes[block_cache.count];
      return 0;
    }
  }
  return glc_malloc_async(ptr, cls <= BLOCK_CACHE_MAX_BYTES ? cls : bytes, stream);
}

void gl_device_free(void *ptr, size_t bytes, glc_stream stream) {
  if (gl_exact_alloc()) {
    glc_free_async(ptr, stream);
    return;
  }
  size_t cls = block_class(bytes);
  if (cls <= BLOCK_CACHE_MAX_BYTES && stream == gl_library_stream() &&
      block_cache.count < BLOCK_CACHE_SLOTS) {
    block_cache.ptr[block_cache.count] = ptr;
    block_cache.bytes[block_cache.count++] = cls;
    block_cache.total += cls;
    return;
  }
  glc_free_async(ptr, stream);
}

size_t gl_block_cache_bytes(void) { return block_cache.total; }

void gl_block_cache_trim(void) {
  while (block_cache.count > 0) {
    block_cache.count--;
    glc_free_async(block_cache.ptr[block_cache.count], gl_library_stream());
  }
  block_cache.total = 0;
}
