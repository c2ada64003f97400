"""``explorer="auto"``, ExchangeMC's default: the diagonal random walk, switched to dense MALA
while tuning where the posterior is close to a (correlated) Gaussian.

The run starts as ``explorer="rwm"`` (the same random numbers, so the same draws). Over the
scale window from sweep :data:`PROBE_START` to :data:`DECISION_SWEEP` (the second; the first
is mostly burn-in) the top rung (beta = 1) is probed every :func:`probe_stride` sweeps: its
draws and forward-difference gradients of ``log p`` (``d`` extra density rows, one batched
call, no compiled gradient) feed the Gaussianity score

    ``m = tr(Cov(x) Cov(grad log p)) / d``,

which is 1 for a Gaussian and at least 1 in expectation for any smooth density (Cramer-Rao
for a location family); ridges, funnels and separated modes give 10-1000. At the window's end
a score below :data:`GAUSSIAN_LIMIT`, with at least one more scale window left in tuning,
compiles the batched gradient and switches every rung to dense MALA (gradients in ``aux``,
Cholesky factors from the window's scales, the top rung's from the probe's draws and
gradients, retuned in the windows left); otherwise the walk stays, bit for bit ``"rwm"``.
A score that is not clearly Gaussian (above the limit, or below it by less than a factor
:data:`CLOSE_FACTOR`) is not decided on that window, where the walk may still be settling
(from a start far in the tails, or near a reference not fitted yet) and the chains of one run
could disagree: a fresh probe reads the second half of the third window
(``EXTENDED_PROBE_START`` to :data:`EXTENDED_DECISION_SWEEP`) and decides at its end where
tuning has room to retune MALA after it (:func:`may_extend`), else at once.
A chain that could not switch (tuning too short, :func:`may_switch`) is not probed at all.
Which move runs is read from the replicas (MALA's carry gradients), so a restored or
continued chain runs the move chosen. Measurements: docs/decisions/110-exchange-defaults.md.
"""

from typing import NamedTuple

import numpy as np

from pymc_tempering.engine.explorers import (
    MALA_TARGET_ACCEPT,
    Explorer,
    Langevin,
    RandomWalk,
)
from pymc_tempering.engine.tuning import (
    FIRST_WINDOW,
    ScaleTuning,
    window_fraction,
)
from pymc_tempering.kernels.dense import DenseMoments, dense_preconditioner, rung_covariance_update
from pymc_tempering.kernels.fused import Replicas
from pymc_tempering.kernels.moments import Moments, covariance_init
from pymc_tempering.trace import LOCAL_MOVES

__all__ = [
    "WalkThenMALA",
    "ProbedScaleTuning",
    "Probe",
    "probe_stride",
    "top_gradient",
    "probe_update",
    "may_switch",
    "may_extend",
    "is_close",
    "gaussianity",
    "switch_due",
    "to_mala",
    "PROBE_START",
    "DECISION_SWEEP",
    "GAUSSIAN_LIMIT",
    "CLOSE_FACTOR",
    "EXTENDED_DECISION_SWEEP",
    "EXTENDED_PROBE_START",
]

PROBE_START = FIRST_WINDOW  # the probe reads the second scale window, sweeps 50 ..
DECISION_SWEEP = 3 * FIRST_WINDOW  # .. 149; the decision at its end
#: a top-rung score below this switches to dense MALA (decision 110: 0.7-1.7 on correlated
#: Gaussian-like posteriors, 10 and more on two-mode, centred eight schools and singular)
GAUSSIAN_LIMIT = 3.0
#: a first-look score from GAUSSIAN_LIMIT / CLOSE_FACTOR up is not clearly Gaussian: a fresh
#: probe looks again (decision 110's addenda)
CLOSE_FACTOR = 1.5
EXTENDED_DECISION_SWEEP = DECISION_SWEEP + 4 * FIRST_WINDOW  # the third window's end (349)
#: the second look reads as many sweeps as the first, from 250
EXTENDED_PROBE_START = EXTENDED_DECISION_SWEEP - (DECISION_SWEEP - PROBE_START)
#: the probe reads every other sweep where that leaves at least this many draws per
#: coefficient of its regression (``d + 2``), else every sweep (decision 110)
DRAWS_PER_COEFFICIENT = 2


class Probe(NamedTuple):
    """Cross moments, over the probe window, of the top rung's draws and gradients side by
    side, ``(x, g)`` (m2 of shape ``(1, 2 d, 2 d)``)."""

    moments: Moments

    def blocks(self):
        """``(n, S_x, S_g, S_xg)``: the count and the sample covariance's blocks."""
        n, m2 = self.moments.count, self.moments.m2[0]
        d = m2.shape[0] // 2
        cov = m2 / max(n - 1, 1)
        return n, cov[:d, :d], cov[d:, d:], cov[:d, d:]

    def dense_moments(self):
        """The draws' and the gradients' own :class:`DenseMoments`."""
        n, mean, m2 = self.moments.count, self.moments.mean[0], self.moments.m2[0]
        d = mean.size // 2
        return (DenseMoments(n, mean[:d], m2[:d, :d]), DenseMoments(n, mean[d:], m2[d:, d:]))


class ProbedScaleTuning(NamedTuple):
    """:class:`~.tuning.ScaleTuning`'s fields, then the probe (None once decided), the
    score measured (NaN before the first look) and the sweep the decision is due after
    (:data:`DECISION_SWEEP`, or :data:`EXTENDED_DECISION_SWEEP` where the score was close)."""

    log_scaling: np.ndarray
    param_scale: np.ndarray
    moments: Moments
    window_end: int
    window_len: int
    gain_start: int
    chol: np.ndarray | None = None
    grad_moments: Moments | None = None
    probe: Probe | None = None
    gaussianity: float = np.nan
    decide_at: int = DECISION_SWEEP  # the sweep after which the probe decides
    probe_from: int = PROBE_START  # the sweep from which the probe reads


def probed(scales: ScaleTuning, density, tune_sweeps: int) -> ScaleTuning | ProbedScaleTuning:
    """``scales`` with an empty probe where the chain may switch: room in tuning
    (:func:`may_switch`) and a model not yet found without a gradient (``density``'s
    ``no_gradient``, set by the first switch that failed); else ``scales`` as they are (not
    probed: the walk's state, bit for bit)."""
    if density.no_gradient or not may_switch(scales, tune_sweeps):
        return scales
    return ProbedScaleTuning(*scales, Probe(covariance_init((1, 2 * density.n_params))))


def probe_stride(n_params: int) -> int:
    """Every how many sweeps the probe reads the top rung: 2 while the window's draws at that
    stride are at least :data:`DRAWS_PER_COEFFICIENT` per regression coefficient (``d <=
    23``), else 1 (the walk's consecutive draws are close: half of them score as well)."""
    window = DECISION_SWEEP - PROBE_START
    return 2 if window // 2 >= DRAWS_PER_COEFFICIENT * (n_params + 2) else 1


def top_gradient(batch, x_top, logp_top, beta, step) -> np.ndarray:
    """Forward-difference gradient ``(1, d)`` of ``logprior + beta * loglik`` at ``x_top``
    (``(1, d)``, tempered density ``logp_top``) with per-coordinate steps ``step``
    (``(1, d)``): one batched call of ``d`` rows; -inf where a shifted point leaves the
    support (:func:`probe_update` leaves it out)."""
    shifted = x_top + np.diag(step[0])  # row j: x_top + step[j] e_j
    prior, lik = batch(shifted)
    return ((prior + beta * lik - logp_top) / step[0])[None]


def probe_update(probe: Probe, x_top, grad_top) -> Probe:
    """The probe with the top rung's draw ``x_top`` and gradient ``grad_top`` (both ``(1,
    d)``) added; a gradient that is not finite (a shifted point out of the support) is left
    out with its draw."""
    if not np.all(np.isfinite(grad_top)):
        return probe
    return Probe(rung_covariance_update(probe.moments, np.hstack([x_top, grad_top])))


def gaussianity(probe: Probe) -> float:
    """``1 + tr(S_x R) / d``, ``R = S_g - S_gx S_x^-1 S_xg`` the gradients' covariance left
    unexplained by a linear function of the draws (the residual sum of squares over ``n - 1``,
    scaled by ``(n - 1) / (n - d - 1)`` for the ``d + 1`` coefficients fitted: unbiased where
    the residual is independent of the draws); NaN with ``n <= d + 2`` draws or a singular
    ``S_x``.

    For any smooth density ``Cov(g, x) = -I``, so in expectation this is the Fisher mismatch
    ``tr(Cov(x) Cov(g)) / d``: 1 for a Gaussian, more for anything else. Estimated through
    the regression it stays 1 for a Gaussian when the draws have not yet settled (a walk still
    drifting along a long axis: the gradients are still a linear function of the draws),
    where the plain mismatch grows with the drift (decision 110)."""
    n, s_x, s_g, s_xg = probe.blocks()
    d = s_x.shape[0]
    if n <= d + 2:
        return np.nan
    try:
        explained = s_xg.T @ np.linalg.solve(s_x, s_xg)
    except np.linalg.LinAlgError:
        return np.nan
    score = 1.0 + np.sum(s_x * (s_g - explained).T) / d * (n - 1) / (n - d - 1)
    return float(score) if np.isfinite(score) else np.nan


def may_switch(scales: ScaleTuning, tune_sweeps: int) -> bool:
    """Whether a chain of ``tune_sweeps`` tuning sweeps has room to switch: the scale window
    after the decision (sweeps 150 to 349) ends within tuning's share, so that MALA is
    retuned. A chain without room is not probed."""
    return DECISION_SWEEP + 4 * FIRST_WINDOW <= window_fraction(scales) * tune_sweeps


def may_extend(scales: ScaleTuning, tune_sweeps: int) -> bool:
    """Whether a close score may wait for :data:`EXTENDED_DECISION_SWEEP`: the scale window
    after it (sweeps 350 to 749) ends within tuning's share (938 tuning sweeps and more with
    the walk's windows), so that MALA is still retuned."""
    return EXTENDED_DECISION_SWEEP + 8 * FIRST_WINDOW <= window_fraction(scales) * tune_sweeps


def is_close(score: float) -> bool:
    """Whether a first look's ``score`` is not clearly Gaussian: at least
    :data:`GAUSSIAN_LIMIT` / :data:`CLOSE_FACTOR` (a walk still settling scores anywhere
    above; NaN, too few draws, is not)."""
    return bool(score >= GAUSSIAN_LIMIT / CLOSE_FACTOR)


def switch_due(scales: ProbedScaleTuning, sweep: int, tune_sweeps: int):
    """``(scales, decided, switch)`` after tuning sweep ``sweep`` (0-based) of a chain of
    ``tune_sweeps``. A probed chain (one with room to switch, :func:`may_switch`) looks at
    its score at the end of sweep :data:`DECISION_SWEEP`; a close score (:func:`is_close`)
    where :func:`may_extend` waits for the end of :data:`EXTENDED_DECISION_SWEEP`, on a fresh
    probe read from ``EXTENDED_PROBE_START``; any other decides: it switches where the score
    is below
    :data:`GAUSSIAN_LIMIT`. The scales returned hold the score; a decided chain's no probe."""
    if scales.probe is None or sweep + 1 != scales.decide_at:
        return scales, False, False
    score = gaussianity(scales.probe)
    if scales.decide_at == DECISION_SWEEP and is_close(score) and may_extend(scales, tune_sweeps):
        fresh = Probe(covariance_init(scales.probe.moments.mean.shape))
        extended = scales._replace(
            probe=fresh,
            gaussianity=score,
            decide_at=EXTENDED_DECISION_SWEEP,
            probe_from=EXTENDED_PROBE_START,
        )
        return extended, False, False
    return scales._replace(probe=None, gaussianity=score), True, bool(score < GAUSSIAN_LIMIT)


def to_mala(scales: ProbedScaleTuning, replicas: Replicas, density, top: Probe | None):
    """``(scales, replicas)`` for dense MALA, or None where the model has no gradient.

    Replicas get their densities and gradients from one batched call; every rung's Cholesky
    factor is ``diag(param_scale)`` (the window just ended), the top rung's the dense
    preconditioner of the probe's draws and gradients (``top``) where it is finite; empty
    dense window moments and gradient moments; scales and windows as they are."""
    if not density.ensure_gradient():
        return None
    n_rungs, d = replicas.x.shape
    logprior, loglik, grad_prior, grad_lik = density.batch_grad(replicas.x)
    replicas = Replicas(
        replicas.x.copy(),
        np.hstack([grad_prior, grad_lik]),
        logprior,
        loglik,
        replicas.rung_replica.copy(),
    )
    chol = np.stack([np.diag(s) for s in scales.param_scale])
    if top is not None:
        estimate = dense_preconditioner(*top.dense_moments())
        if estimate is not None:
            chol[-1] = estimate[1]
    scales = scales._replace(
        moments=covariance_init((n_rungs, d)), chol=chol, grad_moments=covariance_init((n_rungs, d))
    )
    return scales, replicas


class WalkThenMALA(Explorer):
    """:class:`~.explorers.RandomWalk` until :func:`to_mala` gives the replicas gradients,
    dense :class:`~.explorers.Langevin` after; which one runs is read from the replicas."""

    name = "auto"
    fits_rungs = False

    def __init__(self, density, fixed=None):
        self.walk = RandomWalk(density, fixed)
        self.mala = Langevin(density, fixed)
        self.needs_gradient = False  # the move of the replicas last seen

    @staticmethod
    def default_target_accept(n_params: int) -> float:
        return RandomWalk.default_target_accept(n_params)

    def init_aux(self, x):
        self.needs_gradient = False
        return self.walk.init_aux(x)  # every chain starts with the walk

    def sync(self, replicas) -> bool:
        """Whether ``replicas`` are MALA's (they carry gradients); remembered."""
        self.needs_gradient = replicas.aux.shape[1] > 0
        return self.needs_gradient

    def explore(self, replicas, betas, scales, exact, rng, random, pairs):
        if not self.sync(replicas):
            return self.walk.explore(replicas, betas, scales, exact, rng, random, pairs)
        density = self.mala.density
        # a chain restored after its switch in a new process: compile the gradient here
        if not density.ensure_gradient():
            raise ValueError(
                "This ExchangeMC(explorer='auto') state holds MALA replicas, but the model's "
                "log density has no gradient: continue it with the model it was run on."
            )
        return self.mala.explore(replicas, betas, scales, exact, rng, random, pairs)

    CODES = {
        False: np.int8(LOCAL_MOVES.index("rwm+diag")),
        True: np.int8(LOCAL_MOVES.index("mala+dense")),
    }

    def code(self) -> np.int8:
        """The stat ``explorer``'s code of the move last seen."""
        return self.CODES[self.needs_gradient]

    def target_accept(self, walk_target: float, user_target: float | None) -> float:
        """The acceptance rate tuning aims for with the move last seen (a ``target_accept``
        the user gave applies to both moves)."""
        if user_target is not None:
            return user_target
        return MALA_TARGET_ACCEPT if self.needs_gradient else walk_target
