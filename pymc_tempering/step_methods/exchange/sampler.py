"""ExchangeMC: replica-exchange (parallel tempering) Metropolis as a PyMC step method.

PyMC glue only: the local moves are explorers (:mod:`.explorers`), the accept / swap /
round-trip rules one compiled kernel (:mod:`pymc_tempering.kernels.fused`), tuning pure
functions (:mod:`.tuning`), the sampling state typed records (:mod:`.state`) and the stats
:mod:`.stats` (schema: :data:`pymc_tempering.trace.EXCHANGE_STATS`).
"""

import numpy as np
from pymc.blocking import RaveledVars
from pymc.model import modelcontext
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence
from pymc.util import get_value_vars_from_user_vars

from pymc_tempering._util.blas import one_blas_thread
from pymc_tempering.engine.placement import Batched, Placement
from pymc_tempering.kernels import fused, mala_rungs, rwm
from pymc_tempering.kernels.fused import ACCEPT, SWAP
from pymc_tempering.kernels.rules import NONE
from pymc_tempering.ladder import make_ladder
from pymc_tempering.resume.checkpoint import Resumable
from pymc_tempering.step_methods._compile import (
    check_observed_finite,
    compile_discrete_supports,
    compile_tempered_density,
)
from pymc_tempering.step_methods.exchange import auto as auto_switch
from pymc_tempering.step_methods.exchange import stats as exchange_stats
from pymc_tempering.step_methods.exchange import tuning as adaptation
from pymc_tempering.step_methods.exchange import variational as legs
from pymc_tempering.step_methods.exchange.discrete import DiscreteMoves, Mixed
from pymc_tempering.step_methods.exchange.explorers import EXPLORERS
from pymc_tempering.step_methods.exchange.options import (
    auto_eligible,
    check_compile_kwargs,
    check_model,
    choose_explorer,
    dense_proposal,
    exchange_options,
    local_settings,
)
from pymc_tempering.step_methods.exchange.state import (
    ExchangeMCState,
    SweepCounters,
    initial_replicas,
)
from pymc_tempering.trace import (
    EXPLORER_STAT,
    LADDER_STAT,
    LOCAL_MOVES,
    PAIR_STATS,
    RUNG_STATS,
    VARIATIONAL_PREFIX,
)

__all__ = ["ExchangeMC"]

GRADIENT_STEP = 1e-5  # difference step, relative to each rung's per-parameter scale


class ExchangeMC(Resumable, SweepCounters, ArrayStepShared):
    r"""Replica-exchange Monte Carlo (parallel tempering), Metropolis-Hastings moves per rung.

    Rung :math:`l` samples :math:`p(w)\,p(y \mid w)^{\beta_l}`, PyMC records :math:`\beta = 1`;
    each sweep moves every rung, then swaps neighbours with probability :math:`\min\{1,
    e^{(\beta_{l+1} - \beta_l)(\ell_l - \ell_{l+1})}\}`, :math:`\ell` the log-likelihood. Stats:
    :data:`pymc_tempering.trace.EXCHANGE_STATS`; guide: ``docs/guide/tempering.md``.

    Parameters
    ----------
    betas, n_rungs : array_like, int, optional
        A ladder rising in [0, 1] to 1 (or adaptive's start), else a built-in ladder's size (32).
    ladder : {"geometric", "power", "adaptive"}, default "geometric"
        :math:`\beta_1 = 0, \beta_l = 2^{l-L}`; :math:`(i/(L-1))^5`; or re-placed during tuning
        (Syed et al. 2021), recording ``barrier`` and ``n_rungs_suggested``.
    ladder_objective, adapt_n_rungs : {"swap", "evidence"}, bool, default "swap", False
        What ``"adaptive"`` equalises: swap rejection, or thermodynamic length (evidence then
        warned: docs/decisions/020-evidence-ladder-caveat.md); and whether it resets the count.
    swap_scheme, sweeps_per_draw : {"deo", "seo", "random"}, int, default "deo", 1
        Even/odd pairs in turn, at random, or one random pair; sweeps per recorded draw.
    explorer, proposal : {"rwm", "mala", "independent", "auto"}, {"diag", "dense", "auto"}
        The local move (stat ``explorer``), default ``"auto"``: the walk, switched to dense MALA
        while tuning where the top rung looks Gaussian (:mod:`.auto`; with a ``proposal``, the
        walk with it); the per-rung covariance learned in tuning (Haario 2001; ``"diag"``).
    prior_rung, init : bool, {"prior", "jitter"}, optional
        Exact prior draws on a ``beta = 0`` rung (default where the prior can be forward-sampled);
        other replicas start at prior draws (default) or the initial point plus U(-1, 1).
    reference, n_rungs_variational : {"prior", "variational"}, int, optional
        ``"variational"`` adds a second ladder from a Gaussian fitted while tuning, joined at
        ``beta = 1`` (stats ``variational_*``; :mod:`.variational`, docs/guide/variational.md),
        its ladder this one (or ``ladder``'s with ``n_rungs_variational`` rungs). Continuous.
    target_accept, scaling : float, optional
        Acceptance goal (default: the explorer's) and first scale (``2.38 / sqrt(n_params)``).
    placement : Placement, optional
        Where the rungs' densities are evaluated: in this process, all rungs in one batched
        call (the default), or e.g. :class:`pymc_tempering.distributed.DaskPlacement` on the
        workers of a Dask cluster (:mod:`pymc_tempering.engine.placement`).
    vars, model, rng, initial_point, compile_kwargs, blocked
        As PyMC's; all free variables (the default), ``compile_kwargs["mode"]`` a NumPy one.

    References
    ----------
    Hukushima and Nemoto (1996), J. Phys. Soc. Jpn. 65; Nagata and Watanabe (2008), IEEE TNN
    19(7); Syed, Bouchard-Cote, Deligiannidis and Doucet (2021), JRSS B 84(2); Surjanovic,
    Syed, Bouchard-Cote and Campbell (2022), NeurIPS 35; Haario et al. (2001), Bernoulli 7(2).
    """

    name = "exchange_mc"
    default_blocked = True
    stats_dtypes_shapes = exchange_stats.STATS_DTYPES_SHAPES
    _state_class = ExchangeMCState

    def __init__(
        self,
        vars=None,
        *,
        betas=None,
        n_rungs: int | None = None,
        ladder: str = "geometric",
        ladder_objective: str = "swap",
        adapt_n_rungs: bool = False,
        swap_scheme: str = "deo",
        explorer: str = "auto",
        proposal: str | None = None,
        prior_rung: bool | None = None,
        reference: str = "prior",
        n_rungs_variational: int | None = None,
        sweeps_per_draw: int = 1,
        target_accept: float | None = None,
        scaling: float | None = None,
        init: str = "prior",
        placement=None,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        blocked: bool = True,
    ):
        model = modelcontext(model)
        if initial_point is None:
            initial_point = model.initial_point()
        vars = model.value_vars if vars is None else get_value_vars_from_user_vars(vars, model)
        check_model(model, vars)
        check_observed_finite(model, "ExchangeMC")
        check_compile_kwargs(compile_kwargs)
        options = exchange_options(
            model,
            betas=betas,
            n_rungs=n_rungs,
            ladder=ladder,
            ladder_objective=ladder_objective,
            adapt_n_rungs=adapt_n_rungs,
            swap_scheme=swap_scheme,
            sweeps_per_draw=sweeps_per_draw,
            init=init,
            explorer=explorer,
            proposal=proposal,
            reference=reference,
            n_rungs_variational=n_rungs_variational,
        )
        self.betas = options.betas
        self.adaptive_ladder, self.adapt_n_rungs = options.adaptive_ladder, options.adapt_n_rungs
        self.max_rungs = options.max_rungs
        explorer, proposal = choose_explorer(options.explorer, options.proposal)
        explorer_class = EXPLORERS[explorer]
        self.density = compile_tempered_density(
            model, vars, initial_point, compile_kwargs, gradient=explorer_class.needs_gradient
        )
        self.placement = check_placement(placement)
        self.density = self.placement.place(self.density)
        self._read_discrete = compile_discrete_supports(model, vars, self.density.point_map_info)
        discrete = self._read_discrete()
        self.discrete_columns = np.concatenate([v.columns for v in discrete] or [[]]).astype(int)
        n_continuous = self.density.n_params - self.discrete_columns.size
        self.explorer = explorer_class(self.density, self.discrete_columns)
        # explorer="auto": the walk, switched to dense MALA while tuning (.auto); with a
        # proposal chosen, the walk with it
        self.auto = options.explorer == "auto" and auto_eligible(
            n_continuous, bool(discrete), options.proposal
        )
        if self.auto:
            self.explorer = auto_switch.WalkThenMALA(self.density, self.discrete_columns)
            self._stride = auto_switch.probe_stride(self.density.n_params)
            self._user_target_accept = target_accept
        if discrete:
            self.explorer = Mixed(self.explorer, DiscreteMoves(self.density, discrete))
        settings = local_settings(
            prior_rung,
            target_accept,
            scaling,
            betas=self.betas,
            density=self.density,
            default_target_accept=self.explorer.default_target_accept(n_continuous),
            n_discrete=self.discrete_columns.size,
        )
        self.prior_rung, self.target_accept = settings.prior_rung, settings.target_accept
        self.dense = dense_proposal(proposal, explorer, n_continuous, discrete=bool(discrete))
        # the local move as the stat EXPLORER_STAT records it, e.g. "mala+dense"
        self.local_move = f"{explorer}+{'dense' if self.dense else 'diag'}"
        self._local_move_code = np.int8(LOCAL_MOVES.index(self.local_move))
        # a dense proposal learns its covariances from gradients too, while tuning (MALA's
        # own, or forward differences); not with discrete variables, which have none
        self.grad_tuning = self.dense and not discrete
        self._initial_log_scaling = settings.initial_log_scaling
        self.ladder_objective = options.ladder_objective
        # the readers' caveat travels as a stat (trace.EVIDENCE_LADDER_STAT), not as arguments
        self.evidence_ladder = options.adaptive_ladder and options.ladder_objective == "evidence"
        self.swap_scheme = options.swap_scheme
        self.sweeps_per_draw = options.sweeps_per_draw
        self.init = options.init if self.density.can_sample_prior() else "jitter"
        self._initial_betas = self.betas.copy()
        self.tune = True
        self.variational, self._reference_fit = None, None
        self._reset_chain(tune_draws=0)
        super().__init__(vars, {}, blocked=blocked, rng=rng)
        if reference != "prior":
            self._add_variational_leg(reference, n_rungs_variational, ladder, model)

    # -- per-chain state -------------------------------------------------------------------------
    def _reset_chain(self, tune_draws: int):
        n_rungs, n_params = self._initial_betas.size, self.density.n_params
        self.betas = self._initial_betas.copy()
        self.replicas = None  # set from the start point at the first step
        self._prior_block, self._prior_pos = np.empty((0, n_params)), 0
        self.random = None
        self.sweep = 0
        self.tune_sweeps = tune_draws * self.sweeps_per_draw
        self.scales = adaptation.init_scale_tuning(
            n_rungs,
            n_params,
            self._initial_log_scaling,
            dense=self.dense,
            gradients=self.grad_tuning,
            fit=self.explorer.fits_rungs,
        )
        if self.auto and not isinstance(self, VariationalLeg):  # the leg follows this one
            self.scales = auto_switch.probed(self.scales, self.density, self.tune_sweeps)
        self._switch_pending, self._top_probe = False, None
        self.ladder_tuning = (
            adaptation.init_ladder_round(n_rungs, self.tune_sweeps)
            if self.adaptive_ladder
            else None
        )
        self._clear_counters(n_rungs)
        self._deo_pairs = None
        self._scaling = exchange_stats.ScalingStats(self.prior_rung)
        self.barrier = np.nan
        self.n_rungs_suggested = -1
        if self.variational is not None:
            self.variational._reset_chain(tune_draws)
            self._reference_fit, self._leg_records = None, []

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self._reset_chain(tune_draws=tune)
        self.tune = tune > 0
        if self.variational is not None:
            self.variational.tune = self.tune
        if isinstance(self.explorer, Mixed):  # supports from pm.Data may have been set since
            self.explorer.moves = DiscreteMoves(self.density, self._read_discrete())

    def reset_tuning(self):
        """Forget all tuning: ladder, proposal scales and adaptation counters."""
        replicas = self.replicas
        self._reset_chain(self.tune_sweeps // self.sweeps_per_draw)
        if self.auto and replicas is not None:  # tuning starts again with the walk
            replicas = replicas._replace(aux=self.explorer.init_aux(replicas.x))
        self.replicas = replicas
        if self.variational is not None and replicas is not None:
            # the leg and its reference start again from the fixed leg's beta = 1 replica
            self._start_variational(replicas.x[-1].copy())

    def stop_tuning(self):
        self.tune = False
        self._clear_counters(self.betas.size)
        if self.variational is not None:
            self.variational.stop_tuning()
            if self._reference_fit is not None:  # frozen from here on
                self._reference_fit = self._reference_fit._replace(frozen=True)

    @property
    def loglik(self):
        """Log-likelihood of the replica on each rung."""
        return self.replicas.loglik

    # -- the step --------------------------------------------------------------------------------
    def astep(self, q0: RaveledVars):
        # every sweep's NumPy / SciPy algebra (both legs) on one OpenBLAS thread: decision 131
        with one_blas_thread():
            if self.replicas is None:  # the first step: the top rung starts at q0
                self.replicas = initial_replicas(
                    q0.data.astype(np.float64),
                    self.betas,
                    self.density,
                    self.explorer,
                    self.init,
                    self.rng,
                    self.discrete_columns,
                )
                if self.variational is not None:
                    self._start_variational(q0.data.astype(np.float64))
            if self.sweeps_per_draw == 1:
                n_rungs = self.betas.size
                record = self._sweep()
                if self.betas.size != n_rungs:  # tuning resized the ladder: nothing to report
                    record = np.full((4, self.betas.size), np.nan)
            else:
                record = self._several_sweeps()
            return RaveledVars(self.replicas.x[-1].copy(), q0.point_map_info), [self._stats(record)]

    def _stats(self, record):
        self._scaling.update(self.scales.log_scaling)
        swap_rate = self._swap_sum / max(self._swap_attempts, 1)
        stats = exchange_stats.draw_stats(
            record,
            self.tune,
            self.betas,
            self.replicas,
            self._scaling,
            swap_rate,
            self._round_trips,
            self.max_rungs if self.adapt_n_rungs else None,
            self.evidence_ladder,
        )
        stats[EXPLORER_STAT] = self.explorer.code() if self.auto else self._local_move_code
        if self.variational is not None:
            stats.update(self._variational_stats())
        return stats

    def _sweep(self):
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
        if self.variational is not None:
            self._variational_sweep(self.sweep - 1)
        if self._switch_pending:
            self._switch_to_mala()
        return record

    def _several_sweeps(self):
        """``sweeps_per_draw`` sweeps, their records averaged over those since tuning last
        resized the ladder (:class:`~.exchange_stats.SweepAverage`)."""
        average = exchange_stats.SweepAverage(self.betas.size)
        for _ in range(self.sweeps_per_draw):
            if self.betas.size != average.n_rungs:  # tuning may resize the ladder mid-draw
                average = exchange_stats.SweepAverage(self.betas.size)
            record = self._sweep()
            if record.shape[1] == self.betas.size:  # else resized in this sweep: not counted
                average.add(record)
        return average.result(self.betas.size)

    # -- tuning: the pure rules of pymc_tempering.step_methods.exchange.tuning, applied ---
    def _adapt(self, accept_prob, lower, swap_prob):
        target_accept = self.target_accept
        if self.auto:  # explorer="auto": the walk or MALA (.auto)
            self.explorer.sync(self.replicas)
            target_accept = self.explorer.target_accept(target_accept, self._user_target_accept)
            if getattr(self.scales, "probe", None) is not None:
                self._probe()
        grad = None
        if self.scales.grad_moments is not None:  # a dense proposal learning from gradients
            # forward differences (one batched call of n_rungs * d rows, tuning only): no
            # gradient to compile, any model (docs/decisions/022-dense-proposal-gradients.md)
            r, d = self.replicas, self.density.n_params
            if self.explorer.needs_gradient:  # MALA carries each replica's gradients
                grad = mala_rungs.tempered_grad(self.betas, r.aux[:, :d], r.aux[:, d:])
            else:
                step = GRADIENT_STEP * self.scales.param_scale
                grad = rwm.difference_gradient(
                    self.density.batch, r.x, r.logprior, r.loglik, self.betas, step
                )
        # a dense window's end runs per-rung eigendecompositions: on one OpenBLAS thread, as
        # the whole step is (astep)
        self.scales = adaptation.tune_scales(
            self.scales,
            self.sweep,
            accept_prob,
            self.replicas.x,
            target_accept,
            self.tune_sweeps,
            self.prior_rung,
            grad,
        )
        if self.auto and getattr(self.scales, "probe", None) is not None:
            self._decide()
        if self.ladder_tuning is None:
            return
        rnd = adaptation.accumulate_swaps(self.ladder_tuning, lower, swap_prob, self.loglik)
        self.ladder_tuning = rnd
        if self.sweep + 1 < rnd.end:
            return
        max_rungs = self.max_rungs if self.adapt_n_rungs else None
        update = adaptation.ladder_update(self.betas, rnd, self.ladder_objective, max_rungs)
        old_betas, self.betas = self.betas, update.betas
        self.barrier, self.n_rungs_suggested = update.barrier, update.n_rungs_suggested
        if self.betas.size != old_betas.size:
            self._resize_rungs(old_betas)
        self.ladder_tuning = adaptation.next_ladder_round(rnd, self.betas.size, self.tune_sweeps)

    # -- explorer="auto": the top rung's probe, the decision and the switch (.auto) -------------
    def _probe(self):
        """Add the top rung's draw and forward-difference gradient to the probe, every
        :func:`.auto.probe_stride` sweeps of its window (one batched call of ``d`` rows)."""
        offset = self.sweep - auto_switch.PROBE_START
        if offset < 0 or self.sweep >= auto_switch.DECISION_SWEEP or offset % self._stride:
            return
        r, top = self.replicas, slice(-1, None)
        step = GRADIENT_STEP * self.scales.param_scale[top]
        beta = self.betas[-1]
        logp = r.logprior[-1] + beta * r.loglik[-1]
        grad = auto_switch.top_gradient(self.density.batch, r.x[top], logp, beta, step)
        probe = auto_switch.probe_update(self.scales.probe, r.x[top], grad)
        self.scales = self.scales._replace(probe=probe)

    def _decide(self):
        """At the probe window's end: the score recorded, the probe dropped, and the switch
        to MALA made after this sweep (both legs' sweeps) where :func:`.auto.switch_due`."""
        decided, switch, score = auto_switch.switch_due(self.scales, self.sweep)
        if not decided:
            return
        self._top_probe = self.scales.probe
        self.scales = self.scales._replace(probe=None, gaussianity=score)
        self._switch_pending = switch

    def _switch_to_mala(self):
        """Every rung of this leg (and of the variational leg) to dense MALA; where the model
        has no gradient the walk stays."""
        top, self._switch_pending, self._top_probe = self._top_probe, False, None
        legs_ = [self] if self.variational is None else [self, self.variational]
        switched = [
            auto_switch.to_mala(leg.scales, leg.replicas, leg.density, top) for leg in legs_
        ]
        if any(s is None for s in switched):
            return
        for leg, (scales, replicas) in zip(legs_, switched, strict=True):
            leg.scales, leg.replicas = scales, replicas
            leg.explorer.sync(replicas)

    def _resize_rungs(self, old_betas):
        self.replicas, self.scales = adaptation.resize_rungs(
            self.betas, old_betas, self.replicas, self.scales
        )
        self._last_end = np.full(self.betas.size, NONE)

    # -- the variational leg (reference="variational"; .variational) ------------------------------
    def _add_variational_leg(self, reference, n_rungs_variational, ladder, model):
        """Build the variational leg: this sampler's copy on :class:`legs.VariationalDensity`,
        with its own ladder (this one's, or ``ladder``'s spacing with ``n_rungs_variational``
        rungs: a poorly fitting ``q`` needs rungs near 0 as the prior does), replicas, tuning
        and counters, sharing ``rng``."""
        _check_variational(reference, n_rungs_variational, model, self)
        betas = self._initial_betas
        if n_rungs_variational is not None:
            betas = make_ladder(None, n_rungs_variational, ladder)
        n_var = betas.size
        leg = object.__new__(VariationalLeg)
        leg.__dict__.update({k: v for k, v in self.__dict__.items() if k != "rng"})
        leg._parent = self
        leg.density = legs.VariationalDensity(self.density, None)
        leg.explorer = type(self.explorer)(leg.density, self.discrete_columns)
        leg._initial_betas = betas.copy()
        leg.max_rungs = max(2 * n_var, 64) if self.adapt_n_rungs else n_var
        leg.prior_rung, leg.init = True, "prior"
        self.variational = leg
        self._reset_chain(self.tune_sweeps // self.sweeps_per_draw)
        dtypes = dict(self.stats_dtypes_shapes)
        for name in (LADDER_STAT, *RUNG_STATS, *PAIR_STATS):
            dtypes[VARIATIONAL_PREFIX + name] = (object, None)
        self.stats_dtypes_shapes = dtypes
        self.stats_dtypes = [{name: dtype for name, (dtype, _) in dtypes.items()}]

    @property
    def reference_fit(self):
        """The variational reference and its fitting record (:class:`legs.ReferenceFit`)."""
        return self._reference_fit

    @reference_fit.setter
    def reference_fit(self, value):
        self._reference_fit = value
        if value is not None:
            self.variational.density.reference = value.reference

    def _start_variational(self, q0):
        leg = self.variational
        self.reference_fit = legs.init_reference_fit(
            legs.initial_reference(self.density, q0, self.rng), self.tune_sweeps
        )
        leg.replicas = initial_replicas(
            q0, leg.betas, leg.density, leg.explorer, "prior", self.rng, self.discrete_columns
        )

    def _variational_sweep(self, sweep):
        """The leg's sweep (its own moves, swaps and tuning) after the fixed leg's; the junction
        swap where due; while tuning, the reference's draws and fit."""
        leg = self.variational
        leg._deo_offset = (self.betas.size + leg.betas.size) % 2  # even/odd on the joined ladder
        self._leg_records.append(leg._sweep())
        gradient = leg.explorer.needs_gradient
        # explorer="auto" probes the fixed leg's top rung for a decision: the junction waits
        # until it is made, so that the probe sees that rung's own chain, not replicas of a
        # variational leg whose q is not fitted yet (docs/decisions/130)
        probing = self.auto and getattr(self.scales, "probe", None) is not None
        if legs.junction_due(sweep, self.betas.size) and not probing:
            legs.junction_swap(
                self.replicas, leg.replicas, self._last_end, leg._last_end, leg.density, gradient
            )
        fit = self._reference_fit
        if not self.tune or fit.frozen:
            return
        fit = legs.record_draws(fit, np.stack([self.replicas.x[-1], leg.replicas.x[-1]]))
        if legs.fit_due(fit, sweep):
            old = fit.reference
            fit = legs.refit(fit, self.tune_sweeps)
            leg.density.reference = fit.reference
            legs.reweight(leg.replicas, old, fit.reference, gradient)
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
        leg._scaling.update(leg.scales.log_scaling)
        stats = exchange_stats.draw_stats(
            record,
            self.tune,
            leg.betas,
            leg.replicas,
            leg._scaling,
            0.0,
            0,
            leg.max_rungs if leg.adapt_n_rungs else None,
        )
        out = {VARIATIONAL_PREFIX + n: stats[n] for n in (LADDER_STAT, *RUNG_STATS, *PAIR_STATS)}
        out["round_trips"] = self._round_trips + leg._round_trips
        return out

    # -- PyMC integration ------------------------------------------------------------------------
    @staticmethod
    def competence(var, has_grad):
        return Competence.COMPATIBLE

    _progressbar_config = staticmethod(exchange_stats.progressbar_config)
    _make_progressbar_update_functions = staticmethod(exchange_stats.progressbar_update_functions)


class VariationalLeg(ExchangeMC):
    """ExchangeMC's variational leg: the sampler's own sweep, tuning and stats on
    :class:`legs.VariationalDensity`, driven by the fixed leg (never by PyMC); its random
    numbers are the fixed leg's ``rng``, so a seed's stream stays one."""

    @property
    def rng(self):
        return self._parent.rng

    @rng.setter
    def rng(self, value):  # a restored state: the fixed leg's rng is restored with it
        pass


def _check_variational(reference, n_rungs_variational, model, step):
    if reference not in legs.REFERENCES:
        raise ValueError(f"`reference` must be one of {legs.REFERENCES}, got {reference!r}.")
    if step.discrete_columns.size:
        names = [v.name for v in model.discrete_value_vars]
        raise ValueError(
            f"reference='variational' fits a Gaussian on the continuous parameters; {names} "
            "are discrete. Pass reference='prior' (the default) for this model."
        )
    if step.betas[0] != 0:
        raise ValueError(
            "reference='variational' joins two ladders that each start at beta = 0 (the fixed "
            f"one at the prior); this ladder starts at {step.betas[0]}. Pass a ladder starting "
            "at 0, or reference='prior'."
        )
    n = n_rungs_variational
    if n is not None and (isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2):
        raise ValueError(f"`n_rungs_variational` must be an int >= 2, got {n!r}.")


def check_placement(placement):
    """``placement``, or the default :class:`Batched` for None; a TypeError for anything
    without a ``place`` method."""
    if placement is None:
        return Batched()
    if not isinstance(placement, Placement):
        raise TypeError(
            f"`placement` must be a placement (an object with a place(potential) method), e.g. "
            f"pmt.distributed.DaskPlacement(client); got {type(placement).__name__}."
        )
    return placement
