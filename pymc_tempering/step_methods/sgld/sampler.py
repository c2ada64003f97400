"""SGLD: minibatch stochastic-gradient Langevin dynamics as a PyMC step method, the glue only:
its options are checked in ``options``, its stats built in ``stats``, its divergences judged in
``divergence``, and the maths is in :mod:`pymc_tempering.kernels.sgld`."""

import math
import warnings
from typing import Any

import numpy as np
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.model import modelcontext
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_value_vars_from_user_vars
from pymc.vartypes import continuous_types

from pymc_tempering.kernels.sgld import (
    StepSizeSchedule,
    rmsprop_preconditioner,
    rmsprop_update,
    sgld_step,
)
from pymc_tempering.resume.checkpoint import Resumable
from pymc_tempering.singular.core import check_localization, localization_term
from pymc_tempering.step_methods._compile import compile_minibatch_gradients, flat_point_map
from pymc_tempering.step_methods._flat_step import FlatPointStep, in_model_order, same_state
from pymc_tempering.step_methods.langevin.base import check_beta
from pymc_tempering.step_methods.sgld import divergence, options, stats

__all__ = ["SGLD", "SGLDState"]


@dataclass_state
class SGLDState(StepMethodState):
    tune: bool
    iteration: int
    schedule: StepSizeSchedule
    precond: np.ndarray
    rms_v: np.ndarray
    rms_count: int
    adapting: bool
    threshold_step: int
    minibatch_rng: np.random.Generator | None
    _x: Any
    _grad_logprior: Any
    _grad_loglik: Any
    logp_max: float


class SGLD(Resumable, FlatPointStep, ArrayStepShared):
    r"""Stochastic-gradient Langevin dynamics (Welling & Teh 2011), optionally preconditioned.

    Each step draws a fresh ``pm.Minibatch`` of ``n`` of the ``total_size=N`` rows and moves
    :math:`\theta' = \theta + \tfrac{\epsilon_t}{2} M g_t + \mathcal N(0, \epsilon_t M)`,
    :math:`g_t` the prior's gradient plus :math:`N/n` times the minibatch's. No Metropolis step:
    jumps and hard constraints go unseen (docs/decisions/092). Guide: ``docs/guide/sgld.md``;
    weight draws by :func:`pymc_tempering.diagnostics.step_size_weighted_mean`. Stats:
    :mod:`.stats`; divergences (discarded, flagged, warned once per chain): :mod:`.divergence`.

    Parameters
    ----------
    vars : list of TensorVariable, optional
        Continuous free variables to sample; default all of the model's.
    step_size : float, optional
        :math:`\epsilon_0`, the first step's size; default ``1 / N``.
    final_step_size : float, optional
        The last step's size under the polynomial schedule; default ``step_size / 100``.
    gamma : float, default 0.55
        The polynomial schedule's decay exponent, in ``(0.5, 1]`` (Welling & Teh's conditions).
    schedule : {"polynomial", "constant"}, default "polynomial"
        ``"polynomial"``: :math:`\epsilon_t = a (b + t)^{-\gamma}` from ``step_size`` to
        ``final_step_size`` over ``n_steps``; ``"constant"``: ``step_size`` at every step.
    n_steps : int, optional
        The steps the polynomial schedule spans; default ``tune + draws`` of the chain.
    preconditioner : None, array_like or "rmsprop", optional
        Diagonal of :math:`M`: ``None`` (the default) the identity, a fixed positive vector over
        the flattened value variables, or ``"rmsprop"``, pSGLD's RMSprop (Li et al. 2016, no
        :math:`\Gamma` term), adapted while tuning and frozen after.
    rmsprop_decay : float, default 0.99
        RMSprop's decay :math:`\alpha` of the squared-gradient average, in ``(0, 1)``.
    rmsprop_eps : float, default 1e-05
        RMSprop's :math:`\lambda`, added to the root mean square before dividing by it.
    threshold : float, default 0.1
        SGLD logs, once, when its sampling threshold falls below this value
        (:func:`pymc_tempering.diagnostics.sampling_threshold_crossing`).
    threshold_every : int, default 100
        Steps between two estimates of the sampling threshold.
    threshold_rows : int, optional
        Rows of data each estimate uses; default the larger of 32 and the minibatch size.
    control_variate : dict, optional
        An anchor near the mode, a value per value-variable name: SGLD-CV (Baker et al. 2019),
        one full-data gradient at the anchor. Default ``None``: plain minibatch gradients.
    beta : float, default 1.0
        Inverse temperature: the drift follows ``logprior + beta * loglik``, as ``MALA(beta=)``.
    localization : float, optional
        :math:`\gamma \ge 0`: adds :math:`-\tfrac\gamma2|x - w^*|^2` to the log density (the
        LLC's localised posterior, Lau et al. 2023: :mod:`pymc_tempering.singular.llc`).
        Default ``None`` (or 0): no localisation (devinterp's SGLD for the LLC).
    localization_center : dict, optional
        :math:`w^*`, a value per value-variable name; required with ``localization``.
    model : pymc.Model, optional
        The model; default the one of the enclosing ``with`` block. Its ``pm.Minibatch`` data
        (``total_size=N``) set the minibatches; a model without them takes full gradients.
    rng : int or numpy.random.Generator, optional
        The random stream, as for PyMC's step methods; ``pm.sample`` sets one per chain, and
        the minibatch stream is reseeded from it, so a ``random_seed`` repeats the trace.
    initial_point : dict, optional
        A point to compile and size the sampler at; default ``model.initial_point()``. Each
        chain starts at ``pm.sample``'s own initial point; a non-finite start raises
        ``ValueError`` (pass ``initvals=``).
    compile_kwargs : dict, optional
        Keyword arguments for PyTensor's compilation of the gradients.
    blocked : bool, default True
        As for PyMC's step methods: ``True`` samples ``vars`` as one block, ``False`` one
        sampler per variable.

    References
    ----------
    M. Welling and Y. W. Teh (2011), Bayesian learning via stochastic gradient Langevin dynamics.
    C. Li, C. Chen, D. Carlson and L. Carin (2016), Preconditioned SGLD for deep neural networks.
    J. Baker, P. Fearnhead, E. B. Fox and C. Nemeth (2019), Statistics and Computing 29, 599-615.
    """

    name = "sgld"
    default_blocked = True
    stats_dtypes_shapes = stats.STATS_DTYPES_SHAPES
    _state_class = SGLDState

    def __init__(
        self,
        vars=None,
        *,
        step_size: float | None = None,
        final_step_size: float | None = None,
        gamma: float = 0.55,
        schedule: str = "polynomial",
        n_steps: int | None = None,
        preconditioner=None,
        rmsprop_decay: float = 0.99,
        rmsprop_eps: float = 1e-5,
        threshold: float = 0.1,
        threshold_every: int = 100,
        threshold_rows: int | None = None,
        control_variate=None,
        beta: float = 1.0,
        localization: float | None = None,
        localization_center: dict | None = None,
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
        options.check_continuous(vars)
        options.check_options(schedule, threshold_every, rmsprop_decay)
        self.beta = check_beta(beta)
        self.gradients = compile_minibatch_gradients(model, vars, initial_point, compile_kwargs)
        g = self.gradients
        self.localization, self._center = check_localization(
            localization, localization_center, flat_point_map(vars, g.n_params)
        )
        self.n_data = g.total_size
        self.batch_size = g.batch_size if g.minibatched else g.total_size
        self._schedule_args = options.step_sizes(
            step_size, final_step_size, gamma, schedule, self.n_data
        )
        self.schedule_kind = schedule
        self.n_steps = n_steps
        self.schedule = self._make_schedule(n_steps or options.DEFAULT_N_STEPS)  # validates
        self.rmsprop, self._fixed_precond = options.preconditioner_option(
            preconditioner, g.n_params
        )
        self.rmsprop_decay, self.rmsprop_eps = float(rmsprop_decay), float(rmsprop_eps)
        self.threshold = float(threshold)
        self.threshold_every = int(threshold_every)
        self._score_batches = options.score_batches(threshold_rows, self.batch_size, g.minibatched)
        self.anchor, self.anchor_grad = options.control_variate_anchor(control_variate, vars, g)
        self.tune = True
        self._reset_chain(tune=0)
        # grad_noise_var between threshold steps: one read-only NaN vector for every such draw
        self._no_noise_stat = np.full(g.n_params, np.nan)
        self._no_noise_stat.flags.writeable = False
        self._warned: set[str] = set()
        self._model = model
        self._x = self._grad_logprior = self._grad_loglik = None
        super().__init__(vars, g.shared, blocked=blocked, rng=rng)

    def _make_schedule(self, n_steps: int) -> StepSizeSchedule:
        return options.make_schedule(self.schedule_kind, self._schedule_args, n_steps)

    # -- per-chain state -------------------------------------------------------------------------
    def _reset_chain(self, tune: int):
        self.iteration = 0
        self._x = None  # a new chain evaluates its start afresh: pm.Data may have been set since
        self.precond = self._fixed_precond.copy()
        self.rms_v = np.zeros_like(self.precond)
        self.rms_count = 0
        self.adapting = self.rmsprop
        self.threshold_step = -1
        self.logp_max = -np.inf  # the highest full-data log density the chain has reached

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self.gradients.reseed(self.rng)
        self.schedule = self._make_schedule(self.n_steps or tune + draws)
        self._reset_chain(tune)
        self._warned = set()  # each warning once per chain
        self.tune = tune > 0

    def reset_tuning(self):
        """Restart the step-size schedule and the RMSprop preconditioner."""
        self._reset_chain(0)

    def stop_tuning(self):
        self.tune = False
        if self.rmsprop and self.rms_count > 0:
            self.adapting = False

    @property
    def minibatch_rng(self):
        rngs = self.gradients.rngs
        return rngs[0].get_value(borrow=False) if rngs else None

    @minibatch_rng.setter
    def minibatch_rng(self, value):
        if value is not None:
            self.gradients.rngs[0].set_value(value, borrow=True)

    # -- the step --------------------------------------------------------------------------------
    def _evaluate(self, x):
        """``(logp, grad logprior, grad loglik)`` at ``x`` on a fresh minibatch, ``logp`` the
        log prior plus the rescaled minibatch log-likelihood (SGLD-CV's gradient if anchored)."""
        if self.anchor is None:
            logp, grad_logprior, grad_loglik = self.gradients.logp_grads(x)
        else:
            logp, grad_logprior, grad_diff = self.gradients.control_variate_logp_grads(
                x, self.anchor
            )
            grad_loglik = self.anchor_grad + grad_diff
        if self.beta != 1.0:  # logp stays untempered: it only flags non-finite states
            grad_loglik = self.beta * grad_loglik
        if self.localization:  # the LLC's -gamma/2 |x - w*|^2, not tempered
            term, term_grad = localization_term(x, self._center, self.localization)
            logp, grad_logprior = logp + term, grad_logprior + term_grad
        return logp, grad_logprior, grad_loglik

    def _fell(self, logp) -> bool:
        """Whether the full-data log density fell by more than BLOWUP_NATS below the highest
        the chain has reached: a step too large for the posterior, growing geometrically
        (SGLD(step_size=10) reaches |state| 1e23 and comes back as the schedule decays). A
        minibatch log density is too noisy for this rule and is never judged by it."""
        if self.gradients.minibatched:
            return False
        if logp < self.logp_max - divergence.BLOWUP_NATS:
            return True
        self.logp_max = max(self.logp_max, logp)
        return False

    def _current(self, q0: RaveledVars):
        """The state and its gradients, from the evaluation after the last move when valid.

        Each step evaluates the gradients at the state it moves to, and so learns whether the
        density there is finite before keeping it; the next step reuses them unless other step
        methods have changed variables outside ``vars`` (then one more compiled call).
        """
        x = q0.data
        if not self.shared and self._x is not None and same_state(x, self._x):
            return self._x, self._grad_logprior, self._grad_loglik
        x = np.array(x, dtype=np.float64)
        logp, grad_logprior, grad_loglik = self._evaluate(x)
        if not divergence.finite(x, logp, grad_logprior, grad_loglik):
            raise ValueError(self._nonfinite_state_message(q0, logp))
        if not self.gradients.minibatched:  # the start counts as reached (see _fell)
            self.logp_max = max(self.logp_max, logp)
        return x, grad_logprior, grad_loglik

    def _nonfinite_state_message(self, q0: RaveledVars, logp: float) -> str:
        own = {k: np.round(v, 4).tolist() for k, v in DictToArrayBijection.rmap(q0).items()}
        names = [v.name for v in self.vars]
        return divergence.nonfinite_state_message(own, names, logp, self.iteration == 0)

    def _report_divergence(self, x_new, logp_new, eps) -> None:
        kind, message = divergence.divergence_message(x_new, logp_new, eps, self.iteration)
        self._warn_once(kind, message, UserWarning)

    def _warn_once(self, kind: str, message: str, category) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            warnings.warn(message, category, stacklevel=3)

    def astep(self, q0: RaveledVars):
        x, grad_logprior, grad_loglik = self._current(q0)
        eps = float(self.schedule(self.iteration))
        if self.adapting:
            self.rms_v = rmsprop_update(self.rms_v, grad_loglik / self.n_data, self.rmsprop_decay)
            self.rms_count += 1
            self.precond = rmsprop_preconditioner(self.rms_v, self.rmsprop_eps)
        with np.errstate(over="ignore", invalid="ignore"):
            x_new = sgld_step(x, grad_logprior, grad_loglik, eps, self.precond, self.rng)
            new = (np.nan, None, None)
            if math.isfinite(np.add.reduce(x_new)):
                new = self._evaluate(x_new)  # the next step's gradients
            diverging = new[1] is None or not divergence.finite(x_new, *new) or self._fell(new[0])
        if diverging:
            self._report_divergence(x_new, new[0], eps)
            x_new = x
            self._x = None  # the next step draws a fresh minibatch at x
        else:
            self._x, self._grad_logprior, self._grad_loglik = x_new, new[1], new[2]

        alpha, grad_noise = np.nan, self._no_noise_stat
        if self.iteration % self.threshold_every == 0 and not diverging:
            alpha, grad_noise = self._threshold(x, eps)
        self.iteration += 1
        draw = stats.draw_stats(
            tune=self.tune,
            step_size=eps,
            alpha=alpha,
            grad_noise=grad_noise,
            precond=self.precond,
            diverging=diverging,
            beta=self.beta,
        )
        # arrays are never changed in place, so the state can be handed out without a copy
        return RaveledVars(x_new, q0.point_map_info), [draw]

    def _threshold(self, x, eps):
        alpha, grad_noise = stats.noise_stats(
            self.gradients,
            x,
            eps,
            self.rng,
            self._score_batches,
            self.anchor,
            self.beta,
            self.precond,
        )
        if alpha < self.threshold and self.threshold_step < 0:
            self.threshold_step = self.iteration
            stats.log_threshold_crossing(alpha, self.threshold, self.iteration, eps)
        return alpha, grad_noise

    # -- PyMC integration ------------------------------------------------------------------------
    @staticmethod
    def competence(var, has_grad):
        if var.dtype in continuous_types and has_grad:
            return Competence.COMPATIBLE
        return Competence.INCOMPATIBLE

    @staticmethod
    def _progressbar_config(n_chains=1):
        return stats.progressbar_config(n_chains)

    @staticmethod
    def _make_progressbar_update_functions():
        return stats.progressbar_update_functions()
