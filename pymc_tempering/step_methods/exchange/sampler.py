"""ExchangeMC: replica-exchange (parallel tempering) Monte Carlo as a PyMC step method.

The PyMC adapter of the tempering engine (:mod:`pymc_tempering.engine`): it checks the
options (:mod:`.options`), compiles and places the log potential, builds the engine's run
(:class:`~pymc_tempering.engine.run.TemperingRun`) and speaks PyMC's step protocol: a draw is
the run's draw, the sampling state the engine's records (:mod:`.state`), the stats
:data:`pymc_tempering.trace.EXCHANGE_STATS`.
"""

from pymc.blocking import RaveledVars
from pymc.model import modelcontext
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence
from pymc.util import get_value_vars_from_user_vars

from pymc_tempering._util.blas import one_blas_thread
from pymc_tempering.resume.checkpoint import Resumable
from pymc_tempering.step_methods._compile import (
    check_observed_finite,
)
from pymc_tempering.step_methods._flat_step import FlatPointStep, in_model_order
from pymc_tempering.step_methods._progress import progress_columns
from pymc_tempering.step_methods.exchange.build import build_run
from pymc_tempering.step_methods.exchange.options import (
    check_compile_kwargs,
    check_model,
    exchange_options,
)
from pymc_tempering.step_methods.exchange.state import ExchangeMCState, LegState, delegate
from pymc_tempering.trace import EXCHANGE_STATS, run_stats

__all__ = ["ExchangeMC"]


class ExchangeMC(Resumable, FlatPointStep, ArrayStepShared):
    r"""Replica-exchange Monte Carlo (parallel tempering), Metropolis-Hastings moves per rung.

    Rung :math:`l` samples :math:`p(w)\,p(y \mid w)^{\beta_l}`, PyMC records :math:`\beta = 1`;
    each sweep moves every rung, then swaps neighbours with probability :math:`\min\{1,
    e^{(\beta_{l+1} - \beta_l)(\ell_l - \ell_{l+1})}\}`, :math:`\ell` the log-likelihood. Stats:
    :data:`pymc_tempering.trace.EXCHANGE_STATS`; guide: ``docs/guide/tempering.md``.

    Parameters
    ----------
    vars : list of variables, optional
        The variables to sample, as PyMC's; default (and the only choice): all free variables.
    betas : array_like, optional
        A ladder rising in [0, 1] to 1 (or adaptive's start); default: ``ladder``'s.
    n_rungs : int, optional
        The size of a built-in ladder, default 32; where neither ``betas``, ``n_rungs`` nor
        ``ladder`` is given, ``explorer="auto"`` sizes it to its barrier after switching to
        MALA (:mod:`pymc_tempering.engine.shrink`).
    ladder : {"geometric", "power", "adaptive"}, default "geometric"
        :math:`\beta_1 = 0, \beta_l = 2^{l-L}`; :math:`(i/(L-1))^5`; or re-placed during tuning
        (Syed et al. 2021), recording ``barrier`` and ``n_rungs_suggested``.
    ladder_objective : {"swap", "evidence"}, default "swap"
        What ``"adaptive"`` equalises: swap rejection, or thermodynamic length (evidence then
        warned: docs/decisions/020-evidence-ladder-caveat.md).
    adapt_n_rungs : bool, default False
        Whether ``"adaptive"`` also resets the number of rungs.
    swap_scheme : {"deo", "seo", "random"}, default "deo"
        Even/odd pairs in turn, at random, or one random pair per sweep.
    explorer : {"auto", "rwm", "mala", "independent"}, default "auto"
        The local move (stat ``explorer``): the walk, switched to dense MALA while tuning where
        the top rung looks Gaussian (:mod:`pymc_tempering.engine.auto`; with a ``proposal``, the
        walk with it); the random walk; MALA; independence proposals fitted per rung.
    proposal : {"diag", "dense", "auto"}, optional
        The per-rung proposal covariance learned in tuning (Haario 2001); default ``"diag"``.
    prior_rung : bool, optional
        Exact prior draws on a ``beta = 0`` rung; default: where the prior can be
        forward-sampled.
    reference : {"prior", "variational"}, optional
        ``"variational"`` adds a second ladder from a Gaussian fitted while tuning, joined at
        ``beta = 1`` (stats ``variational_*``; :mod:`pymc_tempering.engine.variational`,
        docs/guide/variational.md). Continuous models only. Default ``"prior"``; for a model
        with improper priors (``pm.Flat``, ``pm.HalfFlat``) the variational ladder alone (stat
        ``reference_only``; its evidence is undefined, and the readers refuse it).
    n_rungs_variational : int, optional
        The variational leg's ladder size (``ladder``'s spacing); default: this ladder.
    sweeps_per_draw : int, default 1
        Sweeps per recorded draw.
    target_accept : float, optional
        The local acceptance rate tuning aims for; default: the explorer's.
    scaling : float, optional
        The first proposal scale; default ``2.38 / sqrt(n_params)``.
    init : {"prior", "jitter"}, default "prior"
        Replicas other than the top one start at prior draws, or at the initial point plus
        U(-1, 1).
    placement : Placement, optional
        Where the rungs' densities are evaluated: in this process, all rungs in one batched
        call (the default), or e.g. :class:`pymc_tempering.distributed.DaskPlacement` on the
        workers of a Dask cluster (:mod:`pymc_tempering.engine.placement`).
    model : pm.Model, optional
        The model, default the one in context.
    rng : RandomGenerator, optional
        As PyMC's; ``pm.sample`` sets each chain's.
    initial_point : dict, optional
        The point whose shapes and values compile the density; default the model's.
    compile_kwargs : dict, optional
        Passed to the compiler; ``compile_kwargs["mode"]`` a NumPy one.
    blocked : bool, default True
        As PyMC's (ExchangeMC moves all variables as one block).

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
        reference: str | None = None,
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
        vars = in_model_order(vars, model)  # the flat state's order
        check_model(model, vars)
        check_observed_finite(model, "ExchangeMC")
        check_compile_kwargs(compile_kwargs)
        options = exchange_options(
            model, betas=betas, n_rungs=n_rungs, ladder=ladder,
            ladder_objective=ladder_objective, adapt_n_rungs=adapt_n_rungs,
            swap_scheme=swap_scheme, sweeps_per_draw=sweeps_per_draw, init=init,
            explorer=explorer, proposal=proposal, reference=reference,
            n_rungs_variational=n_rungs_variational,
        )  # fmt: skip
        local = dict(
            prior_rung=prior_rung, target_accept=target_accept, scaling=scaling,
            n_rungs_variational=n_rungs_variational, ladder=ladder,
        )  # fmt: skip
        built = build_run(
            model, vars, initial_point, options, placement=placement,
            compile_kwargs=compile_kwargs, local=local,
        )  # fmt: skip
        self.run, self._read_discrete = built.run, built.read_discrete
        self.local_move, self.placement = built.local_move, built.placement
        extra = run_stats(
            self.run.variational is not None, self.run.fixed.auto, self.run.reference_only
        )
        if extra:  # this run's own stats beside the class's (trace.run_stats)
            self.stats_dtypes_shapes = {**self.stats_dtypes_shapes, **extra}
        super().__init__(vars, {}, blocked=blocked, rng=rng)  # then stats_dtypes (Resumable)

    def _array_stat_shapes(self) -> dict:
        return self.run.stat_shapes()

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
        x, stats = self._array_step(q0.data)
        return RaveledVars(x, q0.point_map_info), stats

    def _array_step(self, x):
        # the run's draw on the flat state, without RaveledVars (FlatPointStep); every sweep's
        # NumPy / SciPy algebra (both legs) on one OpenBLAS thread: decision 131
        with one_blas_thread():
            x, stats = self.run.draw(x)
        return x, [stats]

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
