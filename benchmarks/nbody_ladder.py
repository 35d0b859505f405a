"""The n-body ladder on the GPU at N = 16384 and N = 131072, in G interactions/s and GFLOP/s at 20
flops per interaction, beside S0's GK104 figures; the CPU variants at a CPU-sized N; torch (and
CuPy) vectorized all-pairs as the peer rows; and the fraction of the FMA and rsqrt limits derived
from device_info (SMs x clock).

    python benchmarks/nbody_ladder.py [--sizes 16384 131072] [--cpu-n 2048] [--repeat 7]
"""

import argparse
import importlib.util
import os
import re

import numpy as np

import gpulab as gl
from common import require_gpu, save

EPS = 0.05
# S0 ch. 7 on a GK104 (G interactions/s), by the row of our ladder that makes the same change.
S0_GK104 = {
    (0, None): 25.0, (1, 2): 30.0, (1, 16): 34.3, (2, None): 38.2, (3, 1): 38.2, (3, 2): 44.5,
    (3, 4): 45.2,
}
S0_CPU = {100: 0.017, 101: 0.307, 102: 5.650}  # E5-2670: naive, SSE, SSE on 32 threads
# MUFU (special function unit) lanes per SM per clock on Hopper (16 per SM: 4 per SM sub-part).
MUFU_PER_SM = 16
# Thread instructions an SM issues per clock: 4 warp schedulers, one warp instruction each.
ISSUE_PER_SM = 4 * 32
# Issue slots of one interaction computed on its own, in the GPU Gems form: 3 FADD, 3 FFMA, one
# MUFU, 3 FMUL, 3 FFMA (docs/labs/nbody.md). The lab's target is 0.9 of the bound it gives.
INTERACTION_SLOTS = 13


def rows():
    """(variant, tunables) of the ladder: every CUDA variant at its defaults, plus the unroll
    factors S0 measured."""
    out = []
    for v in gl.variants("nbody_accel"):
        if v.backend != "cuda":
            continue
        out.append((v.id, {}))
        if v.id == 1:
            out += [(1, {"unroll": u}) for u in (1, 2, 16)]
        if v.id == 3:
            out += [(3, {"unroll": u}) for u in (1, 2)]
        if v.id == 5:
            out += [(5, {"bodies": b}) for b in (1, 2, 8)]
            out += [(5, {"block": b}) for b in (64, 128)]
            out += [(5, {"bodies": 8, "block": 128})]
        if v.id == 6:
            out += [(6, {"bodies": b}) for b in (2, 4)]
    return out


def limits(info, ceil):
    """G interactions/s allowed by the FP32 lanes (2 flops per FMA, 20 flops per interaction),
    by the MUFU rsqrt (one per interaction), and by the measured FMA loop."""
    clock_hz = info["clock_mhz"] * 1e6
    sms = info["multiprocessors"]
    return {
        "fp32_lanes_per_sm": info["fp32_lanes_per_sm"], "sms": sms,
        "clock_mhz": info["clock_mhz"],
        "fma_limit_ginter": info["fp32_lanes_per_sm"] * 2 * sms * clock_hz / 20 / 1e9,
        "rsqrt_limit_ginter": MUFU_PER_SM * sms * clock_hz / 1e9,
        "measured_fma_ginter": ceil["fma_gflops"] / 20,
    }


def interaction_bound(info):
    """G interactions/s that issue allows an evaluation computing each interaction on its own
    with INTERACTION_SLOTS instructions; variant 7 computes each pair once and can pass it."""
    return ISSUE_PER_SM * info["multiprocessors"] * info["clock_mhz"] * 1e6 \
        / INTERACTION_SLOTS / 1e9


def issue_limit(info, variant, tunables):
    """G interactions/s allowed by instruction issue (docs/labs/nbody.md): ISSUE_PER_SM x SMs x
    clock over the issue slots the kernel spends per interaction, counted in its SASS as
    tools/nbody_sass_mix.py counts them (the inner loop's instructions over its MUFU.RSQ).
    Returns {"slots_per_interaction", "kernel", "issue_limit_ginter"}; raises RuntimeError where
    the SASS cannot be read (gl.inspect needs cuobjdump)."""
    v = gl.registry.find("nbody_accel", variant)
    config = {k: t["default"] for k, t in v.tunables.items()}
    config.update(tunables)
    seen = gl.inspect("nbody_accel", variant, **config)
    if seen.sass_note:
        raise RuntimeError(f"the issue bound needs the kernel's SASS: {seen.sass_note}")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools",
                        "nbody_sass_mix.py")
    spec = importlib.util.spec_from_file_location("nbody_sass_mix", path)
    mix = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mix)
    loops = []
    for view in seen.kernels:
        for inst in view.instances:
            for name, code in mix.kernels(inst.sass or "").items():
                body = mix.inner_loop(code)
                rsq = sum(op.startswith("MUFU.RSQ") for _, op, _ in body)
                if rsq:
                    loops.append((mix.short(name),
                                  len(body) / (rsq * mix.interactions_per_rsqrt(name))))
    # variant 7's block sizes are instances of one kernel, with one inner loop
    kernels = {re.sub(r"<.*>", "", k) for k, _ in loops}
    if len(kernels) != 1 or len({s for _, s in loops}) != 1:
        raise RuntimeError(f"expected one inner loop with MUFU.RSQ in nbody_accel[{variant}] "
                           f"{config}, found {loops}")
    kernel, slots = loops[0] if len(loops) == 1 else (kernels.pop(), loops[0][1])
    clock_hz = info["clock_mhz"] * 1e6
    return {"kernel": kernel, "slots_per_interaction": slots, "config": config,
            "issue_limit_ginter": ISSUE_PER_SM * info["multiprocessors"] * clock_hz / slots / 1e9}


def bench_config(dpos, dmass, variant, tunables, repeat, peers=False):
    """One configuration on device bodies: compute-bound, so the L2 is not flushed."""
    return gl.bench(gl.nbody_accel, dpos, dmass, EPS, variant=variant, repeat=repeat, warmup=1,
                    flush_l2=False, peers=peers, **tunables)


def record(r, lim, n, tunables):
    d = r.to_dict()
    d.pop("samples")
    ginter = r.size / r.median_ms / 1e6
    d.update(n=n, tunables=tunables, ginter_s=ginter, gflops_20=ginter * 20,
             frac_fma_limit=ginter / lim["fma_limit_ginter"] if lim else None,
             frac_rsqrt_limit=ginter / lim["rsqrt_limit_ginter"] if lim else None)
    if r.backend == "cuda":
        unroll = d["params"].get("unroll") or gl.registry.find("nbody_accel", r.variant) \
            .tunables.get("unroll", {}).get("default")
        d["s0_gk104_ginter"] = S0_GK104.get((r.variant, unroll))
    else:
        d["s0_gk104_ginter"] = S0_CPU.get(r.variant)
    return d


def show(d):
    s0 = d["s0_gk104_ginter"]
    params = ",".join(f"{k}={v}" for k, v in d["params"].items() if v is not None)
    frac = f"{d['frac_fma_limit']:.2f}" if d["frac_fma_limit"] is not None else "-"
    print(f"  {d['variant']:>3} {d['variant_name']:16s} {params:26s} {d['ginter_s']:9.1f} "
          f"{d['gflops_20']:9.0f} {frac:>6s}   {s0 if s0 is not None else '-'}")
    for name, p in d["peers"].items():
        g = d["size"] / p["median_ms"] / 1e6
        print(f"      peer {name:12s} {'vectorized all-pairs':26s} {g:9.1f} {g * 20:9.0f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[16384, 131072])
    parser.add_argument("--cpu-n", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    require_gpu()
    info = gl.device_info()
    ceil = gl.ceilings("gpu")
    lim = limits(info, ceil)
    print(f"{info['name']}: {lim['sms']} SMs at {lim['clock_mhz']:.0f} MHz; limits in G "
          f"interactions/s: FP32 FMA {lim['fma_limit_ginter']:.0f} (20 flops), MUFU rsqrt "
          f"{lim['rsqrt_limit_ginter']:.0f}, measured FMA loop {lim['measured_fma_ginter']:.0f}")
    header = (f"  {'id':>3} {'name':16s} {'params':26s} {'G int/s':>9s} {'GFLOP/s':>9s} "
              f"{'/FMA':>6s}   S0 GK104")
    results = []
    for n in args.sizes:
        pos, _, mass = gl.plummer(n, seed=1)
        dpos, dmass = gl.to_device(pos), gl.to_device(mass)
        print(f"\nN = {n}\n{header}")
        for variant, tunables in rows():
            # compute-bound: no L2 flush; the peers once, beside the best variant, at the
            # smaller N (torch needs about a second per call at N = 131072)
            peers = (gl.registry.find("nbody_accel", variant).best and not tunables
                     and n == min(args.sizes))
            r = bench_config(dpos, dmass, variant, tunables, args.repeat, peers)
            results.append(record(r, lim, n, tunables))
            show(results[-1])
    pos, _, mass = gl.plummer(args.cpu_n, seed=1)
    print(f"\nCPU, N = {args.cpu_n}\n{header}")
    for v in gl.variants("nbody_accel"):
        if v.backend == "cpu":
            r = gl.bench(gl.nbody_accel, pos, mass, EPS, variant=v.id, repeat=3, warmup=1)
            results.append(record(r, None, args.cpu_n, {}))
            show(results[-1])
    best = {}
    for d in results:
        if d["backend"] == "cuda" and d["ginter_s"] > best.get(d["n"], {}).get("ginter_s", 0):
            best[d["n"]] = d
    summary = {str(n): {"variant": d["variant"], "params": d["params"],
                        "ginter_s": d["ginter_s"], "gflops_20": d["gflops_20"],
                        "frac_fma_limit": d["frac_fma_limit"],
                        "frac_rsqrt_limit": d["frac_rsqrt_limit"],
                        "frac_measured_fma": d["ginter_s"] / lim["measured_fma_ginter"]}
               for n, d in best.items()}
    print("\nbest:", summary)
    save("nbody_ladder", {"sizes": args.sizes, "cpu_n": args.cpu_n, "eps": EPS,
                          "repeat": args.repeat, "flush_l2": False,
                          "flops_per_interaction": 20, "input": "Plummer sphere, seed 1"},
         {"limits": lim, "ceilings": ceil, "summary": summary, "runs": results})


if __name__ == "__main__":
    main()
