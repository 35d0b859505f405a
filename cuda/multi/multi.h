/* The multi lab's C ABI: several GPUs of one process or of one process each, with NCCL doing the
 * communication. Every function returns a CUDA error code, as cuda/core/gpulab_core.h says; an NCCL
 * failure becomes a CUDA code (cudaErrorInvalidValue for NCCL's invalid argument or usage,
 * cudaErrorUnknown otherwise) and glc_failed_call() then reads "ncclAllReduce: <NCCL's own error
 * string>".
 *
 * Every function leaves the calling thread's current device as it found it (gpulab itself runs
 * on device 0), and waits for its own work before it returns. */
#ifndef GPULAB_CUDA_MULTI_H
#define GPULAB_CUDA_MULTI_H

#include "cuda/core/gpulab_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- NCCL, opened at run time (cuda/multi/nccl.cu) ---- */
#define GLC_NCCL_UNIQUE_ID_BYTES 128
#define GLC_MULTI_MAX_GPUS 64
/* Opens the NCCL library at path (a file path or a soname) and looks up the functions gpulab
 * uses. The first library that opens is kept for the life of the process; later calls then
 * return 0 at once, whatever the path. *version: ncclGetVersion's (e.g. 23203 for 2.32.3).
 * On failure (cudaErrorFileNotFound, or cudaErrorSymbolNotFound when the library lacks a
 * function) error receives dlerror()'s text or the missing function's name. */
GLC_API int glc_nccl_open(const char *path, int *version, char *error, size_t error_size);
/* 1 once glc_nccl_open has succeeded. */
GLC_API int glc_nccl_loaded(void);
/* 128 bytes of ncclGetUniqueId, for ncclCommInitRank in every process of a group. */
GLC_API int glc_nccl_unique_id(void *id);

/* A communicator: one rank's NCCL communicator, its device and the stream its collectives run
 * on (one per communicator, non-blocking, on its device). */
typedef struct glc_multi_comm glc_multi_comm;
/* One process over count devices: ncclCommInitAll. comms receives count communicators, rank i
 * on devices[i]. */
GLC_API int glc_multi_comm_init_all(int count, const int *devices, glc_multi_comm **comms);
/* One rank of a group of world processes (ncclCommInitRank) on device, with the group's id. */
GLC_API int glc_multi_comm_init_rank(const void *unique_id, int rank, int world, int device,
                                     glc_multi_comm **comm);
GLC_API int glc_multi_comm_info(const glc_multi_comm *comm, int *rank, int *world, int *device);
/* The communicator's stream (its collectives and point-to-point transfers run there). */
GLC_API int glc_multi_comm_stream(const glc_multi_comm *comm, glc_stream *stream);
/* Waits for the communicator's stream, then ncclCommDestroy; frees comm. */
GLC_API int glc_multi_comm_destroy(glc_multi_comm *comm);

/* NCCL's numbering of types and operators (nccl.h 2.x; cuda/multi/nccl.cu). */
enum glc_nccl_type {
  GLC_NCCL_I8 = 0,
  GLC_NCCL_U8 = 1,
  GLC_NCCL_I32 = 2,
  GLC_NCCL_U32 = 3,
  GLC_NCCL_I64 = 4,
  GLC_NCCL_U64 = 5,
  GLC_NCCL_F16 = 6,
  GLC_NCCL_F32 = 7,
  GLC_NCCL_F64 = 8
};
enum glc_nccl_op {
  GLC_NCCL_SUM = 0,
  GLC_NCCL_PROD = 1,
  GLC_NCCL_MAX = 2,
  GLC_NCCL_MIN = 3,
  GLC_NCCL_AVG = 4
};

/* In place: buffers[i] (count elements of type, on comms[i]'s device) becomes the op of all
 * ranks' buffers. Rank i's stream first waits for after[i] (the stream that last used buffer
 * i; NULL: none). One group call over the count communicators of this process; returns once
 * they are done. */
GLC_API int glc_multi_allreduce(int ranks, glc_multi_comm *const *comms, void *const *buffers,
                                const glc_stream *after, size_t count, int type, int op);

/* One point-to-point transfer of an NCCL group: ncclSend of count elements of type from buffer
 * to rank peer (send = 1), or ncclRecv into buffer from peer (send = 0), on comm's stream. */
typedef struct {
  glc_multi_comm *comm;
  int peer, send, type;
  void *buffer;
  size_t count;
} glc_multi_transfer;
/* The transfers in one ncclGroupStart/ncclGroupEnd (every rank of this process that takes part
 * must be in it), enqueued on their communicators' streams and NOT waited for: the caller
 * orders them with events. cudaErrorSymbolNotFound when the NCCL in use lacks ncclSend. */
GLC_API int glc_multi_sendrecv(int count, const glc_multi_transfer *transfers);

/* The partitioned reduce: on each comms[i]'s device, parts[i] (counts[i] elements of dtype, a
 * glc_dtype the reduce lab takes; host memory when on_host, else device memory on that device)
 * is reduced by the reduce lab's glc_reduce(variant, block, reduce_op) into one scalar (an empty
 * part gives identity, 8 bytes); then one NCCL all-reduce of the scalars, of result_type with
 * nccl_op, unless ranks == 1 and comms[0] is NULL (one GPU: the local reduce alone, on device
 * devices[0]). *result (8 bytes, host) receives rank 0's value. */
GLC_API int glc_multi_reduce(int ranks, glc_multi_comm *const *comms, const int *devices,
                             const void *const *parts, const size_t *counts, int on_host, int dtype,
                             int variant, int block, int reduce_op, int result_type, int nccl_op,
                             const void *identity, void *result);

/* ---- Jacobi over slabs of GPUs (cuda/multi/jacobi.cu) ---- */
enum glc_multi_exchange { GLC_MULTI_EXCHANGE_P2P = 0, GLC_MULTI_EXCHANGE_NCCL = 1 };

typedef struct {
  size_t sweeps, checks; /* as glc_jacobi_result */
  int converged;
  int depth; /* the sweeps of a temporal pass as run (the depth asked for, or the thinnest slab's
              * rows where it is thinner); 0: fused sweeps */
  /* Per GPU (index: position in devices), summed over every sweep, from CUDA events:
   * compute_ms[i] the sweeps on GPU i's compute stream (edge rows and interior), exchange_ms[i]
   * the halo transfers GPU i issued (p2p: its copies to its neighbours; nccl: its sends and
   * receives). allreduce_ms: the host clock around each check's combine of the GPUs' maxima
   * (the sweeps already waited for). total_ms: the host clock around the whole solve, from the
   * first sweep to the last check (the uploads and the gather excluded). scatter_ms: the host
   * clock around placing the grid (the slabs allocated, f and u0 copied in, waited for);
   * gather_ms: around copying the slabs' rows of u out (waited for). */
  double compute_ms[GLC_MULTI_MAX_GPUS], exchange_ms[GLC_MULTI_MAX_GPUS];
  double allreduce_ms, total_ms, scatter_ms, gather_ms;
} glc_multi_jacobi_result;

/* glc_jacobi's solve (cuda/stencil/stencil.h: same grid, sweeps, checks, residuals, tol) with
 * axis 0 split into count slabs, slab i on devices[i] (rows [starts[i], starts[i+1]) of axis 0,
 * starts[0] = 0, starts[count] = shape[0], each slab at least one row or plane), each holding a
 * ghost row or plane on either side, double-buffered. f, u0 and u are whole grids in C order,
 * each host memory or device memory of any device (UVA; device memory must be ready: its
 * producers' work done); u0 NULL: zeros. The slabs are filled straight from where f and u0
 * live and u is gathered straight to where it lives, device to device for device memory (a
 * slab on f's own device reads f in place where its rows are 256-byte aligned), one stream
 * per GPU, at once. exchange: enum
 * glc_multi_exchange; nccl needs comms (count communicators, rank i on devices[i]), p2p needs
 * peer access between neighbouring devices (enabled here; cudaErrorPeerAccessUnsupported when
 * absent). overlap: sweep the edge bands first, move the halos while the interior sweeps.
 * depth 0: the sweeps are the stencil lab's row/plane-range sweeps (glc_jacobi_sweep2d_rows,
 * glc_jacobi_sweep3d_planes), one a pass, halos one row deep, and the result is bitwise
 * glc_jacobi's fused variant. depth 1..15 (2D only): passes of up to depth sweeps by the
 * temporal blocking over row ranges (glc_jacobi_temporal2d_rows), halos as deep as a pass (no
 * deeper than the thinnest slab: depth is lowered to it), and the result is bitwise glc_jacobi's
 * temporal variant, at any depth. A pass that checks no residual sweeps every row a slab holds
 * in one launch (the ghost rows it spoils are what the exchange overwrites); the checked pass
 * writes the owned rows only, so that its residual is theirs. */
GLC_API int glc_multi_jacobi(int count, const int *devices, glc_multi_comm *const *comms,
                             int exchange, int overlap, int depth, int dtype, int ndim,
                             const size_t *shape, const size_t *starts, double h, size_t max_sweeps,
                             double tol, size_t check_every, const void *f, const void *u0, void *u,
                             double *residuals, size_t capacity, glc_multi_jacobi_result *result);

/* ---- placing rows on GPUs and back (cuda/multi/placement.cu) ---- */
/* Where ptr lives: *device its device for device or managed memory, else -1; *pageable 1 for
 * host memory that is not page-locked (the driver stages it on the calling thread). */
GLC_API int glc_multi_locate(const void *ptr, int *device, int *pageable);
/* One copy of a scatter or a gather: bytes between dst and src, ordered on stream, a stream of
 * device (the GPU whose slab it fills or empties). */
typedef struct {
  int device;
  glc_stream stream;
  void *dst;
  const void *src;
  size_t bytes;
} glc_multi_piece;
/* Runs the pieces, those of different devices at once, and waits for all of them. Pieces with
 * a pageable host end run on one host thread per device, the others are issued async. */
GLC_API int glc_multi_copy_pieces(int count, const glc_multi_piece *pieces);

/* ---- device memory on any device (cuda/multi/memory.cu) ---- */
/* From the device's stream-ordered pool, on the lab's stream for that device; the allocation is
 * complete when this returns. */
GLC_API int glc_multi_alloc(int device, size_t bytes, void **ptr);
/* The lab's stream on device (non-blocking, made on first use, kept): what the arrays it
 * allocates are ordered on. */
GLC_API int glc_multi_device_stream(int device, glc_stream *stream);
/* Waits for the device to be idle (any stream may still use the memory), then frees. */
GLC_API int glc_multi_free(int device, void *ptr);
/* Copies bytes between host and device memory or between devices (UVA), and waits. */
GLC_API int glc_multi_copy(int device, void *dst, const void *src, size_t bytes);
/* Waits for every stream of device: what its arrays' producers queued is then done. */
GLC_API int glc_multi_device_synchronize(int device);

/* ---- topology (cuda/multi/topology.cu) ---- */
/* For count devices, n x n row-major matrices: access[i*n+j] = cudaDeviceCanAccessPeer(i, j),
 * atomics[i*n+j] = cudaDevP2PAttrNativeAtomicSupported, rank[i*n+j] =
 * cudaDevP2PAttrPerformanceRank (0 on the diagonal). */
GLC_API int glc_multi_topology(int count, int *access, int *atomics, int *rank);
/* GB/s (1e9 bytes/s) of a bytes-long copy from device i to device j, the median of repeat
 * timed copies after one warm-up, for every pair of count devices (the diagonal: a copy within
 * the device). Peer access is enabled where the devices allow it (and left enabled). */
GLC_API int glc_multi_p2p_bandwidth(int count, size_t bytes, int repeat, double *gbps);
/* Lets device from read and write device to's cudaMalloc'd memory when CUDA allows it (*enabled
 * = 1; 0 and cudaSuccess where it does not). The process remembers the pairs it enabled and asks
 * CUDA once per pair: a second cudaDeviceEnablePeerAccess is an API error that the sanitizers
 * report (cudaErrorPeerAccessAlreadyEnabled). The calling thread's device is kept. */
GLC_API int glc_multi_enable_peer(int from, int to, int *enabled);

#ifdef __cplusplus
}
#endif
#endif
