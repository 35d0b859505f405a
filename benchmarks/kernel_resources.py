"""gl.inspect over every CUDA variant of every lab: for each kernel instance that ran at the
variant's default block size, its registers, static and dynamic shared memory, local memory
(spills) and theoretical occupancy with what limits it. The table the lab pages (docs/labs/) cite
when they say why a rung helped.

    python benchmarks/kernel_resources.py
"""

import gpulab as gl
from common import require_gpu, save


def main():
    require_gpu()
    rows = []
    for v in gl.variants():
        if v.backend != "cuda":
            continue
        block = v.tunables.get("block", {}).get("default")
        r = gl.inspect(v.op, v.id, sass=False, **({"block": block} if block else {}))
        if r.undeclared:
            raise SystemExit(f"{v.op}[{v.id}] launched kernels its table does not name: "
                             f"{r.undeclared}")
        for k in r.kernels:
            for inst in k.instances:
                a = inst.attributes
                for row in (row for row in inst.occupancy if row.launched):
                    rows.append({
                        "op": v.op, "variant": v.id, "variant_name": v.name, "kernel": k.name,
                        "instance": inst.signature, "registers": a["registers"],
                        "static_shared_bytes": a["static_shared_bytes"],
                        "dynamic_shared_bytes": row.dynamic_shared_bytes,
                        "local_bytes": a["local_bytes"], "arch": a["binary_version"],
                        "block": row.block, "blocks_per_sm": row.blocks_per_sm,
                        "occupancy": row.occupancy, "limited_by": row.limited_by})
        if v.library:
            rows.append({"op": v.op, "variant": v.id, "variant_name": v.name,
                         "library": v.library, "kernel": None})
    for row in rows:
        if row["kernel"]:
            print(f"{row['op']}[{row['variant']}] {row['kernel']:<24} block {row['block']:>4}: "
                  f"{row['registers']:>3} regs, {row['static_shared_bytes']:>5} B static + "
                  f"{row['dynamic_shared_bytes']:>5} B dynamic shared, {row['local_bytes']} B local,"
                  f" occupancy {row['occupancy']:.2f} ({row['limited_by']})")
    save("kernel_resources", {"block": "each variant's default"}, rows)


if __name__ == "__main__":
    main()
