"""What the sanitizer drivers (tools/sanitize/*.py) share.

Each driver runs every CUDA kernel of a lab at awkward sizes so that compute-sanitizer can see it,
and checks every result against NumPy, exiting non-zero on a wrong one. They run in exact
allocation mode (GPULAB_EXACT_ALLOC=1, set here before gpulab is imported): every device buffer
has its exact size, nothing is cached or rounded, and small NumPy calls do not run on mapped
pinned memory, so that an overrun of any size leaves its allocation. tools/gpu-check.sh runs
every driver under memcheck (with --padding, so that an overrun cannot land in a neighbouring
allocation either), initcheck, racecheck and synccheck:

    compute-sanitizer --tool memcheck --padding 512 --error-exitcode 1 python3 tools/sanitize/ops.py
    python3 tools/sanitize/ops.py --inputs device     # device inputs only (racecheck, synccheck)

Inputs: NumPy and device arrays ("both", the default) or device arrays alone ("device"). The
NumPy path runs the same kernels on buffers that the binding allocates and copies itself, which
matters to memcheck and initcheck; racecheck and synccheck look only inside the kernels.
"""

import argparse
import os
import sys

os.environ["GPULAB_EXACT_ALLOC"] = "1"

import numpy as np  # noqa: E402

import gpulab as gl  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Element counts: empty and tiny; odd and just over a block or tile (33, 257, 1025, 100003); and
# ends that fall exactly on the old 512-byte allocation grain (128 float32, 64 float64: every
# size below that is a multiple of 128), on 16-byte vectors (every even size), and on the
# vectorized kernels' tiles: saxpy variant 2 covers block x 4 vectors x 4 floats per block,
# 4096 at block 256 and 16384 at 1024; reduce variant 12 strides over 4 x 16-byte loads per
# thread of 512-thread blocks, 8192 floats a tile (131072 = 16 tiles).
SIZES = (0, 1, 3, 33, 128, 257, 1024, 1025, 4096, 8192, 16384, 100_003, 131_072)
# racecheck and synccheck look inside blocks, where 131072 adds nothing to 100003's many tiles and
# passes, at a third of their time.
KERNEL_SIZES = SIZES[:-1]


def start(description, extra=None):
    """Parses --inputs, --only and the driver's own arguments (extra(parser) adds them), checks
    the GPU and exact mode; returns (args, rng)."""
    parser = argparse.ArgumentParser(description=description)
    if extra is not None:
        extra(parser)
    parser.add_argument("--inputs", choices=("both", "device"), default="both",
                        help="NumPy and device inputs, or device inputs only")
    parser.add_argument("--only", default="",
                        help="comma-separated variants to run, as the driver names them "
                             "(ops.py: op:id, e.g. saxpy:0; nbody.py: id); default: all")
    parser.add_argument("--shard", default="0/1", type=shard,
                        help="K/N: only every N-th variant, from the K-th (0-based), in the "
                             "order the driver meets them; default: all (0/1)")
    args = parser.parse_args()
    if not gl.cuda_available():
        sys.exit(f"no GPU: {gl._core._gpu_status()}")
    if not gl._core._exact_alloc():
        sys.exit("exact allocation mode is off: GPULAB_EXACT_ALLOC was not seen at import")
    args.only = set(filter(None, args.only.split(",")))
    return args, np.random.default_rng(7)


def shard(text):
    """--shard's K/N as (K, N)."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes K/N, e.g. 2/4, not {text!r}") from None
    if not 0 <= k < n:
        raise argparse.ArgumentTypeError(f"--shard K/N needs 0 <= K < N, not {text!r}")
    return k, n


def wanted(args, key):
    """Whether a driver runs the variant named key (--only, --shard). Shards deal the keys out
    in the order the driver first asks for them, which is the same in every shard, so that N
    shards run every variant once between them, in about equal numbers."""
    if args.only and key not in args.only:
        return False
    k, n = getattr(args, "shard", (0, 1))
    if n == 1:
        return True
    dealt = vars(args).setdefault("dealt", {})  # key -> its shard, the same in every shard
    return dealt.setdefault(key, len(dealt) % n) == k


def deal(args, costs):
    """Deals the variants of costs ({key: cost}, in the driver's order) to --shard's N shards by
    cost: the costliest first, each to the shard with the least so far, so that the shards end
    together; wanted() then follows this deal. It is the same in every shard."""
    n = getattr(args, "shard", (0, 1))[1]
    loads, dealt = [0.0] * n, vars(args).setdefault("dealt", {})
    for key in sorted(costs, key=lambda key: -costs[key]):  # stable: ties in the driver's order
        part = loads.index(min(loads))
        dealt[key], loads[part] = part, loads[part] + costs[key]
    return loads


def covered_elsewhere():
    """{op: driver} of the ops that a lab's driver declares in its OPS_COVERED tuple: it runs
    each of their CUDA variants with every tunable value ops.py would, from NumPy and device
    inputs, at shapes chosen for its kernels; ops.py leaves them to it."""
    import ast
    import glob
    out = {}
    for path in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              "[a-z]*.py"))):
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in tree.body:
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] \
                    == ["OPS_COVERED"]:
                for op in ast.literal_eval(node.value):
                    out[op] = os.path.basename(path)
    return out


# The compute-sanitizer tool this driver runs under, as tools/gpu-check.sh and
# tools/mutation_check.py pass it ("" when the driver runs by itself).
TOOL = os.environ.get("GPULAB_SANITIZER_TOOL", "")
_not_followed = set()


def followed(v):
    """Whether this run's tool can check variant v. initcheck, racecheck and synccheck do not
    follow device-side launches (v.device_launches, CUDA dynamic parallelism): they warn, count
    the warning as an error, and initcheck reports the children's output as never written.
    memcheck does follow them; such a variant is left to it, and the driver says so."""
    if v.device_launches and TOOL in ("initcheck", "racecheck", "synccheck"):
        if (v.op, v.id) not in _not_followed:
            _not_followed.add((v.op, v.id))
            print(f"{v.op}[{v.id}] {v.name}: left to memcheck ({TOOL} does not follow "
                  f"device-side launches)")
        return False
    return True


def references():
    """conftest's NumPy references ({op: check(got, *args)}), from tests/references/."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from references import all_checks
    return all_checks()


def settle():
    """Waits for the library's stream. racecheck analyses a kernel's shared-memory accesses at a
    stream or device synchronization; an event wait (all that .get() and the NumPy path do) is
    not one, and what is still unanalysed when the process ends is dropped: on the H100 a
    planted missing barrier went unreported until the drivers waited like this
    (docs/labs/concepts.md)."""
    gl.synchronize()


def require(ok, what):
    if not ok:
        sys.exit(f"wrong result: {what}")


def close(got, ref, what, rtol=1e-5, atol=1e-5):
    require(np.allclose(got, ref, rtol=rtol, atol=atol), what)


def done(name, calls):
    print(f"{name}: {calls} CUDA calls checked in exact allocation mode")
