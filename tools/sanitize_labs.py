"""Runs every kernel of the memory and streams labs at small sizes, so that compute-sanitizer
(memcheck, racecheck, synccheck) sees each one; checks their results too and exits non-zero on a
wrong one. tools/gpu-check.sh runs it in its sanitize step next to sanitize_all.py."""

import sys

import gpulab as gl

KiB = 1 << 10


def require(ok, what):
    if not ok:
        sys.exit(f"wrong result: {what}")


def main():
    if not gl.cuda_available():
        sys.exit(f"no GPU: {gl._core._gpu_status()}")
    mem, st = gl.memory, gl.streams
    for direction in ("h2d", "d2h"):
        for memory in ("pageable", "pinned", "mapped", "managed"):
            t = mem.bandwidth_test(direction, memory, sizes=[16, 4 * KiB + 16], repeat=1,
                                   progress=False)
            require(all(t.column("intact")), f"bandwidth {direction} {memory}")
    require(all(mem.bandwidth_test("d2d", "device", sizes=[4 * KiB], repeat=1,
                                   progress=False).column("intact")), "bandwidth d2d")
    mem.access_pattern(n=4099, repeat=1, progress=False)
    require(all(mem.pointer_chase(sizes=[4 * KiB, 64 * KiB], strides=[4, 64], steps=300,
                                  repeat=1, progress=False).column("chain_ok")), "pointer chase")
    mem.bank_conflicts(strides=[1, 7, 32], iterations=32, repeat=1, progress=False)
    mem.constant_memory(iterations=32, repeat=1)
    for order in ("depth", "breadth"):
        require(st.overlap(1001, chunks=3, streams=2, order=order, intensity=3, repeat=1).correct,
                f"overlap {order}")
    st.concurrent_kernels(3, 0.05, repeat=1)
    st.stream_cost(4, repeat=1)
    require(all(st.graph_vs_launch(5, repeat=1, progress=False).column("correct")), "graph")
    require(st.producer_consumer(chunks=3, chunk_elems=300, delay_ms=0.1)[0]["bad_chunks"] == 0,
            "producer/consumer")
    require(all(st.matvec(37, 45, streams=[1, 3], repeat=1, progress=False).column("correct")),
            "matvec")
    print("sanitize_labs: every memory and streams lab kernel ran and checked out")


if __name__ == "__main__":
    main()
