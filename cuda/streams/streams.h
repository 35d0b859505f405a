/* The streams lab's C ABI: overlap, concurrency, graphs and events.
 * Every function returns a CUDA error code, as cuda/core/gpulab_core.h says. */
#ifndef GPULAB_CUDA_STREAMS_H
#define GPULAB_CUDA_STREAMS_H

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif
#endif
