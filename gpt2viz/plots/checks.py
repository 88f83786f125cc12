"""Checks on what the builders are given: each raises a ValueError that names the argument, the
expected shape and what it got."""

import math
import numbers

import numpy as np


def numeric(a: np.ndarray, name: str) -> np.ndarray:
    if a.dtype == bool or not np.issubdtype(a.dtype, np.number):
        raise ValueError(f"{name} must be numeric, got dtype {a.dtype}")
    if a.size == 0:
        raise ValueError(f"{name} is empty (shape {a.shape})")
    a = a.astype(np.promote_types(a.dtype, np.float32), copy=False)  # float32 stays float32
    bad = int(a.size - np.count_nonzero(np.isfinite(a)))
    if bad:
        raise ValueError(f"{name} has {bad:,} non-finite values (NaN or ±inf)")
    return a


def array(x, name: str, dims: str) -> np.ndarray:
    """`x` as a finite float array with the axes named in `dims` ("T, L")."""
    a = np.asarray(x)
    n_dims = len(dims.split(", "))
    if a.ndim != n_dims:
        raise ValueError(f"{name} must be {n_dims}-D [{dims}], got shape {a.shape}")
    return numeric(a, name)


def values(x, name: str) -> np.ndarray:
    """`x` of any shape, flattened to a finite float vector."""
    return numeric(np.asarray(x).ravel(), name)


def labels(labels, n: int, name: str, what: str) -> list[str]:
    """`labels` as n strings; `what` says where n comes from ("pattern has T = 4 rows")."""
    if isinstance(labels, str):
        raise ValueError(f"{name} must be a list of strings, got one string {labels!r}")
    labels = [str(label) for label in labels]
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels but {what}")
    return labels


def integer(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def index(value, n: int, name: str) -> int:
    """An index into n items; negative values count from the end, as in Python."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not -n <= value < n:
        raise ValueError(f"{name} must be in [0, {n}) (or [-{n}, 0) from the end), got {value}")
    return int(value) % n


def integers(values, name: str) -> list[int]:
    """A non-empty list of non-negative integers (counts, byte sizes, lengths)."""
    a = np.asarray(values)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D list of integers, got shape {a.shape}")
    if a.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integers, got dtype {a.dtype}")
    if (a < 0).any():
        raise ValueError(f"{name} must be >= 0, got {int(a.min())} at index {int(a.argmin())}")
    return [int(v) for v in a]


def unique(labels: list[str], name: str) -> list[str]:
    seen = set()
    for label in labels:
        if label in seen:
            raise ValueError(f"{name} must be unique, {label!r} appears more than once")
        seen.add(label)
    return labels


def value_range(x_range) -> tuple[float, float]:
    message = f"x_range must be two finite numbers (lo, hi) with lo < hi, got {x_range!r}"
    try:
        lo, hi = (float(v) for v in x_range)
    except (TypeError, ValueError):
        raise ValueError(message) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(message)
    return lo, hi


def mask(mask, shape: tuple[int, int]) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise ValueError(f"mask must be boolean (True = masked), got dtype {mask.dtype}")
    if mask.shape != shape:
        raise ValueError(f"mask must have the scores' shape {shape}, got {mask.shape}")
    return mask
