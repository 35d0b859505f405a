"""What Jupyter shows: the _repr_html_ of Table, BenchResult, SweepResults, the variant list
and a Variant (each renders, escapes its text, and holds the values that matter), and the
variant list's plain-text table."""

import dataclasses
import re

import numpy as np
import pytest

import gpulab as gl
from gpulab.compare import compare
from gpulab.registry import Variant, VariantList
from references.saxpy import saxpy_inputs

HOSTILE = "<script>alert(1)</script> & \"x\""


def cells(html_text):
    """The text of every <td> and <th>, unescaped, in order."""
    import html
    return [html.unescape(c) for _, c in re.findall(r"<(td|th)(?: [^>]*)?>(.*?)</\1>", html_text)]


def check_safe(html_text):
    """No raw markup from the data: the only tags are the table's own."""
    assert "<script>" not in html_text
    tags = set(re.findall(r"</?([a-z]+)", html_text))
    assert tags <= {"table", "caption", "thead", "tbody", "tr", "th", "td", "details",
                    "summary"}, tags
    assert "&lt;script&gt;" in html_text


@pytest.fixture(scope="module")
def cpu_result():
    a, x, y = saxpy_inputs(10_001, np.float32)
    cpu = next(v for v in gl.variants("saxpy") if v.backend == "cpu")
    return gl.bench(gl.saxpy, a, x, y, variant=cpu.id, repeat=3, warmup=0)


def test_table_html_escapes_and_holds_its_cells():
    t = gl.Table([{"op": HOSTILE, "ms": 1.5}, {"op": "box", "size": 9}],
                 meta={"what": "<memory>"})
    text = t._repr_html_()
    check_safe(text)
    assert "&lt;memory&gt;" in text
    assert cells(text) == ["op", "ms", "size", HOSTILE, "1.5", "", "box", "", "9"]
    assert "Table (empty)" in gl.Table()._repr_html_()


def test_bench_result_html(cpu_result):
    text = cpu_result._repr_html_()
    found = cells(text)
    assert "saxpy" in found and f"{cpu_result.variant} {cpu_result.variant_name}" in found
    assert f"{cpu_result.median_ms:.4f}" in found and "GB/s" in found and "of copy" in found
    assert "3" in found  # runs
    hostile = dataclasses.replace(cpu_result, op=HOSTILE, params={"block": "<64>"})
    check_safe(hostile._repr_html_())
    assert "block=&lt;64&gt;" in hostile._repr_html_()


def test_bench_result_of_a_plain_callable_html():
    r = gl.bench(lambda: sorted(range(100)), budget_s=0.05)
    text = r._repr_html_()
    assert "&lt;lambda&gt;" in text and "<lambda>" not in text
    found = cells(text)
    assert "GB/s" not in found and f"{r.median_ms:.4f}" in found and "perf_counter" in found


def test_sweep_results_html(cpu_result):
    res = gl.SweepResults([cpu_result], skipped=[({"block": 64}, HOSTILE)])
    text = res._repr_html_()
    check_safe(text)
    found = cells(text)
    assert "saxpy" in found and f"{cpu_result.median_ms:.4f}" in found
    assert found[found.index("combination"):][2:] == ["block=64", HOSTILE]
    assert "1 results, 1 skipped" in text
    assert gl.SweepResults()._repr_html_().startswith("<table")


def test_sweep_results_print_as_a_table(cpu_result):
    res = gl.SweepResults([cpu_result, cpu_result], skipped=[({"block": 64}, "no block")])
    lines = repr(res).splitlines()
    assert lines[0] == "saxpy: 2 results, 1 skipped"
    assert lines[1].split()[:3] == ["op", "variant", "backend"] and "GB/s" in lines[1]
    assert f"{cpu_result.median_ms:.4f}" in lines[2] and cpu_result.variant_name in lines[2]
    assert lines[4] == "skipped {'block': 64}: no block" and str(res) == repr(res)
    assert res == [cpu_result, cpu_result]  # still a list


def test_variant_list_is_a_list_that_prints_as_a_table():
    ladder = gl.variants("saxpy")
    assert isinstance(ladder, VariantList) and isinstance(ladder, list)
    assert ladder == list(ladder) and list(ladder) == ladder
    assert ladder[0] == gl.variants("saxpy")[0] and len(ladder[1:]) == len(ladder) - 1
    lines = repr(ladder).splitlines()
    assert lines[0].split()[:4] == ["id", "name", "backend", "best"]
    assert len(lines) == len(ladder) + 1
    for v, line in zip(ladder, lines[1:]):
        assert v.name in line and v.backend in line
    assert str(ladder) == repr(ladder)
    # a list of several ops names the op of each row
    assert repr(gl.variants()).splitlines()[0].split()[0] == "op"
    assert repr(VariantList()) == "VariantList(empty)"


def test_variant_list_and_variant_html():
    ladder = gl.variants("saxpy")
    text = ladder._repr_html_()
    found = cells(text)
    for v in ladder:
        assert v.name in found and v.summary in found
    assert f"saxpy: {len(ladder)} variants" in text
    hostile = Variant(op="saxpy", id=7, name="<b>", backend="cpu", summary=HOSTILE,
                      seed="s", tunables={"block": {"values": [64, 128]}})
    for text in (VariantList([hostile])._repr_html_(), hostile._repr_html_()):
        check_safe(text)
        assert "&lt;b&gt;" in text and "block=64|128" in text


def test_comparison_html(cpu_result):
    text = compare([cpu_result], [cpu_result])._repr_html_()
    assert "OK: 0 regressions" in text and "unchanged" in cells(text)
