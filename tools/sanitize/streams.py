"""Every kernel of the streams lab at small sizes, odd and even; each result checked. See
_common.py.

    python3 tools/sanitize/streams.py [--inputs both|device]
"""

from _common import gl, require, start


def main():
    start(__doc__)
    st = gl.streams
    for n in (1001, 1024):
        for order in ("depth", "breadth"):
            require(st.overlap(n, chunks=3, streams=2, order=order, intensity=3, repeat=1).correct,
                    f"overlap {order} n={n}")
    st.concurrent_kernels(3, 0.05, repeat=1)
    st.stream_cost(4, repeat=1)
    require(all(st.graph_vs_launch(5, repeat=1, progress=False).column("correct")), "graph")
    require(st.producer_consumer(chunks=3, chunk_elems=300, delay_ms=0.1)[0]["bad_chunks"] == 0,
            "producer/consumer")
    for rows, cols in ((37, 45), (32, 64)):
        require(all(st.matvec(rows, cols, streams=[1, 3], repeat=1, progress=False)
                    .column("correct")), f"matvec {rows}x{cols}")
    print("sanitize/streams: every streams lab kernel ran and checked out")


if __name__ == "__main__":
    main()
