"""compare(): new benchmark results against a baseline, by the rules of S3 §12.5.

    from gpulab import store
    from gpulab.compare import compare
    c = compare(store.load(tag="baseline"), gl.sweep(gl.reduce, d, variant=range(7)))
    print(c)          # a line of counts, the rules, a line per change, a table of every result
    c.ok              # False on any regression or failed correctness check
    c.regressions     # [Change]: .baseline, .new (Records), .time and .rate (Metric: the
                      # change, its bootstrap interval .low/.high, the rank test's .p)

The sides are anything gpulab.records takes: BenchResults, a SweepResults, result dicts, a
saved {"meta", "results"} document, or Records from store.load(). A result on one side is
matched with the result on the other that has the same op, variant, backend, params (the launch
configuration), size, dtype and device; where one side has a key more than once, the last one
counts (load() returns oldest first, so that is the newest) and .superseded says how many were
dropped. Results with no partner are listed in .added (only in new) and .removed (only in the
baseline).

The rules, for each matched pair:
- Two metrics, each with its own minimum effect: the time (the median, in ms; lower is better;
  ``time_tol``, default 4%, inside S3's 3-5%) and the rate that bounds the op (GB/s for a
  memory-bound result, GFLOP/s for a compute-bound one, from the new result's ``bound``; higher
  is better; ``rate_tol``, default 3%, inside S3's 2-4%). The change is the ratio of the
  medians less one: (new - baseline) / baseline. The rate gate is the tighter one (a 3% rate
  drop is a 3.1% slowdown); the time gate still catches a slowdown where the two sides' cost
  models (bytes, flops) differ and the rate hides it.
- The noise model: each side's per-repetition samples (BenchResult.samples). A change counts
  only when the samples say it is no accident AND that it is at least its minimum effect, as
  criterion.rs decides: a Mann-Whitney U rank test rejects "one distribution" (two-sided p
  below 1 - ``confidence``, default 0.999), and the bootstrap interval of the ratio of
  medians (at ``confidence``; ``resamples`` draws, seeded from ``seed`` and the pair, so a
  comparison always gives the same answer) lies wholly past the tolerance. A spike in a few
  repetitions moves neither the median nor the ranks; a shift of the whole distribution
  moves both. Two runs of the same code are then flagged less than once in 1 / (1 -
  confidence) pairs, however noisy; a real change is caught once the runs are enough to pin
  both medians (20 event-timed runs at 1% noise show a 10% slowdown; host timings with 30%
  spread need a few thousand); a change past the tolerance that the samples cannot tell
  from noise is noted "within noise".
- What the tests cannot see: they compare the two runs' samples, so a shift of the whole
  machine between the runs (another process loading the CPU) reads as a change like any
  other. Host-timed results on a shared machine are noise (CONTRIBUTING.md, The rules); with 5
  samples a side (the main job's CPU results) the smallest p the rank test can give is 0.008,
  so at the default confidence those are never flagged, only shown with their interval.
- Results saved with fewer than 3 samples on a side (nbody_ladder.json's have none) cannot be
  tested: they are judged on their medians alone, against the minimum effect, and the table
  says "medians only".
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

import functools
import json
import math
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from .records import Record, records_of
from .table import Table, html_table

TIME_TOL = 0.04
RATE_TOL = 0.03
CONFIDENCE = 0.999
RESAMPLES = 10_000
SEED = 0
# fewer samples than this on a side: no test, the medians alone decide
MIN_SAMPLES = 3
# the exact null distribution of U up to this many samples a side (without ties); past it the
# normal approximation is within a fraction of a percent
EXACT_MAX = 50

REGRESSION, IMPROVEMENT, UNCHANGED = "regression", "improvement", "unchanged"


@dataclass
class Metric:
    """One metric of a matched pair: the baseline's and the new median, the relative change
    with its bootstrap interval (low, high: at the comparison's confidence, as changes), the
    rank test's two-sided p, and how many samples each side had. tested is False where a
    side had too few samples for the tests (low, high and p are then NaN)."""
    name: str  # 'ms', 'GB/s' or 'GFLOP/s'
    baseline: float
    new: float
    change: float  # (new - baseline) / baseline
    low: float
    high: float
    p: float
    base_runs: int
    runs: int
    verdict: str  # REGRESSION, IMPROVEMENT or UNCHANGED
    tested: bool = True
    tol: float = 0.0  # the minimum effect it was judged against

    @property
    def interval(self) -> str:
        """'[+7.9%, +12.1%]', or 'medians only' where the samples were too few to test."""
        if not self.tested:
            return "medians only"
        return f"[{100 * self.low:+.1f}%, {100 * self.high:+.1f}%]"


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
    # time_tol, rate_tol (minimum effects), confidence, resamples, seed
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
        removed; each change with its bootstrap interval and the rank test's p on the metric
        that decided."""
        rows = [_failure_row(f) for f in self.failures]
        for changes in (self.regressions, self.improvements, self.unchanged):
            rows += [_change_row(c, self.tolerances["confidence"]) for c in changes]
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

    def rules(self) -> str:
        """One line: the minimum effects and the confidence that a change must pass."""
        t = self.tolerances
        return (f"tolerances: time {t['time_tol']:.1%}, rate {t['rate_tol']:.1%}; a change "
                f"counts when a Mann-Whitney test on the runs gives p < "
                f"{1 - t['confidence']:.2g} and its {t['confidence']:.1%} bootstrap interval "
                f"(ratio of medians) lies wholly past the tolerance")

    def verdicts(self) -> List[str]:
        """A line per regression and improvement: what moved, by how much, its interval and
        p."""
        lines = []
        for verdict, changes in ((REGRESSION, self.regressions),
                                 (IMPROVEMENT, self.improvements)):
            for c in changes:
                m = c.deciding
                what = "time" if m.name == "ms" else m.name
                p = "" if not m.tested else f", p = {m.p:.2g}"
                lines.append(f"{verdict}: {_title(c.new)}: {what} {100 * m.change:+.1f}% "
                             f"(interval {m.interval}{p}; {m.base_runs} vs {m.runs} runs)")
        return lines

    def __str__(self):
        return "\n".join([self.summary(), self.rules(), *self.verdicts(), repr(self.table)])

    def _repr_html_(self):
        """The summary, the rules and the table, in HTML (Jupyter shows this)."""
        t = self.table
        columns = t.columns
        return html_table(columns, [[row.get(c) for c in columns] for row in t],
                          caption=f"{self.summary()}. {self.rules()}")


def compare(baseline, new, *, time_tol: float = TIME_TOL, rate_tol: float = RATE_TOL,
            confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
            seed: int = SEED) -> Comparison:
    """Returns the Comparison of new results against baseline results (see the module's
    docstring for the rules). time_tol and rate_tol are the minimum effects, as fractions
    (0.04 is 4%); confidence is that of the bootstrap interval, and 1 - confidence the rank
    test's threshold on p; resamples and seed drive the bootstrap."""
    for name, value in (("time_tol", time_tol), ("rate_tol", rate_tol)):
        if not _is_number(value) or not 0 <= value < 1:
            raise ValueError(f"{name} must be a fraction in [0, 1), e.g. 0.04 for 4%; got "
                             f"{value!r}")
    if not _is_number(confidence) or not 0.5 <= confidence < 1:
        raise ValueError(f"confidence must be a fraction in [0.5, 1), e.g. 0.99; got "
                         f"{confidence!r}")
    if not isinstance(resamples, int) or isinstance(resamples, bool) or resamples < 100:
        raise ValueError(f"resamples must be an integer >= 100, got {resamples!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    rules = {"time_tol": time_tol, "rate_tol": rate_tol, "confidence": confidence,
             "resamples": resamples, "seed": seed}
    out = Comparison(tolerances=rules)
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
            change = judge(partner, record, time_tol, rate_tol, confidence, resamples,
                           _pair_seed(seed, key))
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


def _pair_seed(seed, key):
    """The bootstrap's seed for one pair: the same pair draws the same resamples whatever
    else is compared beside it."""
    return [seed, zlib.crc32(repr(key).encode())]


def _by_key(records, side, out):
    keyed = {}
    for record in records:
        keyed[match_key(record)] = record
    if len(keyed) < len(records):
        out.superseded[side] = len(records) - len(keyed)
    return keyed


def judge(baseline: Record, new: Record, time_tol: float = TIME_TOL,
          rate_tol: float = RATE_TOL, confidence: float = CONFIDENCE,
          resamples: int = RESAMPLES, seed=SEED) -> Change:
    """Returns the verdict on one matched pair (both sides passed their checks)."""
    b, n = baseline.result, new.result
    b_times, n_times = b.samples or [b.median_ms], n.samples or [n.median_ms]
    rng = np.random.default_rng(seed)
    time = _metric("ms", b.median_ms, n.median_ms, b_times, n_times, time_tol, confidence,
                   resamples, rng, higher_is_better=False)
    compute = n.bound == "compute"
    name, b_work, n_work = ("GFLOP/s", b.flops, n.flops) if compute else ("GB/s", b.bytes,
                                                                            n.bytes)
    b_rate, n_rate = (b.gflops, n.gflops) if compute else (b.gbps, n.gbps)
    rate = None
    if b_work and n_work and b_rate and n_rate and b_work > 0 and b_rate > 0:
        b_rates = [b_work / t / 1e6 for t in b_times if t > 0]
        n_rates = [n_work / t / 1e6 for t in n_times if t > 0]
        rate = _metric(name, b_rate, n_rate, b_rates, n_rates, rate_tol, confidence,
                       resamples, rng, higher_is_better=True)
    verdicts = {time.verdict, rate.verdict if rate else UNCHANGED}
    verdict = next(v for v in (REGRESSION, IMPROVEMENT, UNCHANGED) if v in verdicts)
    return Change(baseline, new, verdict, time, rate)


def _metric(name, base, new, base_samples, new_samples, tol, confidence, resamples, rng,
            higher_is_better):
    """Judges one metric: a change past tol whose bootstrap interval and rank test both
    exclude no change (see the module's docstring); the medians alone where a side has
    fewer than MIN_SAMPLES samples."""
    runs = {"base_runs": len(base_samples), "runs": len(new_samples), "tol": tol}
    nan = math.nan
    if not base > 0:
        return Metric(name, base, new, nan, nan, nan, nan, verdict=UNCHANGED, tested=False,
                      **runs)
    change = (new - base) / base
    sign = 1 if higher_is_better else -1  # sign * change > 0 is better
    if min(runs["base_runs"], runs["runs"]) < MIN_SAMPLES:
        verdict = (REGRESSION if sign * change < -tol else
                   IMPROVEMENT if sign * change > tol else UNCHANGED)
        return Metric(name, base, new, change, nan, nan, nan, verdict=verdict, tested=False,
                      **runs)
    low, high = bootstrap_ratio_interval(base_samples, new_samples, confidence, resamples, rng)
    _, p = mann_whitney(new_samples, base_samples)
    significant = p < 1 - confidence
    # the whole interval past the tolerance: confident that the change is at least tol
    worse = high < 1 - tol if sign > 0 else low > 1 + tol
    better = low > 1 + tol if sign > 0 else high < 1 - tol
    verdict = (REGRESSION if significant and worse else
               IMPROVEMENT if significant and better else UNCHANGED)
    return Metric(name, base, new, change, low - 1, high - 1, p, verdict=verdict, **runs)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------- the statistics


def bootstrap_ratio_interval(base, new, confidence=CONFIDENCE, resamples=RESAMPLES, rng=None):
    """Returns (low, high): the percentile bootstrap interval, at confidence, of
    median(new) / median(base), each side resampled with replacement on its own. rng: a
    numpy Generator (default: seeded with SEED, so the answer is the same every time)."""
    rng = np.random.default_rng(SEED) if rng is None else rng
    ratios = bootstrap_medians(new, resamples, rng) / bootstrap_medians(base, resamples, rng)
    tail = (1 - confidence) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    return float(low), float(high)


def bootstrap_medians(samples, resamples, rng):
    """Returns the medians of resamples bootstrap resamples of samples (n values drawn with
    replacement), drawn in O(1) each whatever n.

    The k-th smallest of n indices drawn uniformly from range(n) is floor(n * U_(k)), U_(k)
    the k-th smallest of n uniforms on [0, 1): Beta(k, n - k + 1); the next one up is
    U_(k) + (1 - U_(k)) * Beta(1, n - k). So a resample's median (the middle order statistic,
    or the mean of the two middle ones) is drawn from its exact law, with no n-sized draw."""
    x = np.sort(np.asarray(samples, dtype=float))
    n = len(x)
    k = (n + 1) // 2  # the median's rank from 1; the lower middle one for even n
    u = rng.beta(k, n - k + 1, resamples)
    lower = x[np.minimum((n * u).astype(np.int64), n - 1)]
    if n % 2:
        return lower
    above = u + (1 - u) * rng.beta(1, n - k, resamples)
    return (lower + x[np.minimum((n * above).astype(np.int64), n - 1)]) / 2


def rank(values):
    """Returns the ranks of values, 1 for the smallest; tied values share their mean rank."""
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts_group = np.r_[True, ordered[1:] != ordered[:-1]]
    group = np.cumsum(starts_group) - 1
    sizes = np.bincount(group)
    last = np.cumsum(sizes)  # 1-based rank of each group's last member
    ranks = np.empty(len(values))
    ranks[order] = (last - (sizes - 1) / 2)[group]
    return ranks


def mann_whitney(x, y):
    """Returns (U, p): the Mann-Whitney U of x (the pairs in which x's value is the larger,
    ties counting one half) and the two-sided p of the hypothesis that x and y come from one
    distribution. Exact without ties up to EXACT_MAX samples a side; else the normal
    approximation, corrected for ties and for continuity."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    m, n = len(x), len(y)
    if m == 0 or n == 0:
        raise ValueError("mann_whitney needs samples on both sides")
    ranks = rank(np.concatenate([x, y]))
    u = float(ranks[:m].sum() - m * (m + 1) / 2)
    sizes = np.unique(ranks, return_counts=True)[1]
    if sizes.max() == 1 and max(m, n) <= EXACT_MAX:
        counts = _u_counts(min(m, n), max(m, n))  # U's law is symmetric in the two sides
        total = counts.sum()
        k = int(round(u))
        below, above = counts[:k + 1].sum() / total, counts[k:].sum() / total
        return u, float(min(1.0, 2 * min(below, above)))
    total_n = m + n
    tie_term = float((sizes ** 3 - sizes).sum()) / (total_n * (total_n - 1))
    variance = m * n / 12 * ((total_n + 1) - tie_term)
    if variance <= 0:  # every value equal: no evidence of any difference
        return u, 1.0
    z = (abs(u - m * n / 2) - 0.5) / math.sqrt(variance)
    return u, float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


@functools.lru_cache(maxsize=64)
def _u_counts(m, n):
    """counts[u]: in how many of the C(m+n, m) orderings of m x's and n y's the x's win u
    pairs. The largest value is an x (it wins against all n y's) or a y: so
    counts(m, n) = counts(m-1, n) shifted by n, plus counts(m, n-1)."""
    row = [np.ones(1) for _ in range(n + 1)]  # m = 0: no pairs won
    for i in range(1, m + 1):
        current = [np.ones(1)]  # n = 0: no pairs
        for j in range(1, n + 1):
            counts = np.zeros(i * j + 1)
            counts[j:j + len(row[j])] += row[j]
            counts[:len(current[j - 1])] += current[j - 1]
            current.append(counts)
        row = current
    return row[n]


# ---------------------------------------------------------------- the table


def _title(record: Record) -> str:
    r = record.result
    params = ",".join(f"{k}={v}" for k, v in sorted(r.params.items()))
    variant = "" if r.variant is None else f"[{r.variant} {r.variant_name}]"
    return f"{r.op}{variant}" + (f" {params}" if params else "") + f" n={r.size} {r.dtype}"


def _identity(record: Record):
    r = record.result
    params = ",".join(f"{k}={v}" for k, v in sorted(r.params.items())) or "-"
    variant = "-" if r.variant is None else f"{r.variant} {r.variant_name}"
    return {"op": r.op, "variant": variant, "backend": r.backend, "dtype": r.dtype,
            "size": r.size, "params": params}


def _change_row(c: Change, confidence: float):
    rate, deciding = c.rate, c.deciding
    return {"status": c.verdict, **_identity(c.new), "base ms": c.time.baseline,
            "new ms": c.time.new, "time %": _percent(c.time.change),
            "rate": rate.name if rate else "-",
            "base rate": rate.baseline if rate else "-", "new rate": rate.new if rate else "-",
            "rate %": _percent(rate.change) if rate else "-",
            "interval": deciding.interval,
            "p": f"{deciding.p:.2g}" if deciding.tested else "-",
            "runs": f"{deciding.base_runs}/{deciding.runs}", "note": _noise_note(c, confidence)}


def _noise_note(c: Change, confidence: float):
    """For an unchanged pair whose median moved past a tolerance anyway: 'within noise', or
    'too few runs' where even complete separation of the two sides' samples could not reach
    the rank test's threshold (5 vs 5 runs: p >= 0.008)."""
    if c.verdict != UNCHANGED:
        return ""
    moved = [m for m in (c.time, c.rate) if m is not None and m.tested
             and abs(m.change) > m.tol]
    if not moved:
        return ""
    m = moved[0]
    if 2 / math.comb(m.base_runs + m.runs, m.runs) >= 1 - confidence:
        return f"too few runs to tell ({m.base_runs} vs {m.runs})"
    return "within noise"


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
            "interval": "-", "p": "-", "runs": "-", "note": ""}


def _percent(change):
    return "-" if math.isnan(change) else f"{100 * change:+.1f}"
