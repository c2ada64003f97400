"""A tempering run: one leg (prior to posterior, or, for improper priors, the variational
reference to posterior), or two joined at ``beta = 1`` (the variational reference), their
sweeps, the switch of ``explorer="auto"`` and the per-draw record.

:meth:`TemperingRun.draw` makes ``sweeps_per_draw`` sweeps and returns the ``beta = 1`` point
and the draw's stats (schema :data:`pymc_tempering.trace.EXCHANGE_STATS`). A sweep is the fixed
leg's (:class:`.leg.Leg`), then the variational leg's with the junction swap and, while tuning,
the reference's fit (:mod:`.variational`), then the switch to dense MALA where the fixed leg's
probe decided it (:mod:`.auto`). The run knows nothing of PyMC: ``ExchangeMC`` is its adapter.
"""

import numpy as np

from pymc_tempering.engine import auto as auto_switch
from pymc_tempering.engine import stats as exchange_stats
from pymc_tempering.engine import variational as legs
from pymc_tempering.engine.discrete import DiscreteMoves, Mixed
from pymc_tempering.trace import (
    EXPLORER_SCORE_STAT,
    EXPLORER_STAT,
    LADDER_STAT,
    PAIR_STATS,
    REFERENCE_ONLY_STAT,
    RUNG_STATS,
    VARIATIONAL_PREFIX,
)

__all__ = ["TemperingRun"]


class TemperingRun:
    """The legs of a run and the stream ``rng`` they share.

    ``fixed``: the leg from the prior (:class:`.leg.Leg`); with ``variational`` (a
    :class:`.leg.Leg` on :class:`.variational.VariationalDensity`) the reference is fitted
    while tuning and ``reference_fit`` holds it (:class:`.variational.ReferenceFit`). With
    ``reference_only`` the one leg ``fixed`` is such a leg, its reference fitted to its own
    ``beta = 1`` replica (a model with improper priors: no leg can start at the prior), and
    every draw's stat :data:`~pymc_tempering.trace.REFERENCE_ONLY_STAT` says so.
    """

    def __init__(self, make_fixed, make_variational=None, rng=None, reference_only=False):
        if reference_only and make_variational is not None:
            raise ValueError("A run from the reference alone has one leg: pass make_fixed only.")
        self.rng = rng
        self.reference_only = bool(reference_only)
        self.fixed = make_fixed(self)
        self.variational = None if make_variational is None else make_variational(self)
        self._reference_fit, self._leg_records = None, []

    @property
    def legs(self):
        return [self.fixed] if self.variational is None else [self.fixed, self.variational]

    def stat_shapes(self) -> dict:
        """Every array stat of a draw, ``name -> (dtype, length)``: each leg's
        (:meth:`.leg.Leg.stat_shapes`; the variational leg's prefixed
        :data:`VARIATIONAL_PREFIX`)."""
        shapes = self.fixed.stat_shapes()
        if self.variational is not None:
            shapes.update(self.variational.stat_shapes(VARIATIONAL_PREFIX))
        return shapes

    @property
    def reference_leg(self):
        """The leg tempered from the variational reference (None where there is none)."""
        return self.fixed if self.reference_only else self.variational

    @property
    def tune(self) -> bool:
        return self.fixed.tune

    @tune.setter
    def tune(self, value: bool):
        for leg in self.legs:
            leg.tune = value

    @property
    def reference_fit(self):
        """The variational reference and its fitting record (:class:`legs.ReferenceFit`)."""
        return self._reference_fit

    @reference_fit.setter
    def reference_fit(self, value):
        self._reference_fit = value
        if value is not None:
            self.reference_leg.density.reference = value.reference

    # -- the chain -------------------------------------------------------------------------------
    def reset(self, tune_draws: int) -> None:
        """Every leg before its first sweep, for a chain of ``tune_draws`` tuning draws."""
        self.fixed.reset(tune_draws, probe=self.fixed.auto)
        if self.variational is not None:
            self.variational.reset(tune_draws, probe=False)
        if self.reference_leg is not None:
            self._reference_fit, self._leg_records = None, []

    def set_discrete(self, variables) -> None:
        """New supports for the discrete moves (``pm.Data`` may have been set since)."""
        if isinstance(self.fixed.explorer, Mixed):
            self.fixed.explorer.moves = DiscreteMoves(self.fixed.density, variables)

    def reset_tuning(self) -> None:
        """Forget all tuning (ladder, scales, counters), keeping the replicas."""
        replicas = self.fixed.replicas
        self.reset(self.fixed.tune_sweeps // self.fixed.sweeps_per_draw)
        if self.fixed.auto and replicas is not None:  # tuning starts again with the walk
            replicas = replicas._replace(aux=self.fixed.explorer.init_aux(replicas.x))
        self.fixed.replicas = replicas
        if self.variational is not None and replicas is not None:
            # the leg and its reference start again from the fixed leg's beta = 1 replica
            self._start_variational(replicas.x[-1].copy())
        elif self.reference_only and replicas is not None:
            # the reference is fitted anew: the leg starts again from it, its top replica kept
            self._start_reference(replicas.x[-1].copy())
            self.fixed.start(replicas.x[-1].copy())

    def stop_tuning(self) -> None:
        for leg in self.legs:
            leg.tune = False
            leg._clear_counters(leg.betas.size)
        if self._reference_fit is not None:  # frozen from here on
            self._reference_fit = self._reference_fit._replace(frozen=True)

    def draw(self, q0):
        """``(x, stats)``: the ``beta = 1`` replica after this draw's sweeps (a copy) and the
        draw's stats; the first call starts the replicas from ``q0`` (read at that call only,
        and copied)."""
        fixed = self.fixed
        if fixed.replicas is None:  # the first draw: the top rung starts at q0 (a copy)
            q0 = np.array(q0, dtype=np.float64)
            if self.reference_only:
                self._start_reference(q0)
            fixed.start(q0)
            if self.variational is not None:
                self._start_variational(q0)
        if fixed.sweeps_per_draw == 1:
            n_rungs = fixed.betas.size
            record = self._sweep()
            if fixed.betas.size != n_rungs:  # tuning resized the ladder: nothing to report
                record = np.full((4, fixed.betas.size), np.nan)
        else:
            record = self._several_sweeps()
        return fixed.replicas.x[-1].copy(), self._stats(record)

    def _sweep(self):
        record = self.fixed.sweep_once()
        if self.variational is not None:
            self._variational_sweep(self.fixed.sweep - 1)
        elif self.reference_only:
            self._fit_reference(self.fixed.sweep - 1, self.fixed.replicas.x[-1:])
        if self.fixed._switch_pending:
            self._switch_to_mala()
        return record

    def _several_sweeps(self):
        """``sweeps_per_draw`` sweeps, their records averaged over those since tuning last
        resized the ladder (:class:`~.stats.SweepAverage`)."""
        fixed = self.fixed
        average = exchange_stats.SweepAverage(fixed.betas.size)
        for _ in range(fixed.sweeps_per_draw):
            if fixed.betas.size != average.n_rungs:  # tuning may resize the ladder mid-draw
                average = exchange_stats.SweepAverage(fixed.betas.size)
            record = self._sweep()
            if record.shape[1] == fixed.betas.size:  # else resized in this sweep: not counted
                average.add(record)
        return average.result(fixed.betas.size)

    def _stats(self, record) -> dict:
        fixed = self.fixed
        stats = fixed.stats(record, fixed.swaps.rate(), fixed._round_trips)
        auto = fixed.auto
        stats[EXPLORER_STAT] = fixed.explorer.code() if auto else fixed.options.local_move_code
        if auto:  # the latest look's score (NaN before it, or where tuning is too short)
            stats[EXPLORER_SCORE_STAT] = float(getattr(fixed.scales, "gaussianity", np.nan))
        if self.variational is not None:
            stats.update(self._variational_stats())
        if self.reference_only:
            stats[REFERENCE_ONLY_STAT] = True
        return stats

    # -- explorer="auto": the switch (.auto) -----------------------------------------------------
    def _switch_to_mala(self):
        """Every rung of every leg to dense MALA; where the model has no gradient the walk
        stays."""
        fixed = self.fixed
        top, fixed._switch_pending, fixed._top_probe = fixed._top_probe, False, None
        switched = [
            auto_switch.to_mala(leg.scales, leg.replicas, leg.density, top) for leg in self.legs
        ]
        if any(s is None for s in switched):
            return
        for leg, (scales, replicas) in zip(self.legs, switched, strict=True):
            leg.scales, leg.replicas = scales, replicas
            leg.explorer.sync(replicas)

    # -- the variational leg (.variational) ------------------------------------------------------
    def _start_variational(self, q0):
        fixed, leg = self.fixed, self.variational
        self.reference_fit = legs.init_reference_fit(
            legs.initial_reference(fixed.density, q0, self.rng), fixed.tune_sweeps
        )
        leg.start(q0, init="prior")

    def _start_reference(self, q0):
        """The reference of a run from the reference alone, before its leg starts: fitted to
        the model's prior draws where it has them (its improper prior has none: ``N(q0, I)``)."""
        leg = self.fixed
        self.reference_fit = legs.init_reference_fit(
            legs.initial_reference(leg.density.base, q0, self.rng), leg.tune_sweeps
        )

    def _variational_sweep(self, sweep):
        """The leg's sweep (its own moves, swaps and tuning) after the fixed leg's; the junction
        swap where due; while tuning, the reference's draws and fit."""
        fixed, leg = self.fixed, self.variational
        leg._deo_offset = (fixed.betas.size + leg.betas.size) % 2  # even/odd on the joined ladder
        self._leg_records.append(leg.sweep_once())
        gradient = leg.explorer.needs_gradient
        # explorer="auto" probes the fixed leg's top rung for a decision: the junction waits
        # until it is made, so that the probe sees that rung's own chain, not replicas of a
        # variational leg whose q is not fitted yet (docs/decisions/130)
        probing = fixed.auto and getattr(fixed.scales, "probe", None) is not None
        if legs.junction_due(sweep, fixed.betas.size) and not probing:
            legs.junction_swap(
                fixed.replicas, leg.replicas, fixed._last_end, leg._last_end, leg.density, gradient
            )
        self._fit_reference(sweep, np.stack([fixed.replicas.x[-1], leg.replicas.x[-1]]))

    def _fit_reference(self, sweep, rows):
        """While tuning: the posterior draws ``rows`` (every leg's ``beta = 1`` replica) added
        to the fit, and at a window's end the reference refitted and the leg's replicas
        re-expressed for it (:mod:`.variational`)."""
        leg, fit = self.reference_leg, self._reference_fit
        if not self.fixed.tune or fit.frozen:
            return
        fit = legs.record_draws(fit, rows)
        if legs.fit_due(fit, sweep):
            old = fit.reference
            fit = legs.refit(fit, self.fixed.tune_sweeps)
            leg.density.reference = fit.reference
            legs.reweight(leg.replicas, old, fit.reference, leg.explorer.needs_gradient)
            leg._prior_block, leg._prior_pos = leg._prior_block[:0], 0  # drawn from the old q
        self._reference_fit = fit

    def _variational_stats(self):
        """The leg's per-rung stats (prefixed :data:`VARIATIONAL_PREFIX`); ``round_trips``
        counts both legs' reference-to-reference trips."""
        leg, records = self.variational, self._leg_records
        self._leg_records = []
        n_rungs = leg.betas.size
        average = exchange_stats.SweepAverage(n_rungs)
        for record in records:
            if record.shape[1] == n_rungs:
                average.add(record)
        record = records[-1] if len(records) == 1 else average.result(n_rungs)
        if record.shape[1] != n_rungs:
            record = np.full((4, n_rungs), np.nan)
        stats = leg.stats(record, 0.0, 0)
        out = {VARIATIONAL_PREFIX + n: stats[n] for n in (LADDER_STAT, *RUNG_STATS, *PAIR_STATS)}
        out["round_trips"] = self.fixed._round_trips + leg._round_trips
        return out
