"""Argument checks and progress bars shared by the lab modules (gl.memory, gl.streams):
errors name the argument (TypeError for a wrong type, ValueError for a wrong value)."""

import numbers

from ..sweep import _progress as progress_bar  # noqa: F401 (shared with the lab modules)


def int_arg(name, value, low=1, high=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    value = int(value)
    if value < low or (high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def choice_arg(name, value, allowed):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def int_list(name, values, low=1, multiple=1):
    """A non-empty list of ints >= low (each a multiple of `multiple`) from an int or iterable."""
    if isinstance(values, numbers.Integral) and not isinstance(values, bool):
        values = [values]
    try:
        values = list(values)
    except TypeError:
        raise TypeError(f"{name} must be an int or a sequence of ints, not "
                        f"{type(values).__name__}") from None
    if not values:
        raise ValueError(f"{name} must not be empty")
    out = [int_arg(f"{name}[{i}]", v, low) for i, v in enumerate(values)]
    bad = [v for v in out if v % multiple]
    if bad:
        raise ValueError(f"{name} must be multiples of {multiple}; got {bad[0]}")
    return out


def sizes_arg(sizes, max_bytes, default, multiple):
    """The sizes to measure: the default list or the caller's, without those over max_bytes."""
    sizes = list(default) if sizes is None else int_list("sizes", sizes, multiple, multiple)
    if max_bytes is not None:
        max_bytes = int_arg("max_bytes", max_bytes)
        sizes = [s for s in sizes if s <= max_bytes]
        if not sizes:
            raise ValueError(f"max_bytes={max_bytes} leaves no size to measure")
    return sizes


def tick(bar):
    if bar is not None:
        bar.update(1)


def close(bar):
    if bar is not None:
        bar.close()
