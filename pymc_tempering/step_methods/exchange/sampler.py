"""ExchangeMC: replica-exchange (parallel tempering) Monte Carlo as a PyMC step method.

The PyMC adapter of the tempering engine (:mod:`pymc_tempering.engine`): it checks the
options (:mod:`.options`), compiles and places the log potential, builds the engine's run
(:class:`~pymc_tempering.engine.run.TemperingRun`) and speaks PyMC's step protocol: a draw is
the run's draw, the sampling state the engine's records (:mod:`.state`), the stats
:data:`pymc_tempering.trace.EXCHANGE_STATS`.
"""

import numpy as np
from pymc.blocking import RaveledVars
from pymc.model import modelcontext
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence
from pymc.util import get_value_vars_from_user_vars

from pymc_tempering._util.blas import one_blas_thread
from pymc_tempering.engine.auto import WalkThenMALA
from pymc_tempering.engine.discrete import DiscreteMoves, Mixed
from pymc_tempering.engine.explorers import EXPLORERS
from pymc_tempering.engine.leg import Leg, LegOptions
from pymc_tempering.engine.placement import Batched, Placement
from pymc_tempering.engine.run import TemperingRun
from pymc_tempering.engine.variational import VariationalDensity
from pymc_tempering.ladder import make_ladder
from pymc_tempering.resume.checkpoint import Resumable
from pymc_tempering.step_methods._compile import (
    check_observed_finite,
    compile_discrete_supports,
    compile_tempered_density,
)
from pymc_tempering.step_methods._progress import progress_columns
from pymc_tempering.step_methods.exchange.options import (
    auto_eligible,
    check_compile_kwargs,
    check_model,
    check_variational,
    choose_explorer,
    dense_proposal,
    exchange_options,
    local_settings,
)
from pymc_tempering.step_methods.exchange.state import ExchangeMCState, LegState, delegate
from pymc_tempering.trace import (
    EXCHANGE_STATS,
    LADDER_STAT,
    LOCAL_MOVES,
    PAIR_STATS,
    RUNG_STATS,
    VARIATIONAL_PREFIX,
)

__all__ = ["ExchangeMC"]


class ExchangeMC(Resumable, ArrayStepShared):
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
    stats_dtypes_shapes = EXCHANGE_STATS
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
        explorer, proposal = choose_explorer(options.explorer, options.proposal)
        explorer_class = EXPLORERS[explorer]
        density = compile_tempered_density(
            model, vars, initial_point, compile_kwargs, gradient=explorer_class.needs_gradient
        )
        self.placement = check_placement(placement)
        density = self.placement.place(density)
        self._read_discrete = compile_discrete_supports(model, vars, density.point_map_info)
        discrete = self._read_discrete()
        columns = np.concatenate([v.columns for v in discrete] or [[]]).astype(int)
        n_continuous = density.n_params - columns.size
        moves = explorer_class(density, columns)
        # explorer="auto": the walk, switched to dense MALA while tuning (engine.auto); with a
        # proposal chosen, the walk with it
        auto = options.explorer == "auto" and auto_eligible(
            n_continuous, bool(discrete), options.proposal
        )
        if auto:
            moves = WalkThenMALA(density, columns)
        if discrete:
            moves = Mixed(moves, DiscreteMoves(density, discrete))
        settings = local_settings(
            prior_rung,
            target_accept,
            scaling,
            betas=options.betas,
            density=density,
            default_target_accept=moves.default_target_accept(n_continuous),
            n_discrete=columns.size,
        )
        dense = dense_proposal(proposal, explorer, n_continuous, discrete=bool(discrete))
        # the local move as the stat EXPLORER_STAT records it, e.g. "mala+dense"
        self.local_move = f"{explorer}+{'dense' if dense else 'diag'}"
        leg_options = LegOptions(
            betas=options.betas,
            max_rungs=options.max_rungs,
            adaptive_ladder=options.adaptive_ladder,
            adapt_n_rungs=options.adapt_n_rungs,
            ladder_objective=options.ladder_objective,
            swap_scheme=options.swap_scheme,
            sweeps_per_draw=options.sweeps_per_draw,
            prior_rung=settings.prior_rung,
            init=options.init if density.can_sample_prior() else "jitter",
            target_accept=settings.target_accept,
            user_target_accept=target_accept,
            initial_log_scaling=settings.initial_log_scaling,
            # a dense proposal learns its covariances from gradients too, while tuning (MALA's
            # own, or forward differences); not with discrete variables, which have none
            dense=dense,
            grad_tuning=dense and not discrete,
            auto=auto,
            local_move_code=np.int8(LOCAL_MOVES.index(self.local_move)),
        )

        def make_fixed(run):
            return Leg(density, moves, leg_options, columns, run)

        make_variational = None
        if reference != "prior":
            check_variational(reference, n_rungs_variational, model, columns, options.betas)
            make_variational = _variational_leg(
                density, moves, leg_options, columns, n_rungs_variational, ladder
            )
        self.run = TemperingRun(make_fixed, make_variational)
        super().__init__(vars, {}, blocked=blocked, rng=rng)
        if make_variational is not None:
            dtypes = dict(self.stats_dtypes_shapes)
            for name in (LADDER_STAT, *RUNG_STATS, *PAIR_STATS):
                dtypes[VARIATIONAL_PREFIX + name] = (object, None)
            self.stats_dtypes_shapes = dtypes
            self.stats_dtypes = [{name: dtype for name, (dtype, _) in dtypes.items()}]

    # -- the sampling state: the engine's records, read and set through (.state) ----------------
    rng = delegate("rng", "run")
    tune = delegate("tune", "run")
    reference_fit = delegate("reference_fit", "run")
    betas, replicas, scales = delegate("betas"), delegate("replicas"), delegate("scales")
    prior_draws, random, sweep = delegate("prior_draws"), delegate("random"), delegate("sweep")
    ladder_tuning, recorder = delegate("ladder_tuning"), delegate("recorder")
    swaps, tune_sweeps, barrier = delegate("swaps"), delegate("tune_sweeps"), delegate("barrier")
    n_rungs_suggested, swap_scheme = delegate("n_rungs_suggested"), delegate("swap_scheme")
    sweeps_per_draw = delegate("sweeps_per_draw")

    @property
    def variational(self):
        """The variational leg's state (:class:`.state.LegState`), or None."""
        leg = self.run.variational
        return None if leg is None else LegState(leg, self)

    @variational.setter
    def variational(self, value):  # PyMC sets the leg's state in place, then this
        pass

    def __getattr__(self, name):
        # the fixed leg's other attributes (density, explorer, loglik, ...), read through
        run = self.__dict__.get("run")
        if run is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(run.fixed, name)

    # -- PyMC's step protocol --------------------------------------------------------------------
    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self.run.reset(tune_draws=tune)
        self.run.tune = tune > 0
        self.run.set_discrete(self._read_discrete())  # pm.Data may have been set since

    def reset_tuning(self):
        """Forget all tuning: ladder, proposal scales and adaptation counters."""
        self.run.reset_tuning()

    def stop_tuning(self):
        self.run.stop_tuning()

    def astep(self, q0: RaveledVars):
        # every sweep's NumPy / SciPy algebra (both legs) on one OpenBLAS thread: decision 131
        with one_blas_thread():
            x, stats = self.run.draw(q0.data.astype(np.float64))
        return RaveledVars(x, q0.point_map_info), [stats]

    @staticmethod
    def competence(var, has_grad):
        return Competence.COMPATIBLE

    @staticmethod
    def _progressbar_config(n_chains=1):
        fields = [
            ("swap_rate", "Swap rate", ":0.2f", 0.0),
            ("accept", "Accept", ":0.2f", 0.0),
            ("round_trips", "Round trips", "", 0),
        ]
        return progress_columns(fields, n_chains)

    @staticmethod
    def _make_progressbar_update_functions():
        def update_stats(step_stats):
            return {k: step_stats[k] for k in ("swap_rate", "accept", "round_trips")}

        return (update_stats,)


def _variational_leg(density, moves, leg_options, columns, n_rungs_variational, ladder):
    """The builder of the variational leg (:class:`~pymc_tempering.engine.leg.Leg` on
    :class:`~pymc_tempering.engine.variational.VariationalDensity`): its own ladder (the fixed
    one's, or ``ladder``'s spacing with ``n_rungs_variational`` rungs: a poorly fitting ``q``
    needs rungs near 0 as the prior does) and explorer, the run's stream."""
    betas = leg_options.betas
    if n_rungs_variational is not None:
        betas = make_ladder(None, n_rungs_variational, ladder)
    n_var = betas.size
    max_rungs = max(2 * n_var, 64) if leg_options.adapt_n_rungs else n_var
    options = leg_options.for_variational(betas.copy(), max_rungs)

    def make(run):
        leg_density = VariationalDensity(density, None)
        return Leg(leg_density, type(moves)(leg_density, columns), options, columns, run)

    return make


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
