r"""The thermodynamic-integration curve: :math:`E_\beta[\log p(y \mid \theta)]` against
:math:`\beta`, with its Monte Carlo error band and the area that is :math:`\log Z`.

The numbers come from :func:`pymc_tempering.evidence.tempered.thermodynamic_integration`;
nothing is recomputed here.
"""

import numpy as np
import xarray as xr
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from pymc_tempering.evidence.tempered import thermodynamic_integration
from pymc_tempering.plots._axes import (
    BLUE,
    GREY,
    ORANGE,
    as_percent,
    beta_label,
    new_axes,
    power_of_two_ticks,
    with_error,
)
from pymc_tempering.plots._legs import each_leg, has_two_legs, leg_label

__all__ = ["plot_ti_curve"]


def _ti_curve(data, leg=None) -> xr.Dataset:
    """:func:`thermodynamic_integration`'s result, with ``zero_likelihood_fraction`` per rung
    (and per chain where each chain tuned its own ladder): the draws whose loglik is -inf.

    Read from the result's ``support_fraction`` (the estimator counts the finite draws).
    """
    if isinstance(data, xr.Dataset) and "log_marginal_likelihood" in data:
        res = data
    else:  # the run itself, so that its ladder caveat and observed data are read
        res = thermodynamic_integration(data, leg=leg)
    support = res["support_fraction"] if "support_fraction" in res else 1.0  # older results
    zero = 1.0 - support + xr.zeros_like(res["mean_loglik"])
    return res.assign(zero_likelihood_fraction=zero.reset_coords(drop=True))


def _curves(curve: xr.Dataset):
    """``(label, beta, mean, mcse, zero_fraction)`` per chain (or one for a shared ladder),
    without the rungs a chain does not have."""
    if "chain" not in curve["beta"].dims:
        parts = [("", curve)]
    else:
        parts = [(f"chain {c}", curve.sel(chain=c)) for c in curve["chain"].values]
    out = []
    for label, part in parts:
        beta = part["beta"].values
        keep = np.isfinite(beta)
        out.append(
            (
                label,
                beta[keep],
                part["mean_loglik"].values[keep],
                part["mean_loglik_mcse"].values[keep],
                part["zero_likelihood_fraction"].values[keep],
            )
        )
    return out


def _zero_likelihood_label(curves) -> str:
    """Which fraction of the draws had zero likelihood, at which beta (and in which chains)."""
    where = {}
    for label, beta, _, _, zero in curves:
        for b, f in zip(beta, zero, strict=True):
            if f > 0:
                key = (as_percent(f), beta_label(b).strip("$"))
                where.setdefault(key, []).append(label.removeprefix("chain "))
    parts = []
    for (percent, beta), chains in where.items():
        chains = [c for c in chains if c]
        in_chains = (
            f" (chain{'s' if len(chains) > 1 else ''} {', '.join(chains)})" if chains else ""
        )
        parts.append(rf"{percent} at $\beta = {beta}${in_chains}")
    return "hollow: mean of finite draws (zero likelihood: " + ", ".join(parts) + ")"


def _draw_ti_panel(axis, scale, curves, band, z_label):
    """One panel of :func:`plot_ti_curve`: each curve with its band, on a linear or log axis."""
    per_chain = curves[0][0] != ""
    if scale == "linear":
        if per_chain:  # several ladders, no one area: log Z goes in the legend
            axis.plot([], [], " ", label=z_label)
        else:
            _, beta, mean, _, _ = curves[0]
            label = "area from curve to 0" + ("" if z_label.startswith("$+") else ":")
            axis.fill_between(
                beta, mean, 0.0, color=BLUE, alpha=0.25, lw=0, label=f"{label} {z_label}"
            )
        axis.axhline(0.0, color=GREY, lw=0.8)
    else:
        positive = np.concatenate([c[1][c[1] > 0] for c in curves])
        axis.set_xscale("log", base=2)
        axis.xaxis.set_major_locator(FixedLocator(power_of_two_ticks(positive)))
        axis.xaxis.set_major_formatter(FuncFormatter(lambda x, _: beta_label(x)))
        axis.xaxis.set_minor_locator(NullLocator())
    for k, (label, beta, mean, mcse, zero) in enumerate(curves):
        color = f"C{2 * k}" if per_chain else BLUE
        suffix = f", {label}" if label else ""
        keep = beta > 0 if scale == "log" else np.ones(beta.size, dtype=bool)
        b, m, e = beta[keep], mean[keep], band * mcse[keep]
        if not keep.all():
            note = " (finite draws)" if zero[0] > 0 else ""
            axis.axhline(
                mean[0],
                color=color,
                ls="--",
                lw=1.0,
                label=rf"$\beta = 0$: {mean[0]:.1f}{note}{suffix}",
            )
        axis.fill_between(
            b,
            m - e,
            m + e,
            color=color if per_chain else ORANGE,
            alpha=0.3 if per_chain else 0.45,
            lw=0,
            label=rf"$\pm{band:g}$ MCSE" if k == 0 else None,
        )
        axis.plot(b, m, "o-", color=color, ms=3.5, lw=1.2, label=f"rung mean{suffix}")
        hollow = zero[keep] > 0
        axis.plot(b[hollow], m[hollow], "o", ms=7, mfc="w", mec=color, mew=1.5)
    if any((c[4] > 0).any() for c in curves):
        axis.plot(
            [], [], "o", ms=7, mfc="w", mec=GREY, mew=1.5, label=_zero_likelihood_label(curves)
        )
    axis.set_xlabel(r"inverse temperature $\beta$" + (" (log scale)" if scale == "log" else ""))
    axis.grid(alpha=0.3)
    axis.legend(loc="best", fontsize="small", frameon=True)


def plot_ti_curve(data, *, xscale="both", band=2.0, leg=None, ax=None):
    r"""Thermodynamic-integration curve :math:`E_\beta[\log p(y \mid \theta)]` against
    :math:`\beta`, with its Monte Carlo error band and the area that is :math:`\log Z`.

    Parameters
    ----------
    data : DataTree or Dataset
        An ExchangeMC result or its ``sample_stats`` (passed to
        :func:`pymc_tempering.thermodynamic_integration`, whose warnings you then see), or
        that function's output.
    xscale : {"both", "linear", "log"}, default "both"
        ``"linear"``: :math:`\beta` on a linear axis, where the shaded area between the curve
        and 0 is :math:`\log Z` (the trapezoid rule over the ladder). ``"log"``: only
        :math:`\beta > 0` on a log axis (geometric ladders span :math:`2^{-30}` to 1), with the
        :math:`\beta = 0` value as a dashed line. ``"both"``: the two side by side.
    band : float, default 2.0
        Half-width of the error band in Monte Carlo standard errors of each rung's mean.
    leg : {"prior", "variational"}, optional
        One leg of a two-leg run (``reference="variational"``; the variational leg integrates
        :math:`\log p(\theta) p(y \mid \theta) / q(\theta)`); default: a row per leg.
    ax : matplotlib Axes or array of Axes, optional
        One per panel (per row).

    Returns
    -------
    fig : matplotlib Figure
    axes : ndarray of Axes

    Notes
    -----
    When each chain tuned its own ladder (``ladder="adaptive"``) every chain gets its own
    curve, and the legend gives the pooled :math:`\log Z`. Where the :math:`\beta = 0` rung
    drew prior draws with zero likelihood (log-likelihood -inf), its point is the mean over the
    finite draws (the :math:`\beta \to 0^+` limit), drawn hollow; the legend says which
    fraction of the draws had zero likelihood, and that :math:`\log Z` is the area plus the
    log of the prior mass where the likelihood is nonzero.

    Examples
    --------
    >>> fig, axes = pmt.plot_ti_curve(idata)                          # doctest: +SKIP
    >>> fig.savefig("ti_curve.png", dpi=150)                          # doctest: +SKIP
    """
    if xscale not in ("both", "linear", "log"):
        raise ValueError(f"`xscale` must be 'both', 'linear' or 'log', got {xscale!r}.")
    if has_two_legs(data, leg):
        kwargs = {"xscale": xscale, "band": band}
        ncols = 2 if xscale == "both" else 1
        return each_leg(plot_ti_curve, data, ax, ncols, (5.2 * ncols, 4.0), {"sharey": "row"},
                        **kwargs)  # fmt: skip
    res = _ti_curve(data, leg)
    curves = _curves(res)
    log_z, mcse = float(res["log_marginal_likelihood"]), float(res["mcse"])
    z_label = rf"$\log Z = {with_error(log_z, mcse)}$"
    support = np.exp(float(res.get("log_support_fraction", 0.0)))
    if "chain" in res["beta"].dims:
        z_label += " (chains pooled" + (rf", with $\log {support:.2g}$)" if support < 1 else ")")
    elif support < 1:  # log Z = log P(likelihood > 0) + the integral over beta > 0
        z_label = rf"$+ \log {support:.2g}$ (nonzero likelihood): " + z_label
    method = res.attrs.get("method", "corrected")
    scales = ["linear", "log"] if xscale == "both" else [xscale]
    fig, axes = new_axes(ax, ncols=len(scales), figsize=(5.2 * len(scales), 4.0), sharey=True)
    for axis, scale in zip(axes, scales, strict=True):
        _draw_ti_panel(axis, scale, curves, band, z_label)
    where = leg_label(res, leg)
    if res.attrs.get("leg") == "variational":
        axes[0].set_ylabel(r"$E_\beta[\log p(\theta) p(y \mid \theta) / q(\theta)]$  (nats)")
    else:
        axes[0].set_ylabel(r"$E_\beta[\log p(y \mid \theta)]$  (nats)")
    axes[0].set_title(
        f"Thermodynamic integration{', ' + where if where else ''} ({method} trapezoid)",
        loc="left",
        fontsize="medium",
    )
    return fig, axes
