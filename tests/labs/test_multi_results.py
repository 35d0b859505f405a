"""benchmarks/plot_multi.py: the committed multi-GPU results as tables and a figure (README and
notebooks/multi_gpu.ipynb show them); no GPU needed."""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import plot_multi  # noqa: E402


def jacobi_row(mode, gpus, problem, total, exchange="p2p", overlap=True, compute=None):
    return {"mode": mode, "dim": f"{len(problem)}d", "exchange": exchange, "overlap": overlap,
            "gpus": gpus, "problem": list(problem), "total_ms": total,
            "compute_ms": compute if compute is not None else total * 0.9,
            "exposed_ms": total * 0.1, "sweeps": 200, "speedup": 10.0 / total * (
                1 if mode == "strong" else gpus), "efficiency": 10.0 / total / (
                gpus if mode == "strong" else 1)}


def write(folder, name, rows):
    with open(os.path.join(folder, name), "w") as f:
        json.dump({"meta": {"device": "Test GPU"}, "results": rows}, f)


def test_later_files_replace_rows_and_weak_rows_name_one_gpus_share(tmp_path):
    write(tmp_path, "multi_jacobi.json", [
        jacobi_row("strong", 1, (64, 64), 10.0), jacobi_row("strong", 2, (64, 64), 6.0),
        jacobi_row("weak", 2, (128, 64), 11.0)])
    write(tmp_path, "multi_jacobi_x4_strong.json", [
        jacobi_row("strong", 2, (64, 64), 5.0), jacobi_row("strong", 4, (64, 64), 2.5)])
    write(tmp_path, "multi_jacobi_x4_weak2d.json", [jacobi_row("weak", 4, (256, 64), 12.5)])
    data = plot_multi.load(str(tmp_path))
    strong = plot_multi.series(data["strong"], "speedup")
    assert strong == {("64x64", "p2p"): [(1, 1.0), (2, 2.0), (4, 4.0)]}  # 6.0 replaced by 5.0
    weak = plot_multi.series(data["weak"], "efficiency")
    assert weak == {("64x64", "p2p"): [(2, 10.0 / 11.0), (4, 0.8)]}
    text = plot_multi.tables(data)
    assert "Jacobi strong 64x64 p2p: 1 GPU 1.000, 2 GPU 2.000, 4 GPU 4.000" in text
    assert data["reduce"] is None and data["allreduce"] == {}


def test_overlap_off_rows_stay_out_of_the_series():
    rows = [jacobi_row("strong", 1, (8, 8, 8), 10.0, overlap=False)]
    assert plot_multi.series(rows, "speedup") == {}
    assert plot_multi.short(jacobi_row("weak", 4, (2048, 512, 512), 1.0)) == "512^3"


def test_the_committed_results_hold_the_figures_readme_states():
    data = plot_multi.load()
    if not data["strong"]:
        pytest.skip("no committed multi-GPU results in benchmarks/results/")
    weak = plot_multi.series(data["weak"], "efficiency")
    assert all(e >= 0.9 for n, e in weak[("16384x16384", "p2p")] if n > 1)
    strong = dict(plot_multi.series(data["strong"], "speedup")[("16384x16384", "p2p")])
    assert strong[2] >= 1.8
    for gpus, res in data["allreduce"].items():
        sizes = [r["bytes"] for r in res["one_process"]]
        for mode in ("one_process", "one_process_per_gpu"):
            ratios = dict(zip(sizes, res[f"{mode}_vs_torch"]))
            assert ratios[256 << 20] >= 0.95 and ratios[1 << 30] >= 0.95, (gpus, mode)


def test_the_figure_draws_from_the_committed_results(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    data = plot_multi.load()
    if not data["strong"]:
        pytest.skip("no committed multi-GPU results in benchmarks/results/")
    fig = plot_multi.figure(data)
    fig.savefig(tmp_path / "multi.png")
    assert (tmp_path / "multi.png").stat().st_size > 10000
