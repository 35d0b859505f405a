"""python -m gpulab --html: one self-contained page (nothing fetched), with the device, the
ceilings, the roofline, every op's ladder and the provenance; and that a real browser renders
it."""

import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from gpulab import html_report
from gpulab._op import OPS
from gpulab.__main__ import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECTIONS = ("device", "ceilings", "roofline", "ladders", "provenance")
PNG = b"\x89PNG\r\n\x1a\n"

try:
    import matplotlib  # noqa: F401
    MATPLOTLIB = True
except ImportError:
    MATPLOTLIB = False
needs_matplotlib = pytest.mark.skipif(not MATPLOTLIB, reason="the report draws with "
                                      "matplotlib, which is not installed")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The main job's report at a small scale, on whatever device this machine has."""
    path = tmp_path_factory.mktemp("html") / "report.html"
    proc = subprocess.run([sys.executable, "-m", "gpulab", "--scale", "0.01", "--repeat", "2",
                           "--html", str(path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Wrote the report to {path}" in proc.stdout
    return path, path.read_text(encoding="utf-8")


def images(text):
    return re.findall(r'<img [^>]*src="([^"]*)"', text)


def check_self_contained(text):
    for attribute in ("src", "href", "action", "poster", "data"):
        for value in re.findall(rf'\s{attribute}="([^"]*)"', text):
            assert value.startswith(("data:image/png;base64,", "#")), value
    assert "<script" not in text and "<link" not in text and "url(" not in text
    assert "@import" not in text


def check_images(text, at_least):
    found = images(text)
    assert len(found) >= at_least
    for src in found:
        data = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert data.startswith(PNG)
        from PIL import Image  # comes with matplotlib
        width, height = Image.open(io.BytesIO(data)).size
        assert width >= 300 and height >= 100


@needs_matplotlib
def test_the_page_is_self_contained(page):
    _, text = page
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    check_self_contained(text)


@needs_matplotlib
def test_the_page_has_every_section_and_op(page):
    _, text = page
    for key in SECTIONS:
        assert f'<section id="{key}">' in text and f'href="#{key}"' in text
    # the roofline of each place that ran, and a ladder chart per op
    check_images(text, at_least=1 + len(OPS))
    for op in OPS:
        assert f'alt="{op} ladder"' in text
    assert 'alt="roofline of cpu"' in text
    assert "DRAM copy" in text and "FP64 FMA" in text  # the CPU's ceilings
    assert "commit" in text and "settings" in text and '&quot;scale&quot;: 0.01' in text


def test_html_without_matplotlib_says_how_to_get_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    with pytest.raises(SystemExit) as exit_info:
        main(["--html", str(tmp_path / "report.html"), "--ops", "saxpy"])
    assert exit_info.value.code == 2
    assert "pip install matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "report.html").exists()


@needs_matplotlib
def test_a_gpu_report_from_saved_results(tmp_path):
    """The committed H100 main job: GPU and CPU panels, peers, the device table; and the same
    job without its L2 and FP64 ceilings, as files saved before gpulab measured them are."""
    with open(os.path.join(ROOT, "benchmarks", "results", "mainjob.json")) as f:
        saved = json.load(f)
    text = html_report.build(saved["meta"], saved["results"])
    check_self_contained(text)
    check_images(text, at_least=2 + len({r["op"] for r in saved["results"]}))
    assert 'alt="roofline of gpu"' in text and 'alt="roofline of cpu"' in text
    assert "NVIDIA H100 80GB HBM3" in text and "Compute capability" in text
    assert "x torch" in text and "x cupy" in text
    assert "nbody_accel[5 multibody_split]" in text  # the GPU's best, on the roofline
    assert "of FP32 FMA" in text and "of HBM copy" in text
    assert "these ceilings lack" not in text
    # files saved before the L2 and FP64 ceilings say what their roofline lacks
    for where in ("gpu", "cpu"):
        for key in ("l2_copy_gbps", "l2_copy_bytes", "l2_copy_passes", "fma64_gflops"):
            saved["meta"]["ceilings"][where].pop(key, None)
    text = html_report.build(saved["meta"], saved["results"])
    assert "these ceilings lack L2 copy, FP64 FMA" in text
    # and a table with them fills the L2 and FP64 columns
    saved["meta"]["ceilings"]["gpu"].update(l2_copy_gbps=8765.4, fma64_gflops=31234.5)
    saved["meta"]["ceilings"]["cpu"].update(fma64_gflops=121.9)
    text = html_report.build(saved["meta"], saved["results"])
    assert ">8765.4<" in text and ">31234.5<" in text and ">121.9<" in text
    assert "these ceilings lack" not in text


def test_the_best_variant_is_the_registrys_else_the_fastest():
    rows = [{"op": "saxpy", "best": False, "median_ms": 1.0},
            {"op": "saxpy", "best": True, "median_ms": 2.0},
            {"op": "gemm", "best": False, "median_ms": 3.0},
            {"op": "gemm", "best": False, "median_ms": 1.5}]
    best = html_report._best_of_each_op(rows)
    assert [(r["op"], r["median_ms"]) for r in best] == [("saxpy", 2.0), ("gemm", 1.5)]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@needs_matplotlib
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_chromium_renders_the_page(page, tmp_path):
    path, _ = page
    shot = tmp_path / "report.png"
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           f"--screenshot={shot}", "--window-size=1400,2400",
                           "--hide-scrollbars", path.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.exists(), proc.stderr
    from PIL import Image
    image = Image.open(shot).convert("RGB")
    assert image.size == (1400, 2400)
    # the images were decoded and drawn: the roofline's FP32 roof (a colour the page's own
    # styles do not use) is on the first screen, a line hundreds of pixels long
    colors = image.getcolors(maxcolors=1 << 20)
    assert len(colors) > 50
    fp32_roof = (0x8b, 0x1a, 0x1a)
    assert "8b1a1a" not in html_report.STYLE.lower()
    assert sum(n for n, rgb in colors
               if all(abs(c - r) <= 12 for c, r in zip(rgb, fp32_roof))) > 200
