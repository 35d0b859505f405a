// Variant 2: blocking along one axis. 2D and 3D grids: 2.5D streaming (S3 11.1's tiling turned
// into a march): a block owns a bx x by tile of the (y, x) plane and walks a chunk of planes
// along the outer axis, keeping a ring of 2r+1 padded planes in shared memory; each step loads
// one new plane, so each input plane is read once per chunk instead of (2r+1) times (a 2D grid
// marches along y with one-row planes). 1D grids: each thread computes 8 consecutive outputs
// from a window of 8 + 2r values held in registers, the block's segment staged through shared
// memory with coalesced loads.
#include "cuda/core/launch.cuh"
#include "cuda/stencil/grid.cuh"

namespace {
constexpr int chunk_planes = 32;  // planes per block: the ring's 2r reloads cost 2r / 32
constexpr int outputs_per_thread = 8;

template <typename T>
struct dense_1d {
  T w[2 * GLC_STENCIL_MAX_RADIUS + 1];
};

__device__ inline int ring_slot(int plane, int slots) {
  int s = plane % slots;
  return s < 0 ? s + slots : s;
}
}  // namespace

template <typename T>
__global__ void stencil_streaming(const T *__restrict__ u, T *__restrict__ out, glc_grid3 g,
                                  glc_taps<T> taps, int tiles_y, int chunks) {
  extern __shared__ unsigned char stencil_ring_bytes[];
  T *ring = reinterpret_cast<T *>(stencil_ring_bytes);
  const int bx = blockDim.x, by = blockDim.y;
  const int px = bx + 2 * g.rx, py = by + 2 * g.ry, plane = px * py, slots = 2 * g.rz + 1;
  const int thread = threadIdx.y * bx + threadIdx.x, threads = bx * by;
  const int x0 = blockIdx.x * bx;
  for (int chunk = blockIdx.z; chunk < chunks; chunk += gridDim.z)
    for (int ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
      const int y0 = ty * by, z0 = chunk * chunk_planes;
      const int z1 = min(z0 + chunk_planes, g.nz);
      auto load = [&](int z) {
        T *dst = ring + ring_slot(z, slots) * plane;
        for (int i = thread; i < plane; i += threads)
          dst[i] = glc_fetch(u, g, z, y0 + i / px - g.ry, x0 + i % px - g.rx);
      };
      for (int z = z0 - g.rz; z < z0 + g.rz; ++z) load(z);
      for (int z = z0; z < z1; ++z) {
        load(z + g.rz);
        __syncthreads();
        const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
        if (x < g.nx && y < g.ny) {
          const int lx = threadIdx.x + g.rx, ly = threadIdx.y + g.ry;
          T value;
          if (g.boundary == GLC_BOUNDARY_FIXED && glc_in_shell(g, z, y, x)) {
            value = ring[ring_slot(z, slots) * plane + ly * px + lx];
          } else {
            value = T(0);
            for (int t = 0; t < taps.count; ++t) {
              const int *o = taps.offsets + 3 * t;
              value += __ldg(taps.weights + t) * ring[ring_slot(z + __ldg(o), slots) * plane +
                                                      (ly + __ldg(o + 1)) * px + lx + __ldg(o + 2)];
            }
          }
          out[glc_flat(g, z, y, x)] = value;
        }
        __syncthreads();  // the next step overwrites the oldest plane
      }
    }
}

template <typename T, int R>
__global__ void stencil_register_1d(const T *__restrict__ u, T *__restrict__ out, int n,
                                    int boundary, dense_1d<T> weights) {
  extern __shared__ unsigned char stencil_segment_bytes[];
  T *segment = reinterpret_cast<T *>(stencil_segment_bytes);
  const int span = blockDim.x * outputs_per_thread;
  const glc_grid3 g = {1, 1, n, 0, 0, R, boundary};
  for (long long base = static_cast<long long>(blockIdx.x) * span; base < n;
       base += static_cast<long long>(gridDim.x) * span) {
    for (int i = threadIdx.x; i < span + 2 * R; i += blockDim.x)
      segment[i] = glc_fetch(u, g, 0, 0, static_cast<int>(base + i - R));
    __syncthreads();
    T window[outputs_per_thread + 2 * R];
#pragma unroll
    for (int i = 0; i < outputs_per_thread + 2 * R; ++i)
      window[i] = segment[threadIdx.x * outputs_per_thread + i];
#pragma unroll
    for (int j = 0; j < outputs_per_thread; ++j) {
      const long long x = base + threadIdx.x * outputs_per_thread + j;
      if (x >= n) break;
      T value = T(0);
#pragma unroll
      for (int d = 0; d <= 2 * R; ++d)
        if (weights.w[d] != T(0)) value += weights.w[d] * window[j + d];
      if (boundary == GLC_BOUNDARY_FIXED && (x < R || x >= n - R)) value = window[j + R];
      out[x] = value;
    }
    __syncthreads();
  }
}

namespace {
template <typename T, int R>
int launch_1d(const glc_stencil_launch<T> &l, const T *u, T *out) {
  const int bx = l.block_x ? l.block_x : 128;
  dense_1d<T> w = {};
  for (int d = 0; d <= 2 * R; ++d) w.w[d] = static_cast<T>(l.dense[d]);
  const size_t span = static_cast<size_t>(bx) * outputs_per_thread;
  const unsigned bytes = static_cast<unsigned>(sizeof(T) * (span + 2 * R));
  dim3 grid(glc_grid_dim(glc_blocks_to_cover(l.grid.nx, static_cast<int>(span)), 1u << 20));
  if (bytes > 48 * 1024) {  // 1024 threads of doubles: opt in past the default
    int code = GLC_CUDA(cudaFuncSetAttribute, stencil_register_1d<T, R>,
                        cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (code != cudaSuccess) return code;
  }
  return glc_launch_shared(stencil_register_1d<T, R>, "stencil_register_1d", grid, dim3(bx), bytes,
                           l.stream, u, out, l.grid.nx, l.grid.boundary, w);
}
}  // namespace

template <typename T>
int glc_stencil_streaming(const glc_stencil_launch<T> &l, const T *u, T *out) {
  const glc_grid3 &g = l.grid;
  if (g.nz == 1 && g.ny == 1 && g.rz == 0 && g.ry == 0) {
    if (l.block_y > 1) return glc_fail(cudaErrorInvalidValue, "stencil_register_1d (block)");
    switch (g.rx) {
      case 0:
        return launch_1d<T, 0>(l, u, out);
      case 1:
        return launch_1d<T, 1>(l, u, out);
      case 2:
        return launch_1d<T, 2>(l, u, out);
      case 3:
        return launch_1d<T, 3>(l, u, out);
      default:
        return launch_1d<T, 4>(l, u, out);
    }
  }
  // a 2D grid arrives as (ny, 1, nx) (stencil.cu): its planes are rows, its tile a row segment
  const bool rows = g.ny == 1 && g.ry == 0;
  const int bx =
      glc_stencil_block_side(l.block_x, rows ? 128 : 32, !rows && l.block_y ? l.block_y : 1);
  const int by = rows ? 1 : glc_stencil_block_side(l.block_y, 8, bx);
  if (bx * by > 1024) return glc_fail(cudaErrorInvalidValue, "stencil_streaming (block)");
  const size_t bytes =
      sizeof(T) * (bx + 2 * g.rx) * (by + 2 * g.ry) * static_cast<size_t>(2 * g.rz + 1);
  int code = cudaSuccess;
  if (bytes > 48 * 1024)
    code = GLC_CUDA(cudaFuncSetAttribute, stencil_streaming<T>,
                    cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (code != cudaSuccess) return code;
  const size_t tiles_y = glc_blocks_to_cover(g.ny, by);
  const size_t chunks = glc_blocks_to_cover(g.nz, chunk_planes);
  dim3 grid(glc_grid_dim(glc_blocks_to_cover(g.nx, bx), glc_max_grid_x), glc_grid_dim(tiles_y),
            glc_grid_dim(chunks));
  return glc_launch_shared(stencil_streaming<T>, "stencil_streaming", grid, dim3(bx, by),
                           static_cast<unsigned>(bytes), l.stream, u, out, g, l.taps,
                           static_cast<int>(tiles_y), static_cast<int>(chunks));
}

template int glc_stencil_streaming<float>(const glc_stencil_launch<float> &, const float *,
                                          float *);
template int glc_stencil_streaming<double>(const glc_stencil_launch<double> &, const double *,
                                           double *);
