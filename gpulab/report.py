"""Plain-text tables of device information and of bench results."""

from typing import Iterable

from .bench import BenchResult, format_fraction, format_rate


def _size(nbytes):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if nbytes < 1024 or unit == "GiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024


def device_rows(info: dict) -> list:
    """(label, value) pairs of the device's properties (gl.device_info()), for a table."""
    return [
        ("Device", f"{info['device']}: {info['name']}"),
        ("Compute capability", "%d.%d" % tuple(info["compute_capability"])),
        ("Multiprocessors", info["multiprocessors"]),
        ("Global memory", _size(info["total_memory"])),
        ("SM clock (peak)", f"{info['clock_mhz']:.0f} MHz"),
        ("Memory clock (peak)", f"{info['memory_clock_mhz']:.0f} MHz"),
        ("Memory bus width", f"{info['memory_bus_width']} bits"),
        ("L2 cache", _size(info["l2_cache_bytes"])),
        ("Shared memory per block", f"{_size(info['shared_mem_per_block'])} "
                                    f"(opt-in {_size(info['shared_mem_per_block_optin'])})"),
        ("Shared memory per SM", _size(info["shared_mem_per_sm"])),
        ("Registers per block / per SM", f"{info['registers_per_block']} / "
                                         f"{info['registers_per_sm']}"),
        ("Warp size", info["warp_size"]),
        ("Max threads per block / per SM", f"{info['max_threads_per_block']} / "
                                           f"{info['max_threads_per_sm']}"),
        ("Copy engines", info["async_engines"]),
        ("ECC", "on" if info["ecc"] else "off"),
        ("PCI bus id", info["pci_bus_id"]),
        ("Peak memory bandwidth (theory)", f"{info['peak_bandwidth_gbps']:.0f} GB/s"),
        ("Peak FP32 (theory)", f"{info['peak_fp32_gflops'] / 1e3:.1f} TFLOP/s"),
        ("Driver / runtime", f"{info.get('driver_release') or '?'} (CUDA {info['driver_version']})"
                             f" / CUDA {info['runtime_version']}"),
    ]


def device_table(info: dict) -> str:
    rows = device_rows(info)
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


def results_table(results: Iterable[BenchResult]) -> str:
    """One row per result. The rate columns follow each row's bound (BenchResult.bound): GB/s
    and of copy for memory-bound rows; GFLOP/s, the op's own unit (if it has one) and of FMA for
    compute-bound rows. A table that mixes bounds has both sets, blank where a row's bound is
    the other: a rate that does not bound the op is not printed. An op's own unit is printed
    on memory-bound rows too, after of copy (Mandelbrot's Gpixels/s: its cost model counts the
    image it writes, its iterations are data)."""
    results = list(results)
    peer_names = sorted({p for r in results for p in r.peers})
    compute_rows = [r for r in results if r.bound == "compute"]
    # an empty table keeps the memory columns it always had
    memory = not results or len(compute_rows) < len(results)
    units = list(dict.fromkeys(r.unit for r in compute_rows if r.unit))
    memory_units = list(dict.fromkeys(r.unit for r in results
                                      if r.unit and r.bound == "memory" and r.unit not in units))
    header = ["id", "variant", "backend", "ms"]
    if memory:
        header += ["GB/s", "of copy", *memory_units]
    if compute_rows:
        header += ["GFLOP/s", *units, "of FMA"]
    header += [f"x {p}" for p in peer_names]
    rows = []
    for r in results:
        row = [str(r.variant), r.variant_name, r.backend + (" +copies" if r.transfers_included
                                                             else ""),
               f"{r.median_ms:.4f}"]
        if memory:
            row += ([format_rate(r.gbps), format_fraction(r.frac_copy)] if r.bound == "memory"
                    else ["", ""])
            row += [format_rate(r.unit_rate) if r.bound == "memory" and r.unit == u else ""
                    for u in memory_units]
        if compute_rows:
            if r.bound == "compute":
                row += [format_rate(r.gflops)]
                row += [format_rate(r.unit_rate) if r.unit == u else "" for u in units]
                row += [format_fraction(r.frac_fma)]
            else:
                row += [""] * (len(units) + 2)
        # peer ratio: >1 means gpulab is faster
        row += [f"{r.peers[p]['speedup']:.2f}" if p in r.peers else "" for p in peer_names]
        rows.append(row)
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.rjust(w) if i >= 3 else c.ljust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    out = [line(header), line(["-" * w for w in widths])]
    out += [line(row) for row in rows]
    return "\n".join(out)
