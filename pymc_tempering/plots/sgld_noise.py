"""SGLD's step size, sampling threshold and noise variances against iteration (Welling & Teh
2011, Figure 2), from the stats :func:`pymc_tempering.trace.sgld_stats` reads."""

import numpy as np

from pymc_tempering.plots._axes import BLUE, GREY, ORANGE, new_axes
from pymc_tempering.trace import sgld_stats

__all__ = ["plot_sgld_noise"]


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
        The chain to draw.
    parameters : int or sequence of int, default 4
        Indices into the flattened parameter vector whose variances to draw, or how many
        (the first ones).
    threshold : float, default 0.1
        Drawn as a dashed line on the sampling-threshold panel.
    ax : array of 3 matplotlib Axes, optional
        Axes to draw the three panels into; default ``None``: a new figure.

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
    fig, axes = new_axes(ax, ncols=3, figsize=(13.0, 3.8))
    eps = stats["step_size"].values
    axes[0].plot(iteration, eps, color=BLUE, lw=1.5)
    axes[0].set_ylabel(r"step size $\epsilon_t$")
    axes[0].set_title("Step size", loc="left", fontsize="medium")

    alpha = stats["sampling_threshold"].values
    finite = np.isfinite(alpha) & (alpha > 0)
    axes[1].plot(iteration[finite], alpha[finite], "o-", color=BLUE, ms=3, lw=1)
    axes[1].axhline(threshold, color=ORANGE, ls="--", lw=1.2, label=f"threshold {threshold:g}")
    below = np.flatnonzero(finite & (alpha < threshold))
    if below.size:
        axes[1].axvline(iteration[below[0]], color=GREY, ls=":", lw=1.2, label="first below")
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
    axes[2].plot([], [], "o-", ms=2.5, color=GREY, label="gradient noise")
    axes[2].plot([], [], "--", color=GREY, label="injected noise")
    axes[2].set_ylabel("variance (per step)")
    axes[2].set_title("Noise variances", loc="left", fontsize="medium")
    axes[2].legend(fontsize="small", ncols=2)
    for axis in axes:
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("iteration $t$")
        axis.grid(alpha=0.3, which="both", lw=0.5)
    return fig, axes
