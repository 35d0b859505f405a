"""Jacobi over several GPUs: strong and weak scaling of gl.multi.jacobi over 1, 2, 4, ... GPUs,
Jacobi 2D at 16384² and 3D at 512³ (float32) by default, halos by p2p copies against NCCL send/recv,
with the interior overlapping the exchange and without, and where the time went (compute, exchange,
all-reduce, and exposed: the time beyond the sweeps; the solve's own CUDA events and host clock, see
gl.multi.MultiJacobiResult). Targets: strong speedup >= 1.8x on 2 GPUs and weak efficiency >= 0.9 at
16384².

Each point is gl.multi.scaling's median of --repeat solves of --sweeps sweeps (a check every 50)
after one warm-up; a solve's time is its total_ms: the sweeps and checks, not the scatter of f and
u0 nor the gather of u, printed beside call_ms, the whole call a user waits for. Strong: the same
grid on 1 and 2 GPUs. Weak: one GPU's share is the grid, 2 GPUs solve it with axis 0 doubled (the
slab axis).

Then the whole call against gl.jacobi on one GPU (its best variant), per strong grid, for f as a
NumPy array and as a DeviceArray on GPU 0 (u0=None: zeros): the wall clock of gl.jacobi(f)
(synchronized) against gl.multi.jacobi(f, gpus=...)'s call_ms, both medians of --repeat calls
after one warm-up, on the most GPUs of --gpus. Targets: 1.8x for a device f at 16384² on 2 GPUs,
1.2x for a NumPy f. Figures and findings: docs/labs/multi.md.

    python3 benchmarks/multi_jacobi.py [--repeat 5] [--sweeps 200] [--quick]
        [--gpus 1,2,4] [--strong 16384x16384,512x512x512] [--weak 16384x16384,512x512x512]
        [--exchange p2p,nccl] [--overlap both|on|off] [--tag x4]

--gpus: the GPU counts (default 1, 2, 4, ... up to every visible GPU); --strong: the grids of strong
scaling; --weak: one GPU's share in weak scaling; --tag: saved as multi_jacobi_TAG.json (runs on 4
and 8 GPUs are tagged, so that the untagged file stays the 2-GPU one).
"""


import numpy as np

import gpulab as gl
from common import ladder_args, save

STRONG = "16384x16384,512x512x512"
WEAK = "16384x16384,512x512x512"
QUICK = "1024x1024,64x64x64"
CHECK_EVERY = 50


def shapes(text):
    """'16384x16384,512x512x512' -> [(16384, 16384), (512, 512, 512)]"""
    return [tuple(int(n) for n in item.split("x")) for item in text.split(",") if item]


def counts_up_to(count):
    """1, 2, 4, ... and count itself."""
    counts = [1]
    while counts[-1] * 2 <= count:
        counts.append(counts[-1] * 2)
    return counts if counts[-1] == count else counts + [count]


def gpu_counts(text):
    """(the GPU counts --gpus names, or 1, 2, 4, ... up to every visible GPU; visible GPUs);
    exits where --gpus asks for more than are visible."""
    count = gl._core._multi_device_count()
    counts = [int(n) for n in text.split(",")] if text else counts_up_to(count)
    if max(counts) > count:
        raise SystemExit(f"--gpus {text}: only {count} GPUs visible")
    return counts, count


class Grids:
    """f (standard normal, seed 0) and u0 (zeros) per shape, made once: the 1024^3 and 32768^2
    grids are 4 GiB each and take seconds to draw. clear() between base sizes."""

    def __init__(self):
        self.grids = {}

    def __call__(self, shape):
        if shape not in self.grids:
            rng = np.random.default_rng(0)
            self.grids[shape] = (rng.standard_normal(shape, np.float32),
                                 np.zeros(shape, np.float32))
        return self.grids[shape]

    def clear(self):
        self.grids.clear()


def solver(grids, sweeps, exchange, overlap):
    """scaling()'s fn: a solve of `shape` on the first `gpus` GPUs."""

    def run(shape, gpus):
        f, u0 = grids(shape)
        return gl.multi.jacobi(f, u0, iters=sweeps, check_every=CHECK_EVERY,
                               gpus=list(range(gpus)), exchange=exchange, overlap=overlap)

    return run


def whole_calls(shape, sweeps, gpus, repeat, exchange):
    """Rows of the whole call, one per kind of input: gl.jacobi on one GPU against
    gl.multi.jacobi on `gpus` GPUs, each the median wall clock of `repeat` calls."""
    import time
    f = np.random.default_rng(0).standard_normal(shape, np.float32)
    rows = []
    for kind, given in (("numpy", f), ("device", gl.to_device(f))):
        def one_gpu():
            start = time.perf_counter()
            gl.jacobi(given, iters=sweeps, check_every=CHECK_EVERY)
            gl.synchronize()
            return (time.perf_counter() - start) * 1e3

        def several():
            r = gl.multi.jacobi(given, iters=sweeps, check_every=CHECK_EVERY,
                                gpus=list(range(gpus)), exchange=exchange)
            return r.timing

        one_gpu(), several()  # warm-up: pools, peer access, communicators
        single = float(np.median([one_gpu() for _ in range(repeat)]))
        timings = [several() for _ in range(repeat)]
        row = {"mode": "call", "input": kind, "problem": shape, "gpus": gpus,
               "exchange": exchange, "sweeps": sweeps, "one_gpu_ms": single}
        for key in ("call_ms", "scatter_ms", "total_ms", "gather_ms"):
            row[key] = float(np.median([t[key] for t in timings]))
        row["call_speedup"] = single / row["call_ms"]
        rows.append(row)
        print(f"whole call {kind:6s} {str(shape):20s} gl.jacobi {single:9.2f} ms, "
              f"gl.multi.jacobi on {gpus} GPUs {row['call_ms']:9.2f} ms (scatter "
              f"{row['scatter_ms']:7.2f}, solve {row['total_ms']:8.2f}, gather "
              f"{row['gather_ms']:7.2f})  {row['call_speedup']:.3f}x", flush=True)
    return rows


def arguments(p):
    p.add_argument("--sweeps", type=int, default=200)
    p.add_argument("--gpus", default=None, help="GPU counts, e.g. 1,2,4 (default: 1, 2, 4, "
                   "... up to every visible GPU)")
    p.add_argument("--strong", default=STRONG, help="grids for strong scaling")
    p.add_argument("--weak", default=WEAK, help="one GPU's share for weak scaling")
    p.add_argument("--exchange", default="p2p,nccl")
    p.add_argument("--overlap", choices=("both", "on", "off"), default="both")
    p.add_argument("--tag", default="", help="saved as multi_jacobi_TAG.json")


def main():
    args = ladder_args(repeat=5, quick_help="small grids only", extra=arguments)
    counts, count = gpu_counts(args.gpus)
    if count < 2:
        print(f"only {count} GPU visible: the 1-GPU baselines alone, no scaling")
    exchanges = args.exchange.split(",")
    if len(counts) > 1:
        try:
            gl.multi.load_nccl()
        except gl.multi.NcclNotFoundError as e:
            print(f"no NCCL, p2p only: {e}")
            exchanges = [e for e in exchanges if e != "nccl"]
        access = gl.devices().meta["p2p_access"]
        if not all(access[i][i + 1] and access[i + 1][i] for i in range(max(counts) - 1)):
            print("neighbouring GPUs without peer access: nccl only")
            exchanges = [e for e in exchanges if e != "p2p"]
    overlaps = {"both": (True, False), "on": (True,), "off": (False,)}[args.overlap]
    plan = [("strong", shape) for shape in shapes(QUICK if args.quick else args.strong)]
    plan += [("weak", shape) for shape in shapes(QUICK if args.quick else args.weak)]
    grids = Grids()
    results = []
    for mode, shape in plan:
        grids.clear()
        for exchange in exchanges:
            for overlap in overlaps:
                table = gl.multi.scaling(solver(grids, args.sweeps, exchange, overlap), [shape],
                                         gpus=counts, mode=mode, trials=args.repeat)
                for row in table:
                    row.update(dim=f"{len(shape)}d", exchange=exchange, overlap=overlap,
                               sweeps=args.sweeps, ms_per_sweep=row["total_ms"] / args.sweeps)
                    results.append(row)
                    print(f"{len(shape)}d {mode:6s} {exchange:4s} overlap={overlap!s:5s} "
                          f"{row['gpus']} GPU {str(row['problem']):20s} call "
                          f"{row['call_ms']:9.2f} ms, solve {row['total_ms']:9.2f} ms "
                          f"(compute {row['compute_ms']:8.2f}, "
                          f"exchange {row['exchange_ms']:7.2f}, all-reduce "
                          f"{row['allreduce_ms']:6.2f}, exposed {row['exposed_ms']:6.2f})"
                          f"  S={row['speedup']:.3f} E={row['efficiency']:.3f} "
                          f"S(call)={row['call_speedup']:.3f}", flush=True)
        # saved after every grid: a run stopped by its time limit keeps what it measured
        save("multi_jacobi" + (f"_{args.tag}" if args.tag else ""),
             {"repeat": args.repeat, "sweeps": args.sweeps, "quick": args.quick,
              "check_every": CHECK_EVERY, "gpus": counts, "dtype": "float32",
              "exchanges": exchanges, "overlap": list(overlaps), "plan": plan}, results)
    if len(counts) > 1:
        grids.clear()
        for shape in shapes(QUICK if args.quick else args.strong):
            results += whole_calls(shape, args.sweeps, max(counts), args.repeat, exchanges[0])
            save("multi_jacobi" + (f"_{args.tag}" if args.tag else ""),
                 {"repeat": args.repeat, "sweeps": args.sweeps, "quick": args.quick,
                  "check_every": CHECK_EVERY, "gpus": counts, "dtype": "float32",
                  "exchanges": exchanges, "overlap": list(overlaps), "plan": plan}, results)
    gl.multi.close()


if __name__ == "__main__":
    main()
