"""One leg of a tempering run: a ladder of rungs, their replicas, the explorer that moves them,
the proposal scales, the swap and round-trip records, and tuning between sweeps.

A sweep moves every rung (the explorer's proposal, one batched call of the log potential),
then applies the shared accept / swap / round-trip rules
(:func:`pymc_tempering.kernels.fused.finish_sweep`) and, while tuning, the pure rules of
:mod:`.tuning` (scales, the adaptive ladder) and of :mod:`.auto` (the top rung's probe). Which
leg it is (the fixed one from the prior, or the variational one) and how two legs are joined is
:mod:`.run`'s concern; the records are :mod:`.records`'.
"""

from dataclasses import dataclass, replace

import numpy as np

from pymc_tempering.engine import auto as auto_switch
from pymc_tempering.engine import shrink
from pymc_tempering.engine import stats as exchange_stats
from pymc_tempering.engine import tuning as adaptation
from pymc_tempering.engine.records import SweepCounters, initial_replicas
from pymc_tempering.kernels import fused, mala_rungs, rwm
from pymc_tempering.kernels.fused import ACCEPT, SWAP
from pymc_tempering.kernels.rules import NONE

__all__ = ["Leg", "LegOptions", "GRADIENT_STEP"]

GRADIENT_STEP = 1e-5  # difference step, relative to each rung's per-parameter scale


@dataclass(frozen=True)
class LegOptions:
    """What a leg is built with (the sampler's options, resolved; :mod:`pymc_tempering.
    step_methods.exchange.options`); the variational leg's differ in ladder, prior rung, start."""

    betas: np.ndarray  # the initial ladder
    max_rungs: int
    adaptive_ladder: bool
    adapt_n_rungs: bool
    ladder_objective: str
    swap_scheme: str
    sweeps_per_draw: int
    prior_rung: bool
    init: str
    target_accept: float
    user_target_accept: float | None
    initial_log_scaling: float
    dense: bool
    grad_tuning: bool
    auto: bool  # explorer="auto": the walk, switched to dense MALA while tuning (.auto)
    local_move_code: np.int8  # the stat EXPLORER_STAT of a fixed move
    shrink: bool = False  # after auto's switch, the ladder sized to its barrier (.shrink)

    @property
    def evidence_ladder(self) -> bool:
        """The ladder is re-placed for the evidence (the stat's caveat, trace)."""
        return self.adaptive_ladder and self.ladder_objective == "evidence"

    def for_variational(self, betas, max_rungs) -> "LegOptions":
        """The variational leg's options: its own ladder, exact draws from ``q`` at beta = 0."""
        return replace(self, betas=betas, max_rungs=max_rungs, prior_rung=True, init="prior")


class Leg(SweepCounters):
    """A ladder of replicas and everything its sweeps update; ``rng`` is read from ``source``
    (the run, whose legs share one stream so that a seed's draws stay one)."""

    def __init__(self, density, explorer, options: LegOptions, discrete_columns, source):
        self.density, self.explorer, self.options = density, explorer, options
        self.discrete_columns = discrete_columns
        self._source = source
        self.sweeps_per_draw, self.swap_scheme = options.sweeps_per_draw, options.swap_scheme
        self.prior_rung, self.target_accept = options.prior_rung, options.target_accept
        self.auto = options.auto
        self._stride = auto_switch.probe_stride(density.n_params)
        self.tune = True
        self.reset(0, probe=False)

    @property
    def rng(self):
        return self._source.rng

    def reset(self, tune_draws: int, probe: bool) -> None:
        """The leg before its first sweep: initial ladder and scales, no replicas, counters
        cleared; with ``probe`` (explorer="auto"'s fixed leg) an empty probe where due."""
        opts = self.options
        n_rungs, n_params = opts.betas.size, self.density.n_params
        self.betas = opts.betas.copy()
        self.replicas = None  # set from the start point at the first sweep
        self._prior_block, self._prior_pos = np.empty((0, n_params)), 0
        self.random = None
        self.sweep = 0
        self.tune_sweeps = tune_draws * self.sweeps_per_draw
        self.scales = adaptation.init_scale_tuning(
            n_rungs,
            n_params,
            opts.initial_log_scaling,
            dense=opts.dense,
            gradients=opts.grad_tuning,
            fit=self.explorer.fits_rungs,
        )
        if probe:
            self.scales = auto_switch.probed(self.scales, self.density, self.tune_sweeps)
        self._switch_pending, self._top_probe = False, None
        self.ladder_tuning = (
            adaptation.init_ladder_round(n_rungs, self.tune_sweeps)
            if opts.adaptive_ladder
            else None
        )
        self._clear_counters(n_rungs)
        self._deo_pairs = None
        self._scaling = exchange_stats.ScalingStats(self.prior_rung)
        self.barrier = np.nan
        self.n_rungs_suggested = -1

    def start(self, q0, init=None) -> None:
        """Replicas from the start point ``q0`` (:func:`.records.initial_replicas`)."""
        init = self.options.init if init is None else init
        self.replicas = initial_replicas(
            q0, self.betas, self.density, self.explorer, init, self.rng, self.discrete_columns
        )

    @property
    def loglik(self):
        """Log-likelihood of the replica on each rung."""
        return self.replicas.loglik

    def sweep_once(self):
        """One sweep (local moves, one swap round), its tuning and the running counters.
        Returns its record (:func:`pymc_tempering.kernels.fused.finish_sweep`), a new array,
        with the acceptance and swap probabilities in rows ``ACCEPT`` and ``SWAP``."""
        exact = self._prior_draw() if self.prior_rung else None
        proposal, draws, self.random = self.explorer.explore(
            self.replicas, self.betas, self.scales, exact, self.rng, self.random, self._pairs
        )
        record = np.empty((4, self.betas.size))
        self._round_trips += fused.finish_sweep(
            self.replicas, proposal, draws, self.betas, self._last_end, record
        )
        log_ratios = record[:2]  # ACCEPT, SWAP: probabilities from their logs, in NumPy
        np.exp(np.minimum(log_ratios, 0.0, out=log_ratios), out=log_ratios)
        swap_prob = record[SWAP, self._pair_index]
        self._count_swaps(swap_prob)
        if self.tune:
            self._adapt(record[ACCEPT], draws.lower, swap_prob)
        self.sweep += 1
        return record

    def stats(self, record, swap_rate, round_trips) -> dict:
        """One draw's stats of this leg (:func:`.stats.draw_stats`), as long as
        :meth:`stat_shapes` says."""
        opts = self.options
        self._scaling.update(self.scales.log_scaling)
        return exchange_stats.draw_stats(
            record,
            self.tune,
            self.betas,
            self.replicas,
            self._scaling,
            swap_rate,
            round_trips,
            opts.max_rungs,
            opts.evidence_ladder,
        )

    def stat_shapes(self, prefix: str = "") -> dict:
        """This leg's array stats, ``name -> (dtype, length)`` (:func:`.stats.array_stat_shapes`):
        ``max_rungs`` is the longest its ladder can be tuned to, and the ladder it starts with
        where it is not tuned."""
        return exchange_stats.array_stat_shapes(self.options.max_rungs, prefix)

    # -- tuning: the pure rules of .tuning and .auto, applied ------------------------------------
    def _adapt(self, accept_prob, lower, swap_prob):
        target_accept = self.target_accept
        probing = getattr(self.scales, "probe", None) is not None
        if self.auto:  # explorer="auto": the walk or MALA (.auto)
            self.explorer.sync(self.replicas)
            target_accept = self.explorer.target_accept(
                target_accept, self.options.user_target_accept
            )
            if probing:
                self._probe()
        self.scales = adaptation.tune_scales(
            self.scales,
            self.sweep,
            accept_prob,
            self.replicas.x,
            target_accept,
            self.tune_sweeps,
            self.prior_rung,
            self._gradients(),
        )
        if self.auto and probing:
            self._decide()
        if self.options.adaptive_ladder and self.ladder_tuning is not None:
            self._adapt_ladder(lower, swap_prob)
        elif self.options.shrink:
            self._shrink(lower, swap_prob)

    def _gradients(self):
        """Each rung's tempered gradient for a dense proposal learning from gradients (MALA's
        own, or forward differences: one batched call of ``n_rungs * d`` rows, tuning only;
        docs/decisions/022-dense-proposal-gradients.md), else None."""
        if self.scales.grad_moments is None:
            return None
        r, d = self.replicas, self.density.n_params
        if self.explorer.needs_gradient:
            return mala_rungs.tempered_grad(self.betas, r.aux[:, :d], r.aux[:, d:])
        step = GRADIENT_STEP * self.scales.param_scale
        return rwm.difference_gradient(
            self.density.batch, r.x, r.logprior, r.loglik, self.betas, step
        )

    def _adapt_ladder(self, lower, swap_prob):
        rnd = adaptation.accumulate_swaps(self.ladder_tuning, lower, swap_prob, self.loglik)
        self.ladder_tuning = rnd
        if self.sweep + 1 < rnd.end:
            return
        opts = self.options
        max_rungs = opts.max_rungs if opts.adapt_n_rungs else None
        update = adaptation.ladder_update(self.betas, rnd, opts.ladder_objective, max_rungs)
        old_betas, self.betas = self.betas, update.betas
        self.barrier, self.n_rungs_suggested = update.barrier, update.n_rungs_suggested
        if self.betas.size != old_betas.size:
            self._resize_rungs(old_betas)
        self.ladder_tuning = adaptation.next_ladder_round(rnd, self.betas.size, self.tune_sweeps)

    def _shrink(self, lower, swap_prob):
        """After the switch to dense MALA, the swap rejections of sweeps ``SHRINK_FROM`` to
        ``SHRINK_AT - 1`` (their round held in ``ladder_tuning``, which the sampling state
        keeps), and at its end the ladder sized to its barrier where that means fewer rungs
        (:mod:`.shrink`)."""
        rnd = self.ladder_tuning
        if rnd is None:
            if self.sweep != shrink.SHRINK_FROM or not self.explorer.needs_gradient:
                return
            if not shrink.may_shrink(self.scales, self.tune_sweeps):
                return
            rnd = shrink.shrink_round(self.betas.size)
        rnd = adaptation.accumulate_swaps(rnd, lower, swap_prob, self.loglik)
        if self.sweep + 1 < rnd.end:
            self.ladder_tuning = rnd
            return
        self.ladder_tuning = None  # once: the sweeps go past SHRINK_FROM
        betas, self.barrier, self.n_rungs_suggested = shrink.shrunk_ladder(self.betas, rnd)
        if betas is not None:
            old_betas, self.betas = self.betas, betas
            self._resize_rungs(old_betas)

    def _probe(self):
        """Add the top rung's draw and forward-difference gradient to the probe, every
        :func:`.auto.probe_stride` sweeps of its window (one batched call of ``d`` rows)."""
        offset = self.sweep - self.scales.probe_from
        if offset < 0 or self.sweep >= self.scales.decide_at or offset % self._stride:
            return
        r, top = self.replicas, slice(-1, None)
        step = GRADIENT_STEP * self.scales.param_scale[top]
        beta = self.betas[-1]
        logp = r.logprior[-1] + beta * r.loglik[-1]
        grad = auto_switch.top_gradient(self.density.batch, r.x[top], logp, beta, step)
        probe = auto_switch.probe_update(self.scales.probe, r.x[top], grad)
        self.scales = self.scales._replace(probe=probe)

    def _decide(self):
        """At the probe's end (:func:`.auto.switch_due`): the score recorded, the probe
        dropped, and the switch to MALA made after this sweep (both legs' sweeps) where due."""
        probe = self.scales.probe
        self.scales, decided, switch = auto_switch.switch_due(
            self.scales, self.sweep, self.tune_sweeps
        )
        if decided:
            self._top_probe, self._switch_pending = probe, switch

    def _resize_rungs(self, old_betas):
        self.replicas, self.scales = adaptation.resize_rungs(
            self.betas, old_betas, self.replicas, self.scales
        )
        self._last_end = np.full(self.betas.size, NONE)
