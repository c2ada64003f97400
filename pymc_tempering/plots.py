r"""Pictures of a tempering or SGLD run (matplotlib).

Each function draws one figure and returns ``(fig, axes)``; pass ``ax=`` to draw into your own
axes instead. The numbers come from :mod:`pymc_tempering.diagnostics` and
:func:`pymc_tempering.evidence.thermodynamic_integration`; nothing is recomputed here.
"""

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from pymc_tempering._trace import has_per_chain_ladders, one_chain, sgld_stats, tempering_dataset
from pymc_tempering.diagnostics import (
    _round_trip_events,
    global_barrier,
    round_trips,
    swap_rates,
)
from pymc_tempering.evidence_estimators import thermodynamic_integration

__all__ = [
    "plot_ti_curve",
    "plot_swap_rates",
    "plot_replica_trajectories",
    "plot_sgld_noise",
    "plot_learning_coefficient",
]

_BLUE, _ORANGE, _GREY = "C0", "C1", "0.35"


def _beta_label(beta: float) -> str:
    """``0``, ``1``, ``2^-k`` for powers of two, else 2 significant digits."""
    if beta == 0 or beta == 1:
        return f"{beta:g}"
    exponent = np.log2(beta)
    if np.isclose(exponent, np.round(exponent)):
        return f"$2^{{{int(np.round(exponent))}}}$"
    return f"{beta:.2g}"


def _rung_ticks(n_rungs: int, max_ticks: int = 9) -> np.ndarray:
    step = max(1, int(np.ceil((n_rungs - 1) / (max_ticks - 1))))
    ticks = np.arange(0, n_rungs, step)
    return ticks if ticks[-1] == n_rungs - 1 else np.append(ticks[:-1], n_rungs - 1)


def _power_of_two_ticks(beta: np.ndarray, max_ticks: int = 8) -> np.ndarray:
    """Powers of two from 1 down to the smallest ``beta``, at a round exponent step."""
    lowest = int(np.floor(np.log2(beta.min())))
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100) if -lowest / s < max_ticks)
    return 2.0 ** np.arange(0, lowest - 1, -step)[::-1]


def _new_axes(ax, ncols=1, nrows=1, figsize=(6.4, 4.0), **kwargs):
    if ax is not None:
        axes = np.atleast_1d(ax)
        if axes.size != ncols * nrows:
            raise ValueError(f"`ax` must hold {ncols * nrows} axes, got {axes.size}.")
        return axes.flat[0].figure, axes
    fig, axes = plt.subplots(
        nrows, ncols, figsize=figsize, layout="constrained", squeeze=False, **kwargs
    )
    return fig, axes.ravel()


def _percent(fraction: float) -> str:
    return f"{100 * fraction:.2g}%"


def _ti_curve(data) -> xr.Dataset:
    """:func:`thermodynamic_integration`'s result, with ``zero_likelihood_fraction`` per rung
    (and per chain where each chain tuned its own ladder): the draws whose loglik is -inf.

    Read from the result's ``support_fraction`` (the estimator counts the finite draws).
    """
    if isinstance(data, xr.Dataset) and "log_marginal_likelihood" in data:
        res = data
    else:
        res = thermodynamic_integration(data)
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
                key = (_percent(f), _beta_label(b).strip("$"))
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
            axis.fill_between(beta, mean, 0.0, color=_BLUE, alpha=0.25, lw=0,
                              label=f"{label} {z_label}")  # fmt: skip
        axis.axhline(0.0, color=_GREY, lw=0.8)
    else:
        positive = np.concatenate([c[1][c[1] > 0] for c in curves])
        axis.set_xscale("log", base=2)
        axis.xaxis.set_major_locator(FixedLocator(_power_of_two_ticks(positive)))
        axis.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _beta_label(x)))
        axis.xaxis.set_minor_locator(NullLocator())
    for k, (label, beta, mean, mcse, zero) in enumerate(curves):
        color = f"C{2 * k}" if per_chain else _BLUE
        suffix = f", {label}" if label else ""
        keep = beta > 0 if scale == "log" else np.ones(beta.size, dtype=bool)
        b, m, e = beta[keep], mean[keep], band * mcse[keep]
        if not keep.all():
            note = " (finite draws)" if zero[0] > 0 else ""
            axis.axhline(mean[0], color=color, ls="--", lw=1.0,
                         label=rf"$\beta = 0$: {mean[0]:.1f}{note}{suffix}")  # fmt: skip
        axis.fill_between(b, m - e, m + e, color=color if per_chain else _ORANGE,
                          alpha=0.3 if per_chain else 0.45, lw=0,
                          label=rf"$\pm{band:g}$ MCSE" if k == 0 else None)  # fmt: skip
        axis.plot(b, m, "o-", color=color, ms=3.5, lw=1.2, label=f"rung mean{suffix}")
        hollow = zero[keep] > 0
        axis.plot(b[hollow], m[hollow], "o", ms=7, mfc="w", mec=color, mew=1.5)
    if any((c[4] > 0).any() for c in curves):
        axis.plot([], [], "o", ms=7, mfc="w", mec=_GREY, mew=1.5,
                  label=_zero_likelihood_label(curves))  # fmt: skip
    axis.set_xlabel(r"inverse temperature $\beta$" + (" (log scale)" if scale == "log" else ""))
    axis.grid(alpha=0.3)
    axis.legend(loc="best", fontsize="small", frameon=True)


def plot_ti_curve(data, *, xscale="both", band=2.0, ax=None):
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
    ax : matplotlib Axes or array of Axes, optional
        One per panel.

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
    res = _ti_curve(data)
    curves = _curves(res)
    log_z, mcse = float(res["log_marginal_likelihood"]), float(res["mcse"])
    z_label = rf"$\log Z = {log_z:.2f} \pm {mcse:.2f}$"
    support = np.exp(float(res.get("log_support_fraction", 0.0)))
    if "chain" in res["beta"].dims:
        z_label += " (chains pooled" + (rf", with $\log {support:.2g}$)" if support < 1 else ")")
    elif support < 1:  # log Z = log P(likelihood > 0) + the integral over beta > 0
        z_label = rf"$+ \log {support:.2g}$ (nonzero likelihood): " + z_label
    method = res.attrs.get("method", "corrected")
    scales = ["linear", "log"] if xscale == "both" else [xscale]
    fig, axes = _new_axes(ax, ncols=len(scales), figsize=(5.2 * len(scales), 4.0), sharey=True)
    for axis, scale in zip(axes, scales, strict=True):
        _draw_ti_panel(axis, scale, curves, band, z_label)
    axes[0].set_ylabel(r"$E_\beta[\log p(y \mid \theta)]$  (nats)")
    axes[0].set_title(
        f"Thermodynamic integration ({method} trapezoid)", loc="left", fontsize="medium"
    )
    return fig, axes


def _swap_title(barrier: xr.Dataset, n_rungs) -> str:
    values = np.atleast_1d(barrier["global_barrier"].values)
    suggested = np.atleast_1d(barrier["suggested_n_rungs"].values)
    have = ", ".join(str(int(n)) for n in np.atleast_1d(n_rungs))
    return (
        rf"$\Lambda = {', '.join(f'{v:.2f}' for v in values)}$; suggested rungs: "
        f"{', '.join(str(int(s)) for s in suggested)} (have {have})"
    )


def plot_swap_rates(data, *, ax=None):
    r"""Swap acceptance of each neighbouring rung pair, and the cumulative barrier.

    Bars: mean swap acceptance probability of pair :math:`(l, l+1)`, drawn between the two
    rungs, with one dot per chain. Line (right axis): the cumulative communication barrier
    :math:`\Lambda(\beta_l)` (:func:`pymc_tempering.global_barrier`); it climbs steeply where
    rungs are missing. The top axis gives :math:`\beta` at some rungs. When each chain tuned
    its own ladder (``ladder="adaptive"``), each chain gets its own bars and barrier line,
    and the title lists each chain's barrier; the top axis is left out, since :math:`\beta_l`
    differs by chain.

    Parameters
    ----------
    data : DataTree or Dataset
        An ExchangeMC result, its ``sample_stats``, or ``tempering_dataset``'s output.
    ax : matplotlib Axes, optional

    Returns
    -------
    fig : matplotlib Figure
    ax : matplotlib Axes
        The left (acceptance) axis; the barrier axis is ``ax.right_ax``.

    Examples
    --------
    >>> fig, ax = pmt.plot_swap_rates(idata)                          # doctest: +SKIP
    """
    ds = tempering_dataset(data)
    per_chain_ladders = has_per_chain_ladders(ds)
    per_chain = swap_rates(ds, combined=False)
    barrier = global_barrier(ds)
    n_rungs = ds.sizes["rung"]
    fig, axes = _new_axes(ax, figsize=(7.0, 4.0))
    axis = axes[0]
    mid = np.arange(n_rungs - 1) + 0.5
    right = axis.twinx()
    barrier_label = r"cumulative barrier $\Lambda(\beta_l)$"
    if not per_chain_ladders:
        pooled = swap_rates(ds)["swap_accept"].values
        axis.bar(mid, pooled, width=0.8, color=_BLUE, alpha=0.7, label="all chains")
        for chain in per_chain["chain"].values:
            values = per_chain["swap_accept"].sel(chain=chain).values
            axis.plot(mid, values, "o", ms=2.5, color="k", alpha=0.6, mew=0)
        axis.plot([], [], "o", ms=2.5, color="k", alpha=0.6, label="one chain")
        cumulative = barrier["cumulative_barrier"].values
        right.plot(np.arange(n_rungs), cumulative, "-", color=_ORANGE, lw=2, label=barrier_label)
        n_used = n_rungs
    else:
        chains = per_chain["chain"].values
        width = 0.8 / chains.size
        n_used = []
        for k, chain in enumerate(chains):
            color = f"C{2 * k}"
            values = per_chain["swap_accept"].sel(chain=chain).values
            have = np.isfinite(per_chain["beta_upper"].sel(chain=chain).values)
            offset = (k - (chains.size - 1) / 2) * width
            axis.bar(mid[have] + offset, values[have], width=width, color=color, alpha=0.7,
                     label=f"chain {chain}")  # fmt: skip
            cumulative = barrier["cumulative_barrier"].sel(chain=chain).values
            rungs = np.flatnonzero(np.isfinite(ds["beta"].sel(chain=chain).values))
            right.plot(rungs, cumulative[rungs], "-", color=color, lw=2,
                       label=f"{barrier_label}, chain {chain}")  # fmt: skip
            n_used.append(rungs.size)
    axis.set_ylim(0, 1.3)
    axis.set_yticks(np.linspace(0, 1, 6))
    axis.set_xlim(-0.3, n_rungs - 0.7)
    axis.set_ylabel("swap acceptance probability")
    axis.set_xlabel(r"rung $l$ (bars: pair $l \leftrightarrow l+1$)")
    ticks = _rung_ticks(n_rungs)
    axis.xaxis.set_major_locator(FixedLocator(ticks))

    top_barrier = np.nanmax(np.atleast_1d(barrier["global_barrier"].values), initial=0.0)
    right.set_ylim(0, max(1e-9, float(top_barrier)) * 1.05)
    right.set_ylabel(r"communication barrier $\Lambda(\beta_l)$", color=_ORANGE)
    right.tick_params(axis="y", colors=_ORANGE)
    axis.right_ax = right

    if not per_chain_ladders:
        betas = ds["beta"].values
        top = axis.secondary_xaxis("top")
        top.xaxis.set_major_locator(FixedLocator(ticks))
        top.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _beta_label(betas[int(round(x))])))
        top.set_xlabel(r"$\beta_l$")
    handles = axis.get_legend_handles_labels()
    extra = right.get_legend_handles_labels()
    axis.legend(
        handles[0] + extra[0],
        handles[1] + extra[1],
        loc="upper center",
        ncols=3 if not per_chain_ladders else 2,
        fontsize="small",
        frameon=False,
    )
    title = _swap_title(barrier, n_used)
    if per_chain_ladders:
        title += "; per chain (own ladders)"
    axis.set_title(title, loc="left", fontsize="medium")
    return fig, axis


def plot_replica_trajectories(data, *, chain=0, replicas=3, draws=300, ax=None):
    """Which rung each replica occupies, draw by draw; round trips marked.

    Parameters
    ----------
    data : DataTree or Dataset
        An ExchangeMC result, its ``sample_stats``, or ``tempering_dataset``'s output.
    chain : int, default 0
        Label of the chain to show (its own ladder, when each chain tuned one).
    replicas : int or sequence of int, default 3
        Replica ids to draw, or how many (spread over the ids).
    draws : int or slice, default 300
        The first ``draws`` draws, or a slice of the ``draw`` index.
    ax : matplotlib Axes, optional

    Returns
    -------
    fig : matplotlib Figure
    ax : matplotlib Axes

    Examples
    --------
    >>> fig, ax = pmt.plot_replica_trajectories(idata, replicas=[0, 5])   # doctest: +SKIP
    """
    ds = tempering_dataset(data)
    labels = ds["chain"].values
    if chain not in labels:
        raise ValueError(
            f"`chain` must be one of the chain labels {labels.tolist()}, got {chain!r}."
        )
    one = one_chain(ds, int(np.flatnonzero(labels == chain)[0]))  # its rungs only
    trace = one["rung_replica"].isel(chain=0).transpose("draw", "rung").values.astype(np.int64)
    n_draws, n_rungs = trace.shape
    events = _round_trip_events(trace)  # whole chain, so counts match round_trips()
    position = np.argsort(trace, axis=-1)  # position[t, r]: the rung replica r is on
    window = slice(0, min(draws, n_draws)) if isinstance(draws, int | np.integer) else draws
    draw_index = np.arange(n_draws)[window]
    if isinstance(replicas, int | np.integer):
        replicas = np.unique(np.linspace(0, n_rungs - 1, min(replicas, n_rungs)).round())
    replicas = [int(r) for r in replicas]
    if any(not 0 <= r < n_rungs for r in replicas):
        raise ValueError(
            f"`replicas` must be ids in 0..{n_rungs - 1} (chain {chain} has {n_rungs} rungs), "
            f"got {replicas}."
        )
    total = round_trips(one)["replica_round_trips"].isel(chain=0).values
    fig, axes = _new_axes(ax, figsize=(7.0, 4.0))
    axis = axes[0]
    for k, rep in enumerate(replicas):
        color = f"C{k % 10}"
        axis.step(
            draw_index,
            position[window, rep],
            where="post",
            lw=1.1,
            color=color,
            alpha=0.85,
            label=f"replica {rep} ({total[rep]} round trip{'' if total[rep] == 1 else 's'} "
            f"in all {n_draws} draws)",
        )
        done = draw_index[events[window, rep]]
        axis.plot(done, np.full(done.size, -0.45), "^", color=color, ms=6, mec="k", mew=0.5)
    axis.plot([], [], "^", color="w", mec="k", mew=0.5, label="round trip completed")
    axis.set_ylim(-0.9, n_rungs - 0.3)
    axis.set_ylabel(r"rung $l$ (0: lowest $\beta$)")
    ticks = _rung_ticks(n_rungs)
    axis.yaxis.set_major_locator(FixedLocator(ticks))
    betas = one["beta"].values
    right = axis.secondary_yaxis("right")
    right.yaxis.set_major_locator(FixedLocator(ticks))
    right.yaxis.set_major_formatter(FuncFormatter(lambda y, _: _beta_label(betas[int(round(y))])))
    right.set_ylabel(r"$\beta_l$")
    axis.grid(axis="y", alpha=0.3)
    axis.legend(
        loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2, fontsize="small", frameon=False
    )
    axis.set_xlabel(f"draw (chain {chain})")
    return fig, axis


def plot_sgld_noise(data, *, chain=0, parameters=4, threshold=0.1, ax=None):
    r"""SGLD's step size, sampling threshold and noise variances against iteration.

    Welling & Teh's (2011) Figure 2 view: the injected noise variance :math:`\epsilon_t M`
    must dominate the stochastic-gradient noise variance
    :math:`\epsilon_t^2 N^2/(4n)\,\mathrm{diag}(M V_s M)` before draws are samples; the
    sampling threshold :math:`\alpha_t` (their eq. 10) falling below ``threshold`` marks it.

    Parameters
    ----------
    data : DataTree
        The result of ``pm.sample(step=pmt.SGLD(...))``. Tuning draws are included when
        sampled with ``discard_tuned_samples=False``.
    chain : int, default 0
    parameters : int or sequence of int, default 4
        Indices into the flattened parameter vector whose variances to draw, or how many
        (the first ones).
    threshold : float, default 0.1
        Drawn as a dashed line on the sampling-threshold panel.
    ax : array of 3 matplotlib Axes, optional

    Returns
    -------
    fig : matplotlib Figure
    axes : ndarray of 3 Axes
        Step size, sampling threshold, noise variances; all with log axes.

    Examples
    --------
    >>> fig, axes = pmt.plot_sgld_noise(idata)                       # doctest: +SKIP
    """
    stats, iteration = sgld_stats(data, chain)
    fig, axes = _new_axes(ax, ncols=3, figsize=(13.0, 3.8))
    eps = stats["step_size"].values
    axes[0].plot(iteration, eps, color=_BLUE, lw=1.5)
    axes[0].set_ylabel(r"step size $\epsilon_t$")
    axes[0].set_title("Step size", loc="left", fontsize="medium")

    alpha = stats["sampling_threshold"].values
    finite = np.isfinite(alpha) & (alpha > 0)
    axes[1].plot(iteration[finite], alpha[finite], "o-", color=_BLUE, ms=3, lw=1)
    axes[1].axhline(threshold, color=_ORANGE, ls="--", lw=1.2, label=f"threshold {threshold:g}")
    below = np.flatnonzero(finite & (alpha < threshold))
    if below.size:
        axes[1].axvline(iteration[below[0]], color=_GREY, ls=":", lw=1.2, label="first below")
    axes[1].set_ylabel(r"sampling threshold $\alpha_t$")
    axes[1].set_title("Sampling threshold (eq. 10)", loc="left", fontsize="medium")
    axes[1].legend(fontsize="small")

    grad = stats["grad_noise_var"].transpose("draw", ...).values
    injected = stats["injected_noise_var"].transpose("draw", ...).values
    n_params = grad.shape[-1]
    if isinstance(parameters, int | np.integer):
        parameters = range(min(parameters, n_params))
    for k, j in enumerate(parameters):
        color = f"C{k % 10}"
        ok = np.isfinite(grad[:, j]) & (grad[:, j] > 0)
        axes[2].plot(iteration[ok], grad[ok, j], "o-", ms=2.5, lw=1, color=color)
        axes[2].plot(iteration, injected[:, j], "--", lw=1.5, color=color, label=rf"$\theta_{j}$")
    axes[2].plot([], [], "o-", ms=2.5, color=_GREY, label="gradient noise")
    axes[2].plot([], [], "--", color=_GREY, label="injected noise")
    axes[2].set_ylabel("variance (per step)")
    axes[2].set_title("Noise variances", loc="left", fontsize="medium")
    axes[2].legend(fontsize="small", ncols=2)
    for axis in axes:
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("iteration $t$")
        axis.grid(alpha=0.3, which="both", lw=0.5)
    return fig, axes


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
    ax : matplotlib Axes, optional

    Returns
    -------
    fig, ax
    """
    if "fluctuation_curve" not in result:
        raise ValueError(
            "Expected the Dataset returned by pmt.learning_coefficient(idata, n_obs=...)."
        )
    fig, (axis,) = _new_axes(ax)
    beta = result["beta_rung"].values
    keep = beta > 0
    axis.errorbar(
        beta[keep], result["fluctuation_curve"].values[keep],
        yerr=band * result["fluctuation_curve_mcse"].values[keep],
        fmt="o-", ms=3, capsize=2, label=r"fluctuation $\beta^2\,\mathrm{Var}_\beta[\ell]$",
    )  # fmt: skip
    lower, upper = result["beta_lower"].values, result["beta_upper"].values
    pair = lower > 0
    axis.errorbar(
        np.sqrt(lower[pair] * upper[pair]), result["two_temperature_curve"].values[pair],
        yerr=band * result["two_temperature_curve_mcse"].values[pair],
        fmt="s--", ms=3, capsize=2, label="two-temperature (rung pairs)",
    )  # fmt: skip
    axis.axvline(float(result["beta"]), color="0.4", lw=0.8, ls=":")
    axis.annotate(r"$\beta^* = 1/\log n$", (float(result["beta"]), 0.02),
                  xycoords=("data", "axes fraction"), rotation=90, fontsize=8)  # fmt: skip
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
