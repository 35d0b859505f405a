// Jacobi over several GPUs (S3 10.1): the grid split along axis 0 into slabs, one per
// GPU, each with `halo` ghost rows (2D) or planes (3D) on either side and two buffers. Every
// sweep is the stencil lab's: the row/plane-range sweep (glc_jacobi_sweep2d_rows,
// glc_jacobi_sweep3d_planes: glc_jacobi's fused variant, halo 1) or, in 2D with depth > 0, its
// temporal blocking over a row range (glc_jacobi_temporal2d_rows: a pass of up to `depth`
// sweeps per launch, halos `depth` rows deep so that the owned rows come out right). No kernel
// of its own, so every cell gets exactly the arithmetic of that single-GPU variant and the result
// is bitwise that variant's.
//
// One pass (a sweep, or a temporal pass), per GPU: its compute stream waits for the halos of the
// last pass, sweeps its two edge bands (halo rows each, with overlap) and records `edges`; its
// copy stream waits for `edges` (its own and, for p2p, those of the neighbours it writes into:
// their previous pass has then finished reading the ghost rows about to be overwritten) and
// moves the edge bands into the neighbours' ghost rows of the new buffer, recording `sent`;
// meanwhile the compute stream sweeps the interior. Without overlap the whole slab sweeps before
// `edges`, and so does a temporal pass that checks no residual, ghost rows and all (below). Nothing
// waits on the host except at a check. tools/emulate/multi_jacobi.py runs this file on the CPU with
// the streams in starving orders: dropping any of these waits that is needed makes it fail.
//
// The residual: every slab's checked sweep raises its own device scalar (the sweep's
// residual_max); at a check the GPUs' maxima are combined, exactly, either on the host (p2p: one
// process reads each scalar and takes the max) or by NCCL's max all-reduce (nccl), then scaled
// as glc_jacobi does: (2 ndim / h2) with h2 the grid dtype's h*h.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "cuda/core/errors.cuh"
#include "cuda/core/interrupt.h"
#include "cuda/stencil/stencil.h"
#include "device_guard.cuh"
#include "multi.h"

namespace {

// Timing events are kept for this many sweeps before they are read (the host then waits for a
// sweep this far back, which leaves the queue of launches ahead of the GPUs that deep).
constexpr int timing_ring = 4;

struct slab {
  int device = 0;
  size_t lo = 0, hi = 0;                  // rows of axis 0 held: owned plus ghosts, [lo, hi)
  size_t begin = 0, end = 0;              // rows owned
  size_t sweep_begin = 0, sweep_end = 0;  // rows swept: owned and inside [1, n0 - 1)
  void *u[2] = {nullptr, nullptr};
  void *f = nullptr, *residual = nullptr;
  bool own_f = true;  // false: f's own rows, read in place on f's device
  cudaStream_t compute = nullptr, copy = nullptr;
  bool own_copy_stream = false;  // p2p: made here; nccl: the communicator's
  cudaEvent_t edges = nullptr, sent = nullptr;
  cudaEvent_t timing[timing_ring][4] = {};  // compute start, end; exchange start, end
  bool pending[timing_ring] = {};
};

struct problem {
  int count, exchange, overlap, dtype, ndim;
  int depth;    // 0: one fused sweep a pass; else temporal passes of up to depth sweeps
  size_t halo;  // ghost rows on either side: 1, or depth
  const size_t *shape;
  size_t row_elems, item;  // elements of one row (2D) or plane (3D) of axis 0; bytes of one
  double h2;               // h * h, as glc_jacobi computes it
  glc_multi_comm *const *comms;
};

// `sweeps` sweeps (one, or a temporal pass) over global rows [first, last) of slab s, reading
// u[from], writing u[1 - from].
int sweep_rows(const problem &p, slab &s, int from, size_t first, size_t last, int sweeps,
               bool residual) {
  if (first >= last) return cudaSuccess;
  void *res = residual ? s.residual : nullptr;
  const size_t rows = s.hi - s.lo;
  if (p.depth)
    return glc_jacobi_temporal2d_rows(p.dtype, s.u[from], s.u[1 - from], s.f, rows, p.shape[1],
                                      first - s.lo, last - s.lo, sweeps, p.h2, res, s.compute);
  if (p.ndim == 2)
    return glc_jacobi_sweep2d_rows(p.dtype, s.u[from], s.u[1 - from], s.f, rows, p.shape[1],
                                   first - s.lo, last - s.lo, p.h2, res, s.compute);
  return glc_jacobi_sweep3d_planes(p.dtype, s.u[from], s.u[1 - from], s.f, rows, p.shape[1],
                                   p.shape[2], first - s.lo, last - s.lo, p.h2, res, s.compute);
}

char *row_of(const problem &p, const slab &s, int buffer, size_t row) {
  return static_cast<char *>(s.u[buffer]) + (row - s.lo) * p.row_elems * p.item;
}

int wait(cudaStream_t stream, cudaEvent_t event) {
  return GLC_CUDA(cudaStreamWaitEvent, stream, event, 0);
}

// Adds the elapsed times of timing slot `slot` of every slab (waiting for them) and frees it.
int harvest(std::vector<slab> &slabs, int slot, glc_multi_jacobi_result *result,
            DeviceGuard &guard) {
  for (size_t i = 0; i < slabs.size(); ++i) {
    slab &s = slabs[i];
    if (!s.pending[slot]) continue;
    s.pending[slot] = false;
    int code = guard.use(s.device);
    float compute = 0, exchange = 0;
    if (!code) code = GLC_CUDA(cudaEventSynchronize, s.timing[slot][1]);
    if (!code) code = GLC_CUDA(cudaEventSynchronize, s.timing[slot][3]);
    if (!code)
      code = GLC_CUDA(cudaEventElapsedTime, &compute, s.timing[slot][0], s.timing[slot][1]);
    if (!code)
      code = GLC_CUDA(cudaEventElapsedTime, &exchange, s.timing[slot][2], s.timing[slot][3]);
    if (code) return code;
    result->compute_ms[i] += compute;
    result->exchange_ms[i] += exchange;
  }
  return cudaSuccess;
}

// One pass of `sweeps` sweeps on every GPU, from buffer `from`, halos moved into buffer 1 - from.
int sweep_all(const problem &p, std::vector<slab> &slabs, int from, int sweeps, bool residual,
              int slot, DeviceGuard &guard) {
  const int to = 1 - from;
  const int n = p.count;
  int code = cudaSuccess;
  for (int i = 0; i < n && !code; ++i) {
    slab &s = slabs[i];
    code = guard.use(s.device);
    // the halos of the last sweep must have landed: the neighbours' p2p copies, and its own
    // copy stream, where its NCCL receives land (a neighbour's send may finish first)
    if (!code && n > 1) code = wait(s.compute, s.sent);
    if (!code && i > 0) code = wait(s.compute, slabs[i - 1].sent);
    if (!code && i + 1 < n) code = wait(s.compute, slabs[i + 1].sent);
    if (!code) code = GLC_CUDA(cudaEventRecord, s.timing[slot][0], s.compute);
    if (code) break;
    if (p.depth && !residual) {
      // a temporal pass over every row held, ghosts too, in one launch: the slab's first and last
      // rows held as edges spoil only its ghost rows (up to depth - 1 deep), which the exchange
      // then overwrites, and the kernel skips the range checks (gl.jacobi's own: 10% faster)
      code = sweep_rows(p, s, from, s.lo + 1, s.hi - 1, sweeps, false);
      if (!code) code = GLC_CUDA(cudaEventRecord, s.edges, s.compute);
    } else if (p.overlap && n > 1) {  // the bands the neighbours need first: halo rows at each end
      const size_t b = s.sweep_begin, e = s.sweep_end;
      const size_t top = e - b < p.halo ? e : b + p.halo;
      const size_t bottom = e - top < p.halo ? top : e - p.halo;
      code = sweep_rows(p, s, from, b, top, sweeps, residual);
      if (!code) code = sweep_rows(p, s, from, bottom, e, sweeps, residual);
      if (!code) code = GLC_CUDA(cudaEventRecord, s.edges, s.compute);
      if (!code) code = sweep_rows(p, s, from, top, bottom, sweeps, residual);
    } else {
      code = sweep_rows(p, s, from, s.sweep_begin, s.sweep_end, sweeps, residual);
      if (!code) code = GLC_CUDA(cudaEventRecord, s.edges, s.compute);
    }
    if (!code) code = GLC_CUDA(cudaEventRecord, s.timing[slot][1], s.compute);
  }
  if (code) return code;
  const size_t bytes = p.halo * p.row_elems * p.item;
  for (int i = 0; i < n && !code; ++i) {  // the copy streams: wait, then (p2p) copy
    slab &s = slabs[i];
    code = guard.use(s.device);
    if (!code) code = wait(s.copy, s.edges);
    if (p.exchange == GLC_MULTI_EXCHANGE_P2P) {
      if (!code && i > 0) code = wait(s.copy, slabs[i - 1].edges);
      if (!code && i + 1 < n) code = wait(s.copy, slabs[i + 1].edges);
    }
    if (!code) code = GLC_CUDA(cudaEventRecord, s.timing[slot][2], s.copy);
    if (code || p.exchange != GLC_MULTI_EXCHANGE_P2P || n == 1) continue;
    if (i > 0) {  // my first halo rows are the ghost rows below the slab above
      const slab &up = slabs[i - 1];
      code = GLC_CUDA(cudaMemcpyPeerAsync, row_of(p, up, to, s.begin), up.device,
                      row_of(p, s, to, s.begin), s.device, bytes, s.copy);
    }
    if (!code && i + 1 < n) {  // my last halo rows are the ghost rows above the slab below
      const slab &down = slabs[i + 1];
      code = GLC_CUDA(cudaMemcpyPeerAsync, row_of(p, down, to, s.end - p.halo), down.device,
                      row_of(p, s, to, s.end - p.halo), s.device, bytes, s.copy);
    }
  }
  if (!code && p.exchange == GLC_MULTI_EXCHANGE_NCCL && n > 1) {
    const int type = p.dtype == GLC_F64 ? GLC_NCCL_F64 : GLC_NCCL_F32;
    const size_t count = p.halo * p.row_elems, h = p.halo;
    std::vector<glc_multi_transfer> transfers;
    for (int i = 0; i < n; ++i) {
      const slab &s = slabs[i];
      if (i > 0) {
        transfers.push_back({p.comms[i], i - 1, 1, type, row_of(p, s, to, s.begin), count});
        transfers.push_back({p.comms[i], i - 1, 0, type, row_of(p, s, to, s.begin - h), count});
      }
      if (i + 1 < n) {
        transfers.push_back({p.comms[i], i + 1, 1, type, row_of(p, s, to, s.end - h), count});
        transfers.push_back({p.comms[i], i + 1, 0, type, row_of(p, s, to, s.end), count});
      }
    }
    code = glc_multi_sendrecv(static_cast<int>(transfers.size()), transfers.data());
  }
  for (int i = 0; i < n && !code; ++i) {
    slab &s = slabs[i];
    code = guard.use(s.device);
    if (!code) code = GLC_CUDA(cudaEventRecord, s.timing[slot][3], s.copy);
    if (!code) code = GLC_CUDA(cudaEventRecord, s.sent, s.copy);
    s.pending[slot] = true;
  }
  return code;
}

template <typename T>
T max_keep_nan(T a, T b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<T>::quiet_NaN() : (b > a ? b : a);
}

// The largest |u_new - u| of the checked sweep over every GPU (the sweeps are waited for first,
// outside the timed part).
template <typename T>
int combine(const problem &p, std::vector<slab> &slabs, T *largest, double *ms,
            DeviceGuard &guard) {
  for (slab &s : slabs) {
    int code = guard.use(s.device);
    if (!code) code = GLC_CUDA(cudaStreamSynchronize, s.compute);
    if (code) return code;
  }
  const auto start = std::chrono::steady_clock::now();
  int code = cudaSuccess;
  *largest = T(0);
  if (p.exchange == GLC_MULTI_EXCHANGE_NCCL && p.count > 1) {
    std::vector<void *> buffers;
    for (slab &s : slabs) buffers.push_back(s.residual);
    code = glc_multi_allreduce(p.count, p.comms, buffers.data(), nullptr, 1,
                               p.dtype == GLC_F64 ? GLC_NCCL_F64 : GLC_NCCL_F32, GLC_NCCL_MAX);
    if (!code) code = guard.use(slabs[0].device);
    if (!code)
      code = GLC_CUDA(cudaMemcpy, largest, slabs[0].residual, sizeof(T), cudaMemcpyDeviceToHost);
  } else {
    for (slab &s : slabs) {
      T value = T(0);
      code = guard.use(s.device);
      if (!code) code = GLC_CUDA(cudaMemcpy, &value, s.residual, sizeof(T), cudaMemcpyDeviceToHost);
      if (code) break;
      *largest = max_keep_nan(*largest, value);
    }
  }
  *ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return code;
}

// Makes streams and events, allocates every slab from its device's pool and fills it straight
// from where f and u0 live (u0 NULL: zeros), every GPU at once, and waits; enables peer access
// from each slab's GPU to the grids' devices (direct copies) and, for p2p, between neighbours.
int set_up(const problem &p, std::vector<slab> &slabs, const void *f, const void *u0, const void *u,
           DeviceGuard &guard) {
  const size_t row_bytes = p.row_elems * p.item;
  int f_device = -1, u0_device = -1, u_device = -1, paged = 0;
  int code = glc_multi_locate(f, &f_device, &paged);
  if (!code && u0) code = glc_multi_locate(u0, &u0_device, &paged);
  if (!code) code = glc_multi_locate(u, &u_device, &paged);
  std::vector<glc_multi_piece> pieces;
  for (int i = 0; i < p.count && !code; ++i) {
    slab &s = slabs[i];
    const size_t bytes = (s.hi - s.lo) * row_bytes;
    const char *f_rows = static_cast<const char *>(f) + s.lo * row_bytes;
    code = guard.use(s.device);
    if (!code) code = GLC_CUDA(cudaStreamCreateWithFlags, &s.compute, cudaStreamNonBlocking);
    if (!code && p.exchange == GLC_MULTI_EXCHANGE_NCCL && p.count > 1) {
      glc_stream stream = nullptr;
      code = glc_multi_comm_stream(p.comms[i], &stream);
      s.copy = static_cast<cudaStream_t>(stream);
    } else if (!code) {
      code = GLC_CUDA(cudaStreamCreateWithFlags, &s.copy, cudaStreamNonBlocking);
      s.own_copy_stream = code == cudaSuccess;
    }
    if (!code) code = GLC_CUDA(cudaEventCreateWithFlags, &s.edges, cudaEventDisableTiming);
    if (!code) code = GLC_CUDA(cudaEventCreateWithFlags, &s.sent, cudaEventDisableTiming);
    for (int k = 0; k < timing_ring && !code; ++k)
      for (int j = 0; j < 4 && !code; ++j) code = GLC_CUDA(cudaEventCreate, &s.timing[k][j]);
    // the pool keeps freed slabs for the next call: no fresh mapping of a GiB per solve
    if (!code) code = glc_pool_init(s.device);
    // separate allocations: each 256-byte aligned, as the single-GPU grids, so the sweep picks
    // the same kernel (the 16-byte vector one where the rows allow it); f's own rows serve
    // where they are so aligned
    s.own_f = !(f_device == s.device && reinterpret_cast<uintptr_t>(f_rows) % 256 == 0);
    for (int b = 0; b < 2 && !code; ++b)
      code = GLC_CUDA(cudaMallocAsync, &s.u[b], bytes, s.compute);
    if (!code && s.own_f) code = GLC_CUDA(cudaMallocAsync, &s.f, bytes, s.compute);
    if (!code && !s.own_f) s.f = const_cast<char *>(f_rows);
    if (!code) code = GLC_CUDA(cudaMallocAsync, &s.residual, sizeof(double), s.compute);
    for (int b = 0; b < 2 && !code && !u0; ++b)  // zeros, faces and all, in both buffers
      code = GLC_CUDA(cudaMemsetAsync, s.u[b], 0, bytes, s.compute);
    if (!code && s.own_f) pieces.push_back({s.device, s.compute, s.f, f_rows, bytes});
    if (!code && u0)
      pieces.push_back(
          {s.device, s.compute, s.u[0], static_cast<const char *>(u0) + s.lo * row_bytes, bytes});
    for (int grid : {f_device, u0_device, u_device}) {
      int enabled = 0;  // without peer access the copies still work, through the host
      if (!code && grid >= 0 && grid != s.device)
        code = glc_multi_enable_peer(s.device, grid, &enabled);
    }
  }
  if (!code) code = glc_multi_copy_pieces(static_cast<int>(pieces.size()), pieces.data());
  for (int i = 0; i < p.count && !code && u0; ++i) {  // the second buffer: faces and all, as u0
    slab &s = slabs[i];
    code = guard.use(s.device);
    if (!code)
      code = GLC_CUDA(cudaMemcpyAsync, s.u[1], s.u[0], (s.hi - s.lo) * row_bytes,
                      cudaMemcpyDeviceToDevice, s.compute);
  }
  for (int i = 0; i < p.count && !code; ++i) {
    code = guard.use(slabs[i].device);
    if (!code) code = GLC_CUDA(cudaStreamSynchronize, slabs[i].compute);
  }
  if (code || p.exchange != GLC_MULTI_EXCHANGE_P2P) return code;
  for (int i = 0; i + 1 < p.count; ++i) {
    const int a = slabs[i].device, b = slabs[i + 1].device;
    int ab = 0, ba = 0;
    code = glc_multi_enable_peer(a, b, &ab);
    if (!code) code = glc_multi_enable_peer(b, a, &ba);
    if (code) return code;
    if (!ab || !ba)
      return glc_fail(cudaErrorPeerAccessUnsupported,
                      "glc_multi_jacobi (exchange p2p: neighbouring GPUs without peer access)");
  }
  return cudaSuccess;
}

void tear_down(std::vector<slab> &slabs, DeviceGuard &guard) {
  for (slab &s : slabs) {  // every stream first: a neighbour's copies may write into this slab
    if (guard.use(s.device)) continue;
    if (s.compute) cudaStreamSynchronize(s.compute);
    if (s.copy) cudaStreamSynchronize(s.copy);
  }
  for (slab &s : slabs) {
    if (guard.use(s.device)) continue;
    for (void *ptr : {s.u[0], s.u[1], s.own_f ? s.f : nullptr, s.residual})
      if (ptr) cudaFreeAsync(ptr, s.compute);  // back to the pool; allocated on s.compute
    for (auto &slot : s.timing)
      for (cudaEvent_t e : slot)
        if (e) cudaEventDestroy(e);
    if (s.edges) cudaEventDestroy(s.edges);
    if (s.sent) cudaEventDestroy(s.sent);
    if (s.compute) cudaStreamDestroy(s.compute);
    if (s.own_copy_stream) cudaStreamDestroy(s.copy);
  }
}

template <typename T>
int solve(const problem &p, std::vector<slab> &slabs, size_t max_sweeps, double tol,
          size_t check_every, void *u, double *residuals, size_t capacity,
          glc_multi_jacobi_result *result, DeviceGuard &guard) {
  // glc_jacobi's scale: 2 ndim over the grid dtype's h2
  const double scale = 2.0 * p.ndim / static_cast<double>(static_cast<T>(p.h2));
  int from = 0, code = cudaSuccess;
  size_t sweep_index = 0;
  const auto start = std::chrono::steady_clock::now();
  while (code == cudaSuccess && result->sweeps < max_sweeps) {
    const size_t count =
        max_sweeps - result->sweeps < check_every ? max_sweeps - result->sweeps : check_every;
    for (slab &s : slabs) {
      code = guard.use(s.device);
      if (!code) code = GLC_CUDA(cudaMemsetAsync, s.residual, 0, sizeof(T), s.compute);
      if (code) break;
    }
    for (size_t done = 0, step = 1; code == cudaSuccess && done < count;
         done += step, ++sweep_index) {
      // Ctrl-C: stop issuing; the streams are drained below and nothing is gathered
      code = glc_check_interrupt();
      if (code) break;
      // a temporal pass: as glc_jacobi's, up to depth sweeps, the check's last one shorter
      step = p.depth ? std::min(static_cast<size_t>(p.depth), count - done) : 1;
      const int slot = static_cast<int>(sweep_index % timing_ring);
      code = harvest(slabs, slot, result, guard);  // frees the slot this pass records into
      if (!code)
        code = sweep_all(p, slabs, from, static_cast<int>(step), done + step == count, slot, guard);
      from = 1 - from;
    }
    T largest = T(0);
    if (code == cudaSuccess) code = combine(p, slabs, &largest, &result->allreduce_ms, guard);
    if (code != cudaSuccess) break;
    result->sweeps += count;
    const double residual = static_cast<double>(largest) * scale;
    if (glc_jacobi_record_check(residual, tol, residuals, capacity, &result->checks,
                                &result->converged))
      break;
  }
  for (slab &s : slabs) {  // everything done, before the clock stops
    int c = guard.use(s.device);
    if (!c) c = GLC_CUDA(cudaStreamSynchronize, s.compute);
    if (!c) c = GLC_CUDA(cudaStreamSynchronize, s.copy);
    if (c && !code) code = c;
  }
  result->total_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (int slot = 0; slot < timing_ring && !code; ++slot)
    code = harvest(slabs, slot, result, guard);
  // gather: each slab's owned rows of the newest buffer, straight to where u lives, at once
  const auto gathering = std::chrono::steady_clock::now();
  const size_t row_bytes = p.row_elems * p.item;
  std::vector<glc_multi_piece> pieces;
  for (slab &s : slabs)
    pieces.push_back({s.device, s.compute, static_cast<char *>(u) + s.begin * row_bytes,
                      row_of(p, s, from, s.begin), (s.end - s.begin) * row_bytes});
  if (!code) code = glc_multi_copy_pieces(static_cast<int>(pieces.size()), pieces.data());
  result->gather_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - gathering)
          .count();
  return code;
}

}  // namespace

extern "C" int glc_multi_jacobi(int count, const int *devices, glc_multi_comm *const *comms,
                                int exchange, int overlap, int depth, int dtype, int ndim,
                                const size_t *shape, const size_t *starts, double h,
                                size_t max_sweeps, double tol, size_t check_every, const void *f,
                                const void *u0, void *u, double *residuals, size_t capacity,
                                glc_multi_jacobi_result *result) {
  if (result == nullptr || shape == nullptr || starts == nullptr || devices == nullptr ||
      (ndim != 2 && ndim != 3) || check_every == 0 || !(h > 0) || count < 1 ||
      count > GLC_MULTI_MAX_GPUS || (capacity && residuals == nullptr) ||
      (exchange != GLC_MULTI_EXCHANGE_P2P && exchange != GLC_MULTI_EXCHANGE_NCCL) ||
      (exchange == GLC_MULTI_EXCHANGE_NCCL && count > 1 && comms == nullptr) || depth < 0 ||
      depth > 15 || (depth && ndim != 2))
    return glc_fail(cudaErrorInvalidValue, "glc_multi_jacobi (arguments)");
  *result = glc_multi_jacobi_result{};
  result->depth = depth;
  size_t n = 1, row_elems = 1;
  for (int a = 0; a < ndim; ++a) {
    if (shape[a] >= (size_t{1} << 31))
      return glc_fail(cudaErrorInvalidValue, "glc_multi_jacobi (shape)");
    n *= shape[a];
    if (a > 0) row_elems *= shape[a];
  }
  if (n == 0) {  // as glc_jacobi: every sweep and check done at once, residual 0
    result->sweeps = max_sweeps;
    result->checks = max_sweeps / check_every + (max_sweeps % check_every != 0);
    for (size_t i = 0; i < result->checks && i < capacity; ++i) residuals[i] = 0.0;
    result->converged = tol > 0 && max_sweeps > 0;
    return cudaSuccess;
  }
  if (f == nullptr || u == nullptr)
    return glc_fail(cudaErrorInvalidValue, "glc_multi_jacobi (f or u missing)");
  if (starts[0] != 0 || starts[count] != shape[0])
    return glc_fail(cudaErrorInvalidValue, "glc_multi_jacobi (starts)");
  size_t thinnest = shape[0];
  for (int i = 0; i < count; ++i) {
    if (starts[i + 1] <= starts[i])
      return glc_fail(cudaErrorInvalidValue, "glc_multi_jacobi (a slab without rows)");
    if (starts[i + 1] - starts[i] < thinnest) thinnest = starts[i + 1] - starts[i];
  }
  // a ghost row must be a neighbour's own row: passes no deeper than the thinnest slab
  if (depth && static_cast<size_t>(depth) > thinnest) depth = static_cast<int>(thinnest);
  result->depth = depth;
  if (dtype != GLC_F32 && dtype != GLC_F64)
    return glc_fail(cudaErrorInvalidValue, "glc_multi_jacobi (dtype)");
  problem p{count,
            exchange,
            overlap,
            dtype,
            ndim,
            depth,
            depth ? static_cast<size_t>(depth) : 1,
            shape,
            row_elems,
            dtype == GLC_F64 ? sizeof(double) : sizeof(float),
            h * h,
            comms};
  const size_t n0 = shape[0];
  std::vector<slab> slabs(count);
  for (int i = 0; i < count; ++i) {
    slab &s = slabs[i];
    s.device = devices[i];
    s.begin = starts[i];
    s.end = starts[i + 1];
    s.lo = s.begin > p.halo ? s.begin - p.halo : 0;
    s.hi = s.end + p.halo < n0 ? s.end + p.halo : n0;
    s.sweep_begin = s.begin > 1 ? s.begin : 1;
    s.sweep_end = s.end < n0 - 1 ? s.end : n0 - 1;
    if (s.sweep_end < s.sweep_begin) s.sweep_end = s.sweep_begin;  // nothing to sweep
  }
  DeviceGuard guard;
  const auto placing = std::chrono::steady_clock::now();
  int code = set_up(p, slabs, f, u0, u, guard);
  result->scatter_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - placing).count();
  if (!code) {
    if (dtype == GLC_F64)
      code = solve<double>(p, slabs, max_sweeps, tol, check_every, u, residuals, capacity, result,
                           guard);
    else
      code = solve<float>(p, slabs, max_sweeps, tol, check_every, u, residuals, capacity, result,
                          guard);
  }
  tear_down(slabs, guard);
  return code;
}
