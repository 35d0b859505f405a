/* Device memory for DeviceArrays and the binding's scratch: CUDA's stream-ordered pool, with a
 * small cache in front of it (below). In exact allocation mode (runtime.h) every buffer comes
 * from the pool at its exact size and nothing is cached, so that compute-sanitizer sees the
 * true end of each one. */
#include "device_memory.h"

#include "errors.h"
#include "runtime.h"

/* cudaErrorMemoryAllocation. */
#define GL_ERR_MEMORY_ALLOCATION 2

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

/* The pool's allocation, once more after gl_device_memory_release when the device had too
 * little: freed blocks waiting in the cache or in the pool (on streams still running, or in
 * chunks of the wrong size) are memory the driver can hand out again. */
static int pool_alloc(void **ptr, size_t bytes, glc_stream stream) {
  int code = glc_malloc_async(ptr, bytes, stream);
  if (code != GL_ERR_MEMORY_ALLOCATION) return code;
  /* A failure while releasing (an earlier kernel's fault met at the synchronization) is the one
   * to report: the allocation's own would hide it. */
  const int release = gl_device_memory_release();
  return release ? release : glc_malloc_async(ptr, bytes, stream);
}

int gl_device_alloc(void **ptr, size_t bytes, glc_stream stream) {
  if (gl_exact_alloc()) return pool_alloc(ptr, bytes, stream);
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
  return pool_alloc(ptr, cls <= BLOCK_CACHE_MAX_BYTES ? cls : bytes, stream);
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

/* cudaDeviceSynchronize holds the thread until every stream is done: without the GIL when the
 * caller holds it, so that other Python threads run meanwhile. */
int gl_device_memory_release(void) {
  gl_block_cache_trim();
  int device = 0, code = glc_get_device(&device);
  if (code) return code;
  if (PyGILState_Check()) {
    Py_BEGIN_ALLOW_THREADS
    code = glc_device_synchronize();
    Py_END_ALLOW_THREADS
  } else {
    code = glc_device_synchronize();
  }
  return code ? code : glc_pool_trim(device);
}

int gl_device_available(size_t *bytes) {
  size_t free_bytes = 0, total_bytes = 0;
  uint64_t used = 0, reserved = 0;
  int device = 0, code = glc_mem_info(&free_bytes, &total_bytes);
  if (!code) code = glc_get_device(&device);
  if (!code) code = glc_pool_usage(device, &used, &reserved);
  if (code) return code;
  *bytes = free_bytes + (size_t)(reserved - used) + block_cache.total;
  return 0;
}

int gl_check_workspace(const char *what, double needed, const char *detail) {
  if (!gl_gpu_ready()) return 0;
  size_t available = 0;
  int code = gl_device_available(&available);
  if (code) {
    gl_raise_cuda(code);
    return -1;
  }
  if (needed <= (double)available) return 0;
  char needed_text[32], free_text[32];
  gl_format_bytes(needed_text, sizeof needed_text, needed);
  gl_format_bytes(free_text, sizeof free_text, (double)available);
  PyErr_Format(PyExc_ValueError, "%s needs %s (%s); %s free on the device", what, needed_text,
               detail, free_text);
  return -1;
}
