// DIA storage of a CSR matrix on the device, for cg variant 4 (dia_fused): A as k diagonals,
// diagonal d holding A[i, i + offset[d]] at values[d * rows + i] (aligned by row, so that a
// thread per row reads each diagonal coalesced; zero where A has no entry or the diagonal leaves
// the matrix). No column indices and no row pointers: for the 5-point Laplacian 5 values a row
// against CSR's 5 values, 5 indices and a row pointer. Included by cg.cu, and by
// stats.cu for pass 1 alone (the diagonal count gl.cg's default reads).
//
// Built in two passes over the CSR arrays: the distinct offsets col - row (a hash table in each
// block's shared memory, flushed into one in global memory), then, the offsets sorted on the
// host, each row's entries added into their diagonals (a thread owns its row, so repeated
// columns are summed in order, without atomics).
#ifndef GPULAB_CUDA_SPARSE_DIA_CUH
#define GPULAB_CUDA_SPARSE_DIA_CUH

#include <algorithm>

#include "cuda/core/resources.cuh"
#include "kernels.cuh"

namespace {

constexpr int kDiaMaxDiagonals = GLC_CG_DIA_MAX_DIAGONALS;
// Open addressing over twice the diagonals allowed: a table holding at most half its slots
// finds a key in a few probes; a full one means far more diagonals than allowed.
constexpr int kDiaSlots = 2 * kDiaMaxDiagonals;
constexpr unsigned kDiaFindBlocks = 1024;  // the offsets pass: grid-stride, about one wave

// The offsets passed to the kernels by value (the constant bank), sorted ascending.
struct DiaOffsets {
  long long offset[kDiaMaxDiagonals];
  int count;
};

// The distinct offsets found. A slot holds offset ^ 2^63, so that an all-zero slot is empty
// (the offset -2^63 cannot occur: |col - row| < 2^62).
struct DiaTable {
  unsigned long long slot[kDiaSlots];
  int count;     // distinct offsets inserted
  int overflow;  // a table filled up: far more than kDiaMaxDiagonals
};

constexpr unsigned long long kDiaKeyBias = 1ull << 63;
enum DiaInsert { kDiaSeen = 0, kDiaInserted = 1, kDiaFull = 2 };

// Inserts key into slots (shared or global) by atomic compare-and-swap alone, so that no plain
// read meets another thread's write.
__device__ int dia_insert(unsigned long long *slots, unsigned long long key) {
  unsigned h = static_cast<unsigned>((key * 0x9E3779B97F4A7C15ull) >> 58) % kDiaSlots;
  for (int probe = 0; probe < kDiaSlots; probe++, h = (h + 1) % kDiaSlots) {
    const unsigned long long seen = atomicCAS(&slots[h], 0ull, key);
    if (seen == 0ull) return kDiaInserted;
    if (seen == key) return kDiaSeen;
  }
  return kDiaFull;
}

// Pass 1: every offset col - row into the block's table, then the block's offsets into the
// global table. A warp takes 32 consecutive rows and walks their entries slot by slot, all lanes
// together (a lane past its row's end holds the empty key), so that the lanes holding one offset
// meet in one __match_any_sync and only the lowest of them inserts it.
template <typename I>
__global__ void dia_find_offsets(long long rows, const I *indptr, const I *indices,
                                 DiaTable *table) {
  __shared__ unsigned long long block_slots[kDiaSlots];
  __shared__ int block_full;
  for (int s = threadIdx.x; s < kDiaSlots; s += blockDim.x) block_slots[s] = 0;
  if (threadIdx.x == 0) block_full = 0;
  __syncthreads();
  const unsigned lane = threadIdx.x % 32;
  const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x / 32);
  for (long long first =
           (blockIdx.x * static_cast<long long>(blockDim.x / 32) + threadIdx.x / 32) * 32;
       first < rows; first += warps * 32) {
    const long long row = first + lane;
    const long long begin = row < rows ? static_cast<long long>(indptr[row]) : 0;
    const long long length = row < rows ? static_cast<long long>(indptr[row + 1]) - begin : 0;
    long long longest = length;
    for (int step = 16; step > 0; step /= 2)
      longest = max(longest, __shfl_xor_sync(0xffffffffu, longest, step));
    for (long long k = 0; k < longest; k++) {
      const unsigned long long key =
          k < length
              ? static_cast<unsigned long long>(static_cast<long long>(indices[begin + k]) - row) ^
                    kDiaKeyBias
              : 0ull;
      const unsigned group = __match_any_sync(0xffffffffu, key);
      if (key != 0ull && lane == static_cast<unsigned>(__ffs(group) - 1) &&
          dia_insert(block_slots, key) == kDiaFull)
        atomicExch(&block_full, 1);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && block_full) atomicExch(&table->overflow, 1);
  for (int s = threadIdx.x; s < kDiaSlots; s += blockDim.x) {
    const unsigned long long key = block_slots[s];
    if (key == 0ull) continue;
    const int inserted = dia_insert(table->slot, key);
    if (inserted == kDiaInserted) atomicAdd(&table->count, 1);
    if (inserted == kDiaFull) atomicExch(&table->overflow, 1);
  }
}

// Pass 2: row i's entries added into values[d * rows + i] (values zeroed before).
template <typename I, typename T>
__global__ void dia_fill(long long rows, const I *indptr, const I *indices, const T *data,
                         DiaOffsets offsets, T *values) {
  const long long row = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  for (long long k = indptr[row]; k < static_cast<long long>(indptr[row + 1]); k++) {
    const long long offset = static_cast<long long>(indices[k]) - row;
    int d = 0;
    while (offsets.offset[d] != offset) d++;  // present: pass 1 found every offset
    values[d * rows + row] += data[k];
  }
}

// A in DIA form on the device, built from the CSR arrays of a; `refused` when A has more than
// kDiaMaxDiagonals diagonals or its DIA arrays would hold more bytes than the CSR arrays they
// replace (then nothing is allocated and the caller stops). diagonals: the count found, or
// kDiaMaxDiagonals + 1 for more. Synchronizes the stream once (the offsets come to the host).
template <typename I, typename T>
struct DiaMatrix {
  DiaOffsets offsets = {};
  GlcDeviceBuffer values;
  long long diagonals = 0;
  bool refused = false;

  int build(const glc_csr *a, int block, cudaStream_t stream) {
    const long long rows = static_cast<long long>(a->rows);
    const I *indptr = static_cast<const I *>(a->indptr);
    const I *indices = static_cast<const I *>(a->indices);
    GlcDeviceBuffer table_buffer;
    DiaTable found = {};
    int code = table_buffer.allocate(sizeof(DiaTable), stream);
    GLC_TRY(code, glc_memset_async(table_buffer.ptr, 0, sizeof(DiaTable), stream));
    const size_t cover = glc_blocks_to_cover(a->rows, block);
    const unsigned grid = static_cast<unsigned>(std::min<size_t>(cover, kDiaFindBlocks));
    GLC_TRY(code, glc_launch(dia_find_offsets<I>, "dia_find_offsets", grid, block, stream, rows,
                             indptr, indices, table_buffer.as<DiaTable>()));
    GLC_TRY(code, GLC_CUDA(cudaMemcpyAsync, &found, table_buffer.ptr, sizeof found,
                           cudaMemcpyDeviceToHost, stream));
    GLC_TRY(code, GLC_CUDA(cudaStreamSynchronize, stream));
    if (code) return code;
    const bool too_many = found.overflow || found.count > kDiaMaxDiagonals;
    diagonals = too_many ? kDiaMaxDiagonals + 1 : found.count;
    const double dia_bytes = static_cast<double>(diagonals) * rows * sizeof(T);
    const double csr_bytes =
        static_cast<double>(a->nnz) * (sizeof(T) + sizeof(I)) + (rows + 1.0) * sizeof(I);
    refused = too_many || dia_bytes > csr_bytes;
    if (refused) return cudaSuccess;
    for (const unsigned long long key : found.slot)
      if (key != 0ull) offsets.offset[offsets.count++] = static_cast<long long>(key ^ kDiaKeyBias);
    std::sort(offsets.offset, offsets.offset + offsets.count);
    const size_t bytes = static_cast<size_t>(diagonals) * a->rows * sizeof(T);
    const unsigned fill_grid = spmv_grid(a->rows, block);
    if (!fill_grid) return glc_fail(cudaErrorInvalidConfiguration, "dia_fill(size)");
    GLC_TRY(code, values.allocate(bytes ? bytes : sizeof(T), stream));
    GLC_TRY(code, glc_memset_async(values.ptr, 0, bytes, stream));
    GLC_TRY(code, glc_launch(dia_fill<I, T>, "dia_fill", fill_grid, block, stream, rows, indptr,
                             indices, static_cast<const T *>(a->data), offsets, values.as<T>()));
    return code;
  }
};

}  // namespace

#endif
