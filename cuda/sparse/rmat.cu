// gl.sparse.rmat on the device: the Graph500 R-MAT (Kronecker) generator. A kernel draws each
// edge from a counter-based hash (no RNG state: the same numbers as the NumPy path), permutes its
// labels by a Feistel bijection, and writes row * 2^scale + col; CUB sorts those keys and merges
// repeats into (key, count) runs; two kernels write the CSR arrays from the runs.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/constant_iterator.h>

#include <climits>

#include "cuda/core/dtype_dispatch.cuh"
#include "cuda/core/launch.cuh"
#include "cuda/core/resources.cuh"
#include "sparse.h"

namespace {

using u64 = unsigned long long;
constexpr u64 golden = 0x9E3779B97F4A7C15ull;
constexpr int rmat_block = 256;
constexpr size_t align_bytes = 256;

// splitmix64's finalizer: gpulab/labs/sparse.py's _mix64.
__host__ __device__ __forceinline__ u64 mix64(u64 z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A bijection of [0, 2^scale): Feistel rounds on the low floor(scale / 2) and high bits, the
// halves swapping each round, so an odd scale is exact too (sparse.py's _feistel).
__host__ __device__ u64 feistel(u64 x, int scale, u64 key) {
  int lo_bits = scale / 2, hi_bits = scale - scale / 2;
  for (int r = 0; r < GLC_RMAT_FEISTEL_ROUNDS; ++r) {
    const u64 lo = x & ((1ull << lo_bits) - 1), hi = x >> lo_bits;
    const u64 f = mix64((key + static_cast<u64>(r) * golden) ^ lo);
    x = (lo << hi_bits) | ((hi ^ f) & ((1ull << hi_bits) - 1));
    const int swap = lo_bits;
    lo_bits = hi_bits;
    hi_bits = swap;
  }
  return x;
}

// Edge e's key: scale levels of Graph500's two draws, then the labels permuted and packed into
// one sortable key (host and device alike, so that the host can check it against NumPy's).
__host__ __device__ u64 rmat_key(const glc_rmat &p, u64 e) {
  u64 row = 0, col = 0, counter = p.edge_key + (e * 32 + 1) * golden;
  for (int level = 0; level < p.scale; ++level, counter += golden) {
    const u64 h = mix64(counter);
    const u64 down = (h >> 32) >= p.t_ab;
    const u64 right = (h & 0xFFFFFFFFull) >= (down ? p.t_c : p.t_a);
    row |= down << level;
    col |= right << level;
  }
  return (feistel(row, p.scale, p.perm_key) << p.scale) | feistel(col, p.scale, p.perm_key);
}

// One thread per edge, grid-stride.
__global__ void rmat_draw(glc_rmat p, u64 *keys) {
  const u64 stride = static_cast<u64>(gridDim.x) * blockDim.x;
  for (u64 e = blockIdx.x * static_cast<u64>(blockDim.x) + threadIdx.x; e < p.edges; e += stride)
    keys[e] = rmat_key(p, e);
}

// Each distinct key's column and its count as the value.
template <typename Index, typename Value, typename Count>
__global__ void rmat_entries(const u64 *keys, const Count *counts, u64 nnz, int scale,
                             Index *indices, Value *data) {
  const u64 stride = static_cast<u64>(gridDim.x) * blockDim.x;
  const u64 column_mask = (1ull << scale) - 1;
  for (u64 i = blockIdx.x * static_cast<u64>(blockDim.x) + threadIdx.x; i < nnz; i += stride) {
    indices[i] = static_cast<Index>(keys[i] & column_mask);
    data[i] = static_cast<Value>(counts[i]);
  }
}

// indptr[r] = the number of keys below r * 2^scale, a binary search per row: the sorted keys
// give each row's start without atomics or a scan, whatever the gaps between rows.
template <typename Index>
__global__ void rmat_indptr(const u64 *keys, u64 nnz, int scale, u64 rows, Index *indptr) {
  const u64 stride = static_cast<u64>(gridDim.x) * blockDim.x;
  for (u64 r = blockIdx.x * static_cast<u64>(blockDim.x) + threadIdx.x; r <= rows; r += stride) {
    const u64 first = r << scale;
    u64 lo = 0, hi = nnz;
    while (lo < hi) {
      const u64 mid = lo + (hi - lo) / 2;
      if (keys[mid] < first)
        lo = mid + 1;
      else
        hi = mid;
    }
    indptr[r] = static_cast<Index>(lo);
  }
}

size_t aligned(size_t bytes) { return (bytes + align_bytes - 1) / align_bytes * align_bytes; }

// The workspace's parts, in order: two key arrays, the counts, the count, CUB's scratch.
struct rmat_layout {
  size_t keys, counts, count, scratch, total;
};

bool wide_counts(const glc_rmat &p) { return p.edges > UINT_MAX; }

template <typename Count>
int cub_scratch_bytes(const glc_rmat &p, size_t *bytes) {
  const long long n = static_cast<long long>(p.edges);
  cub::DoubleBuffer<u64> keys(nullptr, nullptr);
  size_t sort = 0, merge = 0;
  int code = GLC_CUDA(cub::DeviceRadixSort::SortKeys, nullptr, sort, keys, n, 0, 2 * p.scale,
                      cudaStream_t{});
  GLC_TRY(code,
          GLC_CUDA(cub::DeviceReduce::ReduceByKey, nullptr, merge,
                   static_cast<const u64 *>(nullptr), static_cast<u64 *>(nullptr),
                   thrust::constant_iterator<Count>(1), static_cast<Count *>(nullptr),
                   static_cast<u64 *>(nullptr), ::cuda::std::plus<Count>{}, n, cudaStream_t{}));
  *bytes = sort > merge ? sort : merge;
  return code;
}

int layout_of(const glc_rmat &p, rmat_layout *l) {
  size_t scratch = 0;
  const size_t count_bytes = wide_counts(p) ? sizeof(u64) : sizeof(unsigned);
  int code = wide_counts(p) ? cub_scratch_bytes<u64>(p, &scratch)
                            : cub_scratch_bytes<unsigned>(p, &scratch);
  if (code) return code;
  l->keys = aligned(p.edges * sizeof(u64));
  l->counts = aligned(p.edges * count_bytes);
  l->count = aligned(sizeof(u64));
  l->scratch = aligned(scratch ? scratch : 1);
  l->total = 2 * l->keys + l->counts + l->count + l->scratch;
  return cudaSuccess;
}

bool valid(const glc_rmat *p) {
  const u64 limit = 1ull << 32;
  return p != nullptr && p->scale >= 1 && p->scale <= 31 && p->edges >= 1 &&
         p->edges <= (1ull << 48) && p->t_ab <= limit && p->t_a <= limit && p->t_c <= limit;
}

template <auto kernel>
int grid_for(u64 items, size_t *blocks) {
  size_t wave = 0;
  int code = glc_full_wave_blocks<kernel>(rmat_block, &wave);
  if (code) return code;
  const size_t cover = glc_blocks_to_cover(static_cast<size_t>(items), rmat_block);
  // a few waves keep every SM busy; the grid-stride loops take the rest
  *blocks = cover < 4 * wave ? cover : 4 * wave;
  if (*blocks == 0) *blocks = 1;
  return cudaSuccess;
}

template <typename Count>
int merge_runs(const glc_rmat &p, cub::DoubleBuffer<u64> &keys, Count *counts, u64 *count,
               void *scratch, size_t scratch_bytes, cudaStream_t s) {
  const long long n = static_cast<long long>(p.edges);
  return GLC_CUDA(cub::DeviceReduce::ReduceByKey, scratch, scratch_bytes,
                  static_cast<const u64 *>(keys.Current()), keys.Alternate(),
                  thrust::constant_iterator<Count>(1), counts, count, ::cuda::std::plus<Count>{}, n,
                  s);
}

template <typename Index, typename Value, typename Count>
int write_csr(const glc_rmat &p, const glc_rmat_merged &m, u64 nnz, void *indptr, void *indices,
              void *data, cudaStream_t s) {
  const u64 *keys = static_cast<const u64 *>(m.keys);
  const u64 rows = 1ull << p.scale;
  size_t blocks = 0;
  int code = grid_for<rmat_indptr<Index>>(rows + 1, &blocks);
  GLC_TRY(code, glc_launch(rmat_indptr<Index>, "rmat_indptr", dim3(blocks), dim3(rmat_block), s,
                           keys, nnz, p.scale, rows, static_cast<Index *>(indptr)));
  if (code || nnz == 0) return code;
  GLC_TRY(code, (grid_for<rmat_entries<Index, Value, Count>>(nnz, &blocks)));
  GLC_TRY(code, glc_launch(rmat_entries<Index, Value, Count>, "rmat_entries", dim3(blocks),
                           dim3(rmat_block), s, keys, static_cast<const Count *>(m.counts), nnz,
                           p.scale, static_cast<Index *>(indices), static_cast<Value *>(data)));
  return code;
}

template <typename Count>
int write_csr_as(const glc_rmat &p, const glc_rmat_merged &m, u64 nnz, int index_dtype, int dtype,
                 void *indptr, void *indices, void *data, cudaStream_t s) {
  return glc_dispatch_floating(dtype, "glc_rmat_csr", [&](auto value) {
    using Value = decltype(value);
    return index_dtype == GLC_I64
               ? write_csr<long long, Value, Count>(p, m, nnz, indptr, indices, data, s)
               : write_csr<int, Value, Count>(p, m, nnz, indptr, indices, data, s);
  });
}

}  // namespace

int glc_rmat_workspace_bytes(const glc_rmat *p, size_t *bytes) {
  if (!valid(p) || bytes == nullptr)
    return glc_fail(cudaErrorInvalidValue, "glc_rmat_workspace_bytes");
  rmat_layout l;
  int code = layout_of(*p, &l);
  if (!code) *bytes = l.total;
  return code;
}

int glc_rmat_edges(const glc_rmat *p, void *workspace, size_t workspace_bytes,
                   glc_rmat_merged *merged, glc_stream stream) {
  rmat_layout l;
  if (!valid(p) || merged == nullptr || !glc_all_aligned(align_bytes, workspace))
    return glc_fail(cudaErrorInvalidValue, "glc_rmat_edges");
  int code = layout_of(*p, &l);
  if (code) return code;
  if (workspace_bytes < l.total) return glc_fail(cudaErrorInvalidValue, "glc_rmat_edges");
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  char *base = static_cast<char *>(workspace);
  u64 *keys_a = reinterpret_cast<u64 *>(base), *keys_b = reinterpret_cast<u64 *>(base + l.keys);
  void *counts = base + 2 * l.keys;
  u64 *count = reinterpret_cast<u64 *>(base + 2 * l.keys + l.counts);
  void *scratch = base + 2 * l.keys + l.counts + l.count;
  size_t blocks = 0;
  code = grid_for<rmat_draw>(p->edges, &blocks);
  GLC_TRY(code, glc_launch(rmat_draw, "rmat_draw", dim3(blocks), dim3(rmat_block), s, *p, keys_a));
  // the keys' 2 scale bits only: fewer radix passes at small scales
  cub::DoubleBuffer<u64> keys(keys_a, keys_b);
  size_t scratch_bytes = l.scratch;
  GLC_TRY(code, GLC_CUDA(cub::DeviceRadixSort::SortKeys, scratch, scratch_bytes, keys,
                         static_cast<long long>(p->edges), 0, 2 * p->scale, s));
  scratch_bytes = l.scratch;
  if (wide_counts(*p))
    GLC_TRY(code,
            merge_runs(*p, keys, static_cast<u64 *>(counts), count, scratch, scratch_bytes, s));
  else
    GLC_TRY(code, merge_runs(*p, keys, static_cast<unsigned *>(counts), count, scratch,
                             scratch_bytes, s));
  if (!code) *merged = glc_rmat_merged{keys.Alternate(), counts, count};
  return code;
}

int glc_rmat_csr(const glc_rmat *p, const glc_rmat_merged *merged, size_t nnz, int index_dtype,
                 int dtype, void *indptr, void *indices, void *data, glc_stream stream) {
  if (!valid(p) || merged == nullptr || nnz > p->edges ||
      (index_dtype != GLC_I32 && index_dtype != GLC_I64) ||
      (index_dtype == GLC_I32 && nnz > static_cast<size_t>(INT_MAX)) ||
      !glc_all_aligned(index_dtype == GLC_I64 ? 8 : 4, indptr) ||
      (nnz > 0 && !glc_all_aligned(1, indices, data, merged->keys, merged->counts)))
    return glc_fail(cudaErrorInvalidValue, "glc_rmat_csr");
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  return wide_counts(*p)
             ? write_csr_as<u64>(*p, *merged, nnz, index_dtype, dtype, indptr, indices, data, s)
             : write_csr_as<unsigned>(*p, *merged, nnz, index_dtype, dtype, indptr, indices, data,
                                      s);
}
