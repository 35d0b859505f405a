"""compare(): new benchmark results against a baseline, by the rules of S3 §12.5.

    from gpulab import store
    from gpulab.compare import compare
    c = compare(store.load(tag="baseline"), gl.sweep(gl.reduce, d, variant=range(7)))
    print(c)          # a line of counts, the tolerances, and a table of every result
    c.ok              # False on any regression or failed correctness check
    c.regressions     # [Change]: .baseline, .new (Records), .time and .rate (Metric)

The sides are anything gpulab.records takes: BenchResults, a SweepResults, result dicts, a
saved {"meta", "results"} document, or Records from store.load(). A result on one side is
matched with the result on the other that has the same op, variant, backend, params (the launch
configuration), size, dtype and device; where one side has a key more than once, the last one
counts (load() returns oldest first, so that is the newest) and .superseded says how many were
dropped. Results with no partner are listed in .added (only in new) and .removed (only in the
baseline).

The rules, for each matched pair:
- Two metrics, each with its own tolerance: the time (the median, in ms; lower is better;
  ``time_tol``, default 4%, inside S3's 3-5%) and the rate that bounds the op (GB/s for a
  memory-bound result, GFLOP/s for a compute-bound one, from the new result's ``bound``; higher
  is better; ``rate_tol``, default 3%, inside S3's 2-4%). The change is relative to the
  baseline's median: (new - baseline) / baseline. For one result the rate is work / time, so
  the rate gate is the tighter one (a 3% rate drop is a 3.1% slowdown); the time gate still
  catches a slowdown where the two sides' cost models (bytes, flops) differ and the rate hides
  it.
- A change counts only if it persists across most timed runs: the new median is past the
  tolerance AND at least ``persist`` (default 0.75, three quarters) of the new samples are past
  it too, each sample against the baseline's median. Half is implied by the median, so the
  fraction asks that the shift show in the quarter of the new runs nearest the baseline as
  well: a spike in one or two repetitions moves neither. A result saved without samples
  (nbody_ladder.json's) is judged on its median alone.
- The pair is a regression when either metric regressed, else an improvement when either
  improved, else unchanged.
- Correctness comes first and apart (S3: "a regression check should not mask correctness
  issues; it should separate them"). A result whose check failed (``"ok": false`` or an
  ``"error"``, see gpulab.records) is listed in .failures and never in the performance lists:
  side 'new' for a new result that failed (matched or not: this fails the comparison), side
  'baseline' for a pair whose baseline failed and new passed (its timing was of wrong output,
  so the pair is not timed against it; this does not fail the comparison).

Comparison.ok is True when there are no regressions and no new result failed its check.
"""

import json
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .records import Record, records_of
from .table import Table

TIME_TOL = 0.04
RATE_TOL = 0.03
PERSIST = 0.75

REGRESSION, IMPROVEMENT, UNCHANGED = "regression", "improvement", "unchanged"


@dataclass
class Metric:
    """One metric of a matched pair: the baseline's and the new median, the relative change,
    and how many of the new samples are past the tolerance in the change's direction."""
    name: str  # 'ms', 'GB/s' or 'GFLOP/s'
    baseline: float
    new: float
    change: float  # (new - baseline) / baseline
    past: int
    runs: int
    verdict: str  # REGRESSION, IMPROVEMENT or UNCHANGED


@dataclass
class Change:
    """A matched pair and its verdict."""
    baseline: Record
    new: Record
    verdict: str
    time: Metric
    rate: Optional[Metric]  # None where the baseline did no work by the cost model

    @property
    def deciding(self) -> Metric:
        """The metric behind the verdict: the one that regressed (or improved); the time when
        nothing moved."""
        for metric in (self.rate, self.time):
            if metric is not None and metric.verdict == self.verdict:
                return metric
        return self.time


@dataclass
class Failure:
    """A result whose correctness check failed. side: 'new' or 'baseline'; partner: the
    matched result on the other side, if any."""
    record: Record
    side: str
    partner: Optional[Record] = None

    @property
    def error(self) -> str:
        return self.record.error


@dataclass
class Comparison:
    regressions: List[Change] = field(default_factory=list)
    improvements: List[Change] = field(default_factory=list)
    unchanged: List[Change] = field(default_factory=list)
    failures: List[Failure] = field(default_factory=list)
    added: List[Record] = field(default_factory=list)
    removed: List[Record] = field(default_factory=list)
    superseded: Dict[str, int] = field(default_factory=dict)  # side -> duplicates dropped
    tolerances: Dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.regressions and not any(f.side == "new" for f in self.failures)

    @property
    def matched(self) -> int:
        """How many pairs were compared for performance."""
        return len(self.regressions) + len(self.improvements) + len(self.unchanged)

    @property
    def table(self) -> Table:
        """One row per result: failures, regressions, improvements, unchanged, added,
        removed. 'runs past' counts the new samples past the tolerance on the metric that
        decided."""
        rows = [_failure_row(f) for f in self.failures]
        for changes in (self.regressions, self.improvements, self.unchanged):
            rows += [_change_row(c) for c in changes]
        rows += [_lone_row("added", r) for r in self.added]
        rows += [_lone_row("removed", r) for r in self.removed]
        return Table(rows, {"what": "compare", **self.tolerances})

    def summary(self) -> str:
        """One line: OK or FAIL, and how many results went where."""
        plural = lambda n, word: f"{n} {word}{'' if n == 1 else 's'}"
        text = ", ".join([plural(len(self.regressions), "regression"),
                          plural(len(self.improvements), "improvement"),
                          f"{len(self.unchanged)} unchanged",
                          plural(len(self.failures), "failed check"),
                          f"{len(self.added)} added", f"{len(self.removed)} removed"])
        dropped = sum(self.superseded.values())
        if dropped:
            text += f"; {plural(dropped, 'older duplicate')} ignored"
        return f"{'OK' if self.ok else 'FAIL'}: {text}"

    def __str__(self):
        t = self.tolerances
        rules = (f"tolerances: time {t['time_tol']:.1%}, rate {t['rate_tol']:.1%}; a change "
                 f"counts when the median and {t['persist']:.0%} of the new runs are past it")
        return "\n".join([self.summary(), rules, repr(self.table)])


def compare(baseline, new, *, time_tol: float = TIME_TOL, rate_tol: float = RATE_TOL,
            persist: float = PERSIST) -> Comparison:
    """Compares new results against baseline results (see the module's docstring for the
    rules). time_tol and rate_tol are fractions (0.04 is 4%); persist is the fraction of the
    new samples that must be past a tolerance for a change to count."""
    for name, value in (("time_tol", time_tol), ("rate_tol", rate_tol)):
        if not _is_number(value) or not 0 <= value < 1:
            raise ValueError(f"{name} must be a fraction in [0, 1), e.g. 0.04 for 4%; got "
                             f"{value!r}")
    if not _is_number(persist) or not 0 < persist <= 1:
        raise ValueError(f"persist must be a fraction in (0, 1], e.g. 0.75; got {persist!r}")
    out = Comparison(tolerances={"time_tol": time_tol, "rate_tol": rate_tol,
                                 "persist": persist})
    base = _by_key(records_of(baseline, "baseline"), "baseline", out)
    fresh = _by_key(records_of(new, "new"), "new", out)
    for key, record in fresh.items():
        partner = base.get(key)
        if record.failed:
            out.failures.append(Failure(record, "new", partner))
        elif partner is None:
            out.added.append(record)
        elif partner.failed:
            out.failures.append(Failure(partner, "baseline", record))
        else:
            change = judge(partner, record, time_tol, rate_tol, persist)
            {REGRESSION: out.regressions, IMPROVEMENT: out.improvements,
             UNCHANGED: out.unchanged}[change.verdict].append(change)
    out.removed = [r for key, r in base.items() if key not in fresh]
    return out


def match_key(record: Record):
    """What makes two results comparable: the same op and variant, run the same way on the same
    problem on the same device."""
    r = record.result
    params = json.dumps(r.params, sort_keys=True, default=str)
    return (r.op, r.variant, r.backend, params, r.size, r.dtype, r.device)


def _by_key(records, side, out):
    keyed = {}
    for record in records:
        keyed[match_key(record)] = record
    if len(keyed) < len(records):
        out.superseded[side] = len(records) - len(keyed)
    return keyed


def judge(baseline: Record, new: Record, time_tol: float, rate_tol: float,
          persist: float) -> Change:
    """The verdict on one matched pair (both sides passed their checks)."""
    b, n = baseline.result, new.result
    samples = n.samples or [n.median_ms]
    time = _metric("ms", b.median_ms, n.median_ms, samples, time_tol, persist,
                   higher_is_better=False)
    compute = n.bound == "compute"
    name, b_work, n_work = ("GFLOP/s", b.flops, n.flops) if compute else ("GB/s", b.bytes,
                                                                            n.bytes)
    b_rate, n_rate = (b.gflops, n.gflops) if compute else (b.gbps, n.gbps)
    rate = None
    if b_work > 0 and b_rate > 0:
        rates = [n_work / s / 1e6 for s in samples if s > 0]
        rate = _metric(name, b_rate, n_rate, rates, rate_tol, persist, higher_is_better=True)
    verdicts = {time.verdict, rate.verdict if rate else UNCHANGED}
    verdict = next(v for v in (REGRESSION, IMPROVEMENT, UNCHANGED) if v in verdicts)
    return Change(baseline, new, verdict, time, rate)


def _metric(name, base, new, samples, tol, persist, higher_is_better):
    """Judges one metric: worse (or better) by more than tol at the median, and in at least
    persist of the samples."""
    if not base > 0:
        return Metric(name, base, new, math.nan, 0, len(samples), UNCHANGED)
    change = (new - base) / base
    sign = 1 if higher_is_better else -1  # sign * change > 0 is better
    worse = [s for s in samples if sign * (s - base) / base < -tol]
    better = [s for s in samples if sign * (s - base) / base > tol]
    needed = persist * len(samples)
    if sign * change < -tol and len(worse) >= needed:
        return Metric(name, base, new, change, len(worse), len(samples), REGRESSION)
    if sign * change > tol and len(better) >= needed:
        return Metric(name, base, new, change, len(better), len(samples), IMPROVEMENT)
    past = worse if sign * change < 0 else better
    return Metric(name, base, new, change, len(past), len(samples), UNCHANGED)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------- the table


def _identity(record: Record):
    r = record.result
    params = ",".join(f"{k}={v}" for k, v in sorted(r.params.items())) or "-"
    return {"op": r.op, "variant": f"{r.variant} {r.variant_name}", "backend": r.backend,
            "dtype": r.dtype, "size": r.size, "params": params}


def _change_row(c: Change):
    rate = c.rate
    return {"status": c.verdict, **_identity(c.new), "base ms": c.time.baseline,
            "new ms": c.time.new, "time %": _percent(c.time.change),
            "rate": rate.name if rate else "-",
            "base rate": rate.baseline if rate else "-", "new rate": rate.new if rate else "-",
            "rate %": _percent(rate.change) if rate else "-",
            "runs past": f"{c.deciding.past}/{c.deciding.runs}", "note": ""}


def _failure_row(f: Failure):
    base, new = (f.partner, f.record) if f.side == "new" else (f.record, f.partner)
    row = _lone_row("FAILED" if f.side == "new" else "baseline failed", f.record)
    row["base ms"] = base.result.median_ms if base else "-"
    row["new ms"] = new.result.median_ms if new else "-"
    row["note"] = f.error
    return row


def _lone_row(status, record: Record):
    ms = record.result.median_ms
    return {"status": status, **_identity(record),
            "base ms": ms if status == "removed" else "-",
            "new ms": ms if status == "added" else "-",
            "time %": "-", "rate": "-", "base rate": "-", "new rate": "-", "rate %": "-",
            "runs past": "-", "note": ""}


def _percent(change):
    return "-" if math.isnan(change) else f"{100 * change:+.1f}"
