r"""What ULA and MALA share: set-up, the tempered density and its gradient, the Langevin
proposal, divergence bookkeeping, and the argument checks.

Both move by the h-form Langevin proposal
:math:`x' = x + h M \nabla \log \pi(x) + \sqrt{2 h M}\,\xi`, :math:`\xi \sim N(0, I)`, with
:math:`\log \pi = \text{logprior} + \beta\,\text{loglik}` evaluated with its gradient in one
compiled call (:mod:`pymc_tempering.kernels.langevin` holds the maths).
"""

import math
import warnings

import numpy as np
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.model import modelcontext
from pymc.stats.convergence import SamplerWarning, WarningType
from pymc.step_methods.arraystep import GradientSharedStep
from pymc.step_methods.compound import Competence
from pymc.util import get_value_vars_from_user_vars
from pymc.vartypes import continuous_types

from pymc_tempering.kernels.langevin import langevin_proposal
from pymc_tempering.resume.checkpoint import Resumable
from pymc_tempering.singular.core import check_localization, localization_term
from pymc_tempering.step_methods._compile import (
    check_observed_finite,
    compile_tempered_logp_dlogp,
    flat_point_map,
    nonfinite_start_message,
    refuse_minibatch,
)
from pymc_tempering.step_methods._compile.direct import checked_call
from pymc_tempering.step_methods._flat_step import FlatPointStep, in_model_order, same_state

__all__ = ["check_beta", "positive_finite", "check_scaling", "LangevinBase"]


def check_beta(beta) -> float:
    """``beta`` as a float, or a ValueError unless it is a finite number in [0, 1]."""
    beta = float(beta)
    if not (np.isfinite(beta) and 0.0 <= beta <= 1.0):
        raise ValueError(
            f"`beta` (inverse temperature on the likelihood) must lie in [0, 1], got {beta}."
        )
    return beta


def positive_finite(value, name: str, fix: str) -> float:
    """``value`` as a float, or a ValueError naming ``name`` and the ``fix`` unless it is a
    positive finite number."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"`{name}` must be a positive finite number, got {value!r}. {fix}"
        ) from None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"`{name}` must be a positive finite number, got {value}. {fix}")
    return value


def check_scaling(scaling, n_params: int, sampler: str) -> np.ndarray:
    """The preconditioner diagonal as a float64 vector of length ``n_params`` (a scalar is
    broadcast), or a ValueError naming ``sampler`` unless every entry is positive and finite."""
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


class LangevinBase(Resumable, FlatPointStep, GradientSharedStep):
    """Shared set-up, density evaluation and divergence bookkeeping of ULA and MALA."""

    default_blocked = True

    def __init__(
        self,
        vars,
        *,
        beta,
        Emax,
        model,
        rng,
        initial_point,
        compile_kwargs,
        blocked,
        localization=None,
        localization_center=None,
    ):
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
            vars = in_model_order(get_value_vars_from_user_vars(vars, model), model)
        beta = check_beta(beta)
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
        self._cast = fn.dtype != "float64"
        self._fn.trust_input = not self._cast
        self._density = None  # the compiled call (checked_call), chosen at the first call
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
        if self._cast:
            x = x.astype(self._dtype)
        density = self._density or self._set_density(x)
        logp, grad = density(x)  # fresh output arrays on every call
        if self.localization:  # the LLC's -gamma/2 |x - w*|^2, not tempered by beta
            term, term_grad = localization_term(x, self._center, self.localization)
            return float(logp) + term, grad.astype(np.float64) + term_grad
        if self._cast:
            grad = grad.astype(np.float64)
        return float(logp), grad

    def _set_density(self, x):
        """The compiled density to call (:func:`~pymc_tempering.step_methods._compile.direct.
        checked_call`: the direct call of its numba graph where it gives the same bits)."""
        self._density, _ = checked_call(self._fn, x, 2)
        return self._density

    def __getstate__(self):  # pickled for cores > 1: the direct call is found again there
        return self.__dict__ | {"_density": None}

    @staticmethod
    def _finite(x, logp, grad) -> bool:
        # one sum carries any NaN or infinity (it overflows only for entries near 1e308, a
        # blow-up anyway): cheaper than isfinite(...).all() on every transition
        return math.isfinite(logp) and math.isfinite(np.add.reduce(grad) + np.add.reduce(x))

    def _current(self, q0: RaveledVars):
        """Log density and gradient at the chain's state, from the cache when it is valid.

        The cache holds the last accepted state; it is valid unless other step methods have
        changed variables outside ``vars`` (then one more compiled call is needed).
        """
        x = q0.data
        cached = self._x
        if cached is not None and not self.shared and same_state(x, cached):
            return cached, self._logp, self._grad
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
            check_observed_finite(self._model, sampler)  # data no start point can help
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

    def _propose(self, x, grad, step_size, scaling, **moves):
        """Draw a Langevin proposal and evaluate it; ``finite`` says whether all is finite.
        ``moves``: ``step_scaling`` and ``noise_scale`` of
        :func:`~pymc_tempering.kernels.langevin.langevin_proposal`, when known.

        Call inside ``np.errstate(over="ignore", invalid="ignore")``: a huge gradient may
        overflow, and the result is then caught here as not finite.
        """
        noise = self.rng.standard_normal(x.size)
        y = langevin_proposal(x, grad, step_size, scaling, noise, **moves)
        if not math.isfinite(np.add.reduce(y)):  # overflowed: no density evaluated there
            return y, -np.inf, np.full_like(y, np.nan), False
        logp_y, grad_y = self._logp_grad(y)
        return y, logp_y, grad_y, math.isfinite(logp_y) and math.isfinite(np.add.reduce(grad_y))

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
