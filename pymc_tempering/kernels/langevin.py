r"""Langevin proposals, MALA's Hastings ratio and the tuning rules of ULA / MALA. NumPy only.

Step-size convention (the "h-form"): with a diagonal preconditioner :math:`M` (a vector of
positive numbers, roughly the posterior variances) and step size :math:`h`,

.. math:: x' = x + h\,M\,\nabla \log \pi(x) + \sqrt{2 h M}\,\xi, \qquad \xi \sim N(0, I).

This is the Euler-Maruyama discretisation of the Langevin diffusion
:math:`dX = M \nabla \log \pi(X)\,dt + \sqrt{2M}\,dW` over time :math:`h`. The other common
convention writes :math:`x' = x + (\epsilon^2/2) \nabla \log \pi + \epsilon \xi`, i.e.
:math:`\epsilon^2 = 2h`.
"""

import math
from typing import NamedTuple

import numpy as np

# Welford moments live once, in kernels/moments.py; re-exported for the Langevin samplers
from pymc_tempering.kernels.moments import (
    Moments,
    moments_init,
    shrunk_variance,
    variance,
    welford_update,
)

__all__ = [
    "moves_to_forget",
    "langevin_mean",
    "langevin_proposal",
    "log_proposal_density",
    "mala_log_accept_ratio",
    "DualAverageState",
    "dual_average_init",
    "dual_average_update",
    "Moments",
    "moments_init",
    "welford_update",
    "regularized_variance",
    "diag_preconditioner",
    "adaptation_windows",
]

REGULARIZED_FLOOR = 1e-3  # what a window's variance is shrunk towards (Stan's value)


def moves_to_forget(n_params: int) -> int:
    r""":math:`\lceil d^{1/3} \rceil` (at least 1): about the moves a well-preconditioned MALA
    chain, whose tuned step is :math:`h \propto d^{-1/3}`, needs to forget its position. MALA's
    transitions per tuning draw (``steps_per_draw="auto"``) and ExchangeMC's dense MALA moves
    per sweep."""
    return max(1, math.ceil(n_params ** (1.0 / 3.0) - 1e-9))


def langevin_mean(x, grad, step_size, scaling):
    """Mean of the Langevin proposal, ``x + h * M * grad``."""
    return x + step_size * scaling * grad


def langevin_proposal(x, grad, step_size, scaling, noise, step_scaling=None, noise_scale=None):
    r"""The h-form Langevin move ``x + h M grad + sqrt(2 h M) * noise``.

    Parameters
    ----------
    x, grad : ndarray, shape (n,)
        Current point and :math:`\nabla \log \pi(x)`.
    step_size : float
        :math:`h > 0`.
    scaling : ndarray, shape (n,)
        Diagonal of the preconditioner :math:`M` (positive).
    noise : ndarray, shape (n,)
        Standard normal draws :math:`\xi`.
    step_scaling, noise_scale : ndarray, shape (n,), optional
        ``step_size * scaling`` and ``np.sqrt(2.0 * step_size * scaling)`` when the caller
        already holds them (a sampler whose step size is fixed after tuning): the same numbers,
        bit for bit, without recomputing them on every transition.
    """
    if step_scaling is None:
        step_scaling = step_size * scaling
    if noise_scale is None:
        noise_scale = np.sqrt(2.0 * step_size * scaling)
    return x + step_scaling * grad + noise_scale * noise


def log_proposal_density(y, x, grad_x, step_size, scaling):
    r"""Log density of the Langevin proposal :math:`q_h(x, y) = N(y; x + hM\nabla, 2hM)`.

    Normalising constant included, so it is a proper Gaussian log density in ``y``.
    """
    var = 2.0 * step_size * scaling
    resid = y - langevin_mean(x, grad_x, step_size, scaling)
    return -0.5 * float(np.sum(resid**2 / var + np.log(2.0 * np.pi * var)))


def mala_log_accept_ratio(x, y, logp_x, logp_y, grad_x, grad_y, step_size, scaling):
    r"""Log Metropolis-Hastings ratio of MALA for a move ``x -> y``.

    .. math:: \log \pi(y) - \log \pi(x) + \log q_h(y, x) - \log q_h(x, y)

    where :math:`q_h(a, b)` is the density of proposing ``b`` from ``a``. The last two terms
    are the Hastings correction that ULA omits (Roberts & Tweedie 1996). Equal to
    ``logp_y - logp_x + log_proposal_density(x, y, grad_y) - log_proposal_density(y, x, grad_x)``.
    """
    # both densities share the covariance 2hM, so only their quadratic forms differ
    forward = y - x - step_size * scaling * grad_x
    backward = x - y - step_size * scaling * grad_y
    quad = np.dot(forward, forward / scaling) - np.dot(backward, backward / scaling)
    return float(logp_y - logp_x + quad / (4.0 * step_size))


# -- dual averaging of the step size (Nesterov 2009; Hoffman & Gelman 2014, Alg. 5) ------------
class DualAverageState(NamedTuple):
    log_step: float
    log_step_bar: float
    hbar: float
    count: int
    mu: float


def dual_average_init(step_size: float, shrink_factor: float = 10.0) -> DualAverageState:
    """Start (or restart) dual averaging at ``step_size``, shrinking towards ``shrink_factor``
    times it (Hoffman & Gelman use 10 for NUTS)."""
    log_step = float(np.log(step_size))
    mu = float(np.log(shrink_factor * step_size))
    return DualAverageState(log_step, log_step, 0.0, 1, mu)


def dual_average_update(
    state: DualAverageState, accept_prob: float, target: float, gamma=0.05, k=0.75, t0=10.0
) -> DualAverageState:
    r"""One dual-averaging update of :math:`\log h` towards mean acceptance ``target``.

    ``log_step`` is the step to use next during tuning, ``log_step_bar`` the averaged step
    to freeze when tuning ends.
    """
    count = state.count
    w = 1.0 / (count + t0)
    hbar = (1.0 - w) * state.hbar + w * (target - accept_prob)
    log_step = state.mu - hbar * math.sqrt(count) / gamma  # math: Python floats, ~4x faster
    eta = count**-k
    log_step_bar = eta * log_step + (1.0 - eta) * state.log_step_bar
    return DualAverageState(float(log_step), float(log_step_bar), float(hbar), count + 1, state.mu)


# -- a diagonal preconditioner from Welford moments (pymc_tempering.kernels.moments) ------------
def regularized_variance(moments: Moments) -> np.ndarray:
    """Sample variance shrunk towards ``1e-3`` with weight ``5 / (n + 5)``, as Stan does."""
    return shrunk_variance(moments, REGULARIZED_FLOOR)


def diag_preconditioner(draws: Moments, grads: Moments) -> np.ndarray:
    r"""Diagonal preconditioner from a window of draws and their log-density gradients.

    :math:`M_i = \sqrt{\operatorname{var}(x_i) / \operatorname{var}(g_i)}`, the geometric mean
    of the draw variance and the inverse gradient variance. For a Gaussian target with standard
    deviations :math:`\sigma_i`, :math:`g_i = -x_i / \sigma_i^2` and the ratio is
    :math:`\sigma_i^2` exactly whatever spread the window explored, so the estimate does not
    lag behind a chain that has not yet reached the target's scale, as the draw variance alone
    does (the idea of nutpie's mass-matrix adaptation, Seyboldt 2023). Unlike Stan's draw
    variance it needs no shrinkage towards a fixed scale, which would swamp parameters of scale
    below 0.03. Falls back to :func:`regularized_variance` where the ratio is zero or not finite.
    """
    var_x, var_g = variance(draws), variance(grads)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.sqrt(var_x / var_g)
    ok = np.isfinite(ratio) & (ratio > 0)
    return np.clip(np.where(ok, ratio, regularized_variance(draws)), 1e-10, 1e10)


def adaptation_windows(n_tune: int, term_fraction: float = 0.0) -> list[tuple[int, int]]:
    """Tuning iterations ``[start, end)`` whose draws estimate the preconditioner, in order.

    Stan's schedule: an initial buffer of 75 tuning steps with step-size adaptation only, then
    windows of 25, 50, 100, ... steps (the last stretched to fill), then a terminal buffer of
    ``max(50, term_fraction * n_tune)`` steps for the step size alone, all scaled to 15% / 75% /
    10% of ``n_tune`` when it is shorter than 150. No window when ``n_tune < 20``. The
    preconditioner is replaced at the end of every window.
    """
    if n_tune < 20:
        return []
    init, term, base = 75, max(50, int(term_fraction * n_tune)), 25
    if init + term + base > n_tune:
        init, term = int(0.15 * n_tune), int(0.1 * n_tune)
        base = n_tune - init - term
    windows = []
    start, size = init, base
    last = n_tune - term
    while start < last:
        end = start + size
        if end + 2 * size > last:  # the next window would not fit: stretch this one
            end = last
        windows.append((start, end))
        start, size = end, 2 * size
    return windows
