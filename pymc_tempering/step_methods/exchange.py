"""ExchangeMC: replica-exchange (parallel tempering) Metropolis as a PyMC step method."""

import math
from dataclasses import field
from typing import Any

import numpy as np
from pymc.blocking import RaveledVars
from pymc.model import modelcontext
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_value_vars_from_user_vars
from pymc.vartypes import continuous_types

from pymc_tempering.kernels.fused import finish_rwm_sweep
from pymc_tempering.kernels.mala_rungs import mala_sweep
from pymc_tempering.kernels.rwm import (
    RunningMoments,
    admissible,
    optimal_accept,
    robbins_monro_scaling,
    rwm_sweep,
)
from pymc_tempering.ladder import (
    communication_barrier,
    equal_rejection_ladder,
    make_ladder,
    suggested_n_rungs,
    thermodynamic_length_ladder,
)
from pymc_tempering.step_methods._compile import (
    PRIOR_BLOCK,
    check_all_free_continuous,
    compile_tempered_density,
    has_likelihood,
    improper_priors,
    refuse_minibatch,
)
from pymc_tempering.step_methods._progress import progress_columns
from pymc_tempering.swap import SWAP_SCHEMES, propose_swaps, swap_pairs

__all__ = ["ExchangeMC"]

_BOTTOM, _TOP, _NONE = 0, 1, -1
EXPLORERS = ("rwm", "mala")
LADDER_OBJECTIVES = ("swap", "evidence")
MALA_TARGET_ACCEPT = 0.574
# the random walk draws its normals and uniforms for this many sweeps at once (fewer, larger
# generator calls), capped so that a block holds at most RANDOM_BLOCK_VALUES normals
RANDOM_BLOCK = 32
RANDOM_BLOCK_VALUES = 2**16
# rows of a sweep's record (see ExchangeMC._sweep): probabilities first, so that one ufunc call
# turns both rows of log ratios into probabilities
ACCEPT_PROB, SWAP_PROB, ACCEPTED, SWAPPED = 0, 1, 2, 3


@dataclass_state
class ExchangeMCState(StepMethodState):
    tune: bool
    betas: np.ndarray
    replicas: Any
    logprior: Any
    loglik: Any
    rung_replica: Any
    grad_prior: Any
    grad_lik: Any
    prior_buffer: Any
    prior_pos: int
    random_noise: Any
    random_log_u: Any
    random_pos: int
    log_scaling: np.ndarray
    param_scale: np.ndarray
    sweep: int
    tune_sweeps: int
    moments: Any
    window_end: int
    window_len: int
    gain_start: int
    last_end: np.ndarray
    round_trips: int
    swap_sum: float
    swap_count: int
    ladder_round: Any
    barrier: float
    n_rungs_suggested: int
    sweeps_per_draw: int = field(metadata={"frozen": True})
    swap_scheme: str = field(metadata={"frozen": True})


def _pad(values, length):
    """``values`` padded to ``length`` with NaN (-1 for integer replica ids)."""
    fill = -1 if values.dtype.kind == "i" else np.nan
    out = np.full(length, fill, dtype=values.dtype)
    out[: values.size] = values
    return out


class ExchangeMC(ArrayStepShared):
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
        For evidence, start from ``betas=pmt.evidence_ladder(n)``.
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
    explorer : {"rwm", "mala"}, default "rwm"
        The local move on every rung: Gaussian random walk, or Metropolis-adjusted Langevin
        using the batched gradient (one compiled call for all rungs; h-form step, diagonal
        preconditioner from the warm-up, tuned towards acceptance 0.574).
    prior_rung : bool, optional
        Where the ladder starts at beta = 0 and the prior can be forward-sampled, the lowest
        rung draws an independent prior sample every sweep instead of a local move (Pigeons'
        i.i.d. reference). Default: on whenever possible.
    init : {"prior", "jitter"}, default "prior"
        How replicas other than the recorded one start: independent prior draws where the
        model can be forward-sampled (as the seed paper does), else the initial point plus
        U(-1, 1) jitter in the transformed space.
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's step methods.

    Notes
    -----
    Tuning (the ``tune`` draws of ``pm.sample``): each rung's proposal standard deviation is
    ``scaling[l] * scale[l, j]`` per parameter ``j``. ``scaling`` follows a Robbins-Monro
    recursion towards ``target_accept``; ``scale`` is set to the rung's observed standard
    deviation at the end of doubling windows (50, 100, 200, ... sweeps) in the first 80% of
    tuning, so parameters whose posterior scales differ by orders of magnitude all move.
    Everything is frozen after tuning.

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
    """

    name = "exchange_mc"
    default_blocked = True
    stats_dtypes_shapes = {
        "tune": (bool, []),
        "accept": (np.float64, []),
        "accepted": (np.float64, []),
        "scaling": (np.float64, []),
        "swap_rate": (np.float64, []),
        "round_trips": (np.int64, []),
        "betas": (object, None),
        "rung_loglik": (object, None),
        "rung_accept": (object, None),
        "rung_scaling": (object, None),
        "rung_replica": (object, None),
        "swap_accept": (object, None),
        "swap_accepted": (object, None),
    }
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
        check_all_free_continuous(model, vars, "ExchangeMC")
        refuse_minibatch(model, "ExchangeMC")
        if not has_likelihood(model):
            raise ValueError(
                "ExchangeMC needs likelihood terms (observed variables or Potentials that depend "
                "on the free variables): tempering a model without them does nothing. Add "
                "`observed=` data, or sample the prior with pm.sample_prior_predictive."
            )

        self.betas = make_ladder(betas, n_rungs, ladder)
        self.adaptive_ladder = ladder == "adaptive"
        if adapt_n_rungs and not self.adaptive_ladder:
            raise ValueError(
                "`adapt_n_rungs=True` needs ladder='adaptive': the number of rungs is chosen "
                "from the barrier that the adaptive rounds measure."
            )
        self.adapt_n_rungs = bool(adapt_n_rungs)
        # per-rung stats keep one length for every chain: padded up to max_rungs when the
        # number of rungs is tuned, since chains tune separately and may settle differently
        self.max_rungs = max(2 * self.betas.size, 64) if self.adapt_n_rungs else self.betas.size
        improper = improper_priors(model)
        if self.betas[0] == 0 and improper:
            raise ValueError(
                f"The ladder starts at beta = 0, where rung 1 samples the prior, but {improper} "
                "have improper priors (Flat/HalfFlat). Give them proper priors, or pass `betas=` "
                "starting above 0 (the evidence then cannot be computed from this run)."
            )
        if swap_scheme not in SWAP_SCHEMES:
            raise ValueError(f"`swap_scheme` must be one of {SWAP_SCHEMES}, got {swap_scheme!r}.")
        if isinstance(sweeps_per_draw, bool) or not isinstance(sweeps_per_draw, int | np.integer):
            raise ValueError(
                f"`sweeps_per_draw` must be a positive integer, got {sweeps_per_draw!r}."
            )
        if sweeps_per_draw < 1:
            raise ValueError(
                f"`sweeps_per_draw` must be a positive integer, got {sweeps_per_draw}."
            )
        if init not in ("prior", "jitter"):
            raise ValueError(f"`init` must be 'prior' or 'jitter', got {init!r}.")
        if explorer not in EXPLORERS:
            raise ValueError(f"`explorer` must be one of {EXPLORERS}, got {explorer!r}.")
        if ladder_objective not in LADDER_OBJECTIVES:
            raise ValueError(
                f"`ladder_objective` must be one of {LADDER_OBJECTIVES}, got {ladder_objective!r}."
            )

        self.density = compile_tempered_density(
            model, vars, initial_point, compile_kwargs, gradient=explorer == "mala"
        )
        n_params = self.density.n_params
        can_prior = self.betas[0] == 0 and self.density.can_sample_prior()
        if prior_rung and not can_prior:
            raise ValueError(
                "`prior_rung=True` needs a ladder starting at beta = 0 and a model whose prior "
                "can be forward-sampled; pass prior_rung=False."
            )
        self.prior_rung = can_prior if prior_rung is None else bool(prior_rung)
        self.explorer = explorer
        # the random walk's bookkeeping runs compiled; set False for the pure NumPy kernels
        self.fused = explorer == "rwm"
        self.ladder_objective = ladder_objective
        if target_accept is None:
            target_accept = MALA_TARGET_ACCEPT if explorer == "mala" else optimal_accept(n_params)
        if not 0 < target_accept < 1:
            raise ValueError(f"`target_accept` must lie in (0, 1), got {target_accept}.")
        if scaling is None:
            scaling = 2.38 / np.sqrt(n_params)
        if not np.isfinite(scaling) or scaling <= 0:
            raise ValueError(f"`scaling` must be a positive finite number, got {scaling}.")
        self.target_accept = float(target_accept)
        self.swap_scheme = swap_scheme
        self.sweeps_per_draw = int(sweeps_per_draw)
        self.init = init if self.density.can_sample_prior() else "jitter"
        self._initial_betas = self.betas.copy()
        self._initial_log_scaling = float(np.log(scaling))
        self.tune = True
        self._reset_chain(tune_draws=0)
        super().__init__(vars, {}, blocked=blocked, rng=rng)

    # -- per-chain state -------------------------------------------------------------------------
    def _reset_chain(self, tune_draws: int):
        n_rungs, n_params = self._initial_betas.size, self.density.n_params
        self.betas = self._initial_betas.copy()
        self.replicas = None  # set from the start point at the first step
        self.logprior = self.loglik = self.rung_replica = None
        self.grad_prior = self.grad_lik = None
        self.prior_buffer, self.prior_pos = np.empty((0, n_params)), 0
        self.random_noise = self.random_log_u = None
        self.random_pos = 0
        self.log_scaling = np.full(n_rungs, self._initial_log_scaling)
        self.param_scale = np.ones((n_rungs, n_params))
        self.sweep = 0
        self.tune_sweeps = tune_draws * self.sweeps_per_draw
        self.moments = RunningMoments((n_rungs, n_params))
        self.window_len = self.window_end = 50
        self.gain_start = 0
        self.last_end = np.full(n_rungs, _NONE)
        self.round_trips = 0
        self.swap_sum, self.swap_count = 0.0, 0
        first = max(32, self.tune_sweeps // 64)
        self.ladder_round = (
            {
                "end": first,
                "length": first,
                "rejection": np.zeros(n_rungs - 1),
                "count": np.zeros(n_rungs - 1),
                "ll": RunningMoments((n_rungs,)),
            }
            if self.adaptive_ladder
            else None
        )
        self.barrier = np.nan
        self.n_rungs_suggested = -1
        self._step_scale_cache = None

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self._reset_chain(tune_draws=tune)
        self.tune = tune > 0

    def reset_tuning(self):
        """Forget all tuning: ladder, proposal scales and adaptation counters."""
        tune_draws = self.tune_sweeps // self.sweeps_per_draw
        names = ("replicas", "logprior", "loglik", "rung_replica", "grad_prior", "grad_lik")
        kept = {name: getattr(self, name) for name in names}
        self._reset_chain(tune_draws)
        for name, value in kept.items():
            setattr(self, name, value)

    def stop_tuning(self):
        self.tune = False
        self.round_trips = 0
        self.last_end[:] = _NONE
        self.swap_sum, self.swap_count = 0.0, 0

    def _init_replicas(self, q0: np.ndarray):
        n_rungs, n_params = self.betas.size, self.density.n_params
        if self.init == "prior":
            x = self.density.sample_prior(n_rungs, self.rng)
        else:
            x = q0 + self.rng.uniform(-1, 1, size=(n_rungs, n_params))
        x[-1] = q0
        logprior, loglik = self.density.batch(x)
        if not (np.isfinite(logprior[-1]) and np.isfinite(loglik[-1])):
            raise ValueError(
                "The start point has a non-finite log density (log prior "
                f"{logprior[-1]}, log-likelihood {loglik[-1]}) at "
                f"{self.density.to_point(q0)}. Pass `initvals=` to pm.sample with a valid point."
            )
        bad = ~admissible(logprior, loglik, self.betas)
        x[bad], logprior[bad], loglik[bad] = q0, logprior[-1], loglik[-1]
        self.replicas, self.logprior, self.loglik = x, logprior, loglik
        self.rung_replica = np.arange(n_rungs)
        if self.explorer == "mala":
            _, _, self.grad_prior, self.grad_lik = self.density.batch_grad(x)

    def _prior_draw(self):
        """One independent prior draw, from a buffer refilled in blocks (part of the state)."""
        if self.prior_pos >= len(self.prior_buffer):
            self.prior_buffer = self.density.sample_prior(PRIOR_BLOCK, self.rng)
            self.prior_pos = 0
        self.prior_pos += 1
        return self.prior_buffer[self.prior_pos - 1]

    def _rwm_draws(self):
        """The random numbers of one random-walk sweep, in the order both sweep paths use.

        Returns the exact prior draw for rung 0 (or None), standard normals ``(n_rungs,
        n_params)`` for the proposals, log-uniforms for the accept decisions (one per rung) and
        for the swaps (one per neighbouring pair), and the pairs proposed for swapping. Normals
        and uniforms come from blocks drawn for ``RANDOM_BLOCK`` sweeps at once (the block and
        the position in it are part of the sampling state).
        """
        exact = self._prior_draw() if self.prior_rung else None
        n_rungs, n_params = self.betas.size, self.density.n_params
        noise, log_u, k = self.random_noise, self.random_log_u, self.random_pos
        if noise is None or k >= len(noise) or noise.shape[1:] != (n_rungs, n_params):
            size = max(1, min(RANDOM_BLOCK, RANDOM_BLOCK_VALUES // (n_rungs * n_params)))
            noise = self.rng.standard_normal((size, n_rungs, n_params))
            log_u = np.log(self.rng.random((size, 2 * n_rungs - 1)))
            self.random_noise, self.random_log_u, k = noise, log_u, 0
        self.random_pos = k + 1
        lower = swap_pairs(n_rungs, self.sweep, self.swap_scheme, self.rng)
        return exact, noise[k], log_u[k, :n_rungs], log_u[k, n_rungs:], lower

    def _explore(self):
        """One local move on every rung, for the NumPy path.

        Returns the new state ``x, logprior, loglik``, the acceptance probability and decision
        per rung, the pairs to propose for swapping and their log-uniforms (None: draw them).
        """
        if self.explorer == "mala":
            exact = self._prior_draw() if self.prior_rung else None
            x, lp, ll, self.grad_prior, self.grad_lik, acc_prob, acc = mala_sweep(
                self.replicas, self.logprior, self.loglik, self.grad_prior, self.grad_lik,
                self.betas, np.exp(self.log_scaling), self.param_scale, self.density.batch_grad,
                self.rng, exact,
            )  # fmt: skip
            lower = swap_pairs(self.betas.size, self.sweep, self.swap_scheme, self.rng)
            return x, lp, ll, acc_prob, acc, lower, None
        exact, noise, log_u, log_u_swap, lower = self._rwm_draws()
        x, lp, ll, acc_prob, acc = rwm_sweep(
            self.replicas, self.logprior, self.loglik, self.betas, self._step_scale(),
            self.density.batch, None, exact, noise=noise, log_u=log_u,
        )  # fmt: skip
        return x, lp, ll, acc_prob, acc, lower, log_u_swap[lower]

    # -- the step --------------------------------------------------------------------------------
    def astep(self, q0: RaveledVars):
        if self.replicas is None:
            self._init_replicas(q0.data.astype(np.float64))
        if self.sweeps_per_draw == 1:
            n_rungs = self.betas.size
            record = self._sweep()
            if self.betas.size != n_rungs:  # tuning resized the ladder: nothing to report
                record = np.full((4, self.betas.size), np.nan)
        else:
            record = self._several_sweeps()
        stats = {
            "tune": self.tune,
            "accept": record[ACCEPT_PROB, -1],
            "accepted": record[ACCEPTED, -1],
            "scaling": math.exp(self.log_scaling[-1]),
            "swap_rate": self.swap_sum / max(self.swap_count, 1),
            "round_trips": self.round_trips,
            "betas": self.betas,
            "rung_loglik": self.loglik.copy(),
            "rung_accept": record[ACCEPT_PROB],
            "rung_scaling": self._rung_scaling(),
            "rung_replica": self.rung_replica.copy(),
            "swap_accept": record[SWAP_PROB, :-1],
            "swap_accepted": record[SWAPPED, :-1],
        }
        if self.adapt_n_rungs:
            for name in ("betas", "rung_loglik", "rung_accept", "rung_scaling", "rung_replica"):
                stats[name] = _pad(stats[name], self.max_rungs)
            for name in ("swap_accept", "swap_accepted"):
                stats[name] = _pad(stats[name], self.max_rungs - 1)
        return RaveledVars(self.replicas[-1].copy(), q0.point_map_info), [stats]

    def _sweep(self):
        """One sweep (local moves, one swap round), its tuning and the running counters.

        Returns the sweep's record, a new ``(4, n_rungs)`` array: rows ``ACCEPT_PROB`` and
        ``ACCEPTED``, per rung, the local acceptance probability and whether it accepted
        (1.0 / 0.0); rows ``SWAP_PROB`` and ``SWAPPED``, per neighbouring pair (first
        ``n_rungs - 1`` columns), the swap acceptance probability and whether it swapped, NaN
        for pairs not proposed.
        """
        if self.fused:
            record, lower, swap_sum = self._fused_sweep()
        else:
            record, lower, swap_sum = self._numpy_sweep()
        self.swap_sum += swap_sum
        self.swap_count += lower.size
        if self.tune:
            self._adapt(record[ACCEPT_PROB], lower, record[SWAP_PROB, lower])
        self.sweep += 1
        return record

    def _several_sweeps(self):
        """``sweeps_per_draw`` sweeps; their records averaged (swap rates over the sweeps that
        proposed each pair, NaN for pairs never proposed)."""
        n_rungs, n = self.betas.size, 0
        for _ in range(self.sweeps_per_draw):
            if n == 0 or self.betas.size != n_rungs:  # tuning may resize the ladder mid-draw
                n_rungs, n = self.betas.size, 0
                total, attempts = np.zeros((4, n_rungs)), np.zeros(n_rungs)
            record = self._sweep()
            if record.shape[1] != self.betas.size:
                continue  # the ladder was resized in this sweep: start counting again
            n += 1
            rungs, pairs = [ACCEPT_PROB, ACCEPTED], [SWAP_PROB, SWAPPED]
            proposed = ~np.isnan(record[SWAP_PROB])
            total[rungs] += record[rungs]
            total[np.ix_(pairs, proposed)] += record[np.ix_(pairs, proposed)]
            attempts += proposed
        record = np.full((4, self.betas.size), np.nan)
        if n == 0 or self.betas.size != n_rungs:
            return record
        record[rungs] = total[rungs] / n
        record[pairs] = np.divide(total[pairs], attempts, out=record[pairs], where=attempts > 0)
        return record

    def _numpy_sweep(self):
        """Local move on every rung, then one swap round (the pure NumPy kernels)."""
        x, lp, ll, acc_prob, acc, lower, log_u_swap = self._explore()
        order, swap_prob, swapped = propose_swaps(self.betas, ll, lower, self.rng, log_u_swap)
        if swapped.any():
            x, lp, ll = x[order], lp[order], ll[order]
            self.rung_replica = self.rung_replica[order]
            if self.explorer == "mala":
                self.grad_prior, self.grad_lik = self.grad_prior[order], self.grad_lik[order]
        self.replicas, self.logprior, self.loglik = x, lp, ll
        self._track_round_trips()
        record = np.full((4, self.betas.size), np.nan)
        record[ACCEPT_PROB], record[ACCEPTED] = acc_prob, acc
        record[SWAP_PROB, lower], record[SWAPPED, lower] = swap_prob, swapped
        return record, lower, swap_prob.sum()

    def _fused_sweep(self):
        """The random-walk sweep with its bookkeeping in one compiled call, in place.

        Uses the same random numbers as :meth:`_numpy_sweep`, so the two make the same
        decisions and give identical traces.
        """
        exact, noise, log_u, log_u_swap, lower = self._rwm_draws()
        proposal = self.replicas + self._step_scale() * noise
        if exact is not None:
            proposal[0] = exact
        prop_logprior, prop_loglik = self.density.batch(proposal)
        record = np.empty((4, self.betas.size))
        self.round_trips += finish_rwm_sweep(
            self.replicas, self.logprior, self.loglik, proposal, prop_logprior, prop_loglik,
            self.betas, log_u, exact is not None, lower, log_u_swap, self.rung_replica,
            self.last_end, record,
        )  # fmt: skip
        log_ratios = record[:2]  # ACCEPT_PROB, SWAP_PROB: probabilities from their logs, as
        np.exp(np.minimum(log_ratios, 0.0, out=log_ratios), out=log_ratios)  # NumPy does
        return record, lower, record[SWAP_PROB, lower].sum()

    def _step_scale(self):
        """Proposal sd per rung and parameter, cached while ``log_scaling`` and
        ``param_scale`` are the same objects (they are replaced, never changed in place; a
        restored sampling state brings new ones)."""
        cache = self._step_scale_cache
        if cache is not None and cache[0] is self.log_scaling and cache[1] is self.param_scale:
            return cache[2]
        step_scale = np.exp(self.log_scaling)[:, None] * self.param_scale
        self._step_scale_cache = (self.log_scaling, self.param_scale, step_scale)
        return step_scale

    def _rung_scaling(self):
        scaling = np.exp(self.log_scaling)
        if self.prior_rung:
            scaling[0] = np.nan  # exact prior draws: no proposal scale
        return scaling

    def _track_round_trips(self):
        """A round trip: a replica goes from the lowest rung to the top and back."""
        bottom, top = self.rung_replica[0], self.rung_replica[-1]
        if self.last_end[bottom] == _TOP:
            self.round_trips += 1
        self.last_end[bottom] = _BOTTOM
        if self.last_end[top] == _BOTTOM:
            self.last_end[top] = _TOP

    # -- tuning ----------------------------------------------------------------------------------
    def _adapt(self, accept_prob, lower, swap_prob):
        t = self.sweep
        gain = (t - self.gain_start + 1) ** -0.6
        if self.prior_rung:  # rung 0 makes exact prior draws: it has no scale to tune
            accept_prob = np.concatenate([[self.target_accept], accept_prob[1:]])
        self.log_scaling = robbins_monro_scaling(
            self.log_scaling, accept_prob, self.target_accept, gain
        )
        self.moments.update(self.replicas)
        if t + 1 == self.window_end and self.window_end <= 0.8 * self.tune_sweeps:
            n = self.moments.count
            var = (n / (n + 5.0)) * self.moments.variance() + 1e-6 * (5.0 / (n + 5.0))
            self.param_scale = np.sqrt(var)
            self.log_scaling = np.full_like(
                self.log_scaling, np.log(2.38 / np.sqrt(self.density.n_params))
            )
            self.gain_start = t + 1
            self.moments.reset()
            self.window_len *= 2
            self.window_end += self.window_len
        if self.ladder_round is not None:
            self._adapt_ladder(t, lower, swap_prob)

    def _adapt_ladder(self, t, lower, swap_prob):
        """Rounds of doubling length; at each round's end re-place the rungs (Syed et al. 2021,
        Algorithm 4) until the next round would not fit in the first 80% of tuning."""
        rnd = self.ladder_round
        rnd["rejection"][lower] += 1.0 - swap_prob
        rnd["count"][lower] += 1
        rnd["ll"].update(np.where(np.isfinite(self.loglik), self.loglik, np.nan))  # -inf at 0
        if t + 1 < rnd["end"]:
            return
        rejection = rnd["rejection"] / np.maximum(rnd["count"], 1)
        self.barrier = float(communication_barrier(self.betas, rejection)[-1])
        self.n_rungs_suggested = suggested_n_rungs(self.barrier)
        n_new = None
        if self.adapt_n_rungs:
            n_new = int(np.clip(self.n_rungs_suggested, 3, self.max_rungs))
        old_betas = self.betas
        if self.ladder_objective == "evidence":
            sd = np.sqrt(rnd["ll"].variance())
            self.betas = thermodynamic_length_ladder(old_betas, sd, n_new)
        else:
            self.betas = equal_rejection_ladder(old_betas, rejection, n_new)
        if self.betas.size != old_betas.size:
            self._resize_rungs(old_betas)
            rnd = self.ladder_round
        rnd["length"] *= 2
        rnd["end"] += rnd["length"]
        if rnd["end"] > 0.8 * self.tune_sweeps:
            rnd["end"] = np.inf  # no room for another round: the ladder stays as it is
        rnd["rejection"][:] = 0
        rnd["count"][:] = 0
        rnd["ll"].reset()

    def _resize_rungs(self, old_betas):
        """Give every new rung the state and tuning of the nearest old rung (in beta)."""
        n_rungs = self.betas.size
        nearest = np.abs(self.betas[:, None] - old_betas[None, :]).argmin(axis=1)
        if old_betas[0] == 0:  # rung 0 may hold loglik = -inf, admissible at beta = 0 only
            nearest = np.where(nearest == 0, 1, nearest)
        nearest[0], nearest[-1] = 0, old_betas.size - 1
        self.replicas = self.replicas[nearest].copy()
        self.logprior, self.loglik = self.logprior[nearest], self.loglik[nearest]
        if self.explorer == "mala":
            self.grad_prior, self.grad_lik = self.grad_prior[nearest], self.grad_lik[nearest]
        self.log_scaling = self.log_scaling[nearest].copy()
        self.param_scale = self.param_scale[nearest].copy()
        self.moments = RunningMoments((n_rungs, self.density.n_params))
        self.rung_replica = np.arange(n_rungs)
        self.last_end = np.full(n_rungs, _NONE)
        rnd = self.ladder_round
        rnd["rejection"], rnd["count"] = np.zeros(n_rungs - 1), np.zeros(n_rungs - 1)
        rnd["ll"] = RunningMoments((n_rungs,))

    # -- PyMC integration ------------------------------------------------------------------------
    @staticmethod
    def competence(var, has_grad):
        if var.dtype in continuous_types:
            return Competence.COMPATIBLE
        return Competence.INCOMPATIBLE

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
