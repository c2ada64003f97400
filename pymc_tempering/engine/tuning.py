"""ExchangeMC's tuning between sweeps, as pure functions: proposal scales and the ladder.

Each function takes the tuning record and what a sweep measured and returns a new record; no
hidden state, so every rule can be checked with hand-derived numbers
(``tests/test_adaptation_rules.py``). The sampler calls them only while tuning; afterwards the
scales and the ladder are frozen.

Proposal scales (Haario et al. 2001; Andrieu & Thoms 2008): per rung, ``log scaling`` follows a
Robbins-Monro recursion towards the target acceptance with gain ``(t - t0 + 1) ** -0.6``; at the
end of doubling windows (ending at 50, 150, 350, ... sweeps) in the first 80% of tuning (50%
with the independence explorer's proposals), each parameter's
scale is set to the rung's shrunk sample standard deviation and the recursion restarts. With a
dense proposal (``ScaleTuning.chol`` not None) the windows estimate each rung's full covariance
instead, and its regularised Cholesky factor ``L_l`` shapes the move ``x + s_l L_l z``
(:func:`pymc_tempering.kernels.rwm.proposal_cholesky`; Haario et al. 2001 per rung).

Ladder (Syed et al. 2021, Algorithm 4): rounds of doubling length (from ``max(32, T / 64)``
sweeps) accumulate each pair's swap rejection and each rung's log-likelihood moments; at a
round's end the rungs are re-placed (equal rejection, or equal thermodynamic length), until the
next round would not fit in the first 80% of tuning.
"""

from typing import NamedTuple

import numpy as np

from pymc_tempering.kernels import independence as fitting
from pymc_tempering.kernels.dense import (
    DenseMoments,
    dense_preconditioner,
    rung_covariance_update,
)
from pymc_tempering.kernels.fused import Replicas
from pymc_tempering.kernels.moments import (
    Moments,
    covariance_init,
    moments_init,
    shrunk_variance,
    variance,
    welford_update,
)
from pymc_tempering.kernels.rwm import proposal_cholesky, robbins_monro_scaling
from pymc_tempering.ladder import (
    communication_barrier,
    equal_rejection_ladder,
    suggested_n_rungs,
    thermodynamic_length_ladder,
)

__all__ = [
    "ScaleTuning",
    "FittedScaleTuning",
    "init_scale_tuning",
    "tune_scales",
    "dense_factors",
    "LadderRound",
    "LadderUpdate",
    "init_ladder_round",
    "accumulate_swaps",
    "ladder_update",
    "next_ladder_round",
    "nearest_rungs",
    "resize_rungs",
    "tune_fit",
    "LADDER_OBJECTIVES",
]

FIRST_WINDOW = 50
WINDOW_FRACTION = 0.8  # windows and ladder rounds must end within this share of tuning
# with independence proposals (FittedScaleTuning) windows and fit end within this share of
# tuning, so the rest mixes with the final fit (docs/decisions/072-burn-in-tune-500.md)
FIT_WINDOW_FRACTION = 0.5
VARIANCE_FLOOR = 1e-6  # what a window's variance is shrunk towards
GAIN_EXPONENT = 0.6


class ScaleTuning(NamedTuple):
    """Proposal scales of every rung and the state of their adaptation."""

    log_scaling: np.ndarray  # (n_rungs,): overall log proposal scale per rung
    param_scale: np.ndarray  # (n_rungs, n_params): per-parameter scale per rung
    moments: Moments  # of the replicas in the current window, (n_rungs, n_params)
    window_end: int  # sweep at which the current window ends
    window_len: int
    gain_start: int  # sweep at which the Robbins-Monro gain last restarted
    # dense proposals: lower Cholesky factor per rung, (n_rungs, n_params, n_params), and then
    # ``moments.m2`` holds the window's sums of outer products; None: diagonal proposals
    chol: np.ndarray | None = None
    # dense proposals learned from gradients too: cross moments of each rung's tempered
    # log-density gradients in the window (None: from the draws alone)
    grad_moments: Moments | None = None


class FittedScaleTuning(NamedTuple):
    """:class:`ScaleTuning` and the independence explorer's per-rung proposals (their draws
    buffer and fit, :func:`tune_fit`): the same fields then ``independence``. A record of
    its own, so that the other explorers' sampling state stays what it was."""

    log_scaling: np.ndarray
    param_scale: np.ndarray
    moments: Moments
    window_end: int
    window_len: int
    gain_start: int
    chol: np.ndarray | None = None
    grad_moments: Moments | None = None
    independence: fitting.FitTuning | None = None


def window_fraction(tuning) -> float:
    """The share of tuning within which the scale windows end: :data:`FIT_WINDOW_FRACTION`
    with independence proposals, else :data:`WINDOW_FRACTION`."""
    return FIT_WINDOW_FRACTION if isinstance(tuning, FittedScaleTuning) else WINDOW_FRACTION


def _window_moments(n_rungs, n_params, dense):
    return covariance_init((n_rungs, n_params)) if dense else moments_init((n_rungs, n_params))


def init_scale_tuning(
    n_rungs: int,
    n_params: int,
    log_scaling: float,
    dense: bool = False,
    gradients: bool = False,
    fit: bool = False,
) -> ScaleTuning:
    """Scales before tuning: ``log_scaling`` on every rung, unit per-parameter scales (with
    ``dense``, identity Cholesky factors; with ``gradients`` too, the dense covariances are
    learned from the draws and the gradients, see :func:`dense_factors`; with ``fit``, an
    empty buffer for the independence proposals, see :func:`tune_fit`)."""
    chol = np.broadcast_to(np.eye(n_params), (n_rungs, n_params, n_params)).copy()
    grads = covariance_init((n_rungs, n_params)) if dense and gradients else None
    tuning = ScaleTuning(
        np.full(n_rungs, log_scaling),
        np.ones((n_rungs, n_params)),
        _window_moments(n_rungs, n_params, dense),
        FIRST_WINDOW,
        FIRST_WINDOW,
        0,
        chol if dense else None,
        grads,
    )
    if fit:
        return FittedScaleTuning(*tuning, fitting.fit_tuning_init(n_rungs, n_params))
    return tuning


def dense_factors(moments: Moments, grad_moments: Moments | None) -> np.ndarray:
    """Each rung's proposal Cholesky factor at a window's end, ``(n_rungs, d, d)``.

    With gradients (the sampler measures them by forward differences), the rung's covariance
    estimate is MALA's dense preconditioner
    (:func:`pymc_tempering.kernels.dense.dense_preconditioner`): the geometric mean of the
    draws' covariance and the inverse of the gradients' covariance, exact for a Gaussian rung
    whatever the window has explored, so a random walk stuck along a long axis still learns
    it. Rungs where that estimate fails, or without gradients, get the draws' regularised
    covariance (:func:`pymc_tempering.kernels.rwm.proposal_cholesky`).
    """
    chol = proposal_cholesky(moments, VARIANCE_FLOOR)
    if grad_moments is None:
        return chol
    for rung in range(chol.shape[0]):
        draws = DenseMoments(moments.count, moments.mean[rung], moments.m2[rung])
        grads = DenseMoments(grad_moments.count, grad_moments.mean[rung], grad_moments.m2[rung])
        estimate = dense_preconditioner(draws, grads)
        if estimate is not None:
            chol[rung] = estimate[1]
    return chol


def tune_scales(
    tuning: ScaleTuning,
    sweep: int,
    accept_prob,
    x,
    target_accept: float,
    tune_sweeps: int,
    exact_first: bool,
    grad=None,
) -> ScaleTuning:
    """The scales after tuning sweep number ``sweep`` (0-based) measured ``accept_prob``.

    ``x`` (n_rungs, n_params) are the replicas after the sweep; ``exact_first``: rung 0 draws
    exactly from its target and has no scale to tune. At a window's end the per-parameter
    scale becomes the window's shrunk standard deviation and ``log_scaling`` restarts at
    ``log(2.38 / sqrt(n_params))``; with a dense proposal each rung's Cholesky factor becomes
    that of the window's covariance estimate (:func:`dense_factors`; ``grad``, the tempered
    log-density gradients at ``x``, feeds it when ``tuning.grad_moments`` is not None).
    """
    gain = (sweep - tuning.gain_start + 1) ** -GAIN_EXPONENT
    if exact_first:
        accept_prob = np.concatenate([[target_accept], accept_prob[1:]])
    log_scaling = robbins_monro_scaling(tuning.log_scaling, accept_prob, target_accept, gain)
    if isinstance(tuning, FittedScaleTuning):
        tuning = tuning._replace(independence=tune_fit(tuning, sweep, x, tune_sweeps))
    dense = tuning.chol is not None
    moments = (rung_covariance_update if dense else welford_update)(tuning.moments, x)
    grads = tuning.grad_moments
    if grads is not None and grad is not None:  # gradients may be measured every few sweeps
        grads = rung_covariance_update(grads, grad)
    end = tuning.window_end
    if sweep + 1 != end or end > window_fraction(tuning) * tune_sweeps:
        return tuning._replace(log_scaling=log_scaling, moments=moments, grad_moments=grads)
    n_rungs, n_params = tuning.param_scale.shape
    chol = dense_factors(moments, grads) if dense else None
    if dense:  # the per-parameter scales (discrete moves, stats) from the same estimate
        moments = Moments(moments.count, moments.mean, np.diagonal(moments.m2, 0, -2, -1))
    return type(tuning)(
        np.full_like(log_scaling, np.log(2.38 / np.sqrt(n_params))),
        np.sqrt(shrunk_variance(moments, VARIANCE_FLOOR)),
        _window_moments(n_rungs, n_params, dense),
        end + 2 * tuning.window_len,
        2 * tuning.window_len,
        sweep + 1,
        chol,
        None if grads is None else covariance_init((n_rungs, n_params)),
        *tuning[len(ScaleTuning._fields) :],  # FittedScaleTuning's independence record
    )


MIN_FIT_DRAWS = 20  # stored draws per rung below which no independence proposal is fitted


def tune_fit(tuning: FittedScaleTuning, sweep: int, x, tune_sweeps: int):
    """The independence proposals' record after tuning sweep ``sweep`` (None if not used).

    From the end of the first window (the draws before are burn-in) every sweep's replicas
    ``x`` go into the buffer (the latest :data:`~pymc_tempering.kernels.independence.BUFFER`
    kept). The proposals are fitted (:func:`~pymc_tempering.kernels.independence.fit_rungs`)
    at the end of the last scale window in the first half of tuning
    (:data:`FIT_WINDOW_FRACTION`), or, where that window has too few draws behind it (fewer
    than 300 tuning sweeps), halfway through tuning, so that the rest of tuning mixes with
    them; and again at the last tuning sweep from the draws made since (pooled with the
    neighbouring rungs'): that fit is frozen. (The buffer is written in place: copying it
    every sweep would cost more than the sweep.)"""
    record = tuning.independence
    if record is None or sweep < FIRST_WINDOW:
        return record
    record = fitting.store_draws(record, x)
    if record.count < MIN_FIT_DRAWS:
        return record
    if sweep + 1 == tune_sweeps:  # frozen: the buffer is no longer needed
        fit = fitting.fit_rungs(record)
        return fitting.fit_tuning_init(*x.shape, fit, size=0)._replace(final=True)
    end, half = tuning.window_end, window_fraction(tuning) * tune_sweeps
    last_window = sweep + 1 == end and end <= half < end + 2 * tuning.window_len
    if last_window or (record.fit is None and sweep + 1 >= half):
        # the last fit sees only the draws made since this one (with its moves: better mixed)
        return fitting.fit_tuning_init(*x.shape, fitting.fit_rungs(record))
    return record


class LadderRound(NamedTuple):
    """What one round of ladder adaptation has measured so far."""

    end: float  # sweep at which the round ends (inf: no further round)
    length: int
    rejection: np.ndarray  # (n_rungs - 1,): summed swap rejection probability per pair
    count: np.ndarray  # (n_rungs - 1,): swaps proposed per pair
    loglik: Moments  # of each rung's log-likelihood (NaN where it is -inf)


class LadderUpdate(NamedTuple):
    betas: np.ndarray
    barrier: float  # communication barrier measured over the round
    n_rungs_suggested: int


def _empty_round(end, length, n_rungs) -> LadderRound:
    return LadderRound(
        end, length, np.zeros(n_rungs - 1), np.zeros(n_rungs - 1), moments_init((n_rungs,))
    )


def init_ladder_round(n_rungs: int, tune_sweeps: int) -> LadderRound:
    first = max(32, tune_sweeps // 64)
    return _empty_round(first, first, n_rungs)


def accumulate_swaps(rnd: LadderRound, lower, swap_prob, loglik) -> LadderRound:
    """The round after a sweep that proposed pairs ``lower`` with probabilities ``swap_prob``."""
    rejection, count = rnd.rejection.copy(), rnd.count.copy()
    rejection[lower] += 1.0 - swap_prob
    count[lower] += 1
    finite = np.where(np.isfinite(loglik), loglik, np.nan)  # -inf on a beta = 0 rung
    return rnd._replace(rejection=rejection, count=count, loglik=welford_update(rnd.loglik, finite))


def _equal_rejection(betas, rejection, rnd, n_rungs):
    return equal_rejection_ladder(betas, rejection, n_rungs)


def _equal_length(betas, rejection, rnd, n_rungs):
    return thermodynamic_length_ladder(betas, np.sqrt(variance(rnd.loglik)), n_rungs)


LADDER_OBJECTIVES = {"swap": _equal_rejection, "evidence": _equal_length}


def ladder_update(betas, rnd: LadderRound, objective: str, max_rungs: int | None) -> LadderUpdate:
    """The ladder at the end of round ``rnd``: its barrier, and rungs re-placed to equalise
    ``objective`` (``"swap"``: swap rejection; ``"evidence"``: thermodynamic length). With
    ``max_rungs``, the number of rungs becomes the barrier's suggestion, clipped to
    ``[3, max_rungs]``; otherwise it stays."""
    rejection = rnd.rejection / np.maximum(rnd.count, 1)
    barrier = float(communication_barrier(betas, rejection)[-1])
    suggested = suggested_n_rungs(barrier)
    n_rungs = None if max_rungs is None else int(np.clip(suggested, 3, max_rungs))
    new = LADDER_OBJECTIVES[objective](betas, rejection, rnd, n_rungs)
    return LadderUpdate(new, barrier, suggested)


def next_ladder_round(rnd: LadderRound, n_rungs: int, tune_sweeps: int) -> LadderRound:
    """An empty round twice as long as ``rnd``, or one that never ends (``end = inf``) when it
    would not fit in the first 80% of tuning."""
    length = 2 * rnd.length
    end = rnd.end + length
    if end > WINDOW_FRACTION * tune_sweeps:
        end = np.inf
    return _empty_round(end, length, n_rungs)


def nearest_rungs(betas, old_betas) -> np.ndarray:
    """For each rung of the new ladder ``betas``, the old rung whose replica and tuning it gets.

    The nearest in beta, except that the ends map to the ends, and a new rung with ``beta > 0``
    never gets old rung 0 when that is ``beta = 0`` (whose replica may have ``loglik = -inf``,
    admissible only there).
    """
    nearest = np.abs(betas[:, None] - old_betas[None, :]).argmin(axis=1)
    if old_betas[0] == 0:
        nearest = np.where(nearest == 0, 1, nearest)
    nearest[0], nearest[-1] = 0, old_betas.size - 1
    return nearest


def resize_rungs(betas, old_betas, replicas: Replicas, scales: ScaleTuning):
    """``(replicas, scales)`` for the new ladder ``betas``: every rung gets the replica and
    proposal scales of the nearest old rung (:func:`nearest_rungs`), fresh moments, and the
    replicas are renumbered in rung order."""
    n_rungs, n_params = betas.size, replicas.x.shape[1]
    nearest = nearest_rungs(betas, old_betas)
    r = replicas
    replicas = Replicas(
        r.x[nearest].copy(),
        r.aux[nearest].copy(),
        r.logprior[nearest],
        r.loglik[nearest],
        np.arange(n_rungs),
    )
    dense = scales.chol is not None
    scales = scales._replace(
        log_scaling=scales.log_scaling[nearest].copy(),
        param_scale=scales.param_scale[nearest].copy(),
        moments=_window_moments(n_rungs, n_params, dense),
        chol=scales.chol[nearest].copy() if dense else None,
        grad_moments=None if scales.grad_moments is None else covariance_init((n_rungs, n_params)),
    )
    if isinstance(scales, FittedScaleTuning):
        scales = scales._replace(independence=_resize_fit(scales.independence, nearest, n_params))
    return replicas, scales


def _resize_fit(record, nearest, n_params):
    """An empty buffer for the new rungs, each with the fit of its nearest old rung."""
    if record is None:
        return None
    fit = None if record.fit is None else fitting.take_rungs(record.fit, nearest)
    return fitting.fit_tuning_init(nearest.size, n_params, fit)
