"""``explorer="auto"``: dense MALA that falls back to the random walk where the posterior is far
from Gaussian, decided once while tuning.

Dense-preconditioned MALA mixes well on posteriors close to a (correlated) Gaussian and badly
where the log density's curvature changes from place to place (a singular model's ridges, a
funnel, separated modes): its tuned step is then set by the steepest region. The rule reads the
window of draws and tempered gradients that dense MALA's tuning already keeps on the top rung
(beta = 1): for any smooth density the covariance of the draws bounds the inverse of the
gradients' second moments from above (Cramer-Rao for a location family), so

    ``mismatch = tr(Cov(x) Cov(grad log p)) / d >= 1``, with equality for a Gaussian.

At the end of the scale window that ends at sweep :data:`DECISION_SWEEP` (the second; the
first is mostly burn-in) a mismatch above :data:`MISMATCH_LIMIT` switches the run to the
diagonal random walk (``explorer="rwm"``, per-parameter scales from that window's draws) for
the rest of the chain; below it MALA stays. Tuning too short to reach that window keeps MALA.
The choice lives in the sampling state (diagonal ``scales`` mean the random walk), so a
restored or continued chain runs the explorer chosen; the stat ``explorer`` records it per
draw. Measurements: docs/decisions/110-exchange-defaults.md.
"""

import numpy as np

from pymc_tempering.kernels.moments import moments_init
from pymc_tempering.kernels.rwm import optimal_accept
from pymc_tempering.step_methods.exchange.explorers import Explorer, Langevin, RandomWalk
from pymc_tempering.step_methods.exchange.tuning import FIRST_WINDOW, window_fraction
from pymc_tempering.trace import LOCAL_MOVES

__all__ = ["MALAOrWalk", "fisher_mismatch", "DECISION_SWEEP", "MISMATCH_LIMIT"]

#: the decision is made at the end of the scale window that ends here (the second window)
DECISION_SWEEP = 3 * FIRST_WINDOW
#: a top-rung mismatch above this switches to the random walk (measured: 0.7-1.7 on the
#: correlated posteriors, 11-970 on the two-mode, centred eight schools and singular targets)
MISMATCH_LIMIT = 4.0


def fisher_mismatch(moments, grad_moments, rung: int = -1) -> float:
    """``tr(S_x S_g) / d`` on ``rung``: ``S_x`` the window's draws' covariance, ``S_g`` its
    tempered gradients' (both from running moments with ``m2`` of shape ``(n_rungs, d, d)``).
    At least 1 in expectation for any smooth density, 1 for a Gaussian; NaN without draws."""
    if moments.count < 2 or grad_moments.count < 2:
        return np.nan
    cov_x = moments.m2[rung] / (moments.count - 1)
    cov_g = grad_moments.m2[rung] / (grad_moments.count - 1)
    return float(np.sum(cov_x * cov_g.T) / cov_x.shape[0])


class MALAOrWalk(Explorer):
    """Dense MALA (:class:`~.explorers.Langevin`) until the rule of this module picks the
    diagonal random walk (:class:`~.explorers.RandomWalk`); which one runs is read from the
    scales (``scales.chol`` None: the walk)."""

    name = "mala"
    needs_gradient = True
    fits_rungs = False

    def __init__(self, density, target_accept=None):
        self.mala = Langevin(density)
        self.walk = RandomWalk(density)
        self.default_target_accept = self.mala.default_target_accept
        n_params = max(density.n_params, 1)
        # a target_accept the user gave applies to both moves
        self.walk_target_accept = target_accept or optimal_accept(n_params)
        self.codes = {
            dense: np.int8(LOCAL_MOVES.index("mala+dense" if dense else "rwm+diag"))
            for dense in (True, False)
        }

    def init_aux(self, x):
        return self.mala.init_aux(x)  # every chain starts with MALA

    def explore(self, replicas, betas, scales, exact, rng, random, pairs):
        explorer = self.mala if scales.chol is not None else self.walk
        return explorer.explore(replicas, betas, scales, exact, rng, random, pairs)

    def code(self, scales) -> np.int8:
        """The stat ``explorer``'s code of the move the scales select."""
        return self.codes[scales.chol is not None]

    def target_accept(self, scales, mala_target: float) -> float:
        """The acceptance rate tuning aims for with the move the scales select."""
        return mala_target if scales.chol is not None else self.walk_target_accept

    @staticmethod
    def switch_due(scales, sweep: int, tune_sweeps: int) -> bool:
        """Whether tuning sweep ``sweep`` (0-based) ends the decision window and the top
        rung's :func:`fisher_mismatch` over it exceeds :data:`MISMATCH_LIMIT` (read before the
        window's moments are reset)."""
        if scales.chol is None or scales.grad_moments is None:
            return False
        end = scales.window_end
        if end != DECISION_SWEEP or sweep + 1 != end or end > window_fraction(scales) * tune_sweeps:
            return False
        return fisher_mismatch(scales.moments, scales.grad_moments) > MISMATCH_LIMIT

    @staticmethod
    def to_walk(scales, replicas):
        """``(scales, replicas)`` for the random walk, from those of a window's end: diagonal
        window moments, no Cholesky factors or gradient moments, replicas without gradients;
        the per-parameter scales and restarted ``log_scaling`` are kept."""
        n_rungs, n_params = scales.param_scale.shape
        scales = scales._replace(
            moments=moments_init((n_rungs, n_params)), chol=None, grad_moments=None
        )
        return scales, replicas._replace(aux=np.empty((n_rungs, 0)))
