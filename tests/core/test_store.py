"""The regression store: what a row keeps, how load() selects, where the file lives, what it
refuses, and that writers in several processes lose nothing."""

import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import gpulab as gl
from conftest import child_env
from gpulab import provenance, store
from gpulab.records import Record, records_of
from gpulab.sweep import SweepResults

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "benchmarks", "results")


def every_field_result(**changes):
    """A BenchResult whose every field differs from any default, so a field the store dropped
    would come back different."""
    values = dict(
        op="reduce", variant=6, variant_name="cascaded", backend="cuda",
        params={"block": 256, "grid": [80, 1, 1]}, device="NVIDIA H100 80GB HBM3",
        size=1 << 22, dtype="float32", transfers_included=True, timer="cuda-events",
        median_ms=0.125, min_ms=0.12, max_ms=0.5, samples=[0.12, 0.125, 0.5, 0.1250001],
        bytes=16777216, flops=4194304, gbps=134.217728, gflops=33.554432,
        frac_copy=0.0457, frac_fma=0.00054, bound="compute", l2_flushed=True,
        peers={"cupy": {"median_ms": 0.2, "min_ms": 0.19, "gbps": 83.9, "speedup": 1.6,
                        "version": "14.2.0"}},
        unit="G elements/s", unit_rate=33.554432)
    values.update(changes)
    return gl.BenchResult(**values)


def test_the_sample_result_sets_every_field():
    r = every_field_result()
    for f in dataclasses.fields(gl.BenchResult):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING \
            else f.default
        assert getattr(r, f.name) != default, f.name


def test_round_trip_keeps_every_field_and_the_provenance(tmp_path):
    path = tmp_path / "results.sqlite"
    r = every_field_result()
    assert store.save(r, path, tag="baseline") == 1
    [got] = store.load(path)
    assert isinstance(got, Record) and isinstance(got.result, gl.BenchResult)
    assert got.result == r
    assert got.ok and got.error is None and got.extra == {} and got.id is not None
    meta = got.meta
    assert meta["tag"] == "baseline" and meta["run"] >= 1
    assert meta["commit"] == provenance.commit()
    assert meta["build"] == json.loads(json.dumps(gl.build_info()))
    for key in ("timestamp", "device", "python", "numpy"):
        assert meta[key], key
    if gl.cuda_available():
        info = gl.device_info()
        assert meta["device"] == info["name"]
        assert meta["cuda_runtime"] == info["runtime_version"]
        assert meta["driver"] == gl.driver_release()
    else:
        assert meta["device"] == "cpu" and "why_no_gpu" in meta


def test_round_trip_of_a_measured_result_and_a_sweep(tmp_path):
    path = tmp_path / "results.sqlite"
    cpu = [v.id for v in gl.variants("saxpy") if v.backend == "cpu"]
    x, y = (np.random.default_rng(1).random(1001).astype(np.float32) for _ in range(2))
    results = gl.sweep(gl.saxpy, 2.0, x, y, variant=cpu, repeat=3, progress=False)
    assert isinstance(results, SweepResults) and len(results) == len(cpu)
    assert store.save(results, path) == len(cpu)
    assert [rec.result for rec in store.load(path)] == list(results)


def test_numpy_params_are_stored_as_numbers(tmp_path):
    path = tmp_path / "results.sqlite"
    store.save(every_field_result(params={"block": np.int64(128), "dt": np.float32(0.5)}), path)
    assert store.load(path)[0].result.params == {"block": 128, "dt": 0.5}


def test_a_saved_document_keeps_its_own_provenance_and_extra_fields(tmp_path):
    path = tmp_path / "results.sqlite"
    with open(os.path.join(RESULTS, "nbody_ladder.json")) as f:
        doc = json.load(f)
    runs = doc["results"]["runs"]
    assert store.save(doc, path, tag="h100") == len(runs)
    got = store.load(path)
    assert [rec.to_dict() for rec in got] == [
        {"samples": [], **run} for run in runs]  # the file has no samples; the rest is kept
    meta = got[0].meta
    for key in ("commit", "device", "driver", "cuda_runtime", "build"):
        assert meta[key] == doc["meta"][key], key
    assert got[0].extra["ginter_s"] == runs[0]["ginter_s"]
    store.save(doc, path, tag="again", meta={"commit": "not this one"})
    assert store.load(path, tag="again")[0].meta["commit"] == doc["meta"]["commit"]
    assert records_of(doc, meta={"commit": "not this one"})[0].meta == doc["meta"]
    assert records_of(runs, meta={"commit": "given"})[0].meta == {"commit": "given"}


def test_records_nested_anywhere_under_results_are_found(tmp_path):
    with open(os.path.join(RESULTS, "reduce_ladder.json")) as f:
        doc = json.load(f)
    nested = [run for part in doc["results"].values() if isinstance(part, dict)
              for run in part.get("runs", [])]
    assert len(records_of(doc)) == len(nested) > 0


def test_a_failed_check_is_stored(tmp_path):
    path = tmp_path / "results.sqlite"
    bad = {**every_field_result().to_dict(), "ok": False, "error": "element 17 off by 3 ulp"}
    store.save([bad, {**every_field_result(size=5).to_dict(), "ok": False}], path)
    first, second = store.load(path)
    assert (first.ok, first.error) == (False, "element 17 off by 3 ulp")
    assert not second.ok and "no reason" in second.error
    assert first.to_dict() == bad
    store.save(Record(every_field_result(size=6), error="made by hand"), path)
    assert store.load(path, size=6)[0].failed


@pytest.fixture()
def filled(tmp_path):
    """A store of three saves: two commits and tags, two ops, two devices, two times."""
    path = tmp_path / "results.sqlite"
    old = {"commit": "aaaa1111", "device": "NVIDIA H100", "timestamp": "2026-01-01T00:00:00+00:00"}
    new = {"commit": "bbbb2222", "device": "NVIDIA H100", "timestamp": "2026-02-01T12:00:00+01:00"}
    store.save([every_field_result(variant=v, variant_name=f"v{v}") for v in (0, 1)], path,
               tag="base", meta=old)
    store.save([every_field_result(op="saxpy", dtype="float64", device="AMD EPYC",
                                   backend="cpu", size=7)], path, tag="base", meta=old)
    store.save([every_field_result(variant=v, variant_name=f"v{v}") for v in (0, 1)], path,
               tag="nightly", meta=new)
    return path


@pytest.mark.parametrize("filters, count", [
    ({}, 5),
    ({"op": "reduce"}, 4), ({"op": "saxpy"}, 1), ({"op": "nothing"}, 0),
    ({"variant": 1}, 2), ({"variant": "v0"}, 2),
    ({"backend": "cpu"}, 1), ({"device": "AMD EPYC"}, 1), ({"dtype": "float64"}, 1),
    ({"size": 7}, 1),
    ({"commit": "aaaa1111"}, 3), ({"commit": "bbbb"}, 2), ({"commit": "bbbb3"}, 0),
    ({"tag": "base"}, 3), ({"tag": "nightly", "variant": 0}, 1),
    ({"since": "2026-01-15"}, 2), ({"until": "2026-01-01T00:00:00Z"}, 3),
    ({"since": "2026-02-01T11:00:00+00:00"}, 2), ({"since": "2026-02-01T11:00:01+00:00"}, 0),
    ({"run": 2}, 1),
])
def test_load_filters(filled, filters, count):
    got = store.load(filled, **filters)
    assert len(got) == count
    for name, value in filters.items():
        for rec in got:
            if name in ("op", "backend", "device", "dtype", "size"):
                assert getattr(rec.result, name) == value
            elif name in ("commit",):
                assert rec.meta["commit"].startswith(value)
            elif name in ("tag", "run"):
                assert rec.meta[name] == value


def test_load_returns_oldest_first_with_utc_times(filled):
    stamps = [rec.meta["timestamp"] for rec in store.load(filled)]
    assert stamps == sorted(stamps)
    assert stamps[-1] == "2026-02-01T11:00:00.000000+00:00"


@pytest.mark.parametrize("filters, error, words", [
    ({"colour": "red"}, TypeError, "colour"),
    ({"variant": 1.5}, TypeError, "variant"),
    ({"size": "7"}, TypeError, "size"),
    ({"tag": 3}, TypeError, "tag"),
    ({"since": "yesterday"}, ValueError, "since"),
    ({"until": 3}, TypeError, "until"),
])
def test_load_refuses_bad_filters(filled, filters, error, words):
    with pytest.raises(error, match=words):
        store.load(filled, **filters)


def test_the_path_comes_from_the_argument_then_the_environment_then_the_cache(tmp_path,
                                                                              monkeypatch):
    monkeypatch.delenv("GPULAB_STORE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert store.store_path() == str(tmp_path / "cache" / "gpulab" / "results.sqlite")
    store.save(every_field_result(), tag="cached")
    assert (tmp_path / "cache" / "gpulab" / "results.sqlite").is_file()
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # the XDG spec says: ignore it
    assert store.store_path() == os.path.join(os.path.expanduser("~"), ".cache", "gpulab",
                                              "results.sqlite")
    monkeypatch.setenv("GPULAB_STORE", str(tmp_path / "deep" / "er" / "env.sqlite"))
    assert store.save(every_field_result(), tag="env") == 1
    assert [rec.meta["tag"] for rec in store.load()] == ["env"]
    explicit = tmp_path / "explicit.sqlite"
    store.save(every_field_result(), explicit, tag="arg")
    assert [rec.meta["tag"] for rec in store.load(explicit)] == ["arg"]
    with pytest.raises(TypeError, match="path"):
        store.load(3)


def test_a_file_that_is_not_a_store_is_refused_untouched(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    before = other.read_bytes()
    for path in (text, other):
        with pytest.raises(store.StoreError, match="not a gpulab store"):
            store.save(every_field_result(), path)
        with pytest.raises(store.StoreError, match="not a gpulab store"):
            store.load(path)
    assert text.read_text() == "not a database\n" * 100
    assert other.read_bytes() == before  # its journal mode is not switched to WAL either
    with pytest.raises(store.StoreError, match="cannot open"):
        store.save(every_field_result(), tmp_path)  # a folder


def test_a_newer_schema_and_an_empty_file_are_refused(tmp_path):
    path = tmp_path / "results.sqlite"
    store.save(every_field_result(), path)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(store.StoreError, match="newer gpulab"):
        store.load(path)
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(store.StoreError, match="empty"):
        store.load(empty)
    assert store.save(every_field_result(), empty) == 1  # save() makes an empty file a store
    with pytest.raises(FileNotFoundError, match="save"):
        store.load(tmp_path / "missing.sqlite")


def test_the_file_says_what_it_is(tmp_path):
    path = tmp_path / "results.sqlite"
    store.save(every_field_result(), path)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == store.APPLICATION_ID
        assert conn.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


@pytest.mark.parametrize("results, error, words", [
    ("results.json", TypeError, "results must be"),
    (42, TypeError, "results must be"),
    ([{"op": "reduce", "median_ms": 1.0}], ValueError, r"results\[0\].*lacks"),
    ([every_field_result().to_dict() | {"size": "big"}], TypeError, r"results\[0\]\['size'\]"),
    ([every_field_result().to_dict() | {"ok": "yes"}], TypeError, "'ok'"),
    ([every_field_result().to_dict() | {"l2_flushed": 1}], TypeError, "'l2_flushed'"),
    ([every_field_result().to_dict() | {"unit_rate": "fast"}], TypeError, "'unit_rate'"),
    ({"meta": {}, "results": {"summary": 1}}, ValueError, "no BenchResult records"),
])
def test_save_refuses_what_is_not_a_result(tmp_path, results, error, words):
    with pytest.raises(error, match=words):
        store.save(results, tmp_path / "results.sqlite")
    assert not (tmp_path / "results.sqlite").exists()


def test_save_refuses_a_bad_tag_or_meta(tmp_path):
    with pytest.raises(TypeError, match="tag"):
        store.save(every_field_result(), tmp_path / "s.sqlite", tag=1)
    with pytest.raises(TypeError, match="meta"):
        store.save(every_field_result(), tmp_path / "s.sqlite", meta="h100")


def test_a_save_is_one_transaction(tmp_path):
    path = tmp_path / "results.sqlite"
    store.save(every_field_result(), path)
    # two provenances make two runs; the second holds a result wider than SQLite's integers
    fine = Record(every_field_result(size=1), {"commit": "a"})
    unstorable = Record(every_field_result(bytes=1 << 70), {"commit": "b"})
    with pytest.raises(OverflowError):
        store.save([fine, unstorable], path)
    assert len(store.load(path)) == 1
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
    finally:
        conn.close()


def test_connections_are_closed(tmp_path):
    # the last connection to close checkpoints the WAL and removes it: a leaked one keeps it
    path = tmp_path / "results.sqlite"
    store.save(every_field_result(), path)
    store.load(path)
    assert not os.path.exists(f"{path}-wal")


def test_a_save_waits_out_a_writer_that_holds_the_lock(tmp_path, monkeypatch):
    path = tmp_path / "results.sqlite"
    store.save(every_field_result(), path)
    monkeypatch.setattr(store, "BUSY_TIMEOUT_S", 0.01)  # so that only the retry can wait
    locked = threading.Event()

    def hold_the_write_lock():
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            locked.set()
            time.sleep(0.5)
            holder.execute("COMMIT")
        finally:
            holder.close()

    thread = threading.Thread(target=hold_the_write_lock)
    thread.start()
    try:
        assert locked.wait(10)
        start = time.monotonic()
        assert store.save(every_field_result(size=2), path) == 1
        assert time.monotonic() - start >= 0.4
    finally:
        thread.join()
    assert len(store.load(path)) == 2


WRITER = """
import sys, time
from gpulab import store
from gpulab.bench import BenchResult
path, who, saves, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
meta = {"commit": "c0ffee", "device": "test", "timestamp": "2026-01-01T00:00:00+00:00"}
def result(i, j):
    return BenchResult(op="saxpy", variant=100, variant_name="serial", backend="cpu",
        params={"writer": who, "save": i, "item": j}, device="cpu", size=1, dtype="float32",
        transfers_included=False, timer="perf_counter", median_ms=1.0, min_ms=1.0, max_ms=1.0,
        samples=[1.0], bytes=12, flops=2, gbps=1e-5, gflops=2e-6, frac_copy=0.1, frac_fma=0.1,
        bound="memory", l2_flushed=False)
while time.time() < start:
    time.sleep(0.001)
for i in range(saves):
    assert store.save([result(i, 0), result(i, 1)], path, tag=f"w{who}", meta=meta) == 2
"""


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "results.sqlite"
    writers, saves = 4, 60
    start = time.time() + 3  # every writer starts at once, after all have imported gpulab
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(w), str(saves),
                               str(start)], env=child_env(), stderr=subprocess.PIPE, text=True)
             for w in range(writers)]
    for p in procs:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
    got = store.load(path)
    assert len(got) == writers * saves * 2
    seen = {(r.result.params["writer"], r.result.params["save"], r.result.params["item"])
            for r in got}
    assert seen == {(w, i, j) for w in range(writers) for i in range(saves) for j in (0, 1)}
    for w in range(writers):
        tagged = store.load(path, tag=f"w{w}")
        assert {r.result.params["writer"] for r in tagged} == {w}
        assert len({r.meta["run"] for r in tagged}) == saves  # one run per save


def test_a_plain_callable_s_timing_is_refused_with_the_reason(tmp_path):
    result = gl.bench(lambda: sum(range(100)), budget_s=0.05)
    with pytest.raises(TypeError, match="plain callable"):
        gl.store.save([result], path=str(tmp_path / "results.db"))
