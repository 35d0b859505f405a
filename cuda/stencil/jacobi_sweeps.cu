// Jacobi sweeps of -laplace(u) = f: u_new = (sum of the 2d neighbours + h^2 f) / 2d on the
// interior. Variants 0, 1 and 3 launch these; so can a multi-GPU lab, through the C ABI's
// row-range and plane-range sweeps (stencil.h, with variant 2's temporal pass over a row range),
// sweeping its interior while its halos travel.
//
// 2D: a thread owns a column segment of rows_per_thread rows and walks it with the rows above
// and below in registers, so u is read from DRAM about (8 + 2) / 8 times per sweep, the left and
// right neighbours coming from L1 (the neighbouring lanes loaded them). 3D: a thread owns an
// (x, y) column and marches z_per_thread planes with the planes below and above in registers.
// Where the rows are a multiple of 16 bytes and the grids 16-byte aligned (4096² and 512³ are),
// the _wide kernels do the same with a vector of columns per thread.
// Byte model (docs/labs/stencil.md): u read, f read, u_new written, 3 x itemsize per cell.
#include "cuda/core/dtype_dispatch.cuh"
#include "cuda/core/launch.cuh"
#include "cuda/stencil/jacobi.cuh"
#include "cuda/stencil/stencil.h"

namespace {
constexpr int rows_per_thread = 8;
constexpr int block_2d = 128;
constexpr int z_per_thread = 16;
constexpr int block_3d_x = 32, block_3d_y = 4;
}  // namespace

template <typename T, bool residual>
__global__ void jacobi_sweep2d(const T *__restrict__ u, T *__restrict__ u_new,
                               const T *__restrict__ f, int cols, int row_begin, int row_end, T h2,
                               T *residual_max) {
  const int x = 1 + blockIdx.x * blockDim.x + threadIdx.x;
  const bool column = x < cols - 1;
  T largest = T(0);
  for (int r0 = row_begin + blockIdx.y * rows_per_thread; r0 < row_end;
       r0 += gridDim.y * rows_per_thread) {
    if (!column) break;
    const int r1 = min(r0 + rows_per_thread, row_end);
    const T *p = u + static_cast<size_t>(r0) * cols + x;
    if (r1 - r0 == rows_per_thread) {
      // a whole segment: every load issued before the first sum (34 in flight per thread
      // instead of 4): a sweep is bound by how many bytes are in flight, not by the sums
      T column_values[rows_per_thread + 2], left[rows_per_thread], right[rows_per_thread],
          source[rows_per_thread];
#pragma unroll
      for (int i = 0; i < rows_per_thread + 2; ++i) column_values[i] = __ldg(p + (i - 1) * cols);
#pragma unroll
      for (int i = 0; i < rows_per_thread; ++i) {
        left[i] = __ldg(p + i * cols - 1);
        right[i] = __ldg(p + i * cols + 1);
        source[i] = __ldg(f + static_cast<size_t>(r0 + i) * cols + x);
      }
#pragma unroll
      for (int i = 0; i < rows_per_thread; ++i) {
        const T value =
            (column_values[i] + column_values[i + 2] + left[i] + right[i] + h2 * source[i]) *
            T(0.25);
        u_new[static_cast<size_t>(r0 + i) * cols + x] = value;
        if (residual) largest = glc_max_keep_nan(largest, abs(value - column_values[i + 1]));
      }
      continue;
    }
    T up = __ldg(p - cols), centre = __ldg(p);
    for (int r = r0; r < r1; ++r, p += cols) {
      const T down = __ldg(p + cols);
      const size_t at = static_cast<size_t>(r) * cols + x;
      const T value = (up + down + __ldg(p - 1) + __ldg(p + 1) + h2 * __ldg(f + at)) * T(0.25);
      u_new[at] = value;
      if (residual) largest = glc_max_keep_nan(largest, abs(value - centre));
      up = centre;
      centre = down;
    }
  }
  if (residual) glc_block_max_into(largest, residual_max);
}

// The 2D sweep with 16-byte loads and stores (rows whose length is a multiple of 4 floats or 2
// doubles, 16-byte aligned grids): a thread owns a vector of columns over rows_per_wide_thread
// rows, a quarter (float) of the load instructions of jacobi_sweep2d for the same bytes, so
// more bytes are in flight per instruction issued. The left and right neighbours of the vector
// are scalar loads (L1 hits: the neighbouring lanes loaded them); the vectors that hold column
// 0 or cols-1 store their interior columns one by one (the faces are never written).
constexpr int rows_per_wide_thread = 4;

template <typename T, bool residual>
__global__ void jacobi_sweep2d_wide(const T *__restrict__ u, T *__restrict__ u_new,
                                    const T *__restrict__ f, int cols, int row_begin, int row_end,
                                    T h2, T *residual_max) {
  constexpr int lanes = glc_vec16<T>::lanes;
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * lanes;
  const bool active = c0 < cols;
  const bool whole = c0 >= 1 && c0 + lanes <= cols - 1;
  T largest = T(0);
  for (int r0 = row_begin + blockIdx.y * rows_per_wide_thread; r0 < row_end;
       r0 += gridDim.y * rows_per_wide_thread) {
    if (!active) break;
    const int r1 = min(r0 + rows_per_wide_thread, row_end);
    T up[lanes], centre[lanes];
    load_wide(u + static_cast<size_t>(r0 - 1) * cols + c0, up);
    load_wide(u + static_cast<size_t>(r0) * cols + c0, centre);
#pragma unroll
    for (int i = 0; i < rows_per_wide_thread; ++i) {
      const int r = r0 + i;
      if (r >= r1) break;
      const size_t row = static_cast<size_t>(r) * cols;
      T down[lanes], source[lanes], value[lanes];
      load_wide(u + row + cols + c0, down);
      load_wide(f + row + c0, source);
      const T left = c0 > 0 ? __ldg(u + row + c0 - 1) : T(0);
      const T right = c0 + lanes < cols ? __ldg(u + row + c0 + lanes) : T(0);
#pragma unroll
      for (int j = 0; j < lanes; ++j) {
        const T west = j == 0 ? left : centre[j - 1], east = j == lanes - 1 ? right : centre[j + 1];
        value[j] = (up[j] + down[j] + west + east + h2 * source[j]) * T(0.25);
      }
      if (whole) {
        typename glc_vec16<T>::type w;
        T *e = reinterpret_cast<T *>(&w);
#pragma unroll
        for (int j = 0; j < lanes; ++j) e[j] = value[j];
        *reinterpret_cast<typename glc_vec16<T>::type *>(u_new + row + c0) = w;
      }
#pragma unroll
      for (int j = 0; j < lanes; ++j) {
        const int c = c0 + j;
        const bool inside = c >= 1 && c < cols - 1;
        if (!whole && inside) u_new[row + c] = value[j];
        if (residual && inside) largest = glc_max_keep_nan(largest, abs(value[j] - centre[j]));
        up[j] = centre[j];
        centre[j] = down[j];
      }
    }
  }
  if (residual) glc_block_max_into(largest, residual_max);
}

template <typename T, bool residual>
__global__ void jacobi_sweep3d(const T *__restrict__ u, T *__restrict__ u_new,
                               const T *__restrict__ f, int rows, int cols, int plane_begin,
                               int plane_end, T h2, T *residual_max) {
  const int x = 1 + blockIdx.x * blockDim.x + threadIdx.x;
  const int y = 1 + blockIdx.y * blockDim.y + threadIdx.y;
  const size_t plane = static_cast<size_t>(rows) * cols;
  T largest = T(0);
  const int z0 = plane_begin + blockIdx.z * z_per_thread, z1 = min(z0 + z_per_thread, plane_end);
  if (x < cols - 1 && y < rows - 1 && z0 < z1) {
    const size_t first = static_cast<size_t>(z0) * plane + static_cast<size_t>(y) * cols + x;
    const T *p = u + first;
    T below = __ldg(p - plane), centre = __ldg(p);
#pragma unroll 4
    for (int z = z0; z < z1; ++z, p += plane) {
      const T above = __ldg(p + plane);
      const size_t at = first + static_cast<size_t>(z - z0) * plane;
      const T value = (below + above + __ldg(p - 1) + __ldg(p + 1) + __ldg(p - cols) +
                       __ldg(p + cols) + h2 * __ldg(f + at)) *
                      (T(1) / T(6));
      u_new[at] = value;
      if (residual) largest = glc_max_keep_nan(largest, abs(value - centre));
      below = centre;
      centre = above;
    }
  }
  if (residual) glc_block_max_into(largest, residual_max);
}

// The 3D sweep with 16-byte loads and stores along x (rows of a multiple of 4 floats or 2
// doubles, 16-byte aligned grids), as jacobi_sweep2d_wide is to jacobi_sweep2d: a thread owns a
// vector of columns of one row and marches z_per_thread planes with the planes below and above
// in registers.
template <typename T, bool residual>
__global__ void jacobi_sweep3d_wide(const T *__restrict__ u, T *__restrict__ u_new,
                                    const T *__restrict__ f, int rows, int cols, int plane_begin,
                                    int plane_end, T h2, T *residual_max) {
  constexpr int lanes = glc_vec16<T>::lanes;
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * lanes;
  const int y = 1 + blockIdx.y * blockDim.y + threadIdx.y;
  const bool whole = c0 >= 1 && c0 + lanes <= cols - 1;
  const size_t plane = static_cast<size_t>(rows) * cols;
  T largest = T(0);
  const int z0 = plane_begin + blockIdx.z * z_per_thread, z1 = min(z0 + z_per_thread, plane_end);
  if (c0 < cols && y < rows - 1 && z0 < z1) {
    const size_t first = static_cast<size_t>(z0) * plane + static_cast<size_t>(y) * cols + c0;
    T below[lanes], centre[lanes];
    load_wide(u + first - plane, below);
    load_wide(u + first, centre);
#pragma unroll 2
    for (int z = z0; z < z1; ++z) {
      const size_t at = first + static_cast<size_t>(z - z0) * plane;
      T above[lanes], south[lanes], north[lanes], source[lanes], value[lanes];
      load_wide(u + at + plane, above);
      load_wide(u + at - cols, south);
      load_wide(u + at + cols, north);
      load_wide(f + at, source);
      const T left = c0 > 0 ? __ldg(u + at - 1) : T(0);
      const T right = c0 + lanes < cols ? __ldg(u + at + lanes) : T(0);
#pragma unroll
      for (int j = 0; j < lanes; ++j) {
        const T west = j == 0 ? left : centre[j - 1], east = j == lanes - 1 ? right : centre[j + 1];
        value[j] = (below[j] + above[j] + west + east + south[j] + north[j] + h2 * source[j]) *
                   (T(1) / T(6));
      }
      if (whole) {
        typename glc_vec16<T>::type packed;
        T *e = reinterpret_cast<T *>(&packed);
#pragma unroll
        for (int j = 0; j < lanes; ++j) e[j] = value[j];
        *reinterpret_cast<typename glc_vec16<T>::type *>(u_new + at) = packed;
      }
#pragma unroll
      for (int j = 0; j < lanes; ++j) {
        const bool inside = c0 + j >= 1 && c0 + j < cols - 1;
        if (!whole && inside) u_new[at + j] = value[j];
        if (residual && inside) largest = glc_max_keep_nan(largest, abs(value[j] - centre[j]));
        below[j] = centre[j];
        centre[j] = above[j];
      }
    }
  }
  if (residual) glc_block_max_into(largest, residual_max);
}

template <typename T>
__global__ void jacobi_residual(const T *__restrict__ a, const T *__restrict__ b, size_t n,
                                T *residual_max) {
  T largest = T(0);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    largest = glc_max_keep_nan(largest, abs(__ldg(a + i) - __ldg(b + i)));
  glc_block_max_into(largest, residual_max);
}

template <typename T>
int glc_jacobi_rows(const T *u, T *u_new, const T *f, size_t rows, size_t cols, size_t row_begin,
                    size_t row_end, T h2, T *residual_max, cudaStream_t stream) {
  if (cols < 3 || row_begin >= row_end) return cudaSuccess;
  const int c = static_cast<int>(cols), b = static_cast<int>(row_begin),
            e = static_cast<int>(row_end);
  constexpr int lanes = glc_vec16<T>::lanes;
  if (cols % lanes == 0 && glc_all_aligned(16, u, static_cast<const T *>(u_new), f)) {
    dim3 grid(glc_grid_dim(glc_blocks_to_cover(cols / lanes, block_2d), glc_max_grid_x),
              glc_grid_dim(glc_blocks_to_cover(row_end - row_begin, rows_per_wide_thread)));
    if (residual_max)
      return glc_launch(jacobi_sweep2d_wide<T, true>, "jacobi_sweep2d_wide", grid, dim3(block_2d),
                        stream, u, u_new, f, c, b, e, h2, residual_max);
    return glc_launch(jacobi_sweep2d_wide<T, false>, "jacobi_sweep2d_wide", grid, dim3(block_2d),
                      stream, u, u_new, f, c, b, e, h2, residual_max);
  }
  dim3 grid(glc_grid_dim(glc_blocks_to_cover(cols - 2, block_2d), glc_max_grid_x),
            glc_grid_dim(glc_blocks_to_cover(row_end - row_begin, rows_per_thread)));
  if (residual_max)
    return glc_launch(jacobi_sweep2d<T, true>, "jacobi_sweep2d", grid, dim3(block_2d), stream, u,
                      u_new, f, c, b, e, h2, residual_max);
  return glc_launch(jacobi_sweep2d<T, false>, "jacobi_sweep2d", grid, dim3(block_2d), stream, u,
                    u_new, f, c, b, e, h2, residual_max);
}

template <typename T>
int glc_jacobi_planes(const T *u, T *u_new, const T *f, size_t planes, size_t rows, size_t cols,
                      size_t plane_begin, size_t plane_end, T h2, T *residual_max,
                      cudaStream_t stream) {
  if (cols < 3 || rows < 3 || plane_begin >= plane_end) return cudaSuccess;
  const size_t chunks = glc_blocks_to_cover(plane_end - plane_begin, z_per_thread);
  const size_t tiles_y = glc_blocks_to_cover(rows - 2, block_3d_y);
  if (chunks > 65535 || tiles_y > 65535)
    return glc_fail(cudaErrorInvalidValue, "jacobi_sweep3d (grid too tall)");
  dim3 block(block_3d_x, block_3d_y);
  const int r = static_cast<int>(rows), c = static_cast<int>(cols),
            b = static_cast<int>(plane_begin), e = static_cast<int>(plane_end);
  constexpr int lanes = glc_vec16<T>::lanes;
  if (cols % lanes == 0 && glc_all_aligned(16, u, static_cast<const T *>(u_new), f)) {
    dim3 grid(glc_grid_dim(glc_blocks_to_cover(cols / lanes, block_3d_x), glc_max_grid_x),
              glc_grid_dim(tiles_y), glc_grid_dim(chunks));
    if (residual_max)
      return glc_launch(jacobi_sweep3d_wide<T, true>, "jacobi_sweep3d_wide", grid, block, stream, u,
                        u_new, f, r, c, b, e, h2, residual_max);
    return glc_launch(jacobi_sweep3d_wide<T, false>, "jacobi_sweep3d_wide", grid, block, stream, u,
                      u_new, f, r, c, b, e, h2, residual_max);
  }
  dim3 grid(glc_grid_dim(glc_blocks_to_cover(cols - 2, block_3d_x), glc_max_grid_x),
            glc_grid_dim(tiles_y), glc_grid_dim(chunks));
  if (residual_max)
    return glc_launch(jacobi_sweep3d<T, true>, "jacobi_sweep3d", grid, block, stream, u, u_new, f,
                      r, c, b, e, h2, residual_max);
  return glc_launch(jacobi_sweep3d<T, false>, "jacobi_sweep3d", grid, block, stream, u, u_new, f, r,
                    c, b, e, h2, residual_max);
}

template <typename T>
int glc_jacobi_residual(const T *a, const T *b, size_t n, T *residual_max, cudaStream_t stream) {
  size_t blocks = 0;
  int code = glc_full_wave_blocks<jacobi_residual<T>>(256, &blocks);
  if (code != cudaSuccess) return code;
  const size_t needed = glc_blocks_to_cover(n, 256);
  dim3 grid(glc_grid_dim(needed < blocks ? needed : blocks, glc_max_grid_x));
  return glc_launch(jacobi_residual<T>, "jacobi_residual", grid, dim3(256), stream, a, b, n,
                    residual_max);
}

template <typename T>
int glc_jacobi_load_sweeps() {
  const void *kernels[] = {reinterpret_cast<const void *>(jacobi_sweep2d<T, false>),
                           reinterpret_cast<const void *>(jacobi_sweep2d<T, true>),
                           reinterpret_cast<const void *>(jacobi_sweep2d_wide<T, false>),
                           reinterpret_cast<const void *>(jacobi_sweep2d_wide<T, true>),
                           reinterpret_cast<const void *>(jacobi_sweep3d<T, false>),
                           reinterpret_cast<const void *>(jacobi_sweep3d<T, true>),
                           reinterpret_cast<const void *>(jacobi_sweep3d_wide<T, false>),
                           reinterpret_cast<const void *>(jacobi_sweep3d_wide<T, true>)};
  glc_driver_launch_kernel();  // the launch path's own lookups, cached before any capture too
  for (const void *kernel : kernels) {
    cudaFuncAttributes attributes;
    int code = GLC_CUDA(cudaFuncGetAttributes, &attributes, kernel);
    if (code != cudaSuccess) return code;
    glc_function_of(kernel);
  }
  return cudaSuccess;
}

#define GLC_JACOBI_INSTANCES(T)                                                                 \
  template int glc_jacobi_rows<T>(const T *, T *, const T *, size_t, size_t, size_t, size_t, T, \
                                  T *, cudaStream_t);                                           \
  template int glc_jacobi_planes<T>(const T *, T *, const T *, size_t, size_t, size_t, size_t,  \
                                    size_t, T, T *, cudaStream_t);                              \
  template int glc_jacobi_residual<T>(const T *, const T *, size_t, T *, cudaStream_t);         \
  template int glc_jacobi_load_sweeps<T>();
GLC_JACOBI_INSTANCES(float)
GLC_JACOBI_INSTANCES(double)

namespace {
bool sizes_fit(size_t a, size_t b, size_t c) {
  const size_t limit = size_t{1} << 31;
  return a < limit && b < limit && c < limit;
}

// A 2D slab's row range: inside [1, rows_with_ghosts - 1), its sizes below 2^31.
bool slab_rows_fit(size_t rows_with_ghosts, size_t cols, size_t row_begin, size_t row_end) {
  return sizes_fit(rows_with_ghosts, cols, 1) && rows_with_ghosts >= 2 && row_begin >= 1 &&
         row_end >= row_begin && row_end <= rows_with_ghosts - 1;
}
}  // namespace

extern "C" int glc_jacobi_sweep2d_rows(int dtype, const void *u, void *u_new, const void *f,
                                       size_t rows_with_ghosts, size_t cols, size_t row_begin,
                                       size_t row_end, double h2, void *residual_max,
                                       glc_stream stream) {
  if (!slab_rows_fit(rows_with_ghosts, cols, row_begin, row_end))
    return glc_fail(cudaErrorInvalidValue, "glc_jacobi_sweep2d_rows (rows)");
  return glc_dispatch_floating(dtype, "glc_jacobi_sweep2d_rows (dtype)", [&](auto zero) {
    using T = decltype(zero);
    if (!glc_all_aligned(sizeof(T), static_cast<const T *>(u), static_cast<const T *>(u_new),
                         static_cast<const T *>(f)))
      return glc_fail(cudaErrorInvalidValue, "glc_jacobi_sweep2d_rows (pointers)");
    return glc_jacobi_rows(static_cast<const T *>(u), static_cast<T *>(u_new),
                           static_cast<const T *>(f), rows_with_ghosts, cols, row_begin, row_end,
                           static_cast<T>(h2), static_cast<T *>(residual_max),
                           static_cast<cudaStream_t>(stream));
  });
}

extern "C" int glc_jacobi_temporal2d_rows(int dtype, const void *u, void *u_new, const void *f,
                                          size_t rows_with_ghosts, size_t cols, size_t row_begin,
                                          size_t row_end, int depth, double h2, void *residual_max,
                                          glc_stream stream) {
  if (!slab_rows_fit(rows_with_ghosts, cols, row_begin, row_end))
    return glc_fail(cudaErrorInvalidValue, "glc_jacobi_temporal2d_rows (rows)");
  return glc_dispatch_floating(dtype, "glc_jacobi_temporal2d_rows (dtype)", [&](auto zero) {
    using T = decltype(zero);
    if (!glc_all_aligned(sizeof(T), static_cast<const T *>(u), static_cast<const T *>(u_new),
                         static_cast<const T *>(f)))
      return glc_fail(cudaErrorInvalidValue, "glc_jacobi_temporal2d_rows (pointers)");
    return glc_jacobi_temporal(static_cast<const T *>(u), static_cast<T *>(u_new),
                               static_cast<const T *>(f), rows_with_ghosts, cols, row_begin,
                               row_end, depth, static_cast<T>(h2), static_cast<T *>(residual_max),
                               static_cast<cudaStream_t>(stream));
  });
}

extern "C" int glc_jacobi_sweep3d_planes(int dtype, const void *u, void *u_new, const void *f,
                                         size_t planes_with_ghosts, size_t rows, size_t cols,
                                         size_t plane_begin, size_t plane_end, double h2,
                                         void *residual_max, glc_stream stream) {
  if (!sizes_fit(planes_with_ghosts, rows, cols) || plane_begin < 1 || plane_end < plane_begin ||
      planes_with_ghosts < 2 || plane_end > planes_with_ghosts - 1)
    return glc_fail(cudaErrorInvalidValue, "glc_jacobi_sweep3d_planes (planes)");
  return glc_dispatch_floating(dtype, "glc_jacobi_sweep3d_planes (dtype)", [&](auto zero) {
    using T = decltype(zero);
    if (!glc_all_aligned(sizeof(T), static_cast<const T *>(u), static_cast<const T *>(u_new),
                         static_cast<const T *>(f)))
      return glc_fail(cudaErrorInvalidValue, "glc_jacobi_sweep3d_planes (pointers)");
    return glc_jacobi_planes(static_cast<const T *>(u), static_cast<T *>(u_new),
                             static_cast<const T *>(f), planes_with_ghosts, rows, cols, plane_begin,
                             plane_end, static_cast<T>(h2), static_cast<T *>(residual_max),
                             static_cast<cudaStream_t>(stream));
  });
}
