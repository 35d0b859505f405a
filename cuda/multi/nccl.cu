// NCCL for the multi lab: opened with dlopen at run time, never linked, so that gpulab builds
// and imports where NCCL is absent. The Python side (gpulab/labs/multi.py) chooses the library:
// GPULAB_NCCL, then pip's nvidia-nccl-cu13 wheel (nvidia/nccl/lib/libnccl.so.2 under sys.path),
// then the soname libnccl.so.2; glc_nccl_open keeps the first that opens.
//
// No nccl.h at build time: the few types below are NCCL's ABI, copied from nccl.h 2.x (checked
// against nvidia-nccl-cu13 2.32.3's nccl.h; these values have not changed since NCCL 2.0, and
// NCCL keeps them for ABI compatibility): ncclResult_t, ncclDataType_t, ncclRedOp_t are C enums
// (int-sized), ncclComm_t an opaque pointer, ncclUniqueId a struct of 128 chars passed by value.
//
// The partitioned reduce reuses the reduce lab through its C ABI (cuda/reduce/reduce.h,
// glc_reduce): the local reduce is the reduce lab's, never a copy.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "cuda/core/errors.cuh"
#include "cuda/reduce/reduce.h"
#include "device_guard.cuh"
#include "multi.h"

namespace {

// ---- NCCL's ABI (nccl.h 2.x) ----
typedef int nccl_result;  // ncclResult_t: ncclSuccess = 0, ncclUnhandledCudaError = 1,
                          // ncclSystemError = 2, ncclInternalError = 3, ncclInvalidArgument = 4,
                          // ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7
constexpr nccl_result nccl_success = 0, nccl_invalid_argument = 4, nccl_invalid_usage = 5;
typedef struct nccl_comm_opaque *nccl_comm;  // ncclComm_t
struct nccl_unique_id {                      // ncclUniqueId
  char internal[GLC_NCCL_UNIQUE_ID_BYTES];
};
// ncclDataType_t and ncclRedOp_t: the values of enum glc_nccl_type and glc_nccl_op (multi.h).

struct NcclApi {
  nccl_result (*get_version)(int *) = nullptr;
  nccl_result (*get_unique_id)(nccl_unique_id *) = nullptr;
  nccl_result (*comm_init_all)(nccl_comm *, int, const int *) = nullptr;
  nccl_result (*comm_init_rank)(nccl_comm *, int, nccl_unique_id, int) = nullptr;
  nccl_result (*comm_destroy)(nccl_comm) = nullptr;
  nccl_result (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm,
                            cudaStream_t) = nullptr;
  // ncclSend / ncclRecv (NCCL >= 2.7): looked up but not required, so that an older NCCL
  // still serves the all-reduce; glc_multi_sendrecv says when they are missing.
  nccl_result (*send)(const void *, size_t, int, int, nccl_comm, cudaStream_t) = nullptr;
  nccl_result (*recv)(void *, size_t, int, int, nccl_comm, cudaStream_t) = nullptr;
  nccl_result (*group_start)() = nullptr;
  nccl_result (*group_end)() = nullptr;
  const char *(*get_error_string)(nccl_result) = nullptr;
  bool loaded = false;
  int version = 0;
};

std::mutex api_lock;
NcclApi api;

// The message glc_failed_call() returns for an NCCL failure: "<call>: <NCCL's text>". One per
// thread, like the failed call itself.
thread_local char nccl_message[256];

// An NCCL result as a CUDA code, naming the call and NCCL's reason.
int nccl_fail(nccl_result result, const char *call) {
  if (result == nccl_success) return cudaSuccess;
  const char *why = api.get_error_string ? api.get_error_string(result) : "NCCL error";
  std::snprintf(nccl_message, sizeof nccl_message, "%s: %s (ncclResult_t %d)", call,
                why ? why : "?", result);
  int code = result == nccl_invalid_argument || result == nccl_invalid_usage ? cudaErrorInvalidValue
                                                                             : cudaErrorUnknown;
  return glc_fail(code, nccl_message);
}

int not_loaded() { return glc_fail(cudaErrorFileNotFound, "NCCL not loaded (glc_nccl_open)"); }

template <typename F>
bool find(void *library, const char *name, F *slot, char *error, size_t error_size) {
  *slot = reinterpret_cast<F>(dlsym(library, name));
  if (*slot == nullptr) std::snprintf(error, error_size, "%s has no function %s", "NCCL", name);
  return *slot != nullptr;
}

}  // namespace

struct glc_multi_comm {
  nccl_comm comm;
  int rank, world, device;
  cudaStream_t stream;
};

int glc_nccl_open(const char *path, int *version, char *error, size_t error_size) {
  std::lock_guard<std::mutex> guard(api_lock);
  if (error_size) error[0] = '\0';
  if (api.loaded) {
    *version = api.version;
    return cudaSuccess;
  }
  // RTLD_LOCAL: NCCL's symbols stay out of the process's namespace (a torch in the same process
  // may load its own NCCL). Never closed: communicators live as long as the process.
  void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char *why = dlerror();
    std::snprintf(error, error_size, "%s", why ? why : "dlopen failed");
    return glc_fail(cudaErrorFileNotFound, "dlopen(libnccl.so.2)");
  }
  NcclApi found;
  bool ok = find(library, "ncclGetVersion", &found.get_version, error, error_size) &&
            find(library, "ncclGetUniqueId", &found.get_unique_id, error, error_size) &&
            find(library, "ncclCommInitAll", &found.comm_init_all, error, error_size) &&
            find(library, "ncclCommInitRank", &found.comm_init_rank, error, error_size) &&
            find(library, "ncclCommDestroy", &found.comm_destroy, error, error_size) &&
            find(library, "ncclAllReduce", &found.all_reduce, error, error_size) &&
            find(library, "ncclGroupStart", &found.group_start, error, error_size) &&
            find(library, "ncclGroupEnd", &found.group_end, error, error_size) &&
            find(library, "ncclGetErrorString", &found.get_error_string, error, error_size);
  if (!ok) {
    dlclose(library);
    return glc_fail(cudaErrorSymbolNotFound, "dlsym(libnccl.so.2)");
  }
  found.send = reinterpret_cast<decltype(found.send)>(dlsym(library, "ncclSend"));
  found.recv = reinterpret_cast<decltype(found.recv)>(dlsym(library, "ncclRecv"));
  if (found.get_version(&found.version) != nccl_success) {
    std::snprintf(error, error_size, "ncclGetVersion failed");
    dlclose(library);
    return glc_fail(cudaErrorSymbolNotFound, "ncclGetVersion");
  }
  found.loaded = true;
  api = found;
  *version = api.version;
  return cudaSuccess;
}

int glc_nccl_loaded(void) {
  std::lock_guard<std::mutex> guard(api_lock);
  return api.loaded ? 1 : 0;
}

int glc_nccl_unique_id(void *id) {
  if (!glc_nccl_loaded()) return not_loaded();
  nccl_unique_id made;
  int code = nccl_fail(api.get_unique_id(&made), "ncclGetUniqueId");
  if (!code) std::memcpy(id, made.internal, sizeof made.internal);
  return code;
}

namespace {

// A communicator record for comm on device, with its own stream there (device is current).
// The device's pool keeps what is freed, as device 0's does (glc_pool_init): each collective
// and reduce allocates its scalars and scratch there, and with the default threshold every sync
// would hand that memory back and the next call map it again.
int make_comm(nccl_comm comm, int rank, int world, int device, glc_multi_comm **out) {
  cudaStream_t stream = nullptr;
  int code = glc_pool_init(device);
  if (!code) code = GLC_CUDA(cudaStreamCreateWithFlags, &stream, cudaStreamNonBlocking);
  if (code) return code;
  *out = new glc_multi_comm{comm, rank, world, device, stream};
  return cudaSuccess;
}

}  // namespace

int glc_multi_comm_init_all(int count, const int *devices, glc_multi_comm **comms) {
  if (!glc_nccl_loaded()) return not_loaded();
  if (count < 1) return glc_fail(cudaErrorInvalidValue, "glc_multi_comm_init_all");
  DeviceGuard guard;
  std::vector<nccl_comm> made(count, nullptr);
  int code = nccl_fail(api.comm_init_all(made.data(), count, devices), "ncclCommInitAll");
  if (code) return code;
  int i = 0;
  for (; i < count && !code; ++i) {
    comms[i] = nullptr;
    code = guard.use(devices[i]);
    if (!code) code = make_comm(made[i], i, count, devices[i], &comms[i]);
  }
  if (code) {  // undo: streams made so far, and every communicator
    for (int k = 0; k < count; ++k) {
      if (k < i && comms[k] != nullptr) {
        cudaStreamDestroy(comms[k]->stream);
        delete comms[k];
        comms[k] = nullptr;
      }
      api.comm_destroy(made[k]);
    }
  }
  return code;
}

int glc_multi_comm_init_rank(const void *unique_id, int rank, int world, int device,
                             glc_multi_comm **comm) {
  if (!glc_nccl_loaded()) return not_loaded();
  DeviceGuard guard;
  int code = guard.use(device);
  if (code) return code;
  nccl_unique_id id;
  std::memcpy(id.internal, unique_id, sizeof id.internal);
  nccl_comm made = nullptr;
  // Blocks until every rank of the group has called it (NCCL's bootstrap).
  code = nccl_fail(api.comm_init_rank(&made, world, id, rank), "ncclCommInitRank");
  if (code) return code;
  code = make_comm(made, rank, world, device, comm);
  if (code) api.comm_destroy(made);
  return code;
}

int glc_multi_comm_info(const glc_multi_comm *comm, int *rank, int *world, int *device) {
  *rank = comm->rank;
  *world = comm->world;
  *device = comm->device;
  return cudaSuccess;
}

int glc_multi_comm_stream(const glc_multi_comm *comm, glc_stream *stream) {
  *stream = comm->stream;
  return cudaSuccess;
}

int glc_multi_comm_destroy(glc_multi_comm *comm) {
  if (comm == nullptr) return cudaSuccess;
  DeviceGuard guard;
  int code = guard.use(comm->device);
  if (!code) code = GLC_CUDA(cudaStreamSynchronize, comm->stream);
  int destroyed = nccl_fail(api.comm_destroy(comm->comm), "ncclCommDestroy");
  int stream_code = GLC_CUDA(cudaStreamDestroy, comm->stream);
  delete comm;
  return code ? code : destroyed ? destroyed : stream_code;
}

namespace {

// Waits for every rank's stream (each on its device).
int wait_all(int ranks, glc_multi_comm *const *comms, DeviceGuard &guard) {
  int first = cudaSuccess;
  for (int i = 0; i < ranks; ++i) {
    int code = guard.use(comms[i]->device);
    if (!code) code = GLC_CUDA(cudaStreamSynchronize, comms[i]->stream);
    if (code && !first) first = code;
  }
  return first;
}

// One all-reduce per rank of this process inside one NCCL group (required when one thread
// drives several ranks: each ncclAllReduce alone would wait for the others).
int grouped_allreduce(int ranks, glc_multi_comm *const *comms, void *const *buffers, size_t count,
                      int type, int op) {
  int code = nccl_fail(api.group_start(), "ncclGroupStart");
  if (code) return code;
  for (int i = 0; i < ranks && !code; ++i)
    code = nccl_fail(
        api.all_reduce(buffers[i], buffers[i], count, type, op, comms[i]->comm, comms[i]->stream),
        "ncclAllReduce");
  // Always close the group, even after a failed enqueue.
  int ended = nccl_fail(api.group_end(), "ncclGroupEnd");
  return code ? code : ended;
}

}  // namespace

int glc_multi_allreduce(int ranks, glc_multi_comm *const *comms, void *const *buffers,
                        const glc_stream *after, size_t count, int type, int op) {
  if (!glc_nccl_loaded()) return not_loaded();
  DeviceGuard guard;
  int code = cudaSuccess;
  // Order each rank's collective after the work that made its buffer (an event, no host wait).
  for (int i = 0; i < ranks && !code && after; ++i) {
    if (after[i] == nullptr) continue;
    // The event belongs to the device of the stream it records (which may be another device
    // than the buffer's: gpulab's own stream lives on device 0); the wait may cross devices.
    cudaStream_t last = static_cast<cudaStream_t>(after[i]);
    int last_device = 0;
    code = GLC_CUDA(cudaStreamGetDevice, last, &last_device);
    if (!code) code = guard.use(last_device);
    cudaEvent_t done = nullptr;
    if (!code) code = GLC_CUDA(cudaEventCreateWithFlags, &done, cudaEventDisableTiming);
    if (!code) code = GLC_CUDA(cudaEventRecord, done, last);
    if (!code) code = guard.use(comms[i]->device);
    if (!code) code = GLC_CUDA(cudaStreamWaitEvent, comms[i]->stream, done, 0);
    if (done) cudaEventDestroy(done);
  }
  if (!code) code = grouped_allreduce(ranks, comms, buffers, count, type, op);
  int waited = wait_all(ranks, comms, guard);
  return code ? code : waited;
}

int glc_multi_reduce(int ranks, glc_multi_comm *const *comms, const int *devices,
                     const void *const *parts, const size_t *counts, int on_host, int dtype,
                     int variant, int block, int reduce_op, int result_type, int nccl_op,
                     const void *identity, void *result) {
  const bool use_nccl = !(ranks == 1 && comms[0] == nullptr);
  if (use_nccl && !glc_nccl_loaded()) return not_loaded();
  const size_t item = dtype == GLC_F64 ? 8 : dtype == GLC_F32 || dtype == GLC_I32 ? 4 : 0;
  if (item == 0) return glc_fail(cudaErrorInvalidValue, "glc_multi_reduce (dtype)");
  DeviceGuard guard;
  std::vector<cudaStream_t> streams(ranks, nullptr);
  std::vector<void *> inputs(ranks, nullptr), scalars(ranks, nullptr);
  int code = cudaSuccess;
  // Without NCCL (one GPU), a stream of our own on that device.
  cudaStream_t own = nullptr;
  for (int i = 0; i < ranks && !code; ++i) {
    const int device = use_nccl ? comms[i]->device : devices[0];
    code = guard.use(device);
    if (!code && !use_nccl) code = GLC_CUDA(cudaStreamCreateWithFlags, &own, cudaStreamNonBlocking);
    if (code) break;
    cudaStream_t stream = streams[i] = use_nccl ? comms[i]->stream : own;
    code = GLC_CUDA(cudaMallocAsync, &scalars[i], 8, stream);
    // A 4-byte result leaves half the slot unwritten, and all 8 bytes come back to the host:
    // zeroed, so that initcheck sees no read of uninitialized memory.
    if (!code) code = GLC_CUDA(cudaMemsetAsync, scalars[i], 0, 8, stream);
    if (code) break;
    if (counts[i] == 0) {  // an empty part contributes the operator's identity
      code = GLC_CUDA(cudaMemcpyAsync, scalars[i], identity, 8, cudaMemcpyHostToDevice, stream);
      continue;
    }
    const void *x = parts[i];
    if (on_host) {
      code = GLC_CUDA(cudaMallocAsync, &inputs[i], counts[i] * item, stream);
      if (!code)
        code = GLC_CUDA(cudaMemcpyAsync, inputs[i], parts[i], counts[i] * item,
                        cudaMemcpyHostToDevice, stream);
      x = inputs[i];
    }
    if (!code)
      code = glc_reduce(variant, block, reduce_op, dtype, counts[i], x, scalars[i], stream);
  }
  if (!code && use_nccl)
    code = grouped_allreduce(ranks, comms, scalars.data(), 1, result_type, nccl_op);
  if (!code) {
    code = guard.use(use_nccl ? comms[0]->device : devices[0]);
    if (!code)
      code = GLC_CUDA(cudaMemcpyAsync, result, scalars[0], 8, cudaMemcpyDeviceToHost, streams[0]);
  }
  // Free what was allocated and wait, whatever happened above.
  int first = code;
  for (int i = 0; i < ranks; ++i) {
    if (streams[i] == nullptr) continue;
    int c = guard.use(use_nccl ? comms[i]->device : devices[0]);
    if (!c && inputs[i]) c = GLC_CUDA(cudaFreeAsync, inputs[i], streams[i]);
    if (!c && scalars[i]) c = GLC_CUDA(cudaFreeAsync, scalars[i], streams[i]);
    if (!c) c = GLC_CUDA(cudaStreamSynchronize, streams[i]);
    if (c && !first) first = c;
  }
  if (own) cudaStreamDestroy(own);
  return first;
}

int glc_multi_sendrecv(int count, const glc_multi_transfer *transfers) {
  if (!glc_nccl_loaded()) return not_loaded();
  if (api.send == nullptr || api.recv == nullptr)
    return glc_fail(cudaErrorSymbolNotFound, "ncclSend/ncclRecv (NCCL older than 2.7)");
  // One group for every rank of this process: a send and its receive, both enqueued by this
  // thread, would otherwise each wait for the other.
  int code = nccl_fail(api.group_start(), "ncclGroupStart");
  if (code) return code;
  for (int i = 0; i < count && !code; ++i) {
    const glc_multi_transfer &t = transfers[i];
    code =
        t.send
            ? nccl_fail(api.send(t.buffer, t.count, t.type, t.peer, t.comm->comm, t.comm->stream),
                        "ncclSend")
            : nccl_fail(api.recv(t.buffer, t.count, t.type, t.peer, t.comm->comm, t.comm->stream),
                        "ncclRecv");
  }
  int ended = nccl_fail(api.group_end(), "ncclGroupEnd");
  return code ? code : ended;
}
