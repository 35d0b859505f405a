"""Host <-> device copies of pageable NumPy memory through each path gpulab has (the driver's
own pageable copy, the pinned staging ring, temporary cudaHostRegister), plus pinned memory and
the peers, over sizes from 4 KiB to 1 GiB, and the staging ring's chunk/slot settings at 1 GiB.
This is the measurement behind the 'auto' path of to_device() and .get().

    python benchmarks/transfer_paths.py [--max-log2 30]
"""

import argparse
import statistics
import time

import numpy as np

import gpulab as gl
from common import require_gpu, save

PATHS = ("driver", "staged", "register")


def wall_ms(run, repeat):
    samples = []
    for i in range(repeat + 1):
        t0 = time.perf_counter()
        run()
        if i:
            samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def h2d(dev, host, path):
    gl._core._h2d(dev, host, path)
    gl.synchronize()


def measure_size(nbytes, repeat):
    host = np.random.default_rng(nbytes).integers(0, 255, nbytes, dtype=np.uint8)
    back = np.full(nbytes, 7, dtype=np.uint8)  # touched, so page faults stay out of the time
    pinned = gl.pinned_empty(nbytes, np.uint8)
    pinned[:] = host
    dev = gl.empty(nbytes, np.uint8)
    row = {"bytes": nbytes}
    gbps = lambda ms: nbytes / ms / 1e6
    for path in PATHS:
        row[f"h2d_{path}"] = gbps(wall_ms(lambda: h2d(dev, host, path), repeat))
        row[f"d2h_{path}"] = gbps(wall_ms(lambda: gl._core._d2h(back, dev, path), repeat))
    row["h2d_auto"] = gbps(wall_ms(lambda: (gl.to_device(host), gl.synchronize()), repeat))
    row["d2h_auto"] = gbps(wall_ms(lambda: dev.get(out=back), repeat))
    row["d2h_auto_new_array"] = gbps(wall_ms(lambda: dev.get(), repeat))
    row["h2d_pinned"] = gbps(wall_ms(lambda: h2d(dev, pinned, "direct"), repeat))
    row["d2h_pinned"] = gbps(wall_ms(lambda: gl._core._d2h(pinned, dev, "direct"), repeat))
    if not np.array_equal(dev.get(), host):
        raise SystemExit(f"transfer check failed at {nbytes} bytes")
    peers(row, host, back, repeat)
    return row


def peers(row, host, back, repeat):
    nbytes = host.nbytes
    try:
        import torch
        t = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        src, dst = torch.from_numpy(host), torch.from_numpy(back)
        row["h2d_torch"] = nbytes / wall_ms(lambda: (t.copy_(src), torch.cuda.synchronize()),
                                            repeat) / 1e6
        row["d2h_torch"] = nbytes / wall_ms(lambda: dst.copy_(t), repeat) / 1e6
    except ImportError:
        pass
    try:
        import cupy
        c = cupy.empty(nbytes, dtype=cupy.uint8)
        row["h2d_cupy"] = nbytes / wall_ms(lambda: (c.set(host), cupy.cuda.Device().synchronize()),
                                           repeat) / 1e6
        row["d2h_cupy"] = nbytes / wall_ms(lambda: c.get(out=back), repeat) / 1e6
    except ImportError:
        pass


def ring_sweep(nbytes, repeat):
    host = np.random.default_rng(3).integers(0, 255, nbytes, dtype=np.uint8)
    back = np.full(nbytes, 7, dtype=np.uint8)
    dev = gl.empty(nbytes, np.uint8)
    rows = []
    for chunk_mib in (1, 2, 4, 8, 16, 32):
        for slots in (2, 3, 4, 8):
            gl._core._set_staging(chunk_mib << 20, slots)
            rows.append({"chunk_mib": chunk_mib, "slots": slots,
                         "h2d": nbytes / wall_ms(lambda: h2d(dev, host, "staged"), repeat) / 1e6,
                         "d2h": nbytes / wall_ms(lambda: gl._core._d2h(back, dev, "staged"),
                                                 repeat) / 1e6})
            print(rows[-1])
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-log2", type=int, default=30)
    parser.add_argument("--skip-ring", action="store_true")
    args = parser.parse_args()
    require_gpu()
    sizes = [1 << k for k in range(12, args.max_log2 + 1, 2)]
    rows = []
    for nbytes in sizes:
        rows.append(measure_size(nbytes, repeat=20 if nbytes < (64 << 20) else 5))
        print({k: (round(v, 2) if isinstance(v, float) else v) for k, v in rows[-1].items()})
    big = rows[-1]
    summary = {
        "bytes": big["bytes"],
        "to_device_over_driver": big["h2d_auto"] / big["h2d_driver"],
        "get_over_driver": big["d2h_auto"] / big["d2h_driver"],
        "get_new_array_over_driver": big["d2h_auto_new_array"] / big["d2h_driver"],
        "h2d_auto_gbps": big["h2d_auto"], "h2d_driver_gbps": big["h2d_driver"],
        "d2h_auto_gbps": big["d2h_auto"], "d2h_driver_gbps": big["d2h_driver"],
        "h2d_pinned_gbps": big["h2d_pinned"], "d2h_pinned_gbps": big["d2h_pinned"],
    }
    print(summary)
    ring = [] if args.skip_ring else ring_sweep(sizes[-1], repeat=3)
    save("transfer_paths", {"sizes": sizes, "timer": "perf_counter wall time incl. sync",
                            "host_arrays": "pageable, pre-touched"},
         {"summary": summary, "sizes": rows, "staging_ring": ring})


if __name__ == "__main__":
    main()
