"""The streams lab on the GPU: the overlap pipeline with its kernel calibrated to the copy time
(and an intensity sweep across S0's r >= c/b), concurrent kernels, stream/event cost, graph vs
plain launches, producer/consumer with and without the wait, and the multi-stream matvec.

    python benchmarks/streams_lab.py [--log2n 26]
"""

import argparse

import gpulab as gl
from common import require_gpu, save


def calibrated_intensity(n, probe=1024):
    """The intensity whose kernel takes as long as the H2D copy (kernel time is linear in it
    once compute-bound)."""
    r = gl.streams.overlap(n, chunks=1, streams=1, intensity=probe, repeat=2)
    return max(1, round(probe * r.h2d_ms / r.kernel_ms)), r


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log2n", type=int, default=26)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    require_gpu()
    n = 1 << args.log2n
    k, probe = calibrated_intensity(n)
    print(f"n={n}: H2D {probe.h2d_ms:.2f} ms; intensity {k} matches it")
    runs = []
    for order in ("depth", "breadth"):
        for chunks in (8, 16, 32, 64):
            for streams in (2, 4, 8):
                r = gl.streams.overlap(n, chunks=chunks, streams=streams, order=order,
                                       intensity=k, repeat=args.repeat)
                runs.append(r)
                print(r)
    best = max(runs, key=lambda r: r.efficiency)
    sweep = [gl.streams.overlap(n, chunks=16, streams=4, intensity=i, repeat=args.repeat)
             for i in (1, 16, 64, 256, k // 4, k, 4 * k)]
    for r in sweep:
        print("intensity sweep:", r)
    concurrent = gl.streams.concurrent_kernels(5, 10.0)
    cost = gl.streams.stream_cost(1000)
    graph = gl.streams.graph_vs_launch([10, 100, 1000, 10000], progress=False)
    waited = gl.streams.producer_consumer(chunks=16, delay_ms=1.0, wait=True)
    unwaited = gl.streams.producer_consumer(chunks=16, delay_ms=1.0, wait=False)
    mv = gl.streams.matvec(8192, 8192, streams=[1, 2, 4, 8, 16, 32], progress=False)
    for t in (concurrent, cost, graph, waited, unwaited, mv):
        print(t)
    g1000 = next(r for r in graph if r["kernels"] == 1000)
    summary = {"intensity_matching_copy": k, "best_overlap": best.to_dict(),
               "best_efficiency": best.efficiency, "all_correct": all(r.correct for r in runs),
               "graph_speedup_at_1000": g1000["speedup"],
               "producer_consumer_bad_chunks": {"wait": waited[0]["bad_chunks"],
                                                "no_wait": unwaited[0]["bad_chunks"]},
               "matvec_speedups": dict(zip(mv.column("streams"), mv.column("speedup")))}
    print(summary)
    save("streams_lab", {"n": n, "repeat": args.repeat},
         {"summary": summary, "overlap_runs": [r.to_dict() for r in runs],
          "intensity_sweep": [r.to_dict() for r in sweep],
          "concurrent_kernels": concurrent.to_dict(), "stream_cost": cost.to_dict(),
          "graph_vs_launch": graph.to_dict(),
          "producer_consumer": [waited.to_dict(), unwaited.to_dict()], "matvec": mv.to_dict()})


if __name__ == "__main__":
    main()
