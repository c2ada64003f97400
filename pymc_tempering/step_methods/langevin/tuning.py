r"""MALA's tuning rules, as pure functions of small immutable records (NumPy only).

During ``pm.sample``'s ``tune`` draws the step size follows dual averaging of the acceptance
towards ``target_accept`` (Hoffman & Gelman 2014); :math:`M` is re-estimated in Stan's windows
(25, 50, 100, ... iterations after a buffer of 75) as
:math:`\sqrt{\operatorname{var}(x_i) / \operatorname{var}(\partial_i \log \pi)}` (diagonal) or
the dense geometric mean (:func:`pymc_tempering.kernels.dense.dense_preconditioner`), and dual
averaging restarts from the averaged step after each window. The last :data:`TERM_FRACTION` of
tuning adapts the step size alone; both freeze at the end of tuning, the step size at its
averaged value. Every chain tunes from the same initial values. The maths is in
:mod:`pymc_tempering.kernels.langevin` and :mod:`pymc_tempering.kernels.moments`; this module
holds the constants and the order of the rules, so that
:class:`~pymc_tempering.step_methods.langevin.MALA` only stores the results. Why these constants:
docs/decisions/091.
"""

import math
from typing import NamedTuple

import numpy as np

from pymc_tempering._util.blas import one_blas_thread
from pymc_tempering.kernels.dense import (
    DenseMoments,
    dense_moments_init,
    dense_moments_merge,
    dense_preconditioner,
)
from pymc_tempering.kernels.langevin import (
    DualAverageState,
    adaptation_windows,
    diag_preconditioner,
    dual_average_init,
    dual_average_update,
)
from pymc_tempering.kernels.moments import Moments, moments_init, welford_update

__all__ = [
    "SHRINK",
    "TERM_FRACTION",
    "WindowUpdate",
    "tuning_windows",
    "start_step_size",
    "step_size_update",
    "averaged_step_size",
    "restart_step_size",
    "window_update",
    "DenseWindow",
    "dense_window_init",
    "dense_window_update",
]

# Dual averaging shrinks log h towards log(SHRINK * h0). NUTS uses 10; MALA's acceptance falls
# off much faster with h, and 10x steps after each preconditioner update cost whole windows.
SHRINK = 2.0
# Share of tuning left to the step size alone after the last preconditioner update: the
# dual-averaged step of a short terminal buffer is noisy enough to move MALA's acceptance by 0.1.
TERM_FRACTION = 0.25
# Transitions gathered before they join a window's dense moments in one matrix product: an
# outer product per transition cost ~20 us on a 10-d model, twice per transition (draws and
# gradients), as much as the transition itself.
DENSE_BLOCK = 64


class WindowUpdate(NamedTuple):
    """Moments and windows after one tuning iteration; ``scaling`` is the new preconditioner
    when a window has just closed, else None."""

    moments: Moments
    grad_moments: Moments
    windows: list
    scaling: np.ndarray | None


def tuning_windows(n_tune_steps: int, adapt_scaling: bool) -> list[tuple[int, int]]:
    """The ``[start, end)`` windows of tuning transitions whose draws estimate the
    preconditioner (none when it is not tuned)."""
    return adaptation_windows(n_tune_steps, TERM_FRACTION) if adapt_scaling else []


def start_step_size(step_size: float) -> DualAverageState:
    """Dual averaging started at ``step_size``, shrinking towards :data:`SHRINK` times it."""
    return dual_average_init(step_size, SHRINK)


def step_size_update(
    dual_average: DualAverageState, accept: float, target_accept: float, gamma, k, t0
) -> tuple[DualAverageState, float]:
    """One dual-averaging update towards ``target_accept``, and the step size to use next."""
    dual_average = dual_average_update(dual_average, accept, target_accept, gamma, k, t0)
    return dual_average, math.exp(dual_average.log_step)


def averaged_step_size(dual_average: DualAverageState) -> float:
    """The dual-averaged step size: the one frozen when tuning ends."""
    return float(np.exp(dual_average.log_step_bar))


def restart_step_size(dual_average: DualAverageState) -> tuple[float, DualAverageState]:
    """After a preconditioner update: restart dual averaging from the averaged step, not the
    noisy iterate."""
    step_size = averaged_step_size(dual_average)
    return step_size, start_step_size(step_size)


def window_update(
    windows: list, iteration: int, moments: Moments, grad_moments: Moments, x, grad
) -> WindowUpdate:
    """Add transition ``iteration``'s state and gradient to the open window's moments; at the
    window's last transition, estimate the preconditioner
    (:func:`~pymc_tempering.kernels.langevin.diag_preconditioner`), empty the moments and
    drop the window."""
    start, end = windows[0]
    if start <= iteration < end:
        moments = welford_update(moments, x)
        grad_moments = welford_update(grad_moments, grad)
    if iteration + 1 != end:
        return WindowUpdate(moments, grad_moments, windows, None)
    scaling = diag_preconditioner(moments, grad_moments)
    empty = moments_init(moments.mean.shape)
    return WindowUpdate(empty, empty, windows[1:], scaling)


class DenseWindow(NamedTuple):
    """A window's dense moments of draws and of gradients, and the transitions not yet added
    to them (at most :data:`DENSE_BLOCK`)."""

    draws: DenseMoments
    grads: DenseMoments
    pending_draws: tuple = ()
    pending_grads: tuple = ()


def dense_window_init(n: int) -> DenseWindow:
    return DenseWindow(dense_moments_init(n), dense_moments_init(n))


def _flush(window: DenseWindow) -> DenseWindow:
    return DenseWindow(
        dense_moments_merge(window.draws, window.pending_draws),
        dense_moments_merge(window.grads, window.pending_grads),
    )


def dense_window_update(windows: list, iteration: int, window: DenseWindow, _, x, grad):
    """:func:`window_update` for the dense preconditioner, with the window's moments in one
    :class:`DenseWindow` (``grad_moments`` is unused, None). At the window's last transition,
    ``scaling`` is ``(M, L)`` from :func:`~pymc_tempering.kernels.dense.dense_preconditioner`,
    or the diagonal estimate as a matrix where the dense one is not positive definite."""
    start, end = windows[0]
    if start <= iteration < end:
        window = window._replace(
            pending_draws=(*window.pending_draws, x), pending_grads=(*window.pending_grads, grad)
        )  # states and gradients are fresh arrays, never changed in place: kept by reference
        if len(window.pending_draws) == DENSE_BLOCK:
            with one_blas_thread():
                window = _flush(window)
    if iteration + 1 != end:
        return WindowUpdate(window, None, windows, None)
    with one_blas_thread():
        window = _flush(window)
        moments, grad_moments = window.draws, window.grads
        dense = dense_preconditioner(moments, grad_moments)
    if dense is None:
        diag = diag_preconditioner(
            Moments(moments.count, moments.mean, np.diag(moments.m2).copy()),
            Moments(grad_moments.count, grad_moments.mean, np.diag(grad_moments.m2).copy()),
        )
        dense = np.diag(diag), np.diag(np.sqrt(diag))
    return WindowUpdate(dense_window_init(moments.mean.size), None, windows[1:], dense)
