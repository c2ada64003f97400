r"""ULA and MALA: Langevin step methods for PyMC.

Both move by the h-form Langevin proposal
:math:`x' = x + h M \nabla \log \pi(x) + \sqrt{2 h M}\,\xi`, :math:`\xi \sim N(0, I)`, with
:math:`\log \pi = \text{logprior} + \beta\,\text{loglik}` evaluated with its gradient in one
compiled call. MALA adds the Metropolis-Hastings correction; ULA does not.
"""

import math
import warnings
from dataclasses import field
from typing import Any

import numpy as np
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.model import modelcontext
from pymc.stats.convergence import SamplerWarning, WarningType
from pymc.step_methods.arraystep import GradientSharedStep
from pymc.step_methods.compound import Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_value_vars_from_user_vars
from pymc.vartypes import continuous_types

from pymc_tempering.kernels.langevin import (
    adaptation_windows,
    diag_preconditioner,
    dual_average_init,
    dual_average_update,
    langevin_proposal,
    mala_log_accept_ratio,
    moments_init,
    welford_update,
)
from pymc_tempering.kernels.slt import check_localization, localization_term
from pymc_tempering.step_methods._compile import (
    compile_tempered_logp_dlogp,
    flat_point_map,
    nonfinite_start_message,
    refuse_minibatch,
)
from pymc_tempering.step_methods._progress import progress_columns

__all__ = ["ULA", "MALA"]

# Dual averaging shrinks log h towards log(_SHRINK * h0). NUTS uses 10; MALA's acceptance falls
# off much faster with h, and 10x steps after each preconditioner update cost whole windows.
_SHRINK = 2.0
# Share of tuning left to the step size alone after the last preconditioner update: the
# dual-averaged step of a short terminal buffer is noisy enough to move MALA's acceptance by 0.1.
_TERM_FRACTION = 0.25


def _positive_finite(value, name: str, fix: str) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"`{name}` must be a positive finite number, got {value!r}. {fix}"
        ) from None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"`{name}` must be a positive finite number, got {value}. {fix}")
    return value


def _check_scaling(scaling, n_params: int, sampler: str) -> np.ndarray:
    arr = np.asarray(scaling, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(n_params, float(arr))
    if arr.shape != (n_params,) or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(
            f"`scaling` of {sampler} must be a positive finite scalar or vector of length "
            f"{n_params} (the diagonal of the preconditioner M, about the posterior variances "
            f"of the flattened, transformed variables); got {scaling!r}."
        )
    return arr


class _Langevin(GradientSharedStep):
    """Shared set-up, density evaluation and divergence bookkeeping of ULA and MALA."""

    default_blocked = True

    def __init__(
        self, vars, *, beta, Emax, model, rng, initial_point, compile_kwargs, blocked,
        localization=None, localization_center=None,
    ):  # fmt: skip
        sampler = type(self).__name__
        model = modelcontext(model)
        refuse_minibatch(model, sampler)
        if initial_point is None:
            initial_point = model.initial_point()
        if vars is None:
            vars = model.continuous_value_vars
            if not vars:
                raise ValueError(
                    f"{sampler} samples continuous variables with the gradient of the log "
                    "density, and this model has none. Use pm.Metropolis or pm.CategoricalGibbs"
                    "Metropolis for discrete variables."
                )
        else:
            vars = get_value_vars_from_user_vars(vars, model)
        beta = float(beta)
        if not (np.isfinite(beta) and 0.0 <= beta <= 1.0):
            raise ValueError(
                f"`beta` (inverse temperature on the likelihood) must lie in [0, 1], got {beta}."
            )
        if not Emax > 0:
            raise ValueError(f"`Emax` must be positive, got {Emax}.")
        fn = compile_tempered_logp_dlogp(model, vars, initial_point, beta, compile_kwargs, sampler)
        super().__init__(
            vars,
            model=model,
            blocked=blocked,
            logp_dlogp_func=fn,
            rng=rng,
            initial_point=initial_point,
        )
        self._model = model
        self._fn = fn._pytensor_function
        # our states are fresh contiguous float64 vectors: skip input validation when that is
        # the compiled dtype; with floatX = float32 they are cast down on each call
        self._dtype = fn.dtype
        self._fn.trust_input = fn.dtype == "float64"
        self.beta = beta
        self.Emax = float(Emax)
        x0 = DictToArrayBijection.map({v.name: initial_point[v.name] for v in vars}).data
        self.n_params = int(x0.size)
        self.localization, self._center = check_localization(
            localization, localization_center, flat_point_map(vars, self.n_params)
        )
        # No check of the density at `initial_point` here: pm.sample starts each chain at its
        # own initial point (`initvals=`), known only at the first step (see `_current`).
        self._x = self._logp = self._grad = None

    # -- density ---------------------------------------------------------------------------------
    def _logp_grad(self, x):
        """Log density and gradient; the state stays float64 whatever ``floatX`` is."""
        if self._dtype != "float64":
            x = x.astype(self._dtype)
        logp, grad = self._fn(x)  # fresh output arrays on every call
        if self.localization:  # the LLC's -gamma/2 |x - w*|^2, not tempered by beta
            term, term_grad = localization_term(x, self._center, self.localization)
            return float(logp) + term, grad.astype(np.float64) + term_grad
        return float(logp), grad.astype(np.float64, copy=False)

    @staticmethod
    def _finite(x, logp, grad) -> bool:
        return bool(np.isfinite(logp) and np.isfinite(grad).all() and np.isfinite(x).all())

    def _current(self, q0: RaveledVars):
        """Log density and gradient at the chain's state, from the cache when it is valid.

        The cache holds the last accepted state; it is valid unless other step methods have
        changed variables outside ``vars`` (then one more compiled call is needed).
        """
        x = q0.data
        if not self.shared and self._x is not None and np.array_equal(x, self._x):
            return self._x, self._logp, self._grad
        x = np.array(x, dtype=np.float64)
        logp, grad = self._logp_grad(x)
        if not self._finite(x, logp, grad):
            raise ValueError(self._nonfinite_state_message(q0))
        return x, logp, grad

    def _nonfinite_state_message(self, q0: RaveledVars) -> str:
        sampler, names = type(self).__name__, [v.name for v in self.vars]
        own = {k: np.round(v, 4).tolist() for k, v in DictToArrayBijection.rmap(q0).items()}
        point = {k: v.get_value() for k, v in self.shared.items()} | DictToArrayBijection.rmap(q0)
        where = nonfinite_start_message(self._model, point, self.vars)
        if self.iteration == 0:
            return (
                f"{sampler} cannot start the chain at {own}, where {where}. pm.sample starts "
                "every chain at the model's initial point unless told otherwise (the step's "
                "`initial_point=` does not choose it); pass starting values inside the support, "
                f"e.g. pm.sample(step=..., initvals={{{names[0]!r}: ...}}) for {names}."
            )
        return (
            f"{sampler} cannot move from {own}, where {where}: other step methods have moved "
            f"the variables that {sampler} does not sample to values where the density of "
            f"{names} is zero or not finite. Check the model, or sample it with one step method."
        )

    def _propose(self, x, grad, step_size, scaling):
        """Draw a Langevin proposal and evaluate it; ``finite`` says whether all is finite.

        Call inside ``np.errstate(over="ignore", invalid="ignore")``: a huge gradient may
        overflow, and the result is then caught here as not finite.
        """
        noise = self.rng.standard_normal(x.size)
        y = langevin_proposal(x, grad, step_size, scaling, noise)
        if not np.isfinite(y).all():
            return y, -np.inf, np.full_like(y, np.nan), False
        logp_y, grad_y = self._logp_grad(y)
        return y, logp_y, grad_y, bool(np.isfinite(logp_y) and np.isfinite(grad_y).all())

    def _divergence_warning(self, message: str, zero_density: bool = False):
        """A ``warning`` stat for this draw, and a Python warning once per chain: a
        ``UserWarning`` at the first move into zero density (tuning or not), a
        ``RuntimeWarning`` at the first other divergence after tuning."""
        if zero_density:
            self._warn_once("zero_density", message, UserWarning)
        if self.tune:
            return SamplerWarning(WarningType.TUNING_DIVERGENCE, message, "debug", self.iteration)
        self.divergences += 1
        if not zero_density:
            self._warn_once("diverging", message, RuntimeWarning)
        return SamplerWarning(WarningType.DIVERGENCE, message, "debug", self.iteration)

    def _warn_once(self, kind: str, message: str, category) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            warnings.warn(message, category, stacklevel=4)

    def stop_tuning(self):
        self.tune = False

    @staticmethod
    def competence(var, has_grad):
        """COMPATIBLE for continuous variables with a gradient, else INCOMPATIBLE."""
        if var.dtype in continuous_types and has_grad:
            return Competence.COMPATIBLE
        return Competence.INCOMPATIBLE


@dataclass_state
class ULAState(StepMethodState):
    tune: bool
    iteration: int
    divergences: int
    step_size: float
    _x: Any
    _logp: Any
    _grad: Any
    scaling: np.ndarray = field(metadata={"frozen": True})
    beta: float = field(metadata={"frozen": True})


class ULA(_Langevin):
    r"""Unadjusted Langevin algorithm: Langevin moves without an accept/reject step.

    Each draw is one Euler-Maruyama step of the Langevin diffusion (the "h-form"):

    .. math:: x' = x + h\,M\,\nabla \log \pi(x) + \sqrt{2 h M}\,\xi, \qquad \xi \sim N(0, I),

    with :math:`\log \pi = \text{logprior} + \beta\,\text{loglik}` in the transformed (value)
    space. (In the other common convention, :math:`x' = x + \tfrac{\epsilon^2}{2}\nabla\log\pi
    + \epsilon\xi`, :math:`\epsilon^2 = 2h`.)

    **ULA samples a biased law.** Nothing corrects the discretisation, so the chain's
    stationary distribution is not :math:`\pi` but a perturbation of it whose error (in total
    variation, and in smooth moments) is of order :math:`h` for small :math:`h` (Roberts &
    Tweedie 1996; Durmus & Moulines 2017). Example: on :math:`N(0, s^2)` the stationary variance
    is :math:`s^2 / (1 - h / (2 s^2))`, and ULA is unstable for :math:`h \ge 2 s^2`. Where the
    gradient grows faster than linearly (e.g. :math:`\pi \propto e^{-x^4}`) ULA is transient for
    every fixed :math:`h`: its paths blow up. Use :class:`MALA` for exact sampling.

    **What a gradient-only sampler cannot see.** ULA (like SGLD) moves along the gradient of
    the log density and keeps every move, so it never compares densities. Where the density
    jumps, the gradient is zero on both sides and ULA samples as if there were no jump: with
    ``x ~ N(0, 1)`` and ``pm.Potential("jump", pt.switch(x > 1, 2.0, 0.0))``, P(x > 1) is 0.58,
    ULA gives 0.16 (the jump-free value) and MALA 0.58. A hard constraint (bounds that depend
    on parameters, e.g. ``pm.Uniform("y", ub - 10, ub, observed=y)``, or a Potential that is
    -inf somewhere) is just as invisible to the gradient. ULA evaluates the log density of
    every new state, discards a move into zero density, marks the draw ``diverging`` and
    warns (``UserWarning``, once per chain), but its draws near such a boundary are still
    wrong. Use :class:`MALA` or ``ExchangeMC``, whose accept/reject step sees the density.

    Parameters
    ----------
    vars : list, optional
        Continuous variables to sample, default all continuous free variables.
    step_size : float or callable
        :math:`h`, fixed; or a schedule ``step_size(iteration) -> float`` called with the
        0-based iteration of the chain (tuning iterations included).
    scaling : float or array_like, optional
        Diagonal of the preconditioner :math:`M` over the flattened transformed variables
        (about their posterior variances), default ones. Fixed: ULA does not tune.
    beta : float, default 1.0
        Inverse temperature on the likelihood; the target is logprior + beta * loglik (the
        model's observed variables and Potentials form the likelihood).
    Emax : float, default 1000
        A move whose log density falls by more than ``Emax`` counts as a divergence.
    localization : float, optional
        :math:`\gamma`: adds :math:`-\tfrac\gamma2|x - w^*|^2` (value space, not tempered) to
        the target, the local learning coefficient's localised posterior (Lau et al. 2023; see
        :func:`pymc_tempering.local_learning_coefficient`). ``model_logp`` includes it.
    localization_center : dict, optional
        :math:`w^*` as ``{value variable name: array}``; required with ``localization``.
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's step methods.

    Notes
    -----
    Divergences: when the proposed state, its log density or its gradient is not finite, or its
    log density is more than ``Emax`` below the current one, the draw is marked ``diverging``
    and **the chain stays at its last finite state** (the draw repeats it), so the trace never
    holds NaN or infinities. A chain that diverges once usually keeps diverging: reduce
    ``step_size``. After tuning, the first divergence of a chain raises a ``RuntimeWarning``
    and PyMC reports the count at the end of sampling, as it does for NUTS. The first move of
    a chain into zero density (log density -inf), in tuning or not, raises a ``UserWarning``
    (see above).

    Start: each chain starts where ``pm.sample`` starts it, at the model's initial point or at
    ``initvals=``; where the log density or its gradient is not finite there, the first step
    raises a ``ValueError`` naming the variables. Models with ``pm.Minibatch`` data (or a
    ``total_size`` that rescales a likelihood) are refused: ULA needs the full-data density;
    use ``SGLD`` for them.

    Stats, per draw: ``tune`` (bool), ``step_size`` (the :math:`h` used), ``diverging`` (bool),
    ``divergences`` (running count after tuning), ``model_logp`` (logprior + beta * loglik
    of the recorded state; ``lp`` in the DataTree, as for NUTS), ``beta`` (the run's inverse
    temperature, which :func:`pymc_tempering.wbic` checks) and ``warning`` (a
    ``SamplerWarning`` on divergent draws; PyMC drops it from the DataTree unless
    ``keep_warning_stat=True``).

    References
    ----------
    G. O. Roberts and R. L. Tweedie (1996), Exponential convergence of Langevin distributions and
    their discrete approximations. Bernoulli 2(4), 341-363.
    A. Durmus and E. Moulines (2017), Nonasymptotic convergence analysis for the unadjusted
    Langevin algorithm. Ann. Appl. Probab. 27(3), 1551-1587.

    Examples
    --------
    >>> with model:  # doctest: +SKIP
    ...     idata = pm.sample(step=pmt.ULA(step_size=0.05), draws=20000, tune=0)
    """

    name = "ula"
    stats_dtypes_shapes = {
        "tune": (bool, []),
        "step_size": (np.float64, []),
        "diverging": (bool, []),
        "divergences": (int, []),  # NUTS declares `int`: compound steps need one dtype
        "model_logp": (np.float64, []),
        "beta": (np.float64, []),  # the run's inverse temperature, for pmt.wbic
        "warning": (SamplerWarning, None),
    }
    _state_class = ULAState

    def __init__(
        self,
        vars=None,
        *,
        step_size,
        scaling=None,
        beta: float = 1.0,
        Emax: float = 1000.0,
        localization: float | None = None,
        localization_center: dict | None = None,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        blocked: bool = True,
    ):
        fix = "ULA(step_size=h) needs h > 0; for a target with scale s, h well below 2 s^2."
        if callable(step_size):
            self._schedule = step_size
            self.step_size = np.nan
        else:
            self._schedule = None
            self.step_size = _positive_finite(step_size, "step_size", fix)
        super().__init__(
            vars,
            beta=beta,
            Emax=Emax,
            model=model,
            rng=rng,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            blocked=blocked,
            localization=localization,
            localization_center=localization_center,
        )
        self.scaling = (
            np.ones(self.n_params)
            if scaling is None
            else _check_scaling(scaling, self.n_params, "ULA")
        )
        self.tune = True
        self._reset_chain()

    def _reset_chain(self):
        self.iteration = 0
        self.divergences = 0
        self._warned: set[str] = set()  # Python warnings given in this chain

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self._reset_chain()
        self.tune = tune > 0

    def reset_tuning(self):
        self._reset_chain()

    def _step_size_at(self, iteration: int) -> float:
        if self._schedule is None:
            return self.step_size
        h = self._schedule(iteration)
        return _positive_finite(
            h, "step_size", f"The schedule returned it at iteration {iteration}."
        )

    def astep(self, q0: RaveledVars):
        x, logp, grad = self._current(q0)
        h = self._step_size_at(self.iteration)
        self.step_size = h
        with np.errstate(over="ignore", invalid="ignore"):
            y, logp_y, grad_y, finite = self._propose(x, grad, h, self.scaling)
        diverging = not finite or (logp - logp_y) > self.Emax
        warning = None
        if diverging and logp_y == -np.inf and np.isfinite(y).all():
            warning = self._divergence_warning(
                f"ULA entered a region of zero density at iteration {self.iteration} "
                f"(step_size={h:.4g}): the move led to log density -inf. Such moves are "
                "discarded: the draw repeats the last state and is marked `diverging`. ULA "
                "follows only the gradient of the log density, which cannot see hard "
                "constraints (bounds that depend on parameters, a Potential that is -inf "
                "somewhere) or jumps of the density, so its draws near them are wrong. Sample "
                "this model with pmt.MALA or pmt.ExchangeMC, whose accept/reject step "
                "evaluates the density.",
                zero_density=True,
            )
        elif diverging:
            warning = self._divergence_warning(
                f"ULA diverged at iteration {self.iteration} (step_size={h:.4g}): the move "
                f"led to log density {logp_y:.4g} from {logp:.4g}. The chain stays at its last "
                "finite state and such draws are marked `diverging`; reduce `step_size` "
                "(for a Gaussian of scale s ULA needs h < 2 s^2) or use MALA."
            )
        if diverging:
            y, logp_y, grad_y = x, logp, grad
        self._x, self._logp, self._grad = y, logp_y, grad_y
        self.iteration += 1
        stats = {
            "tune": self.tune,
            "step_size": h,
            "diverging": diverging,
            "divergences": self.divergences,
            "model_logp": logp_y,
            "beta": self.beta,
            "warning": warning,
        }
        return RaveledVars(y.copy(), q0.point_map_info), [stats]

    @staticmethod
    def _progressbar_config(n_chains=1):
        fields = [
            ("divergences", "Divergences", "", 0),
            ("step_size", "Step size", ":0.3g", 0.0),
        ]
        return progress_columns(fields, n_chains)

    @staticmethod
    def _make_progressbar_update_functions():
        def update_stats(step_stats):
            return {k: step_stats[k] for k in ("divergences", "step_size")} | {
                "failing": step_stats["divergences"] > 0
            }

        return (update_stats,)


@dataclass_state
class MALAState(StepMethodState):
    tune: bool
    iteration: int
    divergences: int
    n_tune: int
    step_size: float
    scaling: np.ndarray
    _scaling_range: tuple
    dual_average: Any
    moments: Any
    grad_moments: Any
    windows: list
    _x: Any
    _logp: Any
    _grad: Any
    target_accept: float = field(metadata={"frozen": True})
    steps_per_draw: int = field(metadata={"frozen": True})
    beta: float = field(metadata={"frozen": True})


class MALA(_Langevin):
    r"""Metropolis-adjusted Langevin algorithm with step-size and preconditioner tuning.

    Proposes the h-form Langevin move

    .. math:: y = x + h\,M\,\nabla \log \pi(x) + \sqrt{2 h M}\,\xi, \qquad \xi \sim N(0, I),

    (the other common convention is :math:`\epsilon^2 = 2h`) and accepts it with probability
    :math:`\min\{1, \pi(y) q_h(y, x) / (\pi(x) q_h(x, y))\}`, where :math:`q_h(a, \cdot) =
    N(a + hM\nabla\log\pi(a), 2hM)`; so it samples :math:`\pi \propto \text{prior} \times
    \text{likelihood}^\beta` exactly (Roberts & Tweedie 1996). One compiled log-density and
    gradient call per draw (two when other step methods sample some of the model's variables,
    since the density at the current point must then be re-evaluated).

    Parameters
    ----------
    vars : list, optional
        Continuous variables to sample, default all continuous free variables.
    step_size : float, optional
        :math:`h`. Given: fixed (unless ``adapt_step_size=True``, then it is the start).
        Default: start at ``n_params ** (-1/3)`` and adapt.
    scaling : float or array_like, optional
        Diagonal of the preconditioner :math:`M` over the flattened transformed variables
        (about their posterior variances). Given: fixed (unless ``adapt_scaling=True``).
        Default: start at ones and adapt.
    adapt_step_size, adapt_scaling : bool, optional
        Whether to tune :math:`h` / :math:`M`; default: tune what was not given.
    target_accept : float, default 0.574
        Mean acceptance probability that step-size tuning aims for, optimal for MALA in high
        dimension (Roberts & Rosenthal 1998).
    gamma, k, t0 : float, default 0.2, 0.75, 10
        Dual-averaging constants (Hoffman & Gelman 2014). NUTS uses ``gamma=0.05``; MALA's
        acceptance is noisier and falls faster with the step size, and with 0.05 the iterates
        swing so widely that the averaged step is accepted well above ``target_accept``.
    beta : float, default 1.0
        Inverse temperature on the likelihood; the target is logprior + beta * loglik (the
        model's observed variables and Potentials form the likelihood).
    Emax : float, default 1000
        A proposal whose log acceptance ratio is below ``-Emax``, or whose state, log density
        or gradient is not finite, is rejected and counted as a divergence.
    localization : float, optional
        :math:`\gamma`: adds :math:`-\tfrac\gamma2|x - w^*|^2` (value space, not tempered) to
        the target, the local learning coefficient's localised posterior (Lau et al. 2023; see
        :func:`pymc_tempering.local_learning_coefficient`). ``model_logp`` includes it.
    localization_center : dict, optional
        :math:`w^*` as ``{value variable name: array}``; required with ``localization``.
    steps_per_draw : int, default 1
        MALA transitions per recorded draw. PyMC's sampling loop costs tens of microseconds per
        draw, as much as a MALA step on a small model; several steps per draw spread that cost
        (the recorded chain is the MALA chain thinned by ``steps_per_draw``).
    model, rng, initial_point, compile_kwargs, blocked
        As for PyMC's step methods.

    Notes
    -----
    Tuning (the ``tune`` draws of ``pm.sample``): the step size follows dual averaging of the
    acceptance probability towards ``target_accept``; :math:`M` is re-estimated in windows of
    25, 50, 100, ... iterations after an initial buffer of 75 (Stan's schedule, as NUTS adapts
    its mass matrix) as
    :math:`\sqrt{\operatorname{var}(x_i) / \operatorname{var}(\partial_i \log \pi)}` over the
    window's draws (see ``pymc_tempering.kernels.langevin.diag_preconditioner``), and dual
    averaging restarts after each window from the averaged step. The last quarter of tuning
    adapts the step size alone. Both are frozen when tuning ends, the step size at its
    dual-averaged value. Every chain tunes from the same initial values.

    Stats, per draw (averaged over its ``steps_per_draw`` transitions where that applies):
    ``tune`` (bool); ``accept`` (acceptance probability of the proposal); ``accepted``
    (fraction accepted, float as in ``pm.Metropolis``); ``step_size`` (the :math:`h` used
    last); ``step_size_bar`` (the dual-averaged step size, frozen after tuning); ``diverging``
    (bool, any transition diverged); ``divergences`` (running count of divergent transitions
    after tuning); ``model_logp`` (logprior + beta * loglik of the recorded
    state); ``beta`` (the run's inverse temperature, which :func:`pymc_tempering.wbic`
    checks); ``scaling_min`` and ``scaling_max`` (extremes of :math:`M`'s diagonal), and
    ``warning`` (a ``SamplerWarning`` on divergent draws; PyMC drops it from the DataTree unless
    ``keep_warning_stat=True``). PyMC reports divergences after tuning at the end of sampling.

    Start: each chain starts where ``pm.sample`` starts it, at the model's initial point or at
    ``initvals=``; where the log density or its gradient is not finite there, the first step
    raises a ``ValueError`` naming the variables. Models with ``pm.Minibatch`` data (or a
    ``total_size`` that rescales a likelihood) are refused: MALA's accept/reject step needs the
    full-data density; use ``SGLD`` for them.

    References
    ----------
    G. O. Roberts and R. L. Tweedie (1996), Exponential convergence of Langevin distributions and
    their discrete approximations. Bernoulli 2(4), 341-363.
    G. O. Roberts and J. S. Rosenthal (1998), Optimal scaling of discrete approximations to
    Langevin diffusions. JRSS B 60(1), 255-268.
    M. D. Hoffman and A. Gelman (2014), The No-U-Turn sampler. JMLR 15, 1593-1623.

    Examples
    --------
    >>> with model:  # doctest: +SKIP
    ...     idata = pm.sample(step=pmt.MALA(), draws=2000, tune=1000)
    """

    name = "mala"
    stats_dtypes_shapes = {
        "tune": (bool, []),
        "accept": (np.float64, []),
        "accepted": (np.float64, []),  # as pm.Metropolis, so compound steps can share it
        "step_size": (np.float64, []),
        "step_size_bar": (np.float64, []),
        "diverging": (bool, []),
        "divergences": (int, []),  # NUTS declares `int`: compound steps need one dtype
        "model_logp": (np.float64, []),
        "beta": (np.float64, []),  # the run's inverse temperature, for pmt.wbic
        "scaling_min": (np.float64, []),
        "scaling_max": (np.float64, []),
        "warning": (SamplerWarning, None),
    }
    _state_class = MALAState

    def __init__(
        self,
        vars=None,
        *,
        step_size: float | None = None,
        scaling=None,
        adapt_step_size: bool | None = None,
        adapt_scaling: bool | None = None,
        target_accept: float = 0.574,
        gamma: float = 0.2,
        k: float = 0.75,
        t0: float = 10.0,
        beta: float = 1.0,
        Emax: float = 1000.0,
        steps_per_draw: int = 1,
        localization: float | None = None,
        localization_center: dict | None = None,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        blocked: bool = True,
    ):
        if isinstance(steps_per_draw, bool) or not isinstance(steps_per_draw, int | np.integer):
            raise ValueError(
                f"`steps_per_draw` must be a positive integer, got {steps_per_draw!r}."
            )
        if steps_per_draw < 1:
            raise ValueError(f"`steps_per_draw` must be a positive integer, got {steps_per_draw}.")
        self.steps_per_draw = int(steps_per_draw)
        if step_size is not None:
            step_size = _positive_finite(
                step_size, "step_size", "Pass h > 0, or leave it out to have it tuned."
            )
        if not 0 < target_accept < 1:
            raise ValueError(f"`target_accept` must lie in (0, 1), got {target_accept}.")
        super().__init__(
            vars,
            beta=beta,
            Emax=Emax,
            model=model,
            rng=rng,
            initial_point=initial_point,
            compile_kwargs=compile_kwargs,
            blocked=blocked,
            localization=localization,
            localization_center=localization_center,
        )
        n = self.n_params
        self._initial_step_size = n ** (-1.0 / 3.0) if step_size is None else step_size
        self._initial_scaling = (
            np.ones(n) if scaling is None else _check_scaling(scaling, n, "MALA")
        )
        self.adapt_step_size = step_size is None if adapt_step_size is None else adapt_step_size
        self.adapt_scaling = scaling is None if adapt_scaling is None else adapt_scaling
        self.target_accept = float(target_accept)
        self._dual_average_args = (float(gamma), float(k), float(t0))
        self.tune = True
        self._reset_chain(n_tune=0)

    # -- per-chain state -------------------------------------------------------------------------
    def _reset_chain(self, n_tune: int):
        self.iteration = 0
        self.divergences = 0
        self._warned: set[str] = set()  # Python warnings given in this chain
        self.n_tune = int(n_tune)
        self.step_size = self._initial_step_size
        self.scaling = self._initial_scaling.copy()
        self._scaling_range = (float(self.scaling.min()), float(self.scaling.max()))
        self.dual_average = dual_average_init(self.step_size, _SHRINK)
        self.moments = self.grad_moments = moments_init(self.n_params)
        n_tune_steps = self.n_tune * self.steps_per_draw
        self.windows = (
            adaptation_windows(n_tune_steps, _TERM_FRACTION) if self.adapt_scaling else []
        )

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self._reset_chain(n_tune=tune)
        self.tune = tune > 0

    def reset_tuning(self):
        """Forget all tuning: step size, preconditioner and adaptation windows."""
        self._reset_chain(n_tune=self.n_tune)

    def stop_tuning(self):
        """Freeze the step size at its dual-averaged value, and the preconditioner."""
        if self.tune and self.adapt_step_size:
            self.step_size = float(np.exp(self.dual_average.log_step_bar))
        self.tune = False

    # -- the step --------------------------------------------------------------------------------
    def astep(self, q0: RaveledVars):
        x, logp, grad = self._current(q0)
        accept_sum = accepted_sum = 0.0
        diverging, warning = False, None
        for _ in range(self.steps_per_draw):
            h = self.step_size
            x, logp, grad, accept, accepted, step_warning = self._mala_step(x, logp, grad)
            accept_sum += accept
            accepted_sum += accepted
            if step_warning is not None:
                diverging, warning = True, step_warning
        self._x, self._logp, self._grad = x, logp, grad
        n = self.steps_per_draw
        stats = {
            "tune": self.tune,
            "accept": accept_sum / n,
            "accepted": accepted_sum / n,
            "step_size": h,
            "step_size_bar": math.exp(self.dual_average.log_step_bar)
            if self.adapt_step_size
            else h,
            "diverging": diverging,
            "divergences": self.divergences,
            "model_logp": logp,
            "beta": self.beta,
            "scaling_min": self._scaling_range[0],
            "scaling_max": self._scaling_range[1],
            "warning": warning,
        }
        # arrays are never changed in place, so the state can be handed out without a copy
        return RaveledVars(x, q0.point_map_info), [stats]

    def _mala_step(self, x, logp, grad):
        """One MALA transition (and its tuning update) from ``x`` with known logp and grad."""
        h, m = self.step_size, self.scaling
        log_alpha = -math.inf
        with np.errstate(over="ignore", invalid="ignore"):
            y, logp_y, grad_y, finite = self._propose(x, grad, h, m)
            if finite:
                log_alpha = mala_log_accept_ratio(x, y, logp, logp_y, grad, grad_y, h, m)
                if log_alpha != log_alpha:  # NaN
                    log_alpha = -math.inf
        log_u = math.log(self.rng.uniform())
        accept = math.exp(min(log_alpha, 0.0))
        accepted = log_u < log_alpha
        if accepted:
            x, logp, grad = y, logp_y, grad_y
        warning = None
        if not finite or log_alpha < -self.Emax:
            warning = self._divergence_warning(
                f"MALA diverged at iteration {self.iteration} (step_size={h:.4g}): the proposal "
                f"had log density {logp_y:.4g} and log acceptance ratio {log_alpha:.4g}; it was "
                "rejected. Many divergences mean the step size is too large for the curvature "
                "somewhere: let it tune longer, raise `target_accept`, or reparameterise."
            )
        if self.tune:
            self._adapt(accept, x, grad)
        self.iteration += 1
        return x, logp, grad, accept, accepted, warning

    def _adapt(self, accept: float, x: np.ndarray, grad: np.ndarray):
        if self.adapt_step_size:
            self.dual_average = dual_average_update(
                self.dual_average, accept, self.target_accept, *self._dual_average_args
            )
            self.step_size = math.exp(self.dual_average.log_step)
        if not self.windows:
            return
        start, end = self.windows[0]
        if start <= self.iteration < end:
            self.moments = welford_update(self.moments, x)
            self.grad_moments = welford_update(self.grad_moments, grad)
        if self.iteration + 1 == end:
            self.scaling = diag_preconditioner(self.moments, self.grad_moments)
            self._scaling_range = (float(self.scaling.min()), float(self.scaling.max()))
            self.moments = self.grad_moments = moments_init(self.n_params)
            self.windows = self.windows[1:]
            if self.adapt_step_size:  # restart from the averaged step, not the noisy iterate
                self.step_size = float(np.exp(self.dual_average.log_step_bar))
                self.dual_average = dual_average_init(self.step_size, _SHRINK)

    # -- PyMC integration ------------------------------------------------------------------------
    @staticmethod
    def _progressbar_config(n_chains=1):
        fields = [
            ("accept", "Accept", ":0.2f", 0.0),
            ("step_size", "Step size", ":0.3g", 0.0),
            ("divergences", "Divergences", "", 0),
        ]
        return progress_columns(fields, n_chains)

    @staticmethod
    def _make_progressbar_update_functions():
        def update_stats(step_stats):
            return {k: step_stats[k] for k in ("accept", "step_size", "divergences")} | {
                "failing": step_stats["divergences"] > 0
            }

        return (update_stats,)
