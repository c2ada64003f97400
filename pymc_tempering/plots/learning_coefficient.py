"""The learning coefficient's curve over the ladder, from
:func:`pymc_tempering.learning_coefficient`'s result."""

import numpy as np

from pymc_tempering.plots._axes import new_axes

__all__ = ["plot_learning_coefficient"]


def plot_learning_coefficient(result, *, reference=None, band=2.0, ax=None):
    r"""The learning coefficient's curve over the ladder, from
    :func:`pymc_tempering.learning_coefficient`'s result.

    Both estimators against :math:`\beta` (log axis): the fluctuation form
    :math:`\beta^2\mathrm{Var}_\beta[\ell]` per rung and the two-temperature form per rung pair
    (at the pair's geometric mean), with ``band`` x MCSE bars, and :math:`\beta^* = 1/\log n`
    marked. For a regular model the curve is flat at :math:`d/2` once :math:`n\beta` is large;
    a singular one sits below.

    Parameters
    ----------
    result : xarray.Dataset
        The output of :func:`pymc_tempering.learning_coefficient`.
    reference : float or dict of {str: float}, optional
        Horizontal lines to draw, e.g. ``{"d/2": 1.0, "lambda": 0.5}``.
    band : float, default 2.0
        The error bars' half-width, in MCSEs.
    ax : matplotlib Axes, optional
        Axes to draw into; default ``None``: a new figure.

    Returns
    -------
    fig, ax
    """
    if "fluctuation_curve" not in result:
        raise ValueError(
            "Expected the Dataset returned by pmt.learning_coefficient(idata, n_obs=...)."
        )
    fig, (axis,) = new_axes(ax)
    beta = result["beta_rung"].values
    keep = beta > 0
    axis.errorbar(
        beta[keep],
        result["fluctuation_curve"].values[keep],
        yerr=band * result["fluctuation_curve_mcse"].values[keep],
        fmt="o-",
        ms=3,
        capsize=2,
        label=r"fluctuation $\beta^2\,\mathrm{Var}_\beta[\ell]$",
    )
    lower, upper = result["beta_lower"].values, result["beta_upper"].values
    pair = lower > 0
    axis.errorbar(
        np.sqrt(lower[pair] * upper[pair]),
        result["two_temperature_curve"].values[pair],
        yerr=band * result["two_temperature_curve_mcse"].values[pair],
        fmt="s--",
        ms=3,
        capsize=2,
        label="two-temperature (rung pairs)",
    )
    axis.axvline(float(result["beta"]), color="0.4", lw=0.8, ls=":")
    axis.annotate(
        r"$\beta^* = 1/\log n$",
        (float(result["beta"]), 0.02),
        xycoords=("data", "axes fraction"),
        rotation=90,
        fontsize=8,
    )
    if reference is not None:
        refs = reference if isinstance(reference, dict) else {"reference": reference}
        for i, (name, value) in enumerate(refs.items()):
            axis.axhline(value, color=f"C{i + 2}", lw=1, label=name)
    axis.set_xscale("log")
    axis.set_xlabel(r"$\beta$")
    axis.set_ylabel(r"$\hat\lambda$")
    axis.set_title(f"learning coefficient over the ladder (n = {result.attrs['n_obs']})")
    axis.legend(fontsize=8)
    return fig, axis
