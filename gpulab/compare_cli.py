"""python -m gpulab compare BASE NEW: compare() from the shell, for CI and for people.

    python -m gpulab compare base.json new.json
    python -m gpulab compare store:tag=baseline new.json --time-tol 5
    python -m gpulab compare store:commit=5246f06,op=reduce store:tag=nightly --store runs.sqlite

BASE and NEW are each a JSON file of results (what ``python -m gpulab --json`` writes, or a
benchmarks/results/*.json that holds BenchResult records) or a selection from the store:
``store:`` then filters of ``gpulab.store.load`` as NAME=VALUE separated by commas (op, variant,
backend, device, dtype, size, commit, tag, since, until, run); ``store:`` alone selects every
stored result. Where a selection holds a result more than once, the newest counts.

A change counts when a Mann-Whitney rank test on the per-run samples gives p < 1 - CONFIDENCE
and the seeded bootstrap interval of the ratio of medians (at --confidence) lies wholly past
its tolerance (the minimum effect: --time-tol, --rate-tol); the output gives each regression's
and improvement's change with that interval and p, and notes a change past the tolerance that
the runs cannot tell from noise.

Exit status: 0 when nothing regressed (a change inside the noise is no regression) and no new
result failed its check; 1 on a regression or a failed check; 2 on bad input (an unreadable
file, no results, a bad selection, tolerance or confidence, or two sides with no result in
common), with the reason on stderr.
"""

import argparse
import json
import sys

from . import store
from .compare import CONFIDENCE, RATE_TOL, SEED, TIME_TOL, compare
from .records import records_of

STORE_PREFIX = "store:"
INTEGER_FILTERS = ("variant", "size", "run")


class BadInput(Exception):
    """What makes the command exit with status 2."""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpulab compare", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", metavar="BASE", help="the baseline: a JSON file or store:...")
    parser.add_argument("new", metavar="NEW", help="the new results: a JSON file or store:...")
    parser.add_argument("--store", metavar="PATH",
                        help="the store for store: selections (default: gpulab.store's)")
    parser.add_argument("--time-tol", type=float, default=100 * TIME_TOL, metavar="PCT",
                        help="the smallest change of the time that counts, in percent "
                             "(default %(default)g)")
    parser.add_argument("--rate-tol", type=float, default=100 * RATE_TOL, metavar="PCT",
                        help="the smallest change of GB/s or GFLOP/s that counts, in percent "
                             "(default %(default)g)")
    parser.add_argument("--confidence", type=float, default=CONFIDENCE, metavar="FRAC",
                        help="confidence of the bootstrap interval; the rank test's p must "
                             "be below 1 - FRAC (default %(default)g)")
    parser.add_argument("--seed", type=int, default=SEED,
                        help="seed of the bootstrap (default %(default)d)")
    args = parser.parse_args(argv)
    for option, value in (("--time-tol", args.time_tol), ("--rate-tol", args.rate_tol)):
        if not 0 <= value < 100:
            return _bad(f"{option} is a percentage in [0, 100), got {value:g}")
    if not 0.5 <= args.confidence < 1:
        return _bad(f"--confidence is a fraction in [0.5, 1), got {args.confidence:g}")
    if args.seed < 0:
        return _bad(f"--seed is an integer >= 0, got {args.seed}")
    try:
        base = read_side(args.base, "BASE", args.store)
        new = read_side(args.new, "NEW", args.store)
        result = compare(base, new, time_tol=args.time_tol / 100,
                         rate_tol=args.rate_tol / 100, confidence=args.confidence,
                         seed=args.seed)
    except BadInput as e:
        return _bad(str(e))
    print(result)
    if not result.ok:
        return 1
    if result.matched == 0 and not result.failures:
        return _bad("no result in NEW has a partner in BASE: results are compared when they "
                    "have the same op, variant, backend, params, size, dtype and device")
    return 0


def read_side(text, name, store_file=None):
    """The records that BASE or NEW names."""
    if text.startswith(STORE_PREFIX):
        filters = parse_selection(text[len(STORE_PREFIX):], name)
        try:
            records = store.load(store_file, **filters)
        except (OSError, ValueError, TypeError) as e:
            raise BadInput(f"{name} {text}: {e}") from e
        if not records:
            raise BadInput(f"{name} {text} selects no results in {store.store_path(store_file)}")
        return records
    try:
        with open(text) as f:
            document = json.load(f)
    except OSError as e:
        raise BadInput(f"{name}: cannot read {text}: {e.strerror or e}") from e
    except ValueError as e:
        raise BadInput(f"{name}: {text} is not JSON: {e}") from e
    try:
        records = records_of(document, "the file")
    except (ValueError, TypeError) as e:
        raise BadInput(f"{name} {text}: {e}") from e
    if not records:
        raise BadInput(f"{name}: {text} holds no results")
    return records


def parse_selection(text, name):
    """'tag=baseline,op=reduce' as load()'s filters."""
    filters = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not key:
            raise BadInput(f"{name}: '{part}' is not NAME=VALUE in the selection "
                           f"'{STORE_PREFIX}{text}'")
        if key not in store.FILTERS:
            raise BadInput(f"{name}: unknown filter '{key}' in '{STORE_PREFIX}{text}'; the "
                           f"filters are {', '.join(store.FILTERS)}")
        value = value.strip()
        if key in INTEGER_FILTERS and value.lstrip("-").isdigit():
            value = int(value)
        elif key in ("size", "run"):
            raise BadInput(f"{name}: {key} must be an integer, got '{value}'")
        filters[key] = value
    return filters


def _bad(message):
    print(f"python -m gpulab compare: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
