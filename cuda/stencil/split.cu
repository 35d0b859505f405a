// Variants 3 and 4: S3 11.1's interior/boundary split. The interior kernel covers the cells
// whose every tap lies inside the grid, so it reads u at fixed flat offsets with no index map
// and no branch per tap; a second kernel walks only the boundary shell (the cells within the
// radius of a face), each tap through the policy. The shell of a 512^3 grid with radius 1 is
// 1.2% of its cells.
// Variant 4 (Hopper): the interior kernel computes 4 consecutive outputs per thread, so each
// tap's weight and offset are loaded once for four cells and four independent loads are in
// flight; radius-1 star stencils (laplace5, laplace7, any weights of that shape) take a kernel
// that marches a column along the outer axis with the outer neighbours in registers (2.5D in
// registers: each input is loaded once from DRAM and the in-plane neighbours hit L1), with
// 16-byte vectors along x where the rows allow them; that kernel covers the faces as well, so
// it is the whole call.
#include "cuda/core/launch.cuh"
#include "cuda/stencil/grid.cuh"

namespace {
constexpr int vector_width = 4;
constexpr int star_chunk = 32;  // outer-axis cells per thread of the star kernel

bool interior_empty(const glc_grid3 &g) {
  return g.nz <= 2 * g.rz || g.ny <= 2 * g.ry || g.nx <= 2 * g.rx;
}
}  // namespace

// One thread per interior cell (vec == 1) or per vec consecutive interior cells along x.
template <typename T, int vec>
__global__ void stencil_interior(const T *__restrict__ u, T *__restrict__ out, glc_grid3 g,
                                 glc_taps<T> taps) {
  const int iz = g.nz - 2 * g.rz, iy = g.ny - 2 * g.ry, ix = g.nx - 2 * g.rx;
  const int x = g.rx + (blockIdx.x * blockDim.x + threadIdx.x) * vec;
  if (x >= g.rx + ix) return;
  for (int z = g.rz + blockIdx.z; z < g.rz + iz; z += gridDim.z)
    for (int y = g.ry + blockIdx.y * blockDim.y + threadIdx.y; y < g.ry + iy;
         y += gridDim.y * blockDim.y) {
      const size_t at = glc_flat(g, z, y, x);
      T sum[vec];
#pragma unroll
      for (int j = 0; j < vec; ++j) sum[j] = T(0);
      const int valid = min(vec, g.rx + ix - x);
      for (int t = 0; t < taps.count; ++t) {
        const T w = __ldg(taps.weights + t);
        const T *p = u + at + __ldg(taps.linear + t);
        if (valid == vec) {
#pragma unroll
          for (int j = 0; j < vec; ++j) sum[j] += w * __ldg(p + j);
        } else {
          for (int j = 0; j < valid; ++j) sum[j] += w * __ldg(p + j);
        }
      }
      for (int j = 0; j < valid; ++j) out[at + j] = sum[j];
    }
}

// The shell: rows (z, y) on a z or y face whole, then the rx cells at each end of every other
// row. all_cells: the interior is empty, so every cell is shell.
template <typename T>
__global__ void stencil_boundary(const T *__restrict__ u, T *__restrict__ out, glc_grid3 g,
                                 glc_taps<T> taps, bool all_cells, size_t face_rows) {
  const size_t iz = g.nz - 2 * g.rz, iy = g.ny - 2 * g.ry;
  const size_t z_face_rows = static_cast<size_t>(2 * g.rz) * g.ny;
  const size_t total =
      all_cells ? static_cast<size_t>(g.nz) * g.ny * g.nx : face_rows * g.nx + iz * iy * (2 * g.rx);
  for (size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<size_t>(gridDim.x) * blockDim.x) {
    int z, y, x;
    if (all_cells) {
      x = static_cast<int>(t % g.nx);
      y = static_cast<int>(t / g.nx % g.ny);
      z = static_cast<int>(t / g.nx / g.ny);
    } else if (t < face_rows * g.nx) {
      const size_t row = t / g.nx;
      x = static_cast<int>(t % g.nx);
      if (row < z_face_rows) {  // a whole plane of the z faces
        const int k = static_cast<int>(row / g.ny);
        z = k < g.rz ? k : g.nz - 2 * g.rz + k;
        y = static_cast<int>(row % g.ny);
      } else {  // a whole row of the y faces of an interior plane
        const size_t r = row - z_face_rows;
        const int k = static_cast<int>(r % (2 * g.ry));
        z = g.rz + static_cast<int>(r / (2 * g.ry));
        y = k < g.ry ? k : g.ny - 2 * g.ry + k;
      }
    } else {  // the x ends of an interior row
      const size_t s = t - face_rows * g.nx, row = s / (2 * g.rx);
      const int k = static_cast<int>(s % (2 * g.rx));
      z = g.rz + static_cast<int>(row / iy);
      y = g.ry + static_cast<int>(row % iy);
      x = k < g.rx ? k : g.nx - 2 * g.rx + k;
    }
    out[glc_flat(g, z, y, x)] = glc_stencil_at(u, g, taps, z, y, x);
  }
}

// The star fast path: weights c, x-, x+, in-plane y-, y+ (3D only), outer-, outer+. A 2D grid's
// outer axis is y (plane = a row), a 3D grid's z.
template <typename T>
struct star_weights {
  T c, xm, xp, ym, yp, om, op;
};

template <typename T, bool three_d>
__global__ void stencil_star(const T *__restrict__ u, T *__restrict__ out, int outer, int ny,
                             int nx, star_weights<T> w) {
  const int x = 1 + blockIdx.x * blockDim.x + threadIdx.x;
  const int y = three_d ? 1 + blockIdx.y * blockDim.y + threadIdx.y : 0;
  if (x >= nx - 1 || (three_d && y >= ny - 1)) return;
  const size_t plane = three_d ? static_cast<size_t>(ny) * nx : static_cast<size_t>(nx);
  const int o0 = 1 + blockIdx.z * star_chunk, o1 = min(o0 + star_chunk, outer - 1);
  if (o0 >= o1) return;
  const T *p = u + (static_cast<size_t>(o0) * (three_d ? ny : 1) + y) * nx + x;
  T *q = out + (static_cast<size_t>(o0) * (three_d ? ny : 1) + y) * nx + x;
  T below = __ldg(p - plane), centre = __ldg(p);
#pragma unroll 4
  for (int o = o0; o < o1; ++o, p += plane, q += plane) {
    const T above = __ldg(p + plane);
    T sum = w.c * centre + w.xm * __ldg(p - 1) + w.xp * __ldg(p + 1);
    if (three_d) sum += w.ym * __ldg(p - nx) + w.yp * __ldg(p + nx);
    sum += w.om * below + w.op * above;
    *q = sum;
    below = centre;
    centre = above;
  }
}

// The star kernel with 16-byte loads and stores along x (rows of a multiple of 4 floats or 2
// doubles, 16-byte aligned grids): a thread owns a vector of columns, a quarter (float) of the
// load instructions for the same bytes. It covers the whole grid, faces included: a neighbour
// past a face comes through the policy (glc_map_index) once per thread and row, not per tap, so
// the boundary kernel, the taps' upload and their launches are not needed. At 512^3 they cost
// 0.09 ms beside the kernel's 0.41 (docs/labs/stencil.md).
template <typename T>
__device__ __forceinline__ void load_wide_or_zero(const T *p, T (&v)[glc_vec16<T>::lanes]) {
  if (p != nullptr) {
    load_wide(p, v);
  } else {
#pragma unroll
    for (int j = 0; j < glc_vec16<T>::lanes; ++j) v[j] = T(0);
  }
}

// The index that neighbour i (one past a face at most) reads along an axis of n cells, or -1
// for a zero; fixed's faces never use theirs (they keep their input).
__device__ __forceinline__ int star_neighbour(int i, int n, int policy) {
  return i >= 0 && i < n ? i : glc_map_index(i, n, policy);
}

// The 3D star kernel's rows along y a thread owns (the `rows` tunable, R): their in-plane
// neighbours are each other's centres (registers), so a cell costs 1 + 2 / R row loads instead
// of 3. At 512^3 on the H200 the L2 ran at 88% of its throughput with R = 1 (DRAM 68%), yet R = 2
// and 4 take 72 and 126 registers a thread and ran slower: 0.320 and 0.362 ms against 0.291.
template <typename T, bool three_d, int R>
__global__ void stencil_star_wide(const T *__restrict__ u, T *__restrict__ out, int outer, int ny,
                                  int nx, int policy, star_weights<T> w) {
  static_assert(three_d || R == 1, "a 2D grid's outer axis is y: one row a thread");
  constexpr int lanes = glc_vec16<T>::lanes;
  const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * lanes;
  const int y0 = three_d ? (blockIdx.y * blockDim.y + threadIdx.y) * R : 0;
  if (c0 >= nx || (three_d && y0 >= ny)) return;
  const int rows = three_d ? min(R, ny - y0) : 1;  // the last thread of an odd ny owns one
  const int o0 = blockIdx.z * star_chunk, o1 = min(o0 + star_chunk, outer);
  if (o0 >= o1) return;
  // p: this thread's first row's vector in plane o; the neighbours as offsets from it (a face's
  // through the policy, found once here): south of the first row, north of the last
  const ptrdiff_t plane = static_cast<ptrdiff_t>(three_d ? ny : 1) * nx;
  const int south = three_d ? star_neighbour(y0 - 1, ny, policy) : -1;
  const int north = three_d ? star_neighbour(y0 + rows, ny, policy) : -1;
  const ptrdiff_t to_south = static_cast<ptrdiff_t>(south - y0) * nx;
  const ptrdiff_t to_north = static_cast<ptrdiff_t>(north - y0) * nx;
  const int west = star_neighbour(c0 - 1, nx, policy),
            east = star_neighbour(c0 + lanes, nx, policy);
  const bool fixed = policy == GLC_BOUNDARY_FIXED;
  // past the last plane: the policy's plane, as an offset from the last one, or a zero
  const int past_last = star_neighbour(outer, outer, policy);
  const T *p = u + static_cast<ptrdiff_t>(o0) * plane + static_cast<ptrdiff_t>(y0) * nx + c0;
  T *q = out + (p - u);
  T below[R][lanes], centre[R][lanes];
  const int first_below = star_neighbour(o0 - 1, outer, policy);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const T *row = p + (r < rows ? r : 0) * static_cast<ptrdiff_t>(nx);
    load_wide_or_zero(first_below >= 0 ? row + (first_below - o0) * plane : nullptr, below[r]);
    load_wide(row, centre[r]);
  }
#pragma unroll(R > 1 ? 1 : 2)  // R = 2 unrolled twice took 127 registers a thread
  for (int o = o0; o < o1; ++o, p += plane, q += plane) {
    // a neighbour that is a zero is read at p and replaced (no branch around the loads)
    const bool last = o + 1 == outer;
    const bool above_zero = last && past_last < 0;
    const ptrdiff_t to_above = !last ? plane : above_zero ? 0 : (past_last - o) * plane;
    T above[R][lanes], s[lanes], n[lanes];
#pragma unroll
    for (int r = 0; r < R; ++r)
      load_wide(p + (r < rows ? r : 0) * static_cast<ptrdiff_t>(nx) + to_above, above[r]);
    if (three_d) {
      load_wide(p + (south >= 0 ? to_south : 0), s);
      load_wide(p + (north >= 0 ? to_north : 0), n);
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r >= rows) break;
      const T *row = p + r * static_cast<ptrdiff_t>(nx);
      const T left = __ldg(row + (west < 0 ? 0 : west - c0));
      const T right = __ldg(row + (east < 0 ? 0 : east - c0));
      const int y = y0 + r;
      const bool face = fixed && (o == 0 || o == outer - 1 || (three_d && (y == 0 || y == ny - 1)));
      T value[lanes];
#pragma unroll
      for (int j = 0; j < lanes; ++j) {
        const T wv = j > 0 ? centre[r][j - 1] : west < 0 ? T(0) : left;
        const T ev = j < lanes - 1 ? centre[r][j + 1] : east < 0 ? T(0) : right;
        T sum = w.c * centre[r][j] + w.xm * wv + w.xp * ev;
        if (three_d) {
          const T sv = r > 0 ? centre[r > 0 ? r - 1 : 0][j] : south < 0 ? T(0) : s[j];
          const T nv = r + 1 < rows ? centre[r + 1 < R ? r + 1 : r][j] : north < 0 ? T(0) : n[j];
          sum += w.ym * sv + w.yp * nv;
        }
        value[j] = sum + w.om * below[r][j] + w.op * (above_zero ? T(0) : above[r][j]);
        if (fixed && (face || c0 + j == 0 || c0 + j == nx - 1)) value[j] = centre[r][j];
      }
      typename glc_vec16<T>::type packed;
      T *e = reinterpret_cast<T *>(&packed);
#pragma unroll
      for (int j = 0; j < lanes; ++j) e[j] = value[j];
      *reinterpret_cast<typename glc_vec16<T>::type *>(q + r * static_cast<ptrdiff_t>(nx)) = packed;
    }
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int j = 0; j < lanes; ++j) {
        below[r][j] = centre[r][j];
        centre[r][j] = above[r][j];
      }
  }
}

namespace {
// The seven weights when the dense weights are a radius-1 star (nonzero on the axes, zero off
// them), else false.
template <typename T>
bool star_of(const glc_stencil_launch<T> &l, bool three_d, star_weights<T> *w) {
  const glc_grid3 &g = l.grid;
  if (g.rx != 1 || g.ry != 1 || g.rz != (three_d ? 1 : 0)) return false;
  const int planes = three_d ? 3 : 1;
  auto at = [&](int dz, int dy, int dx) {
    return l.dense[((three_d ? dz + 1 : 0) * 3 + dy + 1) * 3 + dx + 1];
  };
  for (int a = 0; a < planes; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 3; ++c) {
        const int dz = three_d ? a - 1 : 0, dy = b - 1, dx = c - 1;
        const bool on_axes = (dz != 0) + (dy != 0) + (dx != 0) <= 1;
        // off the axes: zero; on them: nonzero (the kernel reads all 7, and a zero weight
        // must not read its cell: 0 x inf would be a NaN the other rungs never make)
        if ((at(dz, dy, dx) != 0.0) != on_axes) return false;
      }
  if (three_d)
    *w = {T(at(0, 0, 0)), T(at(0, 0, -1)), T(at(0, 0, 1)), T(at(0, -1, 0)),
          T(at(0, 1, 0)), T(at(-1, 0, 0)), T(at(1, 0, 0))};
  else  // the outer axis is y
    *w = {T(at(0, 0, 0)), T(at(0, 0, -1)), T(at(0, 0, 1)), T(0),
          T(0),           T(at(0, -1, 0)), T(at(0, 1, 0))};
  return true;
}

// How variant 4 runs a problem: the whole-grid star kernel (16-byte rows; no taps, no boundary
// kernel), the interior star kernel beside the boundary kernel, or neither (the generic
// interior kernel). A grid too long for the launch's y or z dimension takes a slower path.
enum class star_path { none, interior, whole };

struct star_blocks {
  int bx, by;
};

template <typename T>
star_blocks star_block(const glc_stencil_launch<T> &l, bool three_d) {
  const int bx =
      glc_stencil_block_side(l.block_x, three_d ? 32 : 128, three_d && l.block_y ? l.block_y : 1);
  return {bx, three_d ? glc_stencil_block_side(l.block_y, 4, bx) : 1};
}

template <typename T>
star_path plan_star(const glc_stencil_launch<T> &l, const T *u, const T *out, star_weights<T> *w) {
  const glc_grid3 &g = l.grid;
  const bool three_d = g.nz > 1 || g.rz > 0, planar = g.nz == 1 && g.rz == 0;
  if (interior_empty(g) || !(three_d || planar) || g.ny <= 1 || !star_of(l, three_d, w))
    return star_path::none;
  const star_blocks b = star_block(l, three_d);
  const int outer = three_d ? g.nz : g.ny;
  auto fits = [&](int cells_outer, int cells_y) {
    return glc_blocks_to_cover(cells_outer, star_chunk) <= 65535 &&
           (!three_d || glc_blocks_to_cover(cells_y, b.by) <= 65535);
  };
  if (g.nx % glc_vec16<T>::lanes == 0 && glc_all_aligned(16, u, out) &&
      fits(outer, three_d ? glc_blocks_to_cover(g.ny, l.rows) : g.ny))
    return star_path::whole;
  return fits(outer - 2, g.ny - 2) ? star_path::interior : star_path::none;
}

template <typename T>
int launch_star(const glc_stencil_launch<T> &l, const T *u, T *out, star_path path,
                const star_weights<T> &w) {
  const glc_grid3 &g = l.grid;
  const bool three_d = g.nz > 1 || g.rz > 0;
  const int outer = three_d ? g.nz : g.ny;
  const star_blocks b = star_block(l, three_d);
  if (b.bx * b.by > 1024) return glc_fail(cudaErrorInvalidValue, "stencil_star (block)");
  if (path == star_path::whole) {
    constexpr int lanes = glc_vec16<T>::lanes;
    dim3 grid(glc_grid_dim(glc_blocks_to_cover(g.nx / lanes, b.bx), glc_max_grid_x),
              three_d ? glc_grid_dim(glc_blocks_to_cover(g.ny, b.by * l.rows)) : 1u,
              glc_grid_dim(glc_blocks_to_cover(outer, star_chunk)));
    auto wide = [&](auto kernel) {
      return glc_launch(kernel, "stencil_star_wide", grid, dim3(b.bx, b.by), l.stream, u, out,
                        outer, three_d ? g.ny : 1, g.nx, g.boundary, w);
    };
    if (!three_d) return wide(stencil_star_wide<T, false, 1>);
    switch (l.rows) {
      case 1:
        return wide(stencil_star_wide<T, true, 1>);
      case 2:
        return wide(stencil_star_wide<T, true, 2>);
      case 4:
        return wide(stencil_star_wide<T, true, 4>);
      default:
        return glc_fail(cudaErrorInvalidValue, "stencil_star_wide (rows)");
    }
  }
  dim3 grid(glc_grid_dim(glc_blocks_to_cover(g.nx - 2, b.bx), glc_max_grid_x),
            three_d ? glc_grid_dim(glc_blocks_to_cover(g.ny - 2, b.by)) : 1u,
            glc_grid_dim(glc_blocks_to_cover(outer - 2, star_chunk)));
  if (three_d)
    return glc_launch(stencil_star<T, true>, "stencil_star", grid, dim3(b.bx, b.by), l.stream, u,
                      out, outer, g.ny, g.nx, w);
  return glc_launch(stencil_star<T, false>, "stencil_star", grid, dim3(b.bx, b.by), l.stream, u,
                    out, outer, 1, g.nx, w);
}
}  // namespace

template <typename T>
bool glc_stencil_needs_taps(int variant, const glc_stencil_launch<T> &l, const T *u, const T *out) {
  star_weights<T> w;
  return variant != GLC_STENCIL_HOPPER || plan_star(l, u, out, &w) != star_path::whole;
}

template <typename T>
int glc_stencil_split(const glc_stencil_launch<T> &l, const T *u, T *out, bool hopper) {
  const glc_grid3 &g = l.grid;
  const bool empty = interior_empty(g);
  star_weights<T> w;
  const star_path path = hopper ? plan_star(l, u, out, &w) : star_path::none;
  if (path == star_path::whole) return launch_star(l, u, out, path, w);
  if (!empty) {
    int code;
    if (path == star_path::interior) {
      code = launch_star(l, u, out, path, w);
    } else {
      const int vec = hopper ? vector_width : 1;
      const int bx = glc_stencil_block_side(l.block_x, g.ny == 1 ? 256 : (hopper ? 32 : 64),
                                            l.block_y ? l.block_y : 1);
      const int by = glc_stencil_block_side(l.block_y, g.ny == 1 ? 1 : 4, bx);
      if (bx * by > 1024) return glc_fail(cudaErrorInvalidValue, "stencil_interior (block)");
      const size_t ix = g.nx - 2 * g.rx, iy = g.ny - 2 * g.ry, iz = g.nz - 2 * g.rz;
      dim3 grid(glc_grid_dim(glc_blocks_to_cover(glc_blocks_to_cover(ix, vec), bx), glc_max_grid_x),
                glc_grid_dim(glc_blocks_to_cover(iy, by)), glc_grid_dim(iz));
      code = hopper ? glc_launch(stencil_interior<T, vector_width>, "stencil_interior", grid,
                                 dim3(bx, by), l.stream, u, out, g, l.taps)
                    : glc_launch(stencil_interior<T, 1>, "stencil_interior", grid, dim3(bx, by),
                                 l.stream, u, out, g, l.taps);
    }
    if (code != cudaSuccess) return code;
  }
  const size_t face_rows = empty ? 0
                                 : static_cast<size_t>(2 * g.rz) * g.ny +
                                       static_cast<size_t>(g.nz - 2 * g.rz) * (2 * g.ry);
  const size_t cells = empty ? static_cast<size_t>(g.nz) * g.ny * g.nx
                             : face_rows * g.nx + static_cast<size_t>(g.nz - 2 * g.rz) *
                                                      (g.ny - 2 * g.ry) * (2 * g.rx);
  if (cells == 0) return cudaSuccess;
  const int block = 256;
  dim3 grid(glc_grid_dim(glc_blocks_to_cover(cells, block), 1u << 20));
  return glc_launch(stencil_boundary<T>, "stencil_boundary", grid, dim3(block), l.stream, u, out, g,
                    l.taps, empty, face_rows);
}

template int glc_stencil_split<float>(const glc_stencil_launch<float> &, const float *, float *,
                                      bool);
template int glc_stencil_split<double>(const glc_stencil_launch<double> &, const double *, double *,
                                       bool);
template bool glc_stencil_needs_taps<float>(int, const glc_stencil_launch<float> &, const float *,
                                            const float *);
template bool glc_stencil_needs_taps<double>(int, const glc_stencil_launch<double> &,
                                             const double *, const double *);
