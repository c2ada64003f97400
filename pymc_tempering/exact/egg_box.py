r"""The egg box of Feroz, Hobson & Bridges (2009): a 2-D likelihood with many sharp
maxima, its exact :math:`\log Z_\beta` and power-posterior moments on a periodic grid
(NumPy/SciPy), and the PyMC model (:func:`egg_box_model`, PyMC imported there only).
"""

import numpy as np
from scipy.special import logsumexp

#: Side of the egg-box's uniform prior square, ``[0, 10 pi]^2``.
EGG_BOX_SIDE = 10.0 * np.pi


def egg_box_loglik(x, y):
    r"""The egg-box log-likelihood :math:`(2 + \cos(x/2)\cos(y/2))^5` (NumPy).

    Parameters
    ----------
    x : array_like
        First coordinate(s), broadcast against ``y``.
    y : array_like
        Second coordinate(s).

    Returns
    -------
    ndarray
        The log-likelihood at each point.
    """
    return (2.0 + np.cos(np.asarray(x) / 2.0) * np.cos(np.asarray(y) / 2.0)) ** 5


def egg_box_model():
    r"""PyMC model of the egg box: ``x, y ~ Uniform(0, 10 pi)``, log-likelihood
    :func:`egg_box_loglik` as a Potential. The exact evidence is :func:`egg_box_log_evidence`,
    the power posteriors' moments :func:`egg_box_power_moments`."""
    import pymc as pm

    with pm.Model() as model:
        x = pm.Uniform("x", 0.0, EGG_BOX_SIDE)
        y = pm.Uniform("y", 0.0, EGG_BOX_SIDE)
        pm.Potential("loglik", (2.0 + pm.math.cos(x / 2) * pm.math.cos(y / 2)) ** 5)
    return model


def _egg_box_grid(n_grid):
    """The log-likelihood on the periodic ``n_grid`` x ``n_grid`` grid of one period (raveled)."""
    c = np.cos(2.0 * np.pi * np.arange(int(n_grid)) / int(n_grid))
    return ((2.0 + c[:, None] * c[None, :]) ** 5).ravel()


def egg_box_log_evidence(beta=1.0, n_grid=512):
    r"""Exact :math:`\log Z_\beta` of the egg box: uniform prior on :math:`[0, 10\pi]^2`,
    :math:`\ell(x, y) = (2 + \cos(x/2)\cos(y/2))^5` (Feroz, Hobson & Bridges 2009, sec. 6.2).

    With :math:`u = x/2`, :math:`v = y/2` on :math:`[0, 5\pi]`, the integrand depends on
    :math:`\cos u` and :math:`\cos v` only, and the mean of any function of :math:`\cos u` over
    :math:`[0, 5\pi]` equals its mean over one period (:math:`[4\pi, 5\pi]` mirrors onto
    :math:`[\pi, 2\pi]`), so :math:`Z_\beta = (2\pi)^{-2}\int_0^{2\pi}\!\int_0^{2\pi}
    e^{\beta(2+\cos u\cos v)^5}du\,dv`: a smooth periodic integrand, for which the trapezoid
    rule on an ``n_grid``-point grid per axis converges geometrically (at ``beta = 1`` the peaks
    have width :math:`1/\sqrt{405} \approx 0.05` in :math:`u`; 128 points already agree with
    2048 to 1e-13). Summed by log-sum-exp.

    Parameters
    ----------
    beta : float, default 1.0
        Power of the likelihood.
    n_grid : int, default 512
        Grid points per axis of the periodic trapezoid rule.

    Returns
    -------
    float
        At ``beta = 1``, 235.85594033225 (to about 1e-12). Feroz et al. quote 235.88, which
        is what a 64-point grid gives.

    Examples
    --------
    >>> round(egg_box_log_evidence(), 4)
    235.8559
    """
    loglik = _egg_box_grid(n_grid)
    return float(logsumexp(float(beta) * loglik) - np.log(loglik.size))


def egg_box_power_moments(betas, n_grid=512):
    r""":math:`E_\beta[\ell]` and :math:`\mathrm{Var}_\beta[\ell]` of the egg box on every rung.

    Weighted means over the periodic grid of :func:`egg_box_log_evidence`, weights
    :math:`\propto e^{\beta\ell}`: the first two derivatives of :math:`\log Z_\beta`, and the
    inputs of the (corrected) trapezoid rule of thermodynamic integration.

    Parameters
    ----------
    betas : array_like
        Inverse temperatures.
    n_grid : int, default 512
        Grid points per axis, as for :func:`egg_box_log_evidence`.

    Returns
    -------
    mean, var : ndarray
        One value per ``beta``.
    """
    loglik = _egg_box_grid(n_grid)
    moments = []
    for beta in np.atleast_1d(np.asarray(betas, dtype=float)):
        w = np.exp(beta * loglik - logsumexp(beta * loglik))
        mean = w @ loglik
        moments.append((mean, w @ (loglik - mean) ** 2))
    mean, var = np.array(moments).T
    return mean, var
