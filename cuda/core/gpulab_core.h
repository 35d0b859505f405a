/* The C ABI of the CUDA core, which every lab shares: errors, the device, the stream-ordered
 * memory pool, host memory, streams and events, and the ceilings. Each lab adds its own small
 * header next to its kernels (cuda/<lab>/<lab>.h) with the same conventions.
 *
 * Plain C: every function returns a CUDA error code (0 on success) and writes results through
 * pointers. Streams and events travel as opaque pointers (cudaStream_t / cudaEvent_t). On
 * failure, glc_failed_call() names the CUDA call that failed on this thread.
 *
 * In a build without nvcc none of these functions exist: the C side sees them as weak symbols,
 * which are then null. The binding asks glc_cuda_built (null, or 1) before any CUDA call, so it
 * never calls a missing one; GLC_NOT_BUILT is the code it reports for that case.
 */
#ifndef GPULAB_CUDA_CORE_H
#define GPULAB_CUDA_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#define GLC_API
#else
/* Weak, so that a build without nvcc links without the CUDA part. */
#define GLC_API __attribute__((weak))
#endif

#define GLC_NOT_BUILT (-1)

typedef void *glc_stream;
typedef void *glc_event;

/* Element types understood by the kernels. The small integer types are the histogram lab's
 * (uint8 images and byte data) and uint32 the sort lab's keys; every other op's dtype mask leaves
 * them out. */
enum glc_dtype {
  GLC_F32 = 0,
  GLC_F64 = 1,
  GLC_I32 = 2,
  GLC_I64 = 3,
  GLC_U8 = 4,
  GLC_I8 = 5,
  GLC_U16 = 6,
  GLC_I16 = 7,
  GLC_U32 = 8,
  GLC_F16 = 9,
  GLC_BF16 = 10
};

/* True (non-null) only when the CUDA part is linked in. */
GLC_API int glc_cuda_built(void);

/* ---- errors ---- */
GLC_API const char *glc_error_name(int code);
GLC_API const char *glc_error_string(int code);
/* Name of the CUDA call that last failed on this thread, e.g. "cudaMallocAsync". */
GLC_API const char *glc_failed_call(void);
/* Bytes asked for when the call that last failed on this thread was glc_malloc_async, else 0. */
GLC_API size_t glc_failed_bytes(void);
/* Non-zero for errors that leave the context unusable (illegal address, ...). */
GLC_API int glc_error_is_sticky(int code);

/* ---- device ---- */
typedef struct glc_device_props {
  char name[256];
  int major, minor;
  int multiprocessors;
  size_t total_global_mem;
  int clock_khz;        /* SM clock, peak */
  int memory_clock_khz; /* memory clock, peak */
  int memory_bus_width; /* bits */
  int l2_cache_bytes;
  size_t shared_mem_per_block;
  size_t shared_mem_per_block_optin;
  size_t shared_mem_per_multiprocessor;
  int regs_per_block;
  int regs_per_multiprocessor;
  int warp_size;
  int max_threads_per_block;
  int max_threads_per_multiprocessor;
  int async_engine_count;
  int concurrent_kernels;
  int pci_bus_id, pci_device_id, pci_domain_id;
  int ecc_enabled;
  int memory_pools_supported;
  int fp32_per_sm_per_clock; /* FP32 lanes per SM, from the compute capability */
} glc_device_props;

GLC_API int glc_device_count(int *count);
GLC_API int glc_set_device(int device);
GLC_API int glc_get_device(int *device);
GLC_API int glc_device_props_get(int device, glc_device_props *props);
GLC_API int glc_versions(int *driver, int *runtime);
GLC_API int glc_mem_info(size_t *free_bytes, size_t *total_bytes);

/* ---- device memory (stream-ordered pool) ---- */
/* Keep freed blocks in the device's default pool instead of returning them to
 * the driver at each synchronisation. */
GLC_API int glc_pool_init(int device);
GLC_API int glc_pool_usage(int device, uint64_t *used, uint64_t *reserved);
/* Hands the pool's unused memory back to the driver (for other libraries in the process). */
GLC_API int glc_pool_trim(int device);
GLC_API int glc_malloc_async(void **ptr, size_t bytes, glc_stream stream);
GLC_API int glc_free_async(void *ptr, glc_stream stream);
/* Copy of any kind (cudaMemcpyDefault: UVA decides the direction). */
GLC_API int glc_memcpy_async(void *dst, const void *src, size_t bytes, glc_stream stream);
GLC_API int glc_memset_async(void *ptr, int value, size_t bytes, glc_stream stream);
/* Synchronous pageable copies through the driver's own path. */
GLC_API int glc_memcpy_sync(void *dst, const void *src, size_t bytes);
/* Device ordinal of a pointer; *is_device is 0 for host memory that the GPU cannot address. */
GLC_API int glc_pointer_device(const void *ptr, int *device, int *is_device);
/* *pinned = 1 for page-locked host memory (cudaHostAlloc'd or registered), else 0. */
GLC_API int glc_host_is_pinned(const void *ptr, int *pinned);

/* ---- host memory ---- */
/* Page-locked and mapped: kernels can read and write it through glc_host_device_pointer. */
GLC_API int glc_host_alloc(void **ptr, size_t bytes);
GLC_API int glc_host_device_pointer(void **device_ptr, void *host_ptr);
GLC_API int glc_host_free(void *ptr);
GLC_API int glc_host_register(void *ptr, size_t bytes);
GLC_API int glc_host_unregister(void *ptr);

/* ---- streams and events ---- */
GLC_API int glc_stream_create(glc_stream *stream, int non_blocking, int priority);
GLC_API int glc_stream_destroy(glc_stream stream);
GLC_API int glc_stream_synchronize(glc_stream stream);
/* Waits for all work of every stream on the current device (cudaDeviceSynchronize). */
GLC_API int glc_device_synchronize(void);
/* 0 when all work is done, cudaErrorNotReady (600) while some is pending. */
GLC_API int glc_stream_query(glc_stream stream);
GLC_API int glc_stream_priority_range(int *least, int *greatest);
GLC_API int glc_stream_wait_event(glc_stream stream, glc_event event);
GLC_API int glc_event_create(glc_event *event, int timing);
GLC_API int glc_event_destroy(glc_event event);
GLC_API int glc_event_record(glc_event event, glc_stream stream);
GLC_API int glc_event_synchronize(glc_event event);
GLC_API int glc_event_query(glc_event event);
GLC_API int glc_event_elapsed_ms(float *ms, glc_event start, glc_event end);

/* ---- kernels, for gl.inspect ---- */
/* While noting is on, every launch through cuda/core/launch.cuh (and the cooperative launch) is
 * written down: kernel, grid, block and dynamic shared memory. gl.inspect turns it on around
 * one call of a variant to learn which kernels that variant really launches. */
typedef struct {
  const void *kernel; /* the host stub: the key cudaFuncGetAttributes takes */
  unsigned grid[3], block[3];
  unsigned shared_bytes; /* dynamic */
} glc_launch_note;
/* Launches noted in one call beyond this are counted but not kept: a variant launches a few
 * kernels, and a long multi-pass call repeats the same ones. */
#define GLC_MAX_LAUNCH_NOTES 4096
GLC_API void glc_launch_notes_begin(void);
/* Stops noting; copies the kept notes (at most capacity) into notes, sets *copied to their
 * number and returns how many launches were noted in all. */
GLC_API int glc_launch_notes_end(glc_launch_note *notes, int capacity, int *copied);
/* Non-zero when kernel has been noted in this process: only those are looked up. */
GLC_API int glc_kernel_was_noted(const void *kernel);

typedef struct {
  int registers;             /* per thread */
  int max_threads_per_block; /* for this kernel: registers and launch bounds lower it */
  int binary_version;        /* the SASS's architecture, e.g. 90 */
  int ptx_version;
  size_t static_shared_bytes;
  size_t local_bytes; /* per thread: spills and stack arrays */
  size_t const_bytes;
  int max_dynamic_shared_bytes;
  char mangled[1024];   /* the symbol, as cuobjdump names it */
  char demangled[2048]; /* the C++ signature */
} glc_kernel_attrs;
GLC_API int glc_kernel_attributes(const void *kernel, glc_kernel_attrs *attrs);
/* Resident blocks of kernel per SM at this block size and dynamic shared memory. */
GLC_API int glc_kernel_occupancy(const void *kernel, int block, size_t dynamic_shared_bytes,
                                 int *blocks_per_sm);
/* The current device's per-SM limits that bound occupancy. */
typedef struct {
  int max_blocks_per_sm;
  int max_threads_per_sm;
  int registers_per_sm;
  size_t shared_per_sm; /* usable by blocks, the most a carveout gives */
  size_t reserved_shared_per_block;
} glc_occupancy_limits;
GLC_API int glc_occupancy_limits_get(glc_occupancy_limits *limits);

/* ---- ceilings ---- */
/* A loop of independent FP32 FMA chains; *flops receives the flops it performs. */
GLC_API int glc_fma_loop(int blocks, int threads, int iterations, float *sink, double *flops,
                         glc_stream stream);
/* The same with FP64 FMAs (DFMA); sink holds blocks * threads doubles. */
GLC_API int glc_fma64_loop(int blocks, int threads, int iterations, double *sink, double *flops,
                           glc_stream stream);
/* `passes` device-to-device copies of `bytes` (a multiple of 16, both pointers 16-byte aligned)
 * from src to dst in one kernel of blocks x threads, loading and storing through L2 only: with
 * buffers that L2 holds, the L2 copy rate. */
GLC_API int glc_l2_copy(void *dst, const void *src, size_t bytes, int passes, int blocks,
                        int threads, glc_stream stream);

#ifdef __cplusplus
}
#endif
#endif
