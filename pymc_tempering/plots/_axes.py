"""Axes, ticks and labels shared by the plots: colours, beta tick labels, a figure or the
caller's axes."""

import matplotlib.pyplot as plt
import numpy as np

__all__ = [
    "BLUE",
    "ORANGE",
    "GREY",
    "beta_label",
    "rung_ticks",
    "power_of_two_ticks",
    "new_axes",
    "as_percent",
    "with_error",
]

BLUE, ORANGE, GREY = "C0", "C1", "0.35"


def beta_label(beta: float) -> str:
    """``0``, ``1``, ``2^-k`` for powers of two, else 2 significant digits."""
    if beta == 0 or beta == 1:
        return f"{beta:g}"
    exponent = np.log2(beta)
    if np.isclose(exponent, np.round(exponent)):
        return f"$2^{{{int(np.round(exponent))}}}$"
    return f"{beta:.2g}"


def rung_ticks(n_rungs: int, max_ticks: int = 9) -> np.ndarray:
    """At most ``max_ticks`` rungs at an even step, always the first and the last."""
    step = max(1, int(np.ceil((n_rungs - 1) / (max_ticks - 1))))
    ticks = np.arange(0, n_rungs, step)
    return ticks if ticks[-1] == n_rungs - 1 else np.append(ticks[:-1], n_rungs - 1)


def power_of_two_ticks(beta: np.ndarray, max_ticks: int = 8) -> np.ndarray:
    """Powers of two from 1 down to the smallest ``beta``, at a round exponent step."""
    lowest = int(np.floor(np.log2(beta.min())))
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100) if -lowest / s < max_ticks)
    return 2.0 ** np.arange(0, lowest - 1, -step)[::-1]


def new_axes(ax, ncols=1, nrows=1, figsize=(6.4, 4.0), **kwargs):
    """``(fig, axes)``: the caller's ``ax`` (checked to hold ``ncols * nrows`` axes) or a new
    constrained-layout figure; ``axes`` is a flat array."""
    if ax is not None:
        axes = np.atleast_1d(ax)
        if axes.size != ncols * nrows:
            raise ValueError(f"`ax` must hold {ncols * nrows} axes, got {axes.size}.")
        return axes.flat[0].figure, axes
    fig, axes = plt.subplots(
        nrows, ncols, figsize=figsize, layout="constrained", squeeze=False, **kwargs
    )
    return fig, axes.ravel()


def as_percent(fraction: float) -> str:
    """``0.2`` -> ``"20%"`` (2 significant digits)."""
    return f"{100 * fraction:.2g}%"


def with_error(value: float, error: float, digits: int = 2) -> str:
    r"""``value \pm error`` (TeX) with ``error`` to ``digits`` significant digits and ``value``
    to the same decimal place: ``(-31.23456, 0.0027)`` -> ``-31.2346 \pm 0.0027``, ``(-31.2,
    0.35)`` -> ``-31.20 \pm 0.35``. An error of 0 or not finite leaves the value at 2 decimals
    and writes the error as it is."""
    if not np.isfinite(error) or error <= 0:
        return rf"{value:.2f} \pm {error:g}"
    rounded = float(f"{error:.{digits - 1}e}")  # 0.0996 -> 0.1: two digits, not three
    decimals = max(0, digits - 1 - int(np.floor(np.log10(rounded))))
    return rf"{value:.{decimals}f} \pm {error:.{decimals}f}"
