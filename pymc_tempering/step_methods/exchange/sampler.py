"""ExchangeMC: replica-exchange (parallel tempering) Metropolis as a PyMC step method.

PyMC glue only: the local moves are explorers (:mod:`.explorers`), the accept / swap /
round-trip rules one compiled kernel (:mod:`pymc_tempering.kernels.fused`), tuning pure
functions (:mod:`pymc_tempering.step_methods.exchange.tuning`) and the sampling state typed records
(:mod:`.exchange_state`).
"""

import contextlib

import numpy as np
from pymc.blocking import RaveledVars
from pymc.model import modelcontext
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence
from pymc.util import get_value_vars_from_user_vars

from pymc_tempering._util.blas import one_blas_thread
from pymc_tempering.kernels import fused, mala_rungs, rwm
from pymc_tempering.kernels.fused import ACCEPT, SWAP
from pymc_tempering.kernels.rules import NONE
from pymc_tempering.resume.checkpoint import Resumable
from pymc_tempering.step_methods._compile import (
    compile_discrete_supports,
    compile_tempered_density,
)
from pymc_tempering.step_methods.exchange import stats as exchange_stats
from pymc_tempering.step_methods.exchange import tuning as adaptation
from pymc_tempering.step_methods.exchange.discrete import DiscreteMoves, Mixed
from pymc_tempering.step_methods.exchange.explorers import EXPLORERS
from pymc_tempering.step_methods.exchange.options import (
    check_compile_kwargs,
    check_model,
    dense_proposal,
    exchange_options,
    local_settings,
)
from pymc_tempering.step_methods.exchange.state import (
    ExchangeMCState,
    SweepCounters,
    initial_replicas,
)

__all__ = ["ExchangeMC"]

GRADIENT_STEP = 1e-5  # difference step, relative to each rung's per-parameter scale


class ExchangeMC(Resumable, SweepCounters, ArrayStepShared):
    r"""Replica-exchange Monte Carlo (parallel tempering) with random-walk Metropolis rungs.

    Rung :math:`l` at inverse temperature :math:`\beta_l` targets
    :math:`p(w)\,p(y \mid w)^{\beta_l}`, with :math:`0 \le \beta_1 < \dots < \beta_L = 1`; the
    :math:`\beta = 1` rung is the chain PyMC records. Each sweep moves every rung by one Gaussian
    random-walk Metropolis step (one batched, compiled density call for all rungs), then proposes
    swaps of neighbouring replicas, accepted with probability
    :math:`\min\{1, \exp((\beta_{l+1} - \beta_l)(\ell_l - \ell_{l+1}))\}` where
    :math:`\ell_l` is the log-likelihood of the replica on rung :math:`l`.

    Parameters
    ----------
    vars : list, optional
        Must be all free variables of the model (the default): every rung needs the full state.
    betas : array_like, optional
        The ladder, strictly increasing in [0, 1] and ending at 1. With ``ladder="adaptive"``
        the ladder that tuning starts from; otherwise it overrides ``ladder``.
    n_rungs : int, optional
        Number of rungs for a built-in ladder, default 32.
    ladder : {"geometric", "power", "adaptive"}, default "geometric"
        ``"geometric"``: Nagata & Watanabe's :math:`\beta_1 = 0, \beta_l = 2^{l-L}`.
        ``"power"``: :math:`\beta_i = (i/(L-1))^5` (Friel & Pettitt 2008). ``"adaptive"``: start
        geometric (or from ``betas``), then during tuning re-place the rungs in rounds of
        doubling length so that every neighbouring pair has the same swap rejection rate (Syed
        et al. 2021), or the same thermodynamic length (see ``ladder_objective``). The ladder
        is frozen when tuning ends; the barrier estimate is kept as ``barrier`` and
        ``n_rungs_suggested``.
    ladder_objective : {"swap", "evidence"}, default "swap"
        What the adaptive ladder equalises between neighbours: the swap rejection rate (best
        round trips; it can leave few rungs near ``beta = 0``, where thermodynamic integration
        needs them, and the evidence functions then warn), or ``Delta beta * sd_beta[loglik]``
        measured in ``log beta`` (equal thermodynamic length, which minimises the evidence
        estimators' variance for a given number of rungs; the lowest positive rung stays
        where it started, see :func:`pymc_tempering.ladder.thermodynamic_length_ladder`).
        For evidence, start from ``betas=pmt.evidence_ladder(n)``. Caveat, measured: on a
        multimodal target (the egg box) the ``"evidence"`` ladder made 2.5x fewer round trips
        and its evidence error bars were too small (coverage 0.76 over 50 seeds); confirm
        such a number on the fixed ladder (the evidence functions' warnings say so).
    adapt_n_rungs : bool, default False
        With ``ladder="adaptive"``, also let tuning grow or shrink the number of rungs: after
        each round the ladder gets the number of rungs that the measured barrier suggests
        (``ladder.suggested_n_rungs``, at least 3). New rungs start from a copy of the
        replica on the nearest old rung. The recorded draws all use the final ladder.
    swap_scheme : {"deo", "seo", "random"}, default "deo"
        ``"deo"``: the seed paper's deterministic even/odd pairs (non-reversible PT);
        ``"seo"``: even or odd pairs chosen at random (reversible PT); ``"random"``: one random
        neighbouring pair per sweep.
    sweeps_per_draw : int, default 1
        Sweeps (local moves on all rungs + one swap round) per recorded draw.
    target_accept : float, optional
        Local acceptance rate that tuning aims for on every rung. Default: the optimal rate for
        Gaussian random-walk Metropolis in the model's dimension, 0.44 in 1-D falling to 0.234
        (Gelman, Roberts & Gilks 1996). The seed paper's 60-80% suits uniform proposals on
        singular models; pass ``target_accept=0.7`` to reproduce it.
    scaling : float, optional
        Initial proposal scale, default ``2.38 / sqrt(n_params)``.
    explorer : {"rwm", "mala", "independent"}, default "rwm"
        The local move on every rung: Gaussian random walk, or Metropolis-adjusted Langevin
        (batched gradient; h-form step, diagonal preconditioner, acceptance 0.574), or
        independence proposals fitted per rung in tuning, then the walk (:class:`.Independent`).
    proposal : {"diag", "dense", "auto"}, default "diag"
        The local move's proposal covariance on each rung, learned during tuning:
        ``"diag"``, one scale per parameter (the rung's standard deviations); ``"dense"``,
        the rung's full covariance (proposal ``x + scaling[l] * L_l z`` with ``L_l`` its
        Cholesky factor; Haario et al. 2001), which follows correlated posteriors.
        The covariance combines the draws and, without discrete variables, the gradients
        (forward differences, tuning only; exact for a Gaussian rung however little the
        window explored), as MALA's dense preconditioner does. Costs ``n_rungs * d**2``
        flops per sweep and ``n_rungs * d`` extra density rows per tuning sweep.
        ``"auto"``: dense up to 20 continuous parameters (64 with MALA). With
        ``explorer="mala"`` the same estimate is the preconditioner ``M_l = L_l L_l^T`` (its
        own gradients, no differences; not with discrete variables), and each sweep makes
        ``ceil(d ** (1/3))`` MALA moves on every rung before the swap round (stats and tuning
        see the last).
    prior_rung : bool, optional
        Where the ladder starts at beta = 0 and the prior can be forward-sampled, the lowest
        rung draws an independent prior sample every sweep instead of a local move (Pigeons'
        i.i.d. reference). Default: on whenever possible.
    init : {"prior", "jitter"}, default "prior"
        How replicas other than the recorded one start: independent prior draws where the
        model can be forward-sampled (as the seed paper does), else the initial point plus
        U(-1, 1) jitter in the transformed space.
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's step methods. ``compile_kwargs["mode"]`` must be a NumPy backend
        (``"NUMBA"``, ``"C"``, ``"FAST_COMPILE"``, PyTensor's default, or a ``Mode`` with
        such a linker): the batched density feeds compiled NumPy kernels.

    Notes
    -----
    Tuning (the ``tune`` draws of ``pm.sample``): each rung's proposal standard deviation is
    ``scaling[l] * scale[l, j]`` per parameter ``j``. ``scaling`` follows a Robbins-Monro
    recursion towards ``target_accept``; ``scale`` is set to the rung's observed standard
    deviation at the end of doubling windows (50, 100, 200, ... sweeps) in the first 80% of
    tuning, so parameters whose posterior scales differ by orders of magnitude all move; with
    ``proposal="dense"`` the same windows set each rung's proposal covariance to its observed
    covariance (shrunk towards its diagonal and a small floor, as MALA's dense
    preconditioner). Everything is frozen after tuning, so the recorded draws come from a
    fixed Metropolis kernel.

    A proposal whose log prior or log-likelihood is NaN or infinite is rejected on every rung,
    including :math:`\beta = 0`.

    Stats, per draw: ``tune``; ``accept``, ``accepted`` and ``scaling`` of the :math:`\beta = 1`
    rung (PyMC's names); ``swap_rate``, the running mean swap acceptance probability over all
    pairs since tuning started or ended; ``round_trips``, the count of replicas that went from
    the lowest rung to the top and back since tuning ended; and per-rung arrays (object stats,
    so the DataTree has them as ``(chain, draw, <name>_dim_0)``): ``betas`` and ``rung_loglik``
    (log-likelihood of each rung's replica at the end of the draw), ``rung_accept`` and
    ``rung_scaling`` (local acceptance probability and proposal scale; NaN for an exact
    prior rung), ``rung_replica`` (which
    replica sits on each rung), ``swap_accept`` and ``swap_accepted`` (per neighbouring pair:
    mean acceptance probability and fraction accepted of the swaps attempted during the draw,
    NaN where none was). ``pymc_tempering.tempering_dataset`` relabels them by rung.

    References
    ----------
    K. Hukushima and K. Nemoto (1996), Exchange Monte Carlo method and application to spin glass
    simulations. J. Phys. Soc. Jpn. 65, 1604.
    K. Nagata and S. Watanabe (2008), Exchange Monte Carlo sampling from Bayesian posterior for
    singular learning machines. IEEE Trans. Neural Networks 19(7).
    S. Syed, A. Bouchard-Cote, G. Deligiannidis and A. Doucet (2021), Non-reversible parallel
    tempering: a scalable highly parallel MCMC scheme. JRSS B 84(2).
    H. Haario, E. Saksman and J. Tamminen (2001), An adaptive Metropolis algorithm. Bernoulli
    7(2), 223-242.
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
        explorer: str = "rwm",
        proposal: str = "diag",
        prior_rung: bool | None = None,
        sweeps_per_draw: int = 1,
        target_accept: float | None = None,
        scaling: float | None = None,
        init: str = "prior",
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
        check_compile_kwargs(compile_kwargs)
        options = exchange_options(
            model, betas=betas, n_rungs=n_rungs, ladder=ladder,
            ladder_objective=ladder_objective, adapt_n_rungs=adapt_n_rungs,
            swap_scheme=swap_scheme, sweeps_per_draw=sweeps_per_draw, init=init,
            explorer=explorer, proposal=proposal,
        )  # fmt: skip
        self.betas = options.betas
        self.adaptive_ladder, self.adapt_n_rungs = options.adaptive_ladder, options.adapt_n_rungs
        self.max_rungs = options.max_rungs
        explorer_class = EXPLORERS[options.explorer]
        self.density = compile_tempered_density(
            model, vars, initial_point, compile_kwargs, gradient=explorer_class.needs_gradient
        )
        self._read_discrete = compile_discrete_supports(model, vars, self.density.point_map_info)
        discrete = self._read_discrete()
        self.discrete_columns = np.concatenate([v.columns for v in discrete] or [[]]).astype(int)
        n_continuous = self.density.n_params - self.discrete_columns.size
        self.explorer = explorer_class(self.density, self.discrete_columns)
        if discrete:
            self.explorer = Mixed(self.explorer, DiscreteMoves(self.density, discrete))
        settings = local_settings(
            prior_rung, target_accept, scaling, betas=self.betas, density=self.density,
            default_target_accept=self.explorer.default_target_accept(n_continuous),
            n_discrete=self.discrete_columns.size,
        )  # fmt: skip
        self.prior_rung, self.target_accept = settings.prior_rung, settings.target_accept
        self.dense = dense_proposal(
            options.proposal, options.explorer, n_continuous, discrete=bool(discrete)
        )
        # a dense proposal learns its covariances from gradients too, while tuning (MALA's
        # own, or forward differences); not with discrete variables, which have none
        self.grad_tuning = self.dense and not discrete
        self._initial_log_scaling = settings.initial_log_scaling
        self.ladder_objective = options.ladder_objective
        self.swap_scheme = options.swap_scheme
        self.sweeps_per_draw = options.sweeps_per_draw
        self.init = options.init if self.density.can_sample_prior() else "jitter"
        self._initial_betas = self.betas.copy()
        self.tune = True
        self._reset_chain(tune_draws=0)
        super().__init__(vars, {}, blocked=blocked, rng=rng)

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
            n_rungs, n_params, self._initial_log_scaling, dense=self.dense,
            gradients=self.grad_tuning, fit=getattr(self.explorer, "fits_rungs", False),
        )  # fmt: skip
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

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self._reset_chain(tune_draws=tune)
        self.tune = tune > 0
        if isinstance(self.explorer, Mixed):  # supports from pm.Data may have been set since
            self.explorer.moves = DiscreteMoves(self.density, self._read_discrete())

    def reset_tuning(self):
        """Forget all tuning: ladder, proposal scales and adaptation counters."""
        replicas = self.replicas
        self._reset_chain(self.tune_sweeps // self.sweeps_per_draw)
        self.replicas = replicas

    def stop_tuning(self):
        self.tune = False
        self._clear_counters(self.betas.size)

    @property
    def loglik(self):
        """Log-likelihood of the replica on each rung."""
        return self.replicas.loglik

    # -- the step --------------------------------------------------------------------------------
    def astep(self, q0: RaveledVars):
        if self.replicas is None:  # the first step: the top rung starts at q0
            self.replicas = initial_replicas(q0.data.astype(np.float64), self.betas, self.density,
                                             self.explorer, self.init, self.rng,
                                             self.discrete_columns)  # fmt: skip
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
        return exchange_stats.draw_stats(
            record, self.tune, self.betas, self.replicas, self._scaling, swap_rate,
            self._round_trips, self.max_rungs if self.adapt_n_rungs else None,
        )  # fmt: skip

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
        grad = None
        if self.scales.grad_moments is not None:  # a dense proposal learning from gradients
            # forward differences (one batched call of n_rungs * d rows, tuning only): no
            # gradient to compile (about 1.7 s on a 10-parameter regression), any model
            r, d = self.replicas, self.density.n_params
            if self.explorer.needs_gradient:  # MALA carries each replica's gradients
                grad = mala_rungs.tempered_grad(self.betas, r.aux[:, :d], r.aux[:, d:])
            else:
                step = GRADIENT_STEP * self.scales.param_scale
                grad = rwm.difference_gradient(
                    self.density.batch, r.x, r.logprior, r.loglik, self.betas, step
                )
        # a dense window's end: per-rung eigendecompositions, faster on one OpenBLAS thread
        window_end = self.dense and self.sweep + 1 == self.scales.window_end
        with one_blas_thread() if window_end else contextlib.nullcontext():
            self.scales = adaptation.tune_scales(
                self.scales, self.sweep, accept_prob, self.replicas.x, self.target_accept,
                self.tune_sweeps, self.prior_rung, grad,
            )  # fmt: skip
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

    def _resize_rungs(self, old_betas):
        self.replicas, self.scales = adaptation.resize_rungs(
            self.betas, old_betas, self.replicas, self.scales
        )
        self._last_end = np.full(self.betas.size, NONE)

    # -- PyMC integration ------------------------------------------------------------------------
    @staticmethod
    def competence(var, has_grad):
        return Competence.COMPATIBLE

    _progressbar_config = staticmethod(exchange_stats.progressbar_config)
    _make_progressbar_update_functions = staticmethod(exchange_stats.progressbar_update_functions)
