r"""ULA: the unadjusted Langevin algorithm as a PyMC step method (Langevin moves, no
accept/reject step)."""

from dataclasses import field
from typing import Any

import numpy as np
from pymc.blocking import RaveledVars
from pymc.stats.convergence import SamplerWarning
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state

from pymc_tempering.step_methods._progress import progress_columns
from pymc_tempering.step_methods.langevin.base import LangevinBase, check_scaling, positive_finite

__all__ = ["ULA", "ULAState"]


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


class ULA(LangevinBase):
    r"""Unadjusted Langevin algorithm: Langevin moves without an accept/reject step.

    Each draw is one Euler-Maruyama step (the h-form, :math:`\epsilon^2 = 2h` in the other
    convention) on :math:`\log\pi = \text{logprior} + \beta\,\text{loglik}`:

    .. math:: x' = x + h\,M\,\nabla \log \pi(x) + \sqrt{2 h M}\,\xi, \qquad \xi \sim N(0, I).

    **ULA samples a biased law**, off by :math:`O(h)` (Durmus & Moulines 2017), unstable for
    large :math:`h` or light tails. It keeps every move, so it cannot see a jump of the density
    or a hard constraint: a move into zero density is discarded and flagged ``diverging``, but
    draws near such a boundary stay wrong (docs/decisions/092; ``docs/guide/langevin.md``). Use
    :class:`MALA` or ``ExchangeMC`` for exact sampling. Stats: ``stats_dtypes_shapes``
    (``model_logp`` is ``lp`` in the DataTree; ``beta`` is checked by
    :func:`pymc_tempering.singular.wbic`).

    Parameters
    ----------
    vars : list of TensorVariable, optional
        Continuous variables to sample; default all continuous free variables of the model.
    step_size : float or callable
        :math:`h > 0`, fixed; or a schedule ``step_size(iteration) -> float`` of the chain's
        0-based iteration (tuning iterations included). Required: ULA tunes nothing.
    scaling : float or array_like, optional
        Diagonal of :math:`M` over the flattened value variables; default ones; never tuned.
    beta : float, default 1.0
        Inverse temperature: the target is ``logprior + beta * loglik``.
    Emax : float, default 1000.0
        A fall of the log density by more than ``Emax``, or a non-finite state, density or
        gradient, is a divergence: the draw repeats the last finite state (the trace never holds
        NaN); the first one after tuning raises a ``RuntimeWarning``.
    localization : float, optional
        :math:`\gamma \ge 0`: adds :math:`-\tfrac\gamma2|x - w^*|^2` to the log density, as
        for :class:`MALA` (the LLC's localised posterior, Lau et al. 2023:
        :mod:`pymc_tempering.singular.llc`). Default ``None`` (or 0): no localisation.
    localization_center : dict, optional
        :math:`w^*`, a value per value-variable name; required with ``localization``.
    model : pymc.Model, optional
        The model; default the one of the enclosing ``with`` block. ``pm.Minibatch`` models are
        refused (use :class:`~pymc_tempering.SGLD`).
    rng : int or numpy.random.Generator, optional
        The random stream, as for PyMC's step methods; ``pm.sample`` sets one per chain.
    initial_point : dict, optional
        A point to compile and size the sampler at; default ``model.initial_point()``. Each
        chain starts at ``pm.sample``'s own initial point; a non-finite start raises
        ``ValueError`` (pass ``initvals=``).
    compile_kwargs : dict, optional
        Keyword arguments for PyTensor's compilation of the log density and its gradient.
    blocked : bool, default True
        As for PyMC's step methods: ``True`` samples ``vars`` as one block, ``False`` one
        sampler per variable.

    References
    ----------
    G. O. Roberts and R. L. Tweedie (1996), Bernoulli 2(4), 341-363.
    A. Durmus and E. Moulines (2017), Ann. Appl. Probab. 27(3), 1551-1587.
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
            self.step_size = positive_finite(step_size, "step_size", fix)
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
            else check_scaling(scaling, self.n_params, "ULA")
        )
        self.tune = True
        self._reset_chain()

    def _reset_chain(self):
        self.iteration = 0
        self._x = None  # a new chain evaluates its start afresh: pm.Data may have been set since
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
        return positive_finite(
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
