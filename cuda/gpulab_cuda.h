/* The one interface between the binding (csrc/) and the CUDA part (cuda/).
 *
 * Plain C: every function returns a CUDA error code (0 on success, GLC_NOT_BUILT
 * when gpulab was built without CUDA) and writes results through pointers.
 * Streams and events travel as opaque pointers (cudaStream_t / cudaEvent_t).
 * On failure, glc_failed_call() names the CUDA call that failed on this thread.
 */
#ifndef GPULAB_CUDA_H
#define GPULAB_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#define GLC_API
#else
/* Weak, so that a build without nvcc links without the CUDA part: the binding
 * asks glc_cuda_built() before the first CUDA call and never calls a missing
 * function. */
#define GLC_API __attribute__((weak))
#endif

#define GLC_NOT_BUILT (-1)

typedef void *glc_stream;
typedef void *glc_event;

/* Element types understood by the kernels. */
enum glc_dtype { GLC_F32 = 0, GLC_F64 = 1, GLC_I32 = 2, GLC_I64 = 3 };

/* True (non-null) only when the CUDA part is linked in. */
GLC_API int glc_cuda_built(void);

/* ---- errors ---- */
GLC_API const char *glc_error_name(int code);
GLC_API const char *glc_error_string(int code);
/* Name of the CUDA call that last failed on this thread, e.g. "cudaMallocAsync". */
GLC_API const char *glc_failed_call(void);
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

/* ---- ceilings ---- */
/* A loop of independent FP32 FMA chains; *flops receives the flops it performs. */
GLC_API int glc_fma_loop(int blocks, int threads, int iterations, float *sink, double *flops,
                         glc_stream stream);

/* ---- labs: saxpy ---- */
/* out = a*x + y over n elements of dtype (GLC_F32 or GLC_F64). variant: 0 one thread per
 * element, 1 grid-stride, 2 grid-stride with 16-byte vectors. block: threads per block. */
GLC_API int glc_saxpy(int variant, int block, int dtype, size_t n, double a, const void *x,
                      const void *y, void *out, glc_stream stream);

/* C = A + B for row-major rows x cols matrices. variant 0: 2-D grid of 16x16 blocks. */
GLC_API int glc_matadd(int variant, int dtype, size_t rows, size_t cols, const void *a,
                       const void *b, void *c, glc_stream stream);

/* ---- labs: reduce ---- */
enum glc_reduce_op { GLC_REDUCE_SUM = 0, GLC_REDUCE_MIN = 1, GLC_REDUCE_MAX = 2 };

/* Reduces n >= 1 elements of x (dtype GLC_F32, GLC_F64 or GLC_I32) with op into *result, on
 * stream. result has the input's type, except int32 sums, which are int64. variant: the lab's
 * CUDA ids (0-6 Harris, 7-10 S1, 11 cooperative groups, 12 vectorized single pass, 13 CUB);
 * block: threads per block (ignored by 13). A variant that cannot do (op, dtype) returns
 * cudaErrorNotSupported. result may be device memory or mapped host memory. */
GLC_API int glc_reduce(int variant, int block, int op, int dtype, size_t n, const void *x,
                       void *result, glc_stream stream);

/* The best path of the lab applied to products and squares (n >= 1, GLC_F32 or GLC_F64):
 * *result = sum x*y, and *result = sqrt(sum x*x). float32 accumulates in float64. */
GLC_API int glc_dot(int dtype, size_t n, const void *x, const void *y, void *result,
                    glc_stream stream);
GLC_API int glc_norm2(int dtype, size_t n, const void *x, void *result, glc_stream stream);
/* ---- labs: memory (issue 4) ---- */
/* Each measurement allocates what it needs, runs once untimed, then `repeat` timed times, writing
 * one time per repetition to samples[repeat] (ms), and frees everything before it returns. */
enum glc_memlab_direction { GLC_MEMLAB_H2D = 0, GLC_MEMLAB_D2H = 1 };

/* Zero-copy: a kernel copies bytes (a multiple of 16) between mapped pinned host memory and
 * device memory. *intact: the destination holds the source's words afterwards. */
GLC_API int glc_memlab_mapped(int direction, size_t bytes, int repeat, float *samples, int *intact);
/* cudaMallocManaged memory. H2D: the host writes it, then the timed part is an optional
 * cudaMemPrefetchAsync to the device and a kernel that reads every word. D2H: a kernel writes
 * it, then the timed part is an optional prefetch to the host and the host reading every word
 * (host clock). *intact: every word read was the one written. */
GLC_API int glc_memlab_managed(int direction, int prefetch, size_t bytes, int repeat,
                               float *samples, int *intact);

/* S1's granularity kernels over n ints: out[id] = in[id], id from the pattern. */
enum glc_memlab_pattern {
  GLC_PATTERN_COALESCED = 0,
  GLC_PATTERN_MIXED = 1,     /* lane * 7 % 32 within each warp's 32 elements */
  GLC_PATTERN_OFFSET = 2,    /* id * offset % n */
  GLC_PATTERN_SCATTERED = 3, /* id * 121 % n */
};
GLC_API int glc_memlab_access(int pattern, int offset, size_t n, int repeat, float *samples);

/* Pointer chase over a device array of `words` 32-bit words. Node i sits at word
 * i * stride_words and holds the word index of node successor[i]. One thread follows warm_steps
 * dependent loads from node 0 untimed, then `repeat` timed passes of `steps` loads, each going
 * on from where the last stopped. *final_node: where the walk ended, for checking against a host
 * walk of warm_steps + repeat * steps links. */
GLC_API int glc_memlab_chase(const uint32_t *successor, size_t nodes, size_t stride_words,
                             size_t words, size_t warm_steps, size_t steps, int repeat,
                             float *samples, uint32_t *final_node);

/* Shared memory: each warp reads a 32x32 float tile at word (lane * stride + k) % 1024 for
 * `iterations` values of k. */
GLC_API int glc_memlab_bank(int stride, int iterations, int repeat, float *samples);

/* Table reads: mode 0 __constant__ uniform (one address per warp), 1 __constant__ divergent
 * (32 addresses per warp), 2 global uniform, 3 global divergent. *loads: loads timed. */
GLC_API int glc_memlab_constant(int mode, int iterations, int repeat, float *samples,
                                double *loads);

/* ---- labs: streams (issue 4) ---- */
typedef struct glc_overlap_times {
  float serial_ms; /* one stream, whole array: H2D, kernel, D2H */
  float h2d_ms;    /* the serial run's stages */
  float kernel_ms;
  float d2h_ms;
  float overlapped_ms; /* chunks over streams */
} glc_overlap_times;
/* out = f(in), f = `intensity` FMAs per element, over n floats of pinned host memory: first
 * serially, then in `chunks` chunks over `streams` streams, issued depth-first (each chunk's
 * H2D, kernel, D2H in turn) or breadth-first (all H2Ds, then all kernels, then all D2Hs).
 * timeline, when not null, receives chunks x 3 stages x (start, end) ms of the chunked run
 * from its start (events recorded around each operation). */
GLC_API int glc_streamlab_overlap(const float *host_in, float *host_out, size_t n, int chunks,
                                  int streams, int breadth_first, int intensity,
                                  glc_overlap_times *times, float *timeline);
/* `kernels` kernels that each sleep duration_ms, in one stream and then in one stream each. */
GLC_API int glc_streamlab_concurrent(int kernels, double duration_ms, float *one_stream_ms,
                                     float *many_streams_ms);
/* Host time per call, in us, of creating and destroying `count` streams and events. */
GLC_API int glc_streamlab_object_cost(int count, double *stream_create_us,
                                      double *stream_destroy_us, double *event_create_us,
                                      double *event_destroy_us);
/* `kernels` one-thread kernels, each adding 1 to a counter, launched one by one and as one
 * captured CUDA graph, each `repeat` times. Per-launch host time (launch to completion) in us;
 * *counted: the counter at the end (kernels * repeat * 2 plus the untimed runs). */
GLC_API int glc_streamlab_graph(int kernels, int repeat, double *launch_us, double *graph_us,
                                double *instantiate_us, uint64_t *counted);
/* A producer stream writes `chunks` chunks of chunk_elems words, each after sleeping delay_ms;
 * a consumer stream checks each chunk, after cudaStreamWaitEvent on the chunk's event when
 * wait is set. *bad_chunks: chunks the consumer found incomplete. */
GLC_API int glc_streamlab_producer_consumer(int chunks, size_t chunk_elems, double delay_ms,
                                            int wait, int *bad_chunks);
/* y = A x for a row-major rows x cols A in pinned host memory, rows split over `streams`
 * streams, each copying its rows in, multiplying and copying its part of y out. *ms: events. */
GLC_API int glc_streamlab_matvec(const float *a, const float *x, float *y, size_t rows, size_t cols,
                                 int streams, float *ms);

/* ---- labs: nbody ---- */
/* Softened all-pairs accelerations (LABS.md section 5):
 *   acc_i = G * sum_j m_j (r_j - r_i) / (|r_j - r_i|^2 + eps2)^(3/2),
 * where the i = j term vanishes because eps2 > 0 (a positive normal float). pos and acc are
 * n x 3 row-major, mass is n; all float32, 1 <= n <= 2^24 (n = 0 does nothing).
 * variant 0 naive AoS, 1 naive + unrolled j loop, 2 shared-memory tiles, 3 tiles + unroll,
 * 4 tiles on an SoA layout, 5 several bodies per thread. block: threads per block (powers of two,
 * 32..1024; variant 5 32..256). unroll: the j-loop unroll of variants 1, 3, 4 (1..16) and 5
 * (1..8), 0 for the variant's default, 1 for the others. bodies: bodies per thread of variant 5
 * (1, 2, 4, 8), 0 for its default, 1 for the others. Asynchronous on stream. */
GLC_API int glc_nbody_accel(int variant, int block, int unroll, int bodies, size_t n,
                            const float *pos, const float *mass, float eps2, float G, float *acc,
                            glc_stream stream);
/* `steps` leapfrog (kick-drift-kick) steps of dt with the accelerations of glc_nbody_accel, all on
 * the device: pos_out, vel_out (n x 3; they may be pos and vel themselves) receive the state
 * after the last step. steps >= 0. Asynchronous on stream. */
GLC_API int glc_nbody_step(int variant, int block, int unroll, int bodies, size_t n,
                           const float *pos, const float *vel, const float *mass, float dt,
                           float eps2, float G, long long steps, float *pos_out, float *vel_out,
                           glc_stream stream);
/* energy (device memory, 2 doubles) = {kinetic, potential}: sum m v^2 / 2 and
 * -G sum_{i<j} m_i m_j / sqrt(r_ij^2 + eps2), accumulated in float64. Asynchronous on stream. */
GLC_API int glc_nbody_energy(size_t n, const float *pos, const float *vel, const float *mass,
                             float eps2, double G, double *energy, glc_stream stream);

#ifdef __cplusplus
}
#endif
#endif
