"""All-reduce bus bandwidth over the GPUs of one machine, 1 MiB to 1 GiB of float32: gpulab's
gl.multi.allreduce in one process driving every GPU and in one process per GPU, against
torch.distributed's NCCL all_reduce in one process per GPU (the reference figures), all spawned on
this machine. It is NCCL underneath all three: the target is >= 0.95x torch at 256 MiB and 1 GiB.

Bus bandwidth as nccl-tests define it: bytes x 2 (n - 1) / n / time, for n GPUs. Each time is
one call, host to host (every call returns when all GPUs are done; torch's is followed by
torch.cuda.synchronize()), the median of --repeat after 3 warm-ups; a rank's times are taken
between barriers, and the slowest rank's median counts.

    python3 benchmarks/multi_allreduce.py [--repeat 20] [--quick] [--max-mib 1024] [--tag x4]

--max-mib: the largest size (sizes go up by 4x from 1 MiB; the 4-GPU runs go to 4096); --tag: saved
as multi_allreduce_TAG.json.
"""

import multiprocessing
import os
import socket
import statistics
import time

import numpy as np

import gpulab as gl
from common import ladder_args, save

MIB = 1 << 20
WARMUP = 3


def bus_gbps(nbytes, seconds, n):
    return nbytes * 2 * (n - 1) / n / seconds / 1e9


def time_calls(call, repeat, barrier=None):
    for _ in range(WARMUP):
        call()
    times = []
    for _ in range(repeat):
        if barrier is not None:
            barrier.wait()
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def one_process(sizes, repeat, n):
    rows = []
    for nbytes in sizes:
        arrays = [gl.multi.to_device(np.ones(nbytes // 4, np.float32), d) for d in range(n)]
        t = time_calls(lambda: gl.multi.allreduce(arrays, "sum"), repeat)
        rows.append({"bytes": nbytes, "seconds": t, "bus_gbps": bus_gbps(nbytes, t, n)})
        print(f"gpulab one process  {nbytes // MIB:5d} MiB  {rows[-1]['bus_gbps']:7.1f} GB/s")
    gl.multi.close()
    return rows


def gpulab_rank(rank, n, sizes, repeat, ids, barrier, out):
    try:
        import gpulab as gl
        if rank == 0:
            uid = gl.multi.unique_id()
            for _ in range(n - 1):
                ids.put(uid)
        else:
            uid = ids.get(timeout=120)
        comm = gl.multi.communicator(uid, rank, n, rank)
        times = []
        for nbytes in sizes:
            a = gl.multi.to_device(np.ones(nbytes // 4, np.float32), rank)
            times.append(time_calls(lambda: gl.multi.allreduce(a, "sum", comm=comm), repeat,
                                    barrier))
        comm.close()
        out.put((rank, times, None))
    except Exception as e:
        out.put((rank, None, repr(e)))


def torch_rank(rank, n, sizes, repeat, port, barrier, out):
    try:
        import torch
        import torch.distributed as dist
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=n)
        times = []
        for nbytes in sizes:
            t = torch.ones(nbytes // 4, dtype=torch.float32, device=f"cuda:{rank}")

            def call():
                dist.all_reduce(t)
                torch.cuda.synchronize()

            times.append(time_calls(call, repeat, barrier))
        out.put((rank, times, torch.cuda.nccl.version()))
        dist.destroy_process_group()
    except Exception as e:
        out.put((rank, None, repr(e)))


def spawned(target, n, sizes, repeat, extra):
    """Runs target(rank, n, sizes, repeat, extra, barrier, out) in n spawned processes; the
    slowest rank's median per size, or the first error."""
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=target, args=(r, n, sizes, repeat, extra, barrier, out))
             for r in range(n)]
    for p in procs:
        p.start()
    got = [out.get(timeout=600) for _ in range(n)]
    for p in procs:
        p.join(timeout=60)
        if p.is_alive():
            p.kill()
    errors = [g[2] for g in got if g[1] is None]
    if errors:
        return None, errors[0]
    return [max(g[1][i] for g in got) for i in range(len(sizes))], got[0][2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    def arguments(p):
        p.add_argument("--max-mib", type=int, default=1024, help="largest size in MiB")
        p.add_argument("--tag", default="", help="saved as multi_allreduce_TAG.json")

    args = ladder_args(repeat=20, quick_help="1 and 4 MiB only", extra=arguments)
    os.environ.update(gl.multi.child_env())  # NVLink multicast stays off in the children too
    n = gl._core._multi_device_count()
    if n < 2:  # not a failure of a one-GPU machine's benchmark run (tools/gpu-check.sh bench)
        print(f"multi_allreduce: not measured: needs 2 GPUs or more, {n} visible")
        return
    sizes = [MIB, 4 * MIB]
    while not args.quick and sizes[-1] * 4 <= args.max_mib * MIB:
        sizes.append(sizes[-1] * 4)
    results = {"gpus": n, "nccl": gl.multi.nccl_info(), "devices": gl.devices().meta,
               "one_process": one_process(sizes, args.repeat, n)}
    for name, target, extra in (("one_process_per_gpu", gpulab_rank, multiprocessing.get_context(
            "spawn").Queue()), ("torch_distributed", torch_rank, free_port())):
        times, detail = spawned(target, n, sizes, args.repeat, extra)
        if times is None:
            print(f"{name}: not measured: {detail}")
            results[name] = {"error": detail}
            continue
        results[name] = [{"bytes": b, "seconds": t, "bus_gbps": bus_gbps(b, t, n)}
                         for b, t in zip(sizes, times)]
        if name == "torch_distributed":
            results["torch_nccl_version"] = detail
        for row in results[name]:
            print(f"{name:20s} {row['bytes'] // MIB:5d} MiB  {row['bus_gbps']:7.1f} GB/s")
    if isinstance(results.get("torch_distributed"), list):
        for mode in ("one_process", "one_process_per_gpu"):
            if isinstance(results.get(mode), list):
                results[f"{mode}_vs_torch"] = [
                    a["bus_gbps"] / b["bus_gbps"]
                    for a, b in zip(results[mode], results["torch_distributed"])]
                print(f"{mode} / torch:", " ".join(f"{r:.3f}" for r in results[f"{mode}_vs_torch"]))
    save("multi_allreduce" + (f"_{args.tag}" if args.tag else ""),
         {"repeat": args.repeat, "quick": args.quick, "sizes": sizes, "dtype": "float32"},
         results)


if __name__ == "__main__":
    main()
