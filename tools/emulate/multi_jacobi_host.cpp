// Host emulation of the multi-GPU Jacobi's orchestration (cuda/multi/jacobi.cu), for machines
// without a GPU: jacobi.cu itself is compiled by g++ against the functions below, which stand in
// for the CUDA runtime, the stencil lab's row/plane-range sweeps (a CPU sweep with the same
// contract) and NCCL (a group runs when every rank's stream has reached it; a max all-reduce).
//
// Streams are queues: nothing runs when it is issued. Work runs only when the host must wait (a
// stream or event synchronize, a free), and then in a random order among the streams whose next
// operation may start (an event wait may start once that record has run; an NCCL group once
// every rank's stream is at it). A missing event wait then shows as a wrong byte for some seeds.
// Each case runs under several seeds and is compared, byte for byte, with one grid swept whole
// by the same CPU sweep: the slabs' index arithmetic, the halo rows each way, the checks, tol and
// the gather. Every allocation has guard bytes on both sides, checked when freed; every sweep,
// memset and event record is checked to be issued on its memory's and stream's device. Ctrl-C is
// the binding's check answering GLC_INTERRUPTED from its k-th call on: the solve must stop,
// leave no stream with work and no allocation, and gather nothing. Not
// emulated: timing, and synchronous copies (cudaMemcpy runs at once, waiting for no stream, as
// with non-blocking streams).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "cuda/core/interrupt.h"
#include "cuda/multi/multi.h"
#include "cuda/stencil/stencil.h"

namespace {

int failures = 0;
void fail(const char *what) {
  std::fprintf(stderr, "emulate: %s\n", what);
  ++failures;
}

thread_local int current_device = 0;
bool peer_access = true;
constexpr size_t guard_bytes = 256;  // and the alignment of every allocation, as cudaMalloc's
constexpr unsigned char guard_value = 0xab;

struct allocation {
  int device;
  size_t bytes;
};
std::map<char *, allocation> allocations;  // user pointer -> where and how big

struct operation {
  std::function<bool()> ready;  // may it start now (it is at its stream's head)?
  std::function<void()> run;
  const void *tag = nullptr;  // an NCCL group's operations carry the group
};
struct stream_record {
  int device;
  std::deque<operation> queue;
  unsigned
      priority;  // under a strict-priority schedule, the lowest runs only when nothing else can
};
struct event_record {
  int device;
  long recorded = 0, fired = 0;  // records issued, and the last one that has run
};
std::vector<stream_record *> streams;
std::mt19937 schedule(1);
bool strict_priority = false;  // else: a uniformly random ready stream each step

// Runs queued operations, a random ready stream's next one at a time, until done() holds.
void run_until(const std::function<bool()> &done) {
  while (!done()) {
    std::vector<stream_record *> ready;
    for (stream_record *s : streams)
      if (!s->queue.empty() && s->queue.front().ready()) ready.push_back(s);
    if (ready.empty()) {
      fail("deadlock: the host waits for work that can never start");
      std::exit(2);
    }
    stream_record *s = ready[schedule() % ready.size()];
    if (strict_priority)
      for (stream_record *r : ready)
        if (r->priority > s->priority) s = r;
    operation op = std::move(s->queue.front());
    s->queue.pop_front();
    op.run();
  }
}

void run_all() {
  run_until([] {
    for (stream_record *s : streams)
      if (!s->queue.empty()) return false;
    return true;
  });
}

void issue(
    cudaStream_t s, std::function<void()> run, std::function<bool()> ready = [] { return true; }) {
  operation op;
  op.ready = std::move(ready);
  op.run = std::move(run);
  reinterpret_cast<stream_record *>(s)->queue.push_back(std::move(op));
}

int device_of(const void *p) {
  auto it = allocations.upper_bound(static_cast<char *>(const_cast<void *>(p)));
  if (it == allocations.begin()) return -1;
  --it;
  const char *c = static_cast<const char *>(p);
  return c < it->first + it->second.bytes ? it->second.device : -1;
}

int stream_device(cudaStream_t s) { return reinterpret_cast<stream_record *>(s)->device; }

}  // namespace

// ---- the CUDA runtime, as the emulation runs it ----
extern "C" {
cudaError_t cudaGetDevice(int *device) {
  *device = current_device;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  current_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int) {
  streams.push_back(new stream_record{current_device, {}, static_cast<unsigned>(schedule())});
  *s = reinterpret_cast<cudaStream_t>(streams.back());
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  stream_record *r = reinterpret_cast<stream_record *>(s);
  run_until([r] { return r->queue.empty(); });
  for (size_t i = 0; i < streams.size(); ++i)
    if (streams[i] == r) streams.erase(streams.begin() + static_cast<long>(i));
  delete r;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  stream_record *r = reinterpret_cast<stream_record *>(s);
  run_until([r] { return r->queue.empty(); });
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) {
  *e = reinterpret_cast<cudaEvent_t>(new event_record{current_device});
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<event_record *>(e);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  event_record *r = reinterpret_cast<event_record *>(e);
  if (r->device != stream_device(s)) fail("an event recorded on another device's stream");
  if (current_device != stream_device(s)) fail("cudaEventRecord off the stream's device");
  const long generation = ++r->recorded;
  issue(s, [r, generation] { r->fired = std::max(r->fired, generation); });
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  event_record *r = reinterpret_cast<event_record *>(e);
  const long generation = r->recorded;
  run_until([r, generation] { return r->fired >= generation; });
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0.0f;
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  if (current_device != stream_device(s)) fail("cudaStreamWaitEvent off the stream's device");
  event_record *r = reinterpret_cast<event_record *>(e);
  const long generation = r->recorded;  // the record issued last, as CUDA takes it
  issue(
      s, [] {}, [r, generation] { return r->fired >= generation; });
  return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t bytes) {
  const size_t whole = (bytes + 2 * guard_bytes + guard_bytes - 1) / guard_bytes * guard_bytes;
  char *base = static_cast<char *>(std::aligned_alloc(guard_bytes, whole));
  std::memset(base, guard_value, bytes + 2 * guard_bytes);
  char *user = base + guard_bytes;
  std::memset(user, 0x7f, bytes);  // not zero: a row nobody wrote shows
  allocations[user] = {current_device, bytes};
  *p = user;
  return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
  run_all();  // cudaFree waits for the device
  auto it = allocations.find(static_cast<char *>(p));
  if (it == allocations.end()) {
    fail("cudaFree of an unknown pointer");
    return cudaErrorInvalidValue;
  }
  char *user = it->first;
  for (size_t i = 0; i < guard_bytes; ++i)
    if (user[-1 - static_cast<long>(i)] != static_cast<char>(guard_value) ||
        user[it->second.bytes + i] != static_cast<char>(guard_value)) {
      fail("a write outside an allocation (guard bytes changed)");
      break;
    }
  std::free(user - guard_bytes);
  allocations.erase(it);
  return cudaSuccess;
}
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s) {
  if (current_device != stream_device(s)) fail("cudaMallocAsync off the stream's device");
  return cudaMalloc(p, bytes);
}
cudaError_t cudaFreeAsync(void *p, cudaStream_t s) {
  if (current_device != stream_device(s)) fail("cudaFreeAsync off the stream's device");
  return cudaFree(p);
}
cudaError_t cudaDeviceSynchronize(void) {
  run_all();
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind,
                            cudaStream_t s) {
  const int to = device_of(dst), from = device_of(src);
  if ((to >= 0 && device_of(static_cast<char *>(dst) + bytes - 1) != to) ||
      (from >= 0 && device_of(static_cast<const char *>(src) + bytes - 1) != from))
    fail("cudaMemcpyAsync past an allocation's end");
  if (current_device != stream_device(s)) fail("cudaMemcpyAsync off the stream's device");
  if (to != stream_device(s) && from != stream_device(s))
    fail("cudaMemcpyAsync on a stream of neither end's device");
  issue(s, [=] { std::memcpy(dst, src, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind) {
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device,
                                size_t bytes, cudaStream_t s) {
  if (device_of(dst) != dst_device || device_of(src) != src_device)
    fail("cudaMemcpyPeerAsync: a pointer not on the device named");
  if (device_of(static_cast<char *>(dst) + bytes - 1) != dst_device ||
      device_of(static_cast<const char *>(src) + bytes - 1) != src_device)
    fail("cudaMemcpyPeerAsync past an allocation's end");
  if (stream_device(s) != src_device) fail("a halo copy issued on another device's stream");
  issue(s, [=] { std::memcpy(dst, src, bytes); });
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s) {
  if (device_of(p) != stream_device(s)) fail("cudaMemsetAsync on another device's stream");
  issue(s, [=] { std::memset(p, value, bytes); });
  return cudaSuccess;
}
cudaError_t cudaDeviceCanAccessPeer(int *can, int, int) {
  *can = peer_access;
  return cudaSuccess;
}
}

int glc_fail(int code, const char *) { return code; }
int glc_pool_init(int) { return cudaSuccess; }
// placement.cu's: memory the emulation did not allocate is the host's, pageable
int glc_multi_locate(const void *ptr, int *device, int *pageable) {
  *device = device_of(ptr);
  *pageable = *device < 0;
  return cudaSuccess;
}
int glc_multi_copy_pieces(int count, const glc_multi_piece *pieces) {
  const int saved = current_device;
  for (int i = 0; i < count; ++i) {
    const glc_multi_piece &piece = pieces[i];
    if (stream_device(static_cast<cudaStream_t>(piece.stream)) != piece.device)
      fail("a scatter or gather piece on another device's stream");
    if (piece.bytes && device_of(piece.dst) != piece.device && device_of(piece.src) != piece.device)
      fail("a scatter or gather piece with neither end on its device");
    current_device = piece.device;
    if (piece.bytes)
      cudaMemcpyAsync(piece.dst, piece.src, piece.bytes, cudaMemcpyDefault,
                      static_cast<cudaStream_t>(piece.stream));
  }
  for (int i = 0; i < count; ++i)
    cudaStreamSynchronize(static_cast<cudaStream_t>(pieces[i].stream));
  current_device = saved;
  return cudaSuccess;
}

// The binding's Ctrl-C check (csrc/core/interrupt.c): a handler raises at the interrupt_at-th call
// (0: never) and at every call after it.
long interrupt_at = 0, interrupt_calls = 0;
extern "C" int glc_check_interrupt(void) {
  ++interrupt_calls;
  return interrupt_at && interrupt_calls >= interrupt_at ? GLC_INTERRUPTED : 0;
}
// topology.cu's, which jacobi.cu calls: peer access as the emulated machine has it
int glc_multi_enable_peer(int, int, int *enabled) {
  *enabled = peer_access;
  return cudaSuccess;
}

// ---- NCCL as the emulation runs it ----
struct glc_multi_comm {
  int rank;
  cudaStream_t stream;
};

namespace {

// An NCCL group: one operation on each rank's stream; it may start once every rank's stream has
// reached it (NCCL's kernels of one group wait for each other). The first rank to run reads what
// is sent (stage); each rank's own operation writes what it receives (land), so a receive is
// only there once the receiving rank's stream has run it: waiting for a neighbour's stream is
// not enough, as with NCCL, whose sender may finish before the receiver's kernel has copied out.
struct nccl_group {
  std::vector<stream_record *> members;
  std::function<void()> stage;
  std::function<void(stream_record *)> land;
  bool staged = false;
};

void issue_group(const std::vector<glc_multi_comm *> &comms, std::function<void()> stage,
                 std::function<void(stream_record *)> land) {
  auto group = std::make_shared<nccl_group>();
  group->stage = std::move(stage);
  group->land = std::move(land);
  for (glc_multi_comm *c : comms) {
    stream_record *s = reinterpret_cast<stream_record *>(c->stream);
    bool seen = false;
    for (stream_record *m : group->members) seen = seen || m == s;
    if (!seen) group->members.push_back(s);
  }
  for (stream_record *member : group->members) {
    operation op;
    op.tag = group.get();
    op.ready = [group] {
      if (group->staged) return true;
      for (stream_record *s : group->members)
        if (s->queue.empty() || s->queue.front().tag != group.get()) return false;
      return true;
    };
    op.run = [group, member] {
      if (!group->staged) {
        group->staged = true;
        group->stage();
      }
      group->land(member);
    };
    member->queue.push_back(std::move(op));
  }
}

stream_record *stream_of(const glc_multi_comm *c) {
  return reinterpret_cast<stream_record *>(c->stream);
}

}  // namespace

extern "C" {
int glc_multi_comm_stream(const glc_multi_comm *comm, glc_stream *stream) {
  *stream = comm->stream;
  return cudaSuccess;
}

int glc_multi_sendrecv(int count, const glc_multi_transfer *transfers) {
  std::vector<glc_multi_transfer> all(transfers, transfers + count);
  std::vector<glc_multi_comm *> comms;
  for (const glc_multi_transfer &t : all) comms.push_back(t.comm);
  for (const glc_multi_transfer &t : all) {
    const size_t bytes = t.count * (t.type == GLC_NCCL_F64 ? 8 : 4);
    if (device_of(t.buffer) < 0 || device_of(static_cast<char *>(t.buffer) + bytes - 1) < 0)
      fail("a transfer outside an allocation");
  }
  auto staging = std::make_shared<std::vector<std::vector<unsigned char>>>(all.size());
  auto stage = [all, staging] {
    for (size_t i = 0; i < all.size(); ++i) {
      const glc_multi_transfer &recv = all[i];
      if (recv.send) continue;
      int matched = 0;
      for (const glc_multi_transfer &send : all) {
        if (!send.send || send.comm->rank != recv.peer || send.peer != recv.comm->rank) continue;
        if (send.count != recv.count || send.type != recv.type) fail("send and receive differ");
        const unsigned char *from = static_cast<const unsigned char *>(send.buffer);
        (*staging)[i].assign(from, from + recv.count * (recv.type == GLC_NCCL_F64 ? 8 : 4));
        ++matched;
      }
      if (matched != 1) fail("a receive without exactly one matching send");
    }
  };
  auto land = [all, staging](stream_record *member) {
    for (size_t i = 0; i < all.size(); ++i)
      if (!all[i].send && stream_of(all[i].comm) == member)
        std::memcpy(all[i].buffer, (*staging)[i].data(), (*staging)[i].size());
  };
  issue_group(comms, stage, land);
  return cudaSuccess;
}

// As the engine's: on the communicators' streams, then waits for them.
int glc_multi_allreduce(int ranks, glc_multi_comm *const *comms, void *const *buffers,
                        const glc_stream *, size_t count, int type, int op) {
  if (op != GLC_NCCL_MAX || count != 1) fail("the residual all-reduce is one max");
  std::vector<glc_multi_comm *> members(comms, comms + ranks);
  std::vector<void *> slots(buffers, buffers + ranks);
  auto largest = std::make_shared<double>(0.0);
  auto stage = [slots, type, largest] {
    double m =
        type == GLC_NCCL_F64 ? *static_cast<double *>(slots[0]) : *static_cast<float *>(slots[0]);
    for (void *b : slots)
      m = std::fmax(m, type == GLC_NCCL_F64 ? *static_cast<double *>(b) : *static_cast<float *>(b));
    *largest = m;
  };
  auto land = [members, slots, type, largest](stream_record *member) {
    for (size_t i = 0; i < members.size(); ++i) {
      if (stream_of(members[i]) != member) continue;
      if (type == GLC_NCCL_F64)
        *static_cast<double *>(slots[i]) = *largest;
      else
        *static_cast<float *>(slots[i]) = static_cast<float>(*largest);
    }
  };
  issue_group(members, stage, land);
  for (glc_multi_comm *c : members) cudaStreamSynchronize(c->stream);
  return cudaSuccess;
}
}

// ---- the stencil lab's sweeps, on the CPU, with their contract ----
namespace {

template <typename T>
int sweep(const T *u, T *u_new, const T *f, size_t planes, size_t rows, size_t cols, size_t begin,
          size_t end, double h2, T *residual_max, bool three_d) {
  const size_t outer = three_d ? planes : rows;
  if (begin < 1 || end < begin || end > outer - 1) {
    fail("a sweep's range outside [1, n - 1)");
    return cudaErrorInvalidValue;
  }
  const T h = static_cast<T>(h2);
  const size_t plane = rows * cols;
  T largest = 0;
  for (size_t z = begin; z < end; ++z) {
    const size_t y0 = three_d ? 1 : z, y1 = three_d ? rows - 1 : z + 1;
    for (size_t y = y0; y < y1; ++y)
      for (size_t x = 1; x + 1 < cols; ++x) {
        const size_t at = three_d ? z * plane + y * cols + x : y * cols + x;
        T value;
        if (three_d)
          value = (u[at - plane] + u[at + plane] + u[at - cols] + u[at + cols] + u[at - 1] +
                   u[at + 1] + h * f[at]) /
                  T(6);
        else
          value = (u[at - cols] + u[at + cols] + u[at - 1] + u[at + 1] + h * f[at]) * T(0.25);
        u_new[at] = value;
        const T d = std::fabs(value - u[at]);
        largest = std::isnan(largest) || std::isnan(d) ? d + largest : (d > largest ? d : largest);
      }
  }
  if (residual_max) {
    T &r = *residual_max;
    r = std::isnan(r) || std::isnan(largest) ? r + largest : (largest > r ? largest : r);
  }
  return cudaSuccess;
}

// glc_jacobi_temporal2d_rows's contract: depth sweeps of the whole slab, its first and last rows
// held, then only rows [begin, end) of u_new written, the residual the last sweep's over them.
template <typename T>
void temporal(const T *u, T *u_new, const T *f, size_t rows, size_t cols, size_t begin, size_t end,
              int depth, double h2, T *residual_max) {
  std::vector<T> a(u, u + rows * cols), b = a;
  for (int k = 0; k + 1 < depth; ++k) {
    sweep(a.data(), b.data(), f, 1, rows, cols, 1, rows - 1, h2, static_cast<T *>(nullptr), false);
    std::swap(a, b);
  }
  sweep(a.data(), b.data(), f, 1, rows, cols, begin, end, h2, residual_max, false);
  for (size_t y = begin; y < end; ++y)
    std::memcpy(u_new + y * cols + 1, b.data() + y * cols + 1, (cols - 2) * sizeof(T));
}

void check_device(const void *a, const void *b, const void *c, glc_stream stream) {
  const int d = stream_device(static_cast<cudaStream_t>(stream));
  if (d != current_device || device_of(a) != d || device_of(b) != d || device_of(c) != d)
    fail("a sweep on memory or a stream of another device");
}

}  // namespace

extern "C" int glc_jacobi_sweep2d_rows(int dtype, const void *u, void *u_new, const void *f,
                                       size_t rows_with_ghosts, size_t cols, size_t row_begin,
                                       size_t row_end, double h2, void *residual_max,
                                       glc_stream stream) {
  check_device(u, u_new, f, stream);
  if (row_begin < 1 || row_end < row_begin || row_end > rows_with_ghosts - 1) {
    fail("a sweep's rows outside [1, n - 1)");
    return cudaErrorInvalidValue;
  }
  issue(static_cast<cudaStream_t>(stream), [=] {
    if (dtype == GLC_F64)
      sweep(static_cast<const double *>(u), static_cast<double *>(u_new),
            static_cast<const double *>(f), 1, rows_with_ghosts, cols, row_begin, row_end, h2,
            static_cast<double *>(residual_max), false);
    else
      sweep(static_cast<const float *>(u), static_cast<float *>(u_new),
            static_cast<const float *>(f), 1, rows_with_ghosts, cols, row_begin, row_end, h2,
            static_cast<float *>(residual_max), false);
  });
  return cudaSuccess;
}

extern "C" int glc_jacobi_temporal2d_rows(int dtype, const void *u, void *u_new, const void *f,
                                          size_t rows_with_ghosts, size_t cols, size_t row_begin,
                                          size_t row_end, int depth, double h2, void *residual_max,
                                          glc_stream stream) {
  check_device(u, u_new, f, stream);
  if (row_begin < 1 || row_end < row_begin || row_end > rows_with_ghosts - 1 || depth < 1 ||
      depth > 15) {
    fail("a temporal pass's rows outside [1, n - 1), or its depth outside 1..15");
    return cudaErrorInvalidValue;
  }
  if (cols < 3) return cudaSuccess;
  issue(static_cast<cudaStream_t>(stream), [=] {
    if (dtype == GLC_F64)
      temporal(static_cast<const double *>(u), static_cast<double *>(u_new),
               static_cast<const double *>(f), rows_with_ghosts, cols, row_begin, row_end, depth,
               h2, static_cast<double *>(residual_max));
    else
      temporal(static_cast<const float *>(u), static_cast<float *>(u_new),
               static_cast<const float *>(f), rows_with_ghosts, cols, row_begin, row_end, depth, h2,
               static_cast<float *>(residual_max));
  });
  return cudaSuccess;
}

extern "C" int glc_jacobi_sweep3d_planes(int dtype, const void *u, void *u_new, const void *f,
                                         size_t planes_with_ghosts, size_t rows, size_t cols,
                                         size_t plane_begin, size_t plane_end, double h2,
                                         void *residual_max, glc_stream stream) {
  check_device(u, u_new, f, stream);
  if (plane_begin < 1 || plane_end < plane_begin || plane_end > planes_with_ghosts - 1) {
    fail("a sweep's planes outside [1, n - 1)");
    return cudaErrorInvalidValue;
  }
  issue(static_cast<cudaStream_t>(stream), [=] {
    if (dtype == GLC_F64)
      sweep(static_cast<const double *>(u), static_cast<double *>(u_new),
            static_cast<const double *>(f), planes_with_ghosts, rows, cols, plane_begin, plane_end,
            h2, static_cast<double *>(residual_max), true);
    else
      sweep(static_cast<const float *>(u), static_cast<float *>(u_new),
            static_cast<const float *>(f), planes_with_ghosts, rows, cols, plane_begin, plane_end,
            h2, static_cast<float *>(residual_max), true);
  });
  return cudaSuccess;
}

// ---- the cases ----
namespace {

struct reference_result {
  std::vector<unsigned char> u;
  std::vector<double> residuals;
  size_t sweeps = 0;
  int converged = 0;
};

// glc_jacobi's solve (cuda/stencil/jacobi.cu, the fused variant) over the whole grid.
template <typename T>
reference_result reference(int ndim, const size_t *shape, const std::vector<T> &f,
                           const std::vector<T> &u0, double h, size_t max_sweeps, double tol,
                           size_t check_every) {
  reference_result out;
  std::vector<T> a = u0, b = u0;
  T *cur = a.data(), *next = b.data();
  const size_t planes = ndim == 3 ? shape[0] : 1, rows = shape[ndim - 2], cols = shape[ndim - 1];
  const size_t outer = ndim == 3 ? planes : rows;
  const double scale = 2.0 * ndim / static_cast<double>(static_cast<T>(h * h));
  while (out.sweeps < max_sweeps) {
    const size_t count = std::min(check_every, max_sweeps - out.sweeps);
    T residual = 0;
    for (size_t k = 0; k < count; ++k) {
      if (outer >= 2 && outer - 1 > 1)
        sweep(cur, next, f.data(), planes, rows, cols, 1, outer - 1, h * h,
              k + 1 == count ? &residual : nullptr, ndim == 3);
      std::swap(cur, next);
    }
    out.sweeps += count;
    const double r = static_cast<double>(residual) * scale;
    out.residuals.push_back(r);
    if (tol > 0 && r <= tol) {
      out.converged = 1;
      break;
    }
  }
  out.u.assign(reinterpret_cast<unsigned char *>(cur),
               reinterpret_cast<unsigned char *>(cur) + u0.size() * sizeof(T));
  return out;
}

int cases_run = 0;

// Where the grids live: f, u0 and u in host memory; on the first slab's device (where f's rows
// of slab 0 are read in place); on a device that holds no slab; host grids with u0 NULL (zeros).
enum placement { on_host, on_first_slab, on_other_device, zeros_u0, placements };

template <typename T>
void run_case_once(int ndim, std::vector<size_t> shape, int count, int exchange, int overlap,
                   int depth, size_t sweeps, size_t check_every, double tol, unsigned seed,
                   int where);

// Each case runs under this many schedules: the first picks a random ready stream each step; the
// others give every stream a random priority and always run the highest ready one, so that some
// stream (a copy stream, a compute stream, an NCCL stream) is starved as long as it can be.
constexpr unsigned schedules = 6;

template <typename T>
void run_case(int ndim, std::vector<size_t> shape, int count, int exchange, int overlap, int depth,
              size_t sweeps, size_t check_every, double tol, unsigned seed) {
  for (unsigned k = 0; k < schedules; ++k) {
    schedule.seed(seed * 7919u + k);
    strict_priority = k > 0;
    run_case_once<T>(ndim, shape, count, exchange, overlap, depth, sweeps, check_every, tol, seed,
                     static_cast<int>((seed + k) % placements));
  }
}

template <typename T>
void run_case_once(int ndim, std::vector<size_t> shape, int count, int exchange, int overlap,
                   int depth, size_t sweeps, size_t check_every, double tol, unsigned seed,
                   int where) {
  size_t n = 1;
  for (size_t s : shape) n *= s;
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<T> f(n), u0(n), u(n, std::numeric_limits<T>::quiet_NaN());
  for (size_t i = 0; i < n; ++i)
    f[i] = static_cast<T>(normal(rng)),
    u0[i] = where == zeros_u0 ? T(0) : static_cast<T>(normal(rng));
  const double h = 0.5;
  reference_result ref = reference<T>(ndim, shape.data(), f, u0, h, sweeps, tol, check_every);
  // array_split over count slabs, as gl.multi.slabs
  std::vector<size_t> starts(count + 1, 0);
  for (int i = 0; i < count; ++i)
    starts[i + 1] = starts[i] + shape[0] / count + (static_cast<size_t>(i) < shape[0] % count);
  std::vector<int> devices(count);
  std::vector<glc_multi_comm> comm_records(count);
  std::vector<glc_multi_comm *> comms(count);
  for (int i = 0; i < count; ++i) {
    devices[i] = count - 1 - i;  // not 0..n-1: a device mixed up with a rank shows
    current_device = devices[i];
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, 0);
    comm_records[i] = {i, s};
    comms[i] = &comm_records[i];
  }
  void *grids[3] = {f.data(), u0.data(), u.data()};  // f, u0, u as glc_multi_jacobi gets them
  if (where == zeros_u0) grids[1] = nullptr;
  if (where == on_first_slab || where == on_other_device) {
    current_device = where == on_first_slab ? devices[0] : count;
    const void *from[3] = {f.data(), u0.data(), u.data()};
    for (int g = 0; g < 3; ++g) {
      cudaMalloc(&grids[g], n * sizeof(T));
      std::memcpy(grids[g], from[g], n * sizeof(T));
    }
  }
  current_device = 0;
  const size_t capacity = sweeps / check_every + (sweeps % check_every != 0);
  std::vector<double> residuals(capacity + 1, -1.0);
  glc_multi_jacobi_result result;
  const int code = glc_multi_jacobi(count, devices.data(), comms.data(), exchange, overlap, depth,
                                    sizeof(T) == 8 ? GLC_F64 : GLC_F32, ndim, shape.data(),
                                    starts.data(), h, sweeps, tol, check_every, grids[0], grids[1],
                                    grids[2], residuals.data(), capacity, &result);
  if (grids[2] != u.data()) {
    std::memcpy(u.data(), grids[2], n * sizeof(T));
    for (void *g : grids) cudaFree(g);
  }
  for (auto &c : comm_records) cudaStreamDestroy(c.stream);
  char what[256];
  static const char *const wheres[] = {"host grids", "grids on slab 0's device",
                                       "grids on another device", "u0 zeros"};
  std::snprintf(what, sizeof what,
                "%dD %s shape[0]=%zu on %d GPUs %s overlap=%d depth=%d sweeps=%zu "
                "check_every=%zu tol=%g, %s",
                ndim, sizeof(T) == 8 ? "f64" : "f32", shape[0], count, exchange ? "nccl" : "p2p",
                overlap, depth, sweeps, check_every, tol, wheres[where]);
  ++cases_run;
  if (code != cudaSuccess) {
    std::fprintf(stderr, "emulate: %s: returned %d\n", what, code);
    ++failures;
    return;
  }
  if (current_device != 0)
    std::fprintf(stderr, "emulate: %s: device not restored\n", what), ++failures;
  size_t thinnest = shape[0];
  for (int i = 0; i < count; ++i) thinnest = std::min(thinnest, starts[i + 1] - starts[i]);
  const int depth_run = depth ? static_cast<int>(std::min<size_t>(depth, thinnest)) : 0;
  if (n && result.depth != depth_run)
    std::fprintf(stderr, "emulate: %s: ran depth %d, reported %d\n", what, depth_run, result.depth),
        ++failures;
  if (result.sweeps != ref.sweeps || result.converged != ref.converged ||
      result.checks != ref.residuals.size())
    std::fprintf(stderr, "emulate: %s: sweeps %zu/%zu checks %zu/%zu converged %d/%d\n", what,
                 result.sweeps, ref.sweeps, result.checks, ref.residuals.size(), result.converged,
                 ref.converged),
        ++failures;
  if (std::memcmp(u.data(), ref.u.data(), n * sizeof(T)) != 0)
    std::fprintf(stderr, "emulate: %s: u differs from the whole-grid sweeps\n", what), ++failures;
  for (size_t i = 0; i < ref.residuals.size() && i < capacity; ++i)
    if (std::memcmp(&residuals[i], &ref.residuals[i], sizeof(double)) != 0) {
      std::fprintf(stderr, "emulate: %s: residual %zu is %.17g, not %.17g\n", what, i, residuals[i],
                   ref.residuals[i]);
      ++failures;
      break;
    }
  if (residuals[capacity] != -1.0)
    std::fprintf(stderr, "emulate: %s: residuals overrun\n", what), ++failures;
  if (!allocations.empty())
    std::fprintf(stderr, "emulate: %s: allocations leaked\n", what), ++failures;
}

}  // namespace

int main() {
  const std::vector<std::vector<size_t>> shapes_2d = {{37, 12}, {9, 7}, {4, 6}, {2, 5}, {3, 9}};
  const std::vector<std::vector<size_t>> shapes_3d = {{19, 6, 7}, {5, 4, 5}, {3, 4, 4}};
  const size_t sweep_counts[] = {0, 1, 2, 5, 7, 12};
  unsigned seed = 1;
  for (int count = 1; count <= 4; ++count)
    for (int exchange = 0; exchange < 2; ++exchange)
      for (int overlap = 0; overlap < 2; ++overlap)
        for (size_t sweeps : sweep_counts) {
          // depth 0: the fused sweeps; 1, 2, 4: temporal passes (a pass deeper than the
          // thinnest slab is lowered to it: 37 rows on 4 GPUs keeps 4, 4 rows on 3 gets 1)
          for (int depth : {0, 1, 2, 4})
            for (const auto &shape : shapes_2d) {
              if (shape[0] < static_cast<size_t>(count)) continue;
              run_case<float>(2, shape, count, exchange, overlap, depth, sweeps, 5, 0.0, seed++);
              run_case<double>(2, shape, count, exchange, overlap, depth, sweeps, 5, 0.0, seed++);
            }
          for (const auto &shape : shapes_3d) {
            if (shape[0] < static_cast<size_t>(count)) continue;
            run_case<float>(3, shape, count, exchange, overlap, 0, sweeps, 5, 0.0, seed++);
            run_case<double>(3, shape, count, exchange, overlap, 0, sweeps, 5, 0.0, seed++);
          }
        }
  // tol: stops at the same check as the whole grid
  for (int count = 1; count <= 3; ++count)
    for (int exchange = 0; exchange < 2; ++exchange) {
      run_case<double>(2, {17, 16}, count, exchange, 1, 0, 100000, 10, 1e-3, seed++);
      run_case<double>(2, {17, 16}, count, exchange, 1, 4, 100000, 10, 1e-3, seed++);
      run_case<double>(3, {9, 8, 8}, count, exchange, 1, 0, 100000, 10, 1e-3, seed++);
    }
  // Ctrl-C part-way: the solve stops with GLC_INTERRUPTED before its last sweep, every stream
  // drained, nothing allocated, nothing gathered into u
  for (int count = 1; count <= 3; ++count)
    for (int exchange = 0; exchange < 2; ++exchange)
      for (long nth : {1L, 2L, 6L})
        for (int kind = 0; kind < 3; ++kind) {  // 2D fused, 2D temporal (depth 4), 3D fused
          const int ndim = kind < 2 ? 2 : 3, depth = kind == 1 ? 4 : 0;
          // 12 sweeps checked every 5 are 12 calls of the interrupt check, or 5 passes of 4
          const long at = depth && nth == 6 ? 4 : nth;
          std::vector<size_t> shape =
              ndim == 2 ? std::vector<size_t>{13, 9} : std::vector<size_t>{7, 5, 6};
          const size_t n = ndim == 2 ? 13 * 9 : 7 * 5 * 6;
          std::vector<double> f(n, 1.0), u0(n, 0.5), u(n, -7.0), residuals(4, -1.0);
          std::vector<size_t> starts(count + 1, 0);
          for (int i = 0; i < count; ++i)
            starts[i + 1] =
                starts[i] + shape[0] / count + (static_cast<size_t>(i) < shape[0] % count);
          std::vector<int> devices(count);
          std::vector<glc_multi_comm> comm_records(count);
          std::vector<glc_multi_comm *> comms(count);
          for (int i = 0; i < count; ++i) {
            devices[i] = i;
            current_device = i;
            cudaStream_t s;
            cudaStreamCreateWithFlags(&s, 0);
            comm_records[i] = {i, s};
            comms[i] = &comm_records[i];
          }
          current_device = 0;
          schedule.seed(static_cast<unsigned>(seed++));
          interrupt_at = at;
          interrupt_calls = 0;
          glc_multi_jacobi_result result;
          const size_t sweeps = 12;
          const int code =
              glc_multi_jacobi(count, devices.data(), comms.data(), exchange, 1, depth, GLC_F64,
                               ndim, shape.data(), starts.data(), 1.0, sweeps, 0.0, 5, f.data(),
                               u0.data(), u.data(), residuals.data(), 3, &result);
          interrupt_at = 0;
          ++cases_run;
          char what[128];
          std::snprintf(what, sizeof what, "interrupted at check %ld: %dD depth %d on %d GPUs %s",
                        at, ndim, depth, count, exchange ? "nccl" : "p2p");
          if (code != GLC_INTERRUPTED)
            std::fprintf(stderr, "emulate: %s: returned %d, not GLC_INTERRUPTED\n", what, code),
                ++failures;
          if (interrupt_calls < at || result.sweeps >= sweeps)
            std::fprintf(stderr, "emulate: %s: %ld checks, %zu sweeps: not stopped part-way\n",
                         what, interrupt_calls, result.sweeps),
                ++failures;
          for (stream_record *s : streams)
            if (!s->queue.empty()) {
              std::fprintf(stderr, "emulate: %s: a stream still has work\n", what), ++failures;
              break;
            }
          if (!allocations.empty())
            std::fprintf(stderr, "emulate: %s: allocations leaked\n", what), ++failures;
          for (double v : u)
            if (v != -7.0) {
              std::fprintf(stderr, "emulate: %s: u was written\n", what), ++failures;
              break;
            }
          if (current_device != 0)
            std::fprintf(stderr, "emulate: %s: device not restored\n", what), ++failures;
          for (auto &c : comm_records) cudaStreamDestroy(c.stream);
        }
  // p2p without peer access is refused, and nothing leaks
  peer_access = false;
  {
    std::vector<size_t> shape = {8, 8};
    std::vector<float> f(64, 0.0f), u(64);
    size_t starts[] = {0, 4, 8};
    int devices[] = {0, 1};
    glc_multi_jacobi_result result;
    const int code = glc_multi_jacobi(2, devices, nullptr, GLC_MULTI_EXCHANGE_P2P, 1, 4, GLC_F32, 2,
                                      shape.data(), starts, 1.0, 3, 0.0, 2, f.data(), f.data(),
                                      u.data(), nullptr, 0, &result);
    if (code != cudaErrorPeerAccessUnsupported) fail("p2p without peer access was not refused");
    if (!allocations.empty()) fail("a refused p2p solve leaked");
    ++cases_run;
  }
  std::printf("emulate multi_jacobi: %d cases, %d failures\n", cases_run, failures);
  return failures ? 1 : 0;
}
