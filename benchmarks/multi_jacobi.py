"""Jacobi over several GPUs (issue 16): strong and weak scaling of gl.multi.jacobi over 1 and 2
GPUs, Jacobi 2D at 16384² and 3D at 512³ (float32), halos by p2p copies against NCCL
send/recv, with the interior overlapping the exchange and without, and where the time went
(compute, exchange, all-reduce, and exposed: the time beyond the sweeps; the solve's own CUDA
events and host clock, see gl.multi.MultiJacobiResult). Targets (issue 16, ANCHORS.md): strong speedup >= 1.8x on 2 GPUs
and weak efficiency >= 0.9 at 16384².

Each point is gl.multi.scaling's median of --repeat solves of --sweeps sweeps (a check every
50) after one warm-up; a solve's time is its total_ms: the sweeps and checks, not the uploads
of f and u0 nor the gather of u. Strong: the same grid on 1 and 2 GPUs. Weak: one GPU's share
is the grid, 2 GPUs solve it with axis 0 doubled (the slab axis). Predictions before the first
run: benchmarks/NOTES.md, "Multi-GPU Jacobi (issue 16)".

    python3 benchmarks/multi_jacobi.py [--repeat 5] [--sweeps 200] [--quick]
"""


import numpy as np

import gpulab as gl
from common import ladder_args, save

SIZES = {"2d": (16384, 16384), "3d": (512, 512, 512)}
QUICK_SIZES = {"2d": (1024, 1024), "3d": (64, 64, 64)}
CHECK_EVERY = 50


def solver(sweeps, exchange, overlap):
    """scaling()'s fn: a solve of `shape` on the first `gpus` GPUs; f and u0 made once per
    shape (the largest, 32768 x 16384 float32, is 2 GiB each)."""
    grids = {}

    def run(shape, gpus):
        if shape not in grids:
            grids.clear()
            rng = np.random.default_rng(0)
            grids[shape] = (rng.standard_normal(shape, np.float32),
                            np.zeros(shape, np.float32))
        f, u0 = grids[shape]
        return gl.multi.jacobi(f, u0, iters=sweeps, check_every=CHECK_EVERY,
                               gpus=list(range(gpus)), exchange=exchange, overlap=overlap)

    return run


def main():
    args = ladder_args(repeat=5, quick_help="small grids only",
                       extra=lambda p: p.add_argument("--sweeps", type=int, default=200))
    count = gl._core._multi_device_count()
    counts = [1, 2] if count >= 2 else [1]
    if count < 2:
        print(f"only {count} GPU visible: the 1-GPU baselines alone, no scaling")
    exchanges = ["p2p", "nccl"]
    if count >= 2:
        try:
            gl.multi.load_nccl()
        except gl.multi.NcclNotFoundError as e:
            print(f"no NCCL, p2p only: {e}")
            exchanges = ["p2p"]
        access = gl.devices().meta["p2p_access"]
        if not (access[0][1] and access[1][0]):
            print("GPUs 0 and 1 have no peer access: nccl only")
            exchanges = [e for e in exchanges if e != "p2p"]
    sizes = QUICK_SIZES if args.quick else SIZES
    results = []
    for dim, shape in sizes.items():
        for mode in ("strong", "weak"):
            for exchange in exchanges:
                for overlap in (True, False):
                    table = gl.multi.scaling(solver(args.sweeps, exchange, overlap), [shape],
                                             gpus=counts, mode=mode, trials=args.repeat)
                    for row in table:
                        row.update(dim=dim, exchange=exchange, overlap=overlap,
                                   sweeps=args.sweeps,
                                   ms_per_sweep=row["total_ms"] / args.sweeps)
                        results.append(row)
                        print(f"{dim} {mode:6s} {exchange:4s} overlap={overlap!s:5s} "
                              f"{row['gpus']} GPU {str(row['problem']):20s} "
                              f"{row['total_ms']:9.2f} ms (compute {row['compute_ms']:8.2f}, "
                              f"exchange {row['exchange_ms']:7.2f}, all-reduce "
                              f"{row['allreduce_ms']:6.2f}, exposed {row['exposed_ms']:6.2f})"
                              f"  S={row['speedup']:.3f} "
                              f"E={row['efficiency']:.3f}")
    gl.multi.close()
    save("multi_jacobi", {"repeat": args.repeat, "sweeps": args.sweeps, "quick": args.quick,
                          "check_every": CHECK_EVERY, "gpus": counts, "dtype": "float32"},
         results)


if __name__ == "__main__":
    main()
