"""python -m gpulab: device information, then every lab's ladder at a modest size.

    python -m gpulab                 # the main job (CPU variants only when there is no GPU)
    python -m gpulab info            # the device, like deviceQuery
    python -m gpulab compare BASE NEW   # regressions between two result sets (see --help)
    python -m gpulab --json out.json # also save every result with its metadata
    python -m gpulab --html out.html # also write a self-contained report page (matplotlib)
"""

import argparse
import json
import sys

import numpy as np

from . import _core, html_report, provenance, registry
from . import device_info as gl_device_info
from ._op import OPS, example_for
from .bench import bench
from .ceilings import ceilings
from .report import device_table, results_table


def metadata(gpu, args):
    meta = provenance.metadata({"scale": args.scale, "repeat": args.repeat,
                                "peers": not args.no_peers})
    meta["ceilings"] = {"cpu": ceilings("cpu")}
    if gpu:
        meta["ceilings"]["gpu"] = ceilings("gpu")
    return meta


def run_op(name, fn, gpu, args, rng, not_run):
    """The op's variants at its demo size; a variant that refuses that size (ValueError before
    anything is timed: a one-block scan past its limit) is listed in not_run, with its reason."""
    spec = fn.__gpulab_op__
    results = []

    def run(v, n, call_args, **kw):
        try:
            results.append(bench(fn, *call_args, variant=v.id, **kw))
        except ValueError as e:
            not_run.append({"op": name, "variant": v.id, "variant_name": v.name,
                            "backend": v.backend, "n": n, "reason": str(e)})

    if gpu:
        n = max(1, int(spec.demo_size["gpu"] * args.scale))
        host_args = spec.example(n, rng)
        dev_args = [_core.to_device(a) if isinstance(a, np.ndarray) else a for a in host_args]
        for v in registry.variants(name):
            if v.backend == "cuda":
                # a variant of other dtypes (matmul's float16 rungs) gets the example in its own
                theirs = dev_args if _takes(v, host_args) else [
                    _core.to_device(a) if isinstance(a, np.ndarray) else a
                    for a in example_for(spec, v, n, rng)]
                run(v, n, theirs, repeat=args.repeat, peers=not args.no_peers)
    n = max(1, int(spec.demo_size["cpu"] * args.scale))
    host_args = spec.example(n, rng)
    for v in registry.variants(name):
        if v.backend == "cpu":
            run(v, n, host_args, repeat=max(3, args.repeat // 4))
    return results


def _takes(v, host_args):
    """Whether variant v takes the dtype of the example's first array."""
    first = next((a for a in host_args if isinstance(a, np.ndarray)), None)
    return first is None or first.dtype.name in v.dtypes


def user_path_section(wanted, args):
    """On the GPU: each op's default call (no variant=) on the device containers a user passes
    (CuPy, PyTorch, DeviceArray), timed wall-clock to the result, beside its peer and the best
    rung (gpulab/user_path.py). NumPy and scipy inputs, whose CPU peers take seconds at these
    sizes, are in benchmarks/user_path.py."""
    from . import user_path
    ops = [name for name in wanted if name in OPS]
    print("\n== The user's call (default variant, wall-clock to the result; gap = default / best "
          "rung; peer / ours > 1 means gpulab is faster)")
    rows = user_path.user_path_rows(ops, True, budget_s=0.5, scale=args.scale,
                                    only=("cupy", "cupyx", "torch", "gpulab"))
    print(user_path.table(rows))


def main(argv=None):
    """Runs the command; Ctrl-C stops it with a one-line message and status 130 (128 + SIGINT, as
    a shell reports a job that SIGINT ended) instead of a traceback."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("\ngpulab: interrupted", file=sys.stderr)
        return 130


def _main(argv):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["compare"]:  # a command of its own, with its own options
        from .compare_cli import main as compare_main
        return compare_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m gpulab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", choices=["run", "info"], default="run")
    parser.add_argument("--json", metavar="FILE", help="save results and metadata as JSON")
    parser.add_argument("--html", metavar="FILE", help="also write the results as one "
                        "self-contained HTML page: charts, roofline, device (needs matplotlib)")
    parser.add_argument("--scale", type=float, default=1.0, help="problem size factor")
    parser.add_argument("--repeat", type=int, default=20, help="timed repetitions per variant")
    parser.add_argument("--no-peers", action="store_true", help="skip CuPy/PyTorch timings")
    parser.add_argument("--ops", help="comma-separated ops to run (default: all)")
    args = parser.parse_args(argv)
    if args.html and html_report.matplotlib_missing():
        parser.error(html_report.matplotlib_missing())

    gpu = _core.cuda_available()
    if gpu:
        print("gpulab on the GPU")
        print(device_table(gl_device_info(0)))
    else:
        status = _core._gpu_status()
        print(f"gpulab on the CPU: {status}. Running the CPU variants only.")
    if args.command == "info":
        print("\nBuild:", json.dumps(_core.build_info(), indent=2))
        return 0 if gpu else 1

    wanted = args.ops.split(",") if args.ops else [op for op in registry.ops() if op in OPS]
    unknown = [w for w in wanted if w not in OPS]
    if unknown:
        parser.error(f"unknown ops {unknown}; known: {list(OPS)}")
    meta = metadata(gpu, args)
    for where, c in meta["ceilings"].items():
        # the balance decides each op's bound there (bench.bound_of)
        more = "".join(f", {label} {c[key] / scale:.{digits}f} {unit}"
                       for key, label, scale, digits, unit in (
                           ("l2_copy_gbps", "L2 copy", 1, 1, "GB/s"),
                           ("fma64_gflops", "FP64 FMA", 1e3, 2, "TFLOP/s"),
                           ("tensor_f16_gflops", "FP16 tensor", 1e3, 1, "TFLOP/s"),
                           ("tensor_tf32_gflops", "TF32 tensor", 1e3, 1, "TFLOP/s"))
                       if c.get(key))
        print(f"\nCeiling ({where}, {c['device']}): copy {c['copy_gbps']:.1f} GB/s, "
              f"FP32 FMA {c['fma_gflops'] / 1e3:.2f} TFLOP/s{more}, balance "
              f"{c['fma_gflops'] / c['copy_gbps']:.1f} flop/B")
    rng = np.random.default_rng(12345)
    all_results, not_run = [], []
    for name in wanted:
        refused = len(not_run)
        results = run_op(name, OPS[name], gpu, args, rng, not_run)
        all_results += results
        sizes = sorted({r.size for r in results})
        bounds = "/".join(sorted({r.bound for r in results}))
        print(f"\n== {name}  ({bounds}-bound; n = {', '.join(str(s) for s in sizes)}; "
              f"x peer = peer time / ours, >1 means gpulab is faster)")
        print(results_table(results))
        for r in not_run[refused:]:
            print(f"{r['variant']:<4} {r['variant_name']}: not run at n = {r['n']}: {r['reason']}")
    if gpu and not args.no_peers:
        user_path_section(wanted, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": [r.to_dict() for r in all_results],
                       "not_run": not_run}, f, indent=1)
        print(f"\nSaved {len(all_results)} results to {args.json}")
    if args.html:
        html_report.write(args.html, meta, all_results)
        print(f"\nWrote the report to {args.html}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
