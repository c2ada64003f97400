"""Both legs of a two-leg run (``ExchangeMC(reference="variational")``) in one figure: one row
of a plot's panels per leg, each drawn by the plot itself with ``leg=``."""

import numpy as np

from pymc_tempering.plots._axes import new_axes
from pymc_tempering.trace import LEGS, has_variational_leg

__all__ = ["has_two_legs", "each_leg", "leg_label"]


def has_two_legs(data, leg) -> bool:
    """Whether a plot of ``data`` with ``leg`` (None: every leg there is) shows both legs."""
    return leg is None and has_variational_leg(data)


def each_leg(plot, data, ax, ncols=1, figsize=(7.0, 4.0), subplot_kw=None, **kwargs):
    """``plot(data, leg=..., ax=row, **kwargs)`` for each leg, one row of ``ncols`` panels
    each (``ax``: the caller's ``2 * ncols`` axes, row by row); ``(fig, axes)``, axes flat."""
    width, height = figsize
    fig, axes = new_axes(ax, ncols=ncols, nrows=len(LEGS), figsize=(width, 2 * height),
                         **(subplot_kw or {}))  # fmt: skip
    rows = np.asarray(axes).reshape(len(LEGS), ncols)
    for leg, row in zip(LEGS, rows, strict=True):
        plot(data, leg=leg, ax=row if ncols > 1 else row[0], **kwargs)
    return fig, axes


def leg_label(ds, leg) -> str:
    """``"variational leg"`` (or ``"prior leg"``) where a leg was asked for or ``ds`` (a
    tempering Dataset) is the variational one; ``""`` for a one-leg run's plot, unchanged."""
    found = ds.attrs.get("leg", "prior")
    return f"{found} leg" if leg is not None or found != "prior" else ""
