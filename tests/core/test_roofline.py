"""gl.roofline(): the model (S4's worked examples), the points of BenchResults and of saved
result dicts, the figure, and the table it falls back to without matplotlib."""

import importlib
import json
import math
import sys

import numpy as np
import pytest

import gpulab as gl
from gpulab import roofline_model as rl
from gpulab._op import Cost, spec_of

# S4's GPU of the GEMM example: 15.0 TFLOP/s and 900 GB/s
S4_GPU = {"where": "gpu", "device": "S4's example GPU", "copy_gbps": 900.0,
          "fma_gflops": 15000.0}
H100_LIKE = {"where": "gpu", "device": "synthetic H100", "copy_gbps": 3000.0,
             "l2_copy_gbps": 9000.0, "fma_gflops": 60000.0, "fma64_gflops": 30000.0}
# ... with the tensor-core ceilings that gl.ceilings() measures where wgmma runs
HOPPER_LIKE = dict(H100_LIKE, tensor_f16_gflops=900000.0, tensor_bf16_gflops=890000.0,
                   tensor_tf32_gflops=450000.0)


def result_dict(op="saxpy", variant=0, name="v", backend="cuda", nbytes=1200, flops=200,
                ms=1e-3, dtype="float32"):
    """A result as BenchResult.to_dict() saves it, for a cost and a time."""
    return {"op": op, "variant": variant, "variant_name": name, "backend": backend,
            "dtype": dtype, "bytes": nbytes, "flops": flops, "median_ms": ms,
            "gbps": nbytes / ms / 1e6, "gflops": flops / ms / 1e6}


# ---------------------------------------------------------------- the model


def test_attainable_is_the_lower_roof():
    assert rl.attainable(1.0, 1000.0, 100.0) == 100.0  # memory side: ai * bandwidth
    assert rl.attainable(100.0, 1000.0, 100.0) == 1000.0  # compute side: the peak
    assert rl.attainable(10.0, 1000.0, 100.0) == 1000.0  # on the ridge both agree
    assert rl.attainable(0, 1000.0, 100.0) == 0.0


def test_ridge_and_side():
    assert rl.ridge_point(1000.0, 100.0) == 10.0
    assert rl.bound_by(9.99, 1000.0, 100.0) == "memory"
    assert rl.bound_by(10.0, 1000.0, 100.0) == "memory"  # on the ridge: not over it
    assert rl.bound_by(10.01, 1000.0, 100.0) == "compute"


@pytest.mark.parametrize("call, name, error", [
    (lambda: rl.attainable("1", 10, 10), "ai", TypeError),
    (lambda: rl.attainable(-1, 10, 10), "ai", ValueError),
    (lambda: rl.attainable(float("nan"), 10, 10), "ai", ValueError),
    (lambda: rl.attainable(1, 0, 10), "peak_gflops", ValueError),
    (lambda: rl.attainable(1, 10, None), "peak_gbps", TypeError),
    (lambda: rl.ridge_point(10, -5), "peak_gbps", ValueError),
    (lambda: rl.bound_by(True, 10, 10), "ai", TypeError),
    (lambda: rl.arithmetic_intensity(10, 0), "nbytes", ValueError),
    (lambda: rl.arithmetic_intensity(-1, 10), "flops", ValueError),
])
def test_model_refuses_bad_numbers_by_name(call, name, error):
    with pytest.raises(error, match=name):
        call()


def test_model_takes_numpy_scalars():
    assert rl.attainable(np.float32(2.0), np.int64(1000), np.float64(100.0)) == 200.0


# ---------------------------------------------------------------- S4's worked examples


def test_s4_vadd_intensity_from_the_cost_model():
    """S4: C[i] = A[i] + B[i] on 10 single-precision elements: 10 flops over 2n + n = 30
    elements of 4 bytes, 120 bytes: intensity 0.0833. gl.matadd is that op (S0's 2-D launch of
    it), and its cost model gives the same W and Q."""
    A = np.zeros((2, 5), dtype=np.float32)
    cost = spec_of(gl.matadd).cost(A, A)
    assert (cost.flops, cost.bytes) == (10, 120)
    ai = rl.arithmetic_intensity(cost.flops, cost.bytes)
    assert round(ai, 4) == 0.0833
    # on S4's GPU VADD sits left of the ridge: 0.0833 * 900 GB/s = 75 GFLOP/s at most
    assert rl.bound_by(ai, S4_GPU["fma_gflops"], S4_GPU["copy_gbps"]) == "memory"
    assert math.isclose(rl.attainable(ai, 15000.0, 900.0), 75.0)


def test_s4_gemm_intensity_and_ridge():
    """S4: square GEMM, N = 1024, double precision, on a GPU of 15.0 TFLOP/s and 900 GB/s:
    ridge 15e12 / 900e9 = 16.666667 flop/B; FLOPs 2 N^3, bytes (ideal) 3 N^2 * 8, OI
    85.333333; min(15 TFLOP/s, 85.33 * 900 GB/s) = 15 TFLOP/s, compute-bound."""
    n = 1024
    gemm = Cost(bytes=3 * n * n * 8, flops=2 * n ** 3)
    assert (gemm.flops, gemm.bytes) == (2_147_483_648, 25_165_824)
    oi = rl.arithmetic_intensity(gemm.flops, gemm.bytes)
    ridge = rl.ridge_point(S4_GPU["fma_gflops"], S4_GPU["copy_gbps"])
    assert round(oi, 6) == 85.333333 and round(ridge, 6) == 16.666667
    assert rl.attainable(oi, 15000.0, 900.0) == 15000.0
    assert rl.bound_by(oi, 15000.0, 900.0) == "compute"


def test_s4_examples_on_a_roofline():
    """Both examples as points on S4's GPU, through the same path as measured results: VADD at
    its 75 GFLOP/s roof, GEMM at 15 TFLOP/s, each run at half its roof."""
    vadd = result_dict("vadd", nbytes=120, flops=10, ms=10 / (75 / 2) / 1e6)
    gemm = result_dict("gemm", nbytes=25_165_824, flops=2 * 1024 ** 3,
                       ms=2 * 1024 ** 3 / 7500.0 / 1e6, dtype="float64")
    tab = rl.roofline([vadd, gemm], ceilings=S4_GPU, table=True)
    by_op = {row["op"]: row for row in tab}
    assert round(by_op["vadd"]["ai"], 4) == 0.0833 and by_op["vadd"]["bound"] == "memory"
    assert math.isclose(by_op["vadd"]["attainable"], 75.0)
    assert round(by_op["gemm"]["ai"], 2) == 85.33 and by_op["gemm"]["bound"] == "compute"
    assert by_op["gemm"]["attainable"] == 15000.0
    for row in tab:
        assert math.isclose(row["fraction"], 0.5)
    assert round(tab.meta["ridges"]["FP32 FMA/HBM copy"], 2) == 16.67


# ---------------------------------------------------------------- points


def test_points_of_bench_results():
    x = np.random.default_rng(1).random(10_000).astype(np.float32)
    cpu = next(v for v in gl.variants("saxpy") if v.backend == "cpu")
    r = gl.bench(gl.saxpy, 2.0, x, x, variant=cpu.id, repeat=2, warmup=0)
    ceil = {"where": "cpu", "device": "synthetic", "copy_gbps": 10.0, "fma_gflops": 100.0}
    tab = rl.roofline(r, ceilings=ceil, table=True)
    assert isinstance(tab, gl.Table) and len(tab) == 1
    row = tab[0]
    assert row["label"] == f"saxpy[{cpu.id} {cpu.name}]"
    assert math.isclose(row["ai"], r.flops / r.bytes) and row["gflops"] == r.gflops
    assert math.isclose(row["attainable"], min(100.0, row["ai"] * 10.0))
    assert math.isclose(row["fraction"], r.gflops / row["attainable"])
    assert row["bound"] == "memory" and tab.meta["where"] == "cpu"
    assert tab.meta["roofs"][0]["name"] == "DRAM copy"
    assert "saxpy" in repr(tab) and "DRAM copy" in repr(tab)


def test_float64_points_are_held_to_the_fp64_roof():
    compute = result_dict(nbytes=100, flops=10 ** 6, dtype="float64")
    tab = rl.points([compute], ceilings=H100_LIKE)
    assert tab[0]["roof"] == "HBM copy/FP64 FMA" and tab[0]["attainable"] == 30000.0
    tab = rl.points([dict(compute, dtype="float32")], ceilings=H100_LIKE)
    assert tab[0]["roof"] == "HBM copy/FP32 FMA" and tab[0]["attainable"] == 60000.0


# (op, variant name, dtype) -> the compute roof its point is held to under HOPPER_LIKE
TENSOR_CASES = [
    ("matmul", "wgmma", "float16", "FP16 tensor", 900000.0),
    ("matmul", "wgmma_ws", "bfloat16", "BF16 tensor", 890000.0),
    ("matmul", "cublaslt", "float16", "FP16 tensor", 900000.0),
    ("matmul", "tf32_wmma", "float32", "TF32 tensor", 450000.0),
    ("matmul", "cublas_tf32", "float32", "TF32 tensor", 450000.0),
    ("matmul", "multistage", "float32", "FP32 FMA", 60000.0),  # FP32 stays on the FMA roof
    ("matmul", "cublas", "float64", "FP64 FMA", 30000.0),
    ("saxpy", "tf32ish", "float32", "FP32 FMA", 60000.0),  # only matmul's names say TF32
]


@pytest.mark.parametrize("op, name, dtype, roof, value", TENSOR_CASES,
                         ids=[f"{c[1]}-{c[2]}" for c in TENSOR_CASES])
def test_tensor_core_points_are_held_to_their_tensor_roof(op, name, dtype, roof, value):
    point = result_dict(op, 17, name, nbytes=100, flops=10 ** 9, dtype=dtype)
    tab = rl.points([point], ceilings=HOPPER_LIKE)
    assert tab[0]["roof"] == f"HBM copy/{roof}" and tab[0]["attainable"] == value
    assert math.isclose(tab[0]["fraction"], point["gflops"] / value)
    assert not tab.meta["notes"]
    names = [r["name"] for r in tab.meta["roofs"]]
    assert names[-3:] == ["FP16 tensor", "BF16 tensor", "TF32 tensor"]
    assert math.isclose(tab.meta["ridges"]["FP16 tensor/HBM copy"], 900000.0 / 3000.0)


def test_without_tensor_ceilings_tensor_points_fall_back_to_fp32():
    """A GPU without wgmma has the tensor keys as None: no tensor roofs, the half and TF32
    points on FP32 FMA, and a note that names the roofs they lack; a file from before the keys
    has none, and its note says the roofs they need are missing."""
    half = result_dict("matmul", 15, "mma_sync", nbytes=100, flops=10 ** 9, dtype="float16")
    tf32 = result_dict("matmul", 10, "tf32_wmma", nbytes=100, flops=10 ** 9)
    no_wgmma = dict(H100_LIKE, **dict.fromkeys(rl.TENSOR_ROOF_KEYS))
    tab = rl.points([half, tf32], ceilings=no_wgmma)
    assert [row["roof"] for row in tab] == ["HBM copy/FP32 FMA"] * 2
    assert [r["name"] for r in tab.meta["roofs"]] == ["HBM copy", "L2 copy", "FP32 FMA",
                                                      "FP64 FMA"]
    assert tab.meta["notes"] == ["no FP16 tensor, TF32 tensor roof on this device (see the "
                                 "ceilings' method): its float16, bfloat16 and TF32 points are "
                                 "held to FP32 FMA"]
    # no such note where no point needed a tensor roof
    assert not rl.points([result_dict()], ceilings=no_wgmma).meta["notes"]
    tab = rl.points([half], ceilings=H100_LIKE)
    assert tab[0]["roof"] == "HBM copy/FP32 FMA"
    assert tab.meta["notes"] == ["these ceilings lack FP16 tensor (measured before gpulab had "
                                 "them)"]
    assert not rl.points([result_dict()], ceilings=H100_LIKE).meta["notes"]


def test_the_cpu_lacks_no_tensor_roof():
    cpu = {"where": "cpu", "device": "synthetic", "copy_gbps": 10.0, "fma_gflops": 100.0,
           "fma64_gflops": 50.0}
    tab = rl.points([result_dict(backend="cpu", dtype="float16")], ceilings=cpu)
    assert tab[0]["roof"] == "DRAM copy/FP32 FMA" and not tab.meta["notes"]


def test_a_pure_copy_is_listed_at_zero_intensity():
    copy = result_dict("memcpy", nbytes=2 << 20, flops=0, ms=0.001)
    tab = rl.points([copy], ceilings=H100_LIKE)
    row = tab[0]
    assert row["ai"] == 0 and row["gflops"] == 0 and row["bound"] == "memory"
    assert math.isclose(row["fraction"], copy["gbps"] / H100_LIKE["copy_gbps"])
    assert any("no flops" in note for note in tab.meta["notes"])


def test_a_result_that_moves_no_bytes_is_refused():
    with pytest.raises(ValueError, match="no bytes"):
        rl.points([result_dict(nbytes=0, flops=10)], ceilings=H100_LIKE)


def test_old_ceilings_give_the_roofs_they_have():
    old = {"where": "gpu", "device": "old", "copy_gbps": 2900.0, "fma_gflops": 62000.0}
    tab = rl.points([result_dict()], ceilings=old)
    assert [r["name"] for r in tab.meta["roofs"]] == ["HBM copy", "FP32 FMA"]
    assert any("L2 copy, FP64 FMA" in note for note in tab.meta["notes"])


def test_where_follows_the_results_or_is_asked():
    gpu, cpu = result_dict(backend="cuda"), result_dict(backend="cpu", variant=100)
    both = {"gpu": H100_LIKE, "cpu": dict(H100_LIKE, where="cpu")}
    with pytest.raises(ValueError, match="where"):
        rl.points([gpu, cpu], ceilings=both)
    tab = rl.points([gpu, cpu], ceilings=both, where="cpu")
    assert [row["backend"] for row in tab] == ["cpu"] and tab.meta["left_out"] == ["saxpy[0 v]"]
    # one device's ceilings name the roofline
    assert rl.points([gpu, cpu], ceilings=H100_LIKE).meta["where"] == "gpu"
    with pytest.raises(ValueError, match="where"):
        rl.points([gpu], ceilings=H100_LIKE, where="tpu")


@pytest.mark.parametrize("results, error, match", [
    (42, TypeError, "results must be"),
    ([42], TypeError, r"results\[0\]"),
    ([{"op": "saxpy"}], ValueError, r"results\[0\] lacks variant"),
    ([dict(result_dict(), backend="tpu")], ValueError, "backend"),
])
def test_bad_results_are_refused_by_name(results, error, match):
    with pytest.raises(error, match=match):
        rl.points(results, ceilings=H100_LIKE)


@pytest.mark.parametrize("ceilings, error, match", [
    ("fast", TypeError, "ceilings must be"),
    ({"cpu": H100_LIKE}, ValueError, "no 'gpu' entry"),
    ({"copy_gbps": 10.0}, ValueError, "fma_gflops"),
    ({"copy_gbps": -1.0, "fma_gflops": 1.0}, ValueError, "copy_gbps"),
])
def test_bad_ceilings_are_refused_by_name(ceilings, error, match):
    with pytest.raises(error, match=match):
        rl.points([result_dict()], ceilings=ceilings)


# ---------------------------------------------------------------- saved results


@pytest.fixture
def results_file(tmp_path):
    results = [result_dict("saxpy", 2, "vec16_tiles", nbytes=3 * 4 * 2 ** 20,
                           flops=2 * 2 ** 20, ms=0.005),
               result_dict("nbody_accel", 5, "multibody_split", nbytes=28 * 4096,
                           flops=20 * 4096 ** 2, ms=0.02),
               result_dict("saxpy", 101, "openmp_simd", backend="cpu", ms=0.5)]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"meta": {"ceilings": {"gpu": H100_LIKE, "cpu": dict(
        H100_LIKE, where="cpu", device="synthetic CPU")}}, "results": results}))
    return path


def test_a_results_file_brings_its_ceilings(results_file, monkeypatch):
    # gl.ceilings is the function; the module holds it
    monkeypatch.setattr(importlib.import_module("gpulab.ceilings"), "ceilings",
                        lambda *a, **k: pytest.fail("measured"))
    tab = rl.roofline(str(results_file), where="gpu", table=True)
    assert [row["op"] for row in tab] == ["saxpy", "nbody_accel"]
    assert tab.meta["device"] == "synthetic H100"
    assert [row["bound"] for row in tab] == ["memory", "compute"]
    assert rl.roofline(results_file, where="cpu", table=True).meta["device"] == "synthetic CPU"


def test_result_dicts_loaded_from_json(results_file):
    data = json.loads(results_file.read_text())
    tab = rl.points(data["results"], ceilings=data["meta"]["ceilings"], where="gpu")
    assert len(tab) == 2 and tab.meta["left_out"] == ["saxpy[101 openmp_simd]"]


def test_a_json_file_without_results_is_refused(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"runs": []}))
    with pytest.raises(ValueError, match="no 'results' list"):
        rl.roofline(str(path), table=True)


# ---------------------------------------------------------------- figure and fallback


def test_without_matplotlib_a_table_and_a_warning(monkeypatch, results_file):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    with pytest.warns(UserWarning, match="pip install matplotlib"):
        out = rl.roofline(results_file, where="gpu")
    assert isinstance(out, rl.RooflineTable) and len(out) == 2
    assert "HBM copy" in repr(out) and "nbody_accel" in repr(out)


def test_the_figure(results_file):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure
    fig = rl.roofline(results_file, where="gpu")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert len(ax.collections) == 2  # one marker per point
    texts = [t.get_text() for t in ax.texts]
    assert "saxpy[2 vec16_tiles]" in texts and "nbody_accel[5 multibody_split]" in texts
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    for roof in ("HBM copy", "L2 copy", "FP32 FMA", "FP64 FMA", "ridge"):
        assert any(text.startswith(roof) for text in legend), roof
    assert ax.get_xlim()[0] <= 0.01 and ax.get_xlim()[1] >= 1000


def test_the_figure_into_given_axes_and_a_pure_copy_noted():
    pytest.importorskip("matplotlib")
    from gpulab.roofline_plot import new_figure
    fig = new_figure()
    ax = fig.add_subplot()
    copy = result_dict("memcpy", nbytes=2 << 20, flops=0, ms=0.001)
    assert rl.roofline([copy, result_dict()], ax=ax, ceilings=H100_LIKE) is ax
    assert len(ax.collections) == 1
    note = next(t.get_text() for t in ax.texts if "No flops" in t.get_text())
    assert "memcpy[0 v]" in note and "GB/s" in note


def test_the_roofs_alone():
    pytest.importorskip("matplotlib")
    fig = rl.roofline(ceilings=H100_LIKE)
    assert len(fig.axes[0].collections) == 0 and len(fig.axes[0].get_lines()) == 5


def test_the_figure_draws_the_tensor_roofs():
    pytest.importorskip("matplotlib")
    half = result_dict("matmul", 17, "wgmma", nbytes=3 * 2 * 4096 ** 2, flops=2 * 4096 ** 3,
                       ms=0.2, dtype="float16")
    fig = rl.roofline([half], ceilings=HOPPER_LIKE)
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 8  # 2 memory roofs, 5 compute roofs, the ridge
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    for roof in ("FP16 tensor 900 TFLOP/s", "BF16 tensor 890 TFLOP/s", "TF32 tensor 450 TFLOP/s"):
        assert roof in legend, legend
    # the y axis reaches above the highest roof, so the half-precision point is inside
    assert ax.get_ylim()[1] > 900000.0
