"""Welford running moments of a batch of vectors, and the shrunk variance built on them. NumPy
only.

One rule for every sampler that estimates a proposal scale from its own draws: the running
mean and sum of squared deviations (Welford 1962) as an immutable record, updated by a pure
function, and the sample variance shrunk towards a floor with weight ``5 / (n + 5)`` as Stan
does. The arrays may have any shape (``(n_params,)`` for one chain, ``(n_rungs, n_params)`` for
a ladder of replicas). :func:`covariance_update` keeps the running sum of outer products
instead, per leading index (a covariance per rung), for the dense proposals.
"""

from typing import NamedTuple

import numpy as np

__all__ = [
    "Moments",
    "moments_init",
    "welford_update",
    "variance",
    "shrunk_variance",
    "covariance_init",
    "covariance_update",
]


class Moments(NamedTuple):
    """Count, running mean and running sum of squared deviations from the mean."""

    count: int
    mean: np.ndarray
    m2: np.ndarray


def moments_init(shape) -> Moments:
    """Empty moments of arrays of ``shape`` (an int or a tuple)."""
    return Moments(0, np.zeros(shape), np.zeros(shape))


def welford_update(moments: Moments, x) -> Moments:
    """Add one draw ``x`` to the running mean and sum of squared deviations (Welford 1962)."""
    count = moments.count + 1
    delta = x - moments.mean
    mean = moments.mean + delta / count
    return Moments(count, mean, moments.m2 + delta * (x - mean))


def variance(moments: Moments) -> np.ndarray:
    """Sample variance (``ddof = 1``; the sum of squares itself below two draws)."""
    return moments.m2 / max(moments.count - 1, 1)


def shrunk_variance(moments: Moments, floor: float) -> np.ndarray:
    """:func:`variance` shrunk towards ``floor`` with weight ``5 / (n + 5)``, as Stan does.

    Examples
    --------
    >>> m = welford_update(welford_update(moments_init(1), 1.0), 3.0)   # variance 2, n = 2
    >>> float(shrunk_variance(m, 1e-3)[0])   # (2/7) * 2 + (5/7) * 1e-3
    0.5721428571428571
    """
    n = moments.count
    return (n / (n + 5.0)) * variance(moments) + floor * (5.0 / (n + 5.0))


def covariance_init(shape) -> Moments:
    """Empty cross moments of vectors of ``shape`` ``(..., d)``; ``m2`` is ``(..., d, d)``."""
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    return Moments(0, np.zeros(shape), np.zeros((*shape, shape[-1])))


def covariance_update(moments: Moments, x) -> Moments:
    """Add one draw ``x`` of shape ``(..., d)`` to the running mean and the running sum of outer
    products of deviations (Welford 1962, the covariance form), per leading index: the sample
    covariance of each leading index is ``m2 / (count - 1)``."""
    count = moments.count + 1
    delta = x - moments.mean
    mean = moments.mean + delta / count
    return Moments(count, mean, moments.m2 + delta[..., :, None] * (x - mean)[..., None, :])
