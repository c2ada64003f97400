"""``explorer="auto"`` on the default ladder: once every rung runs dense MALA (the top rung
looked Gaussian, :mod:`.auto`), the ladder is sized to its communication barrier.

A posterior that looks Gaussian and whose moves mix needs few rungs: the barrier
``Lambda`` (the sum of the pairs' swap rejection rates, Syed et al. 2021) is small, and
:func:`pymc_tempering.ladder.suggested_n_rungs` (about ``2 Lambda + 1``) is far below the
default 32. The swap rejections of sweeps :data:`SHRINK_FROM` to :data:`SHRINK_AT` - 1 (the
scale window after the last look, MALA retuned) are recorded in a
:class:`~.tuning.LadderRound`; at its end, where the barrier suggests fewer rungs (at least
:data:`MIN_RUNGS`), the rungs are re-placed at equal rejection, once; where it does not, the
ladder is left as it is. It needs tuning long enough for that window and the scale tuning after
it (:func:`may_shrink`). Measurements: docs/decisions/152-fewer-rungs.md.
"""

import numpy as np

from pymc_tempering.engine.auto import EXTENDED_DECISION_SWEEP
from pymc_tempering.engine.tuning import (
    FIRST_WINDOW,
    LadderRound,
    init_ladder_round,
    window_fraction,
)
from pymc_tempering.ladder import communication_barrier, equal_rejection_ladder, suggested_n_rungs

__all__ = ["SHRINK_FROM", "SHRINK_AT", "MIN_RUNGS", "may_shrink", "shrink_round", "shrunk_ladder"]

SHRINK_FROM = EXTENDED_DECISION_SWEEP  # the end of auto's last look (350) ...
SHRINK_AT = SHRINK_FROM + 8 * FIRST_WINDOW  # ... to the end of the scale window after it (750)
#: the fewest rungs a shrunk ladder keeps (decision 152)
MIN_RUNGS = 8


def may_shrink(scales, tune_sweeps: int) -> bool:
    """Whether a chain of ``tune_sweeps`` tuning sweeps has room to record the window and
    resize: :data:`SHRINK_AT` within tuning's share (938 sweeps and more with the default
    windows), so that the scales go on tuning after the resize."""
    return SHRINK_AT <= window_fraction(scales) * tune_sweeps


def shrink_round(n_rungs: int) -> LadderRound:
    """An empty round of swap rejections, ending at :data:`SHRINK_AT`."""
    rnd = init_ladder_round(n_rungs, 0)
    return rnd._replace(end=SHRINK_AT, length=SHRINK_AT - SHRINK_FROM)


def shrunk_ladder(betas, rnd: LadderRound):
    """``(new betas or None, barrier, suggested rungs)`` at the round's end: rungs re-placed at
    equal rejection, ``max(MIN_RUNGS, suggested_n_rungs(barrier))`` of them, where that is
    fewer than ``betas`` has; None (the ladder kept) otherwise, or where a pair was never
    proposed (no rate to place rungs by)."""
    if np.any(rnd.count == 0):
        return None, np.nan, -1
    rejection = rnd.rejection / rnd.count
    barrier = float(communication_barrier(betas, rejection)[-1])
    suggested = suggested_n_rungs(barrier)
    n_rungs = max(MIN_RUNGS, suggested)
    if n_rungs >= betas.size:
        return None, barrier, suggested
    return equal_rejection_ladder(betas, rejection, n_rungs), barrier, suggested
