"""ExchangeMC's stats: their dtypes, one draw's stats from a sweep record, and the average of
several sweeps' records when ``sweeps_per_draw > 1``.

A sweep record is a ``(4, n_rungs)`` array (:func:`pymc_tempering.kernels.fused.finish_sweep`):
rows ``ACCEPT`` and ``ACCEPTED`` per rung (local acceptance probability, 1.0 / 0.0 accepted),
rows ``SWAP`` and ``SWAPPED`` per neighbouring pair in the first ``n_rungs - 1`` columns (swap
acceptance probability, 1.0 / 0.0 swapped; NaN for pairs not proposed).
"""

import math

import numpy as np

from pymc_tempering.kernels.fused import ACCEPT, ACCEPTED, SWAP, SWAPPED
from pymc_tempering.trace import (
    EVIDENCE_LADDER_STAT,
    EXCHANGE_STATS,
    LADDER_STAT,
    PAIR_STATS,
    RUNG_STATS,
)

__all__ = [
    "STATS_DTYPES_SHAPES",
    "ScalingStats",
    "SweepAverage",
    "array_stat_shapes",
    "draw_stats",
]

STATS_DTYPES_SHAPES = EXCHANGE_STATS  # declared once, beside its reader (pymc_tempering.trace)


def _pad(values, length):
    """``values`` padded to ``length`` with NaN (-1 for integer replica ids)."""
    fill = -1 if values.dtype.kind == "i" else np.nan
    out = np.full(length, fill, dtype=values.dtype)
    out[: values.size] = values
    return out


class ScalingStats:
    """The ``scaling`` and ``rung_scaling`` stats of the current proposal scales, computed again
    only when ``log_scaling`` is replaced (every tuning sweep; never after tuning, when one
    read-only array serves every draw: PyMC keeps the reference)."""

    def __init__(self, prior_rung: bool):
        self.prior_rung = prior_rung
        self._log_scaling, self.rungs, self.top = None, None, None

    def update(self, log_scaling: np.ndarray) -> None:
        if log_scaling is self._log_scaling:
            return
        rungs = np.exp(log_scaling)
        if self.prior_rung:
            rungs[0] = np.nan  # exact prior draws: no proposal scale
        rungs.flags.writeable = False
        self._log_scaling, self.rungs, self.top = log_scaling, rungs, math.exp(log_scaling[-1])


def array_stat_shapes(max_rungs: int, prefix: str = "") -> dict:
    """Each array stat of a leg's draws, ``prefix + name -> (element dtype, length)``: the
    ladder and the per-rung stats have ``max_rungs`` entries and the per-pair ones one fewer,
    as :func:`draw_stats` pads them on every draw."""
    shapes = {prefix + LADDER_STAT: (np.float64, max_rungs)}
    for name in RUNG_STATS:
        dtype = np.int64 if name == "rung_replica" else np.float64
        shapes[prefix + name] = (dtype, max_rungs)
    for name in PAIR_STATS:
        shapes[prefix + name] = (np.float64, max_rungs - 1)
    return shapes


def draw_stats(
    record,
    tune,
    betas,
    replicas,
    scaling: ScalingStats,
    swap_rate,
    round_trips,
    max_rungs,
    evidence_ladder=False,
) -> dict:
    """One draw's stats (:data:`STATS_DTYPES_SHAPES`) from its (averaged) sweep record and the
    sampler's state.

    ``max_rungs``: the per-rung stats are padded to this length, where tuning has resized the
    ladder below it (:func:`array_stat_shapes`: every draw's are as long).
    ``evidence_ladder``: the ladder is re-placed for the evidence (the stat of that name).
    """
    stats = {
        "tune": tune,
        "accept": record[ACCEPT, -1],
        "accepted": record[ACCEPTED, -1],
        "scaling": scaling.top,
        "swap_rate": swap_rate,
        "round_trips": round_trips,
        EVIDENCE_LADDER_STAT: evidence_ladder,
        LADDER_STAT: betas,
        "rung_loglik": replicas.loglik.copy(),
        "rung_accept": record[ACCEPT],
        "rung_scaling": scaling.rungs,
        "rung_replica": replicas.rung_replica.copy(),
        "swap_accept": record[SWAP, :-1],
        "swap_accepted": record[SWAPPED, :-1],
    }
    if betas.size < max_rungs:  # else already that long
        for name in (LADDER_STAT, *RUNG_STATS):
            stats[name] = _pad(stats[name], max_rungs)
        for name in PAIR_STATS:
            stats[name] = _pad(stats[name], max_rungs - 1)
    return stats


class SweepAverage:
    """Running average of sweep records on one ladder: per-rung rows over every sweep, swap
    rows over the sweeps that proposed each pair (NaN for pairs never proposed)."""

    RUNGS, PAIRS = [ACCEPT, ACCEPTED], [SWAP, SWAPPED]

    def __init__(self, n_rungs: int):
        self.n_rungs, self.n = n_rungs, 0
        self.total, self.attempts = np.zeros((4, n_rungs)), np.zeros(n_rungs)

    def add(self, record):
        rungs, pairs = self.RUNGS, self.PAIRS
        proposed = ~np.isnan(record[SWAP])
        self.total[rungs] += record[rungs]
        self.total[np.ix_(pairs, proposed)] += record[np.ix_(pairs, proposed)]
        self.attempts += proposed
        self.n += 1

    def result(self, n_rungs: int):
        """The averaged record; all NaN if no sweep was added or the ladder has ``n_rungs``
        other than the records'."""
        record = np.full((4, n_rungs), np.nan)
        if self.n == 0 or n_rungs != self.n_rungs:
            return record
        rungs, pairs, total, attempts = self.RUNGS, self.PAIRS, self.total, self.attempts
        record[rungs] = total[rungs] / self.n
        record[pairs] = np.divide(total[pairs], attempts, out=record[pairs], where=attempts > 0)
        return record
