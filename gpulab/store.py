"""The regression store: benchmark results kept across runs in one SQLite file.

    import gpulab as gl
    from gpulab import store
    store.save(gl.sweep(gl.reduce, d, variant=range(7)), tag="baseline")
    store.save(json.load(open("benchmarks/results/reduce_ladder.json")))   # a saved file
    base = store.load(tag="baseline", op="reduce")          # [Record], oldest first
    base[0].result.median_ms, base[0].meta["commit"], base[0].meta["device"]

What a row keeps (S3 §12.3 and §12.5: enough to rerun the experiment and to compare like with
like): every field of BenchResult, its samples and peer timings included, the launch
configuration (``params``: block, ...), the correctness check (``ok``, ``error``: see
gpulab.records) and the fields a benchmark added to its records; and, once per save(), the
provenance of the results: the device, driver, CUDA driver and runtime versions, the build
(``gl.build_info()``: compiler flags and architectures), the git commit, a timestamp and an
optional tag. Results from this process take their provenance from
``gpulab.provenance.metadata()``; a saved document (``python -m gpulab --json``, benchmarks/)
brings its own "meta".

save(results, path=None, tag=None, meta=None) -> int      rows saved
load(path=None, **filters) -> [Record]                    each with .result (a BenchResult),
                                                          .meta (provenance, tag, run), .ok, .error
store_path(path=None) -> str                              the file save() and load() use

The file: the ``path`` argument, else ``$GPULAB_STORE``, else
``$XDG_CACHE_HOME/gpulab/results.sqlite`` (``~/.cache/gpulab/results.sqlite`` by default).
save() creates it and its folder. Writers in several processes lose nothing: the file runs in
WAL mode, each save() is one transaction taken with the write lock (BEGIN IMMEDIATE), a writer
waits for the lock (the busy timeout) and retries a save that still finds the database locked.
The file says what it is (SQLite's application_id) and which schema it holds (user_version);
a file that is not a gpulab store, or one from a newer gpulab, raises StoreError.
"""

import datetime
import json
import os
import random
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import List, Optional

from . import provenance
from .bench import BenchResult
from .records import RESULT_FIELDS, Record, records_of

APPLICATION_ID = 0x676C6162  # 'glab'
SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 30.0  # how long one statement waits for another writer's lock
RETRY_FOR_S = 120.0  # how long save() keeps retrying a database that stays locked

JSON_FIELDS = ("params", "samples", "peers")
BOOL_FIELDS = ("transfers_included", "l2_flushed")

SCHEMA = (
    """CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        timestamp TEXT NOT NULL,      -- UTC, ISO 8601
        git_commit TEXT,
        tag TEXT,
        device TEXT,                  -- the GPU's name, or 'cpu' where the run had none
        driver TEXT,                  -- the kernel driver's release
        cuda_driver TEXT,
        cuda_runtime TEXT,
        build TEXT,                   -- JSON: gl.build_info()
        meta TEXT NOT NULL            -- JSON: the whole provenance
    )""",
    """CREATE TABLE results (
        id INTEGER PRIMARY KEY,
        run INTEGER NOT NULL REFERENCES runs(id),
        op TEXT NOT NULL,
        variant INTEGER NOT NULL,
        variant_name TEXT NOT NULL,
        backend TEXT NOT NULL,
        params TEXT NOT NULL,         -- JSON, keys sorted
        device TEXT NOT NULL,         -- where this variant ran (a CPU's name for CPU variants)
        size INTEGER NOT NULL,
        dtype TEXT NOT NULL,
        transfers_included INTEGER NOT NULL,
        timer TEXT NOT NULL,
        median_ms REAL NOT NULL,
        min_ms REAL NOT NULL,
        max_ms REAL NOT NULL,
        samples TEXT NOT NULL,        -- JSON list of ms
        bytes INTEGER NOT NULL,
        flops INTEGER NOT NULL,
        gbps REAL NOT NULL,
        gflops REAL NOT NULL,
        frac_copy REAL NOT NULL,
        frac_fma REAL NOT NULL,
        bound TEXT NOT NULL,
        l2_flushed INTEGER NOT NULL,
        peers TEXT NOT NULL,          -- JSON
        unit TEXT,
        unit_rate REAL,
        ok INTEGER NOT NULL,
        error TEXT,
        extra TEXT NOT NULL           -- JSON: the record's fields beyond BenchResult's
    )""",
    "CREATE INDEX results_by_op ON results(op, variant)",
    "CREATE INDEX results_by_run ON results(run)",
    "CREATE INDEX runs_by_commit ON runs(git_commit)",
    "CREATE INDEX runs_by_tag ON runs(tag)",
    "CREATE INDEX runs_by_time ON runs(timestamp)",
)

ROW_COLUMNS = ("run", *RESULT_FIELDS, "ok", "error", "extra")
FILTERS = ("op", "variant", "backend", "device", "dtype", "size", "commit", "tag", "since",
           "until", "run")


class StoreError(ValueError):
    """The file is not a gpulab results store, or one this gpulab cannot read."""


def store_path(path=None) -> str:
    """The store's file: path, else $GPULAB_STORE, else $XDG_CACHE_HOME/gpulab/results.sqlite
    (XDG_CACHE_HOME defaults to ~/.cache; a relative one is ignored, as the XDG spec says)."""
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        return os.fspath(path)
    if os.environ.get("GPULAB_STORE"):
        return os.environ["GPULAB_STORE"]
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "gpulab", "results.sqlite")


# ---------------------------------------------------------------- save


def save(results, path=None, tag: Optional[str] = None, meta: Optional[dict] = None) -> int:
    """Stores results and returns how many rows it saved.

    results: a BenchResult, a list of them, a SweepResults, result dicts, Records, or a saved
    ``{"meta", "results"}`` document (see gpulab.records). tag: a label for this save, to
    select it by later (``load(tag="baseline")``). meta: the provenance of results that carry
    none (default: ``provenance.metadata()`` of this process, taken once per call); a
    document's own "meta" and a loaded Record's are kept. All rows go in one transaction."""
    if tag is not None and not isinstance(tag, str):
        raise TypeError(f"tag must be a string or None, got {type(tag).__name__}")
    if meta is not None and not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict or None, got {type(meta).__name__}")
    records = records_of(results)
    if not records:
        return 0
    for i, record in enumerate(records):
        if record.result.variant is None:
            raise TypeError(f"results[{i}] times a plain callable ({record.result.op!r}): the "
                            f"store keys rows by op and variant; compare such timings with "
                            f"gl.compare(base, new) directly")
    if any(not r.meta for r in records) and meta is None:
        meta = provenance.metadata({})
    runs = _group_by_provenance(records, meta or {})
    file = store_path(path)
    parent = os.path.dirname(os.path.abspath(file))
    os.makedirs(parent, exist_ok=True)
    _retry_while_locked(lambda: _save_once(file, runs, tag))
    return len(records)


def _group_by_provenance(records, default_meta):
    """[(meta, [records])]: one run per distinct provenance. A loaded Record's meta has the
    store's own keys (tag, run), which a new save replaces."""
    runs = {}
    for r in records:
        m = {k: v for k, v in (r.meta or default_meta).items() if k not in ("tag", "run")}
        key = _json(m)
        runs.setdefault(key, (m, []))[1].append(r)
    return list(runs.values())


def _save_once(file, runs, tag):
    with closing(_connect(file)) as conn:
        # a foreign database is refused before anything is written to it
        _schema_state(conn, file)
        # WAL is a property of the file: set once, it stays; readers then never block writers
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            # asked again under the write lock: another process may have created it meanwhile
            if _schema_state(conn, file) == "empty":
                for statement in SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            for meta, records in runs:
                run = _insert_run(conn, meta, tag)
                conn.executemany(
                    f"INSERT INTO results ({', '.join(ROW_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * len(ROW_COLUMNS))})",
                    [_row(run, r) for r in records])
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def _insert_run(conn, meta, tag):
    timestamp = meta.get("timestamp") or datetime.datetime.now(datetime.timezone.utc)
    cursor = conn.execute(
        "INSERT INTO runs (timestamp, git_commit, tag, device, driver, cuda_driver, "
        "cuda_runtime, build, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (_utc_iso(timestamp, "meta['timestamp']"), _text(meta.get("commit")), tag,
         _text(meta.get("device")), _text(meta.get("driver")), _text(meta.get("cuda_driver")),
         _text(meta.get("cuda_runtime")),
         _json(meta["build"]) if meta.get("build") is not None else None, _json(meta)))
    return cursor.lastrowid


def _row(run, record: Record):
    values = record.result.to_dict()
    for name in JSON_FIELDS:
        values[name] = _json(values[name])
    for name in BOOL_FIELDS:
        values[name] = int(bool(values[name]))
    values.update(run=run, ok=int(not record.failed), error=record.error,
                  extra=_json(record.extra))
    return tuple(values[c] for c in ROW_COLUMNS)


def _retry_while_locked(attempt):
    """Runs attempt() until it does not meet a locked database, for up to RETRY_FOR_S. The
    busy timeout already waits inside SQLite; this covers what it does not: switching to WAL,
    and SQLite answering BUSY at once where waiting could deadlock."""
    deadline = time.monotonic() + RETRY_FOR_S
    pause = 0.005
    while True:
        try:
            return attempt()
        except sqlite3.OperationalError as e:
            locked = "locked" in str(e) or "busy" in str(e)
            if not locked or time.monotonic() > deadline:
                raise
        time.sleep(pause * (1 + random.random()))
        pause = min(pause * 2, 0.5)


# ---------------------------------------------------------------- load


def load(path=None, **filters) -> List[Record]:
    """The stored results that match every filter, oldest save first, as Records: .result is
    the BenchResult, .meta its provenance (with "tag" and "run", the save's id), .ok and
    .error its check, .extra the record's other fields, .id the row's id.

    Filters: op, variant (an id or a name), backend, device (where the variant ran, as in
    BenchResult.device), dtype, size, commit (a prefix: "5246f06" finds the full hash), tag,
    since and until (a datetime or an ISO 8601 string, inclusive; without a time zone, UTC),
    run (a save's id). Raises FileNotFoundError where there is no store yet."""
    unknown = sorted(set(filters) - set(FILTERS))
    if unknown:
        raise TypeError(f"load() got unknown filters {unknown}; it takes {list(FILTERS)}")
    where, params = _conditions(filters)
    file = store_path(path)
    if not os.path.exists(file):
        raise FileNotFoundError(f"no gpulab store at {file} (save() creates one)")
    rows = _retry_while_locked(lambda: _select(file, where, params))
    return [_record(row) for row in rows]


def _select(file, where, params):
    with closing(_connect(file, must_exist=True)) as conn:
        if _schema_state(conn, file) == "empty":
            raise StoreError(f"{file} is an empty database, not a gpulab store")
        return conn.execute(
            f"SELECT {', '.join('results.' + c for c in ROW_COLUMNS)}, results.id, "
            "runs.timestamp, runs.tag, runs.meta FROM results JOIN runs ON results.run = runs.id"
            f"{' WHERE ' + ' AND '.join(where) if where else ''} "
            "ORDER BY runs.timestamp, results.id", params).fetchall()


def _conditions(filters):
    where, params = [], []
    for name, value in filters.items():
        if value is None:
            continue
        if name == "variant":
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise TypeError(f"variant must be an id (int) or a name (str), got {value!r}")
            where.append("results.variant = ?" if isinstance(value, int)
                         else "results.variant_name = ?")
            params.append(value)
        elif name == "size":
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"size must be an int, got {value!r}")
            where.append("results.size = ?")
            params.append(value)
        elif name == "run":
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"run must be an int (a save's id), got {value!r}")
            where.append("runs.id = ?")
            params.append(value)
        elif name in ("since", "until"):
            where.append(f"runs.timestamp {'>=' if name == 'since' else '<='} ?")
            params.append(_utc_iso(value, name))
        else:
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a string, got {value!r}")
            if name == "commit":
                where.append("substr(runs.git_commit, 1, ?) = ?")
                params += [len(value), value]
            elif name == "tag":
                where.append("runs.tag = ?")
                params.append(value)
            else:
                where.append(f"results.{name} = ?")
                params.append(value)
    return where, params


def _record(row):
    n = len(ROW_COLUMNS)
    values = dict(zip(ROW_COLUMNS, row[:n]))
    row_id, timestamp, tag, meta = row[n:]
    for name in JSON_FIELDS:
        values[name] = json.loads(values[name])
    for name in BOOL_FIELDS:
        values[name] = bool(values[name])
    result = BenchResult(**{name: values[name] for name in RESULT_FIELDS})
    meta = {**json.loads(meta), "timestamp": timestamp, "tag": tag, "run": values["run"]}
    return Record(result, meta, bool(values["ok"]), values["error"],
                  json.loads(values["extra"]), row_id)


# ---------------------------------------------------------------- the file


def _connect(file, must_exist=False):
    """A connection in autocommit mode (transactions are explicit), waiting up to
    BUSY_TIMEOUT_S for other writers. must_exist opens without creating the file."""
    try:
        if must_exist:
            return sqlite3.connect(Path(os.path.abspath(file)).as_uri() + "?mode=rw", uri=True,
                                   timeout=BUSY_TIMEOUT_S, isolation_level=None)
        return sqlite3.connect(file, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.OperationalError as e:
        raise StoreError(f"cannot open the gpulab store {file}: {e}") from e


def _schema_state(conn, file):
    """'ready' for a gpulab store of a schema this code reads, 'empty' for a file with nothing
    in it yet (a new or zero-length file); StoreError for anything else."""
    try:
        # one statement, so one snapshot: three would let another process's first save commit
        # between them (tables there, application_id not yet read as set)
        app_id, version, tables = conn.execute(
            "SELECT (SELECT application_id FROM pragma_application_id), "
            "(SELECT user_version FROM pragma_user_version), "
            "(SELECT count(*) FROM sqlite_master)").fetchone()
    except sqlite3.OperationalError:
        raise  # a locked database: the caller retries
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{file} is not a gpulab store: {e}") from e
    if app_id == 0 and tables == 0:
        return "empty"
    if app_id != APPLICATION_ID:
        raise StoreError(f"{file} is an SQLite database but not a gpulab store "
                         f"(application_id {app_id:#x}, a gpulab store has {APPLICATION_ID:#x})")
    if version > SCHEMA_VERSION:
        raise StoreError(f"{file} holds schema version {version}, written by a newer gpulab; "
                         f"this one reads up to version {SCHEMA_VERSION}")
    if version < 1:
        raise StoreError(f"{file} is marked as a gpulab store but has no schema version")
    return "ready"


# ---------------------------------------------------------------- values


def _json(value):
    return json.dumps(value, sort_keys=True, default=_plain)


def _plain(value):
    """JSON for what json does not know: NumPy scalars and arrays as numbers and lists, the
    rest as its str()."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def _text(value):
    return None if value is None else str(value)


def _utc_iso(value, name):
    """A datetime or an ISO 8601 string as UTC ISO 8601 text, the form runs.timestamp holds
    so that text order is time order. Without a time zone, the time is UTC."""
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value)
        except ValueError as e:
            raise ValueError(f"{name} must be an ISO 8601 time, got {value!r}") from e
    elif isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        value = datetime.datetime(value.year, value.month, value.day)
    if not isinstance(value, datetime.datetime):
        raise TypeError(f"{name} must be a datetime or an ISO 8601 string, got {value!r}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.astimezone(datetime.timezone.utc).isoformat(timespec="microseconds")
