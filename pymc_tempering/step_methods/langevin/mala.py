r"""MALA: the Metropolis-adjusted Langevin algorithm as a PyMC step method, with step-size
and preconditioner tuning (:mod:`pymc_tempering.step_methods.langevin.tuning`)."""

import math
from dataclasses import field
from typing import Any

import numpy as np
from pymc.blocking import RaveledVars
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state

from pymc_tempering.kernels.dense import dense_log_accept_ratio
from pymc_tempering.kernels.langevin import mala_log_accept_ratio
from pymc_tempering.kernels.mala_move import dense_proposal
from pymc_tempering.kernels.moments import moments_init
from pymc_tempering.step_methods.langevin import mala_stats, tuning
from pymc_tempering.step_methods.langevin.base import LangevinBase, positive_finite
from pymc_tempering.step_methods.langevin.options import (
    DENSE_MAX_PARAMS,
    MAX_AUTO_STEPS,
    check_matrix_scaling,
    check_steps_per_draw,
    resolve_preconditioner,
    sampling_draw_steps,
    tuning_draw_steps,
)

__all__ = ["MALA", "MALAState", "DENSE_MAX_PARAMS", "MAX_AUTO_STEPS"]


@dataclass_state
class MALAState(StepMethodState):
    tune: bool
    iteration: int
    divergences: int
    n_tune: int
    step_size: float
    scaling: np.ndarray
    _scaling_range: tuple
    _chol: Any
    dual_average: Any
    moments: Any
    grad_moments: Any
    windows: list
    _x: Any
    _logp: Any
    _grad: Any
    target_accept: float = field(metadata={"frozen": True})
    draw_steps: int
    steps_per_draw: Any = field(metadata={"frozen": True})
    beta: float = field(metadata={"frozen": True})
    preconditioner: str = field(metadata={"frozen": True})


class MALA(LangevinBase):
    r"""Metropolis-adjusted Langevin algorithm with step-size and preconditioner tuning.

    Proposes :math:`y = x + hM\nabla\log\pi(x) + \sqrt{2hM}\,\xi` (the h-form) and accepts it by
    the Metropolis-Hastings rule, so it samples :math:`\pi \propto \text{prior} \times
    \text{likelihood}^\beta` exactly (Roberts & Tweedie 1996), one gradient call per transition.
    Guide: ``docs/guide/langevin.md``; tuning: :mod:`~pymc_tempering.step_methods.langevin.tuning`
    (frozen at its end); stats: :data:`~pymc_tempering.step_methods.langevin.mala_stats.MALA_STATS`.

    Parameters
    ----------
    vars : list of TensorVariable, optional
        Continuous variables to sample; default all continuous free variables of the model.
    step_size : float, optional
        The step size :math:`h > 0`. Default ``None``: tuned, starting from ``d ** (-1/3)`` for
        ``d`` parameters.
    scaling : array_like, optional
        The preconditioner :math:`M`: a vector (a diagonal) or a symmetric positive-definite
        ``d x d`` matrix. Default ``None``: tuned, starting from ones.
    adapt_step_size : bool, optional
        Whether tuning adapts ``step_size`` (dual averaging). Default ``None``: adapt exactly
        when ``step_size`` is not given.
    adapt_scaling : bool, optional
        Whether tuning adapts ``scaling`` (from the warm-up draws' moments). Default ``None``:
        adapt exactly when ``scaling`` is not given.
    target_accept : float, default 0.574
        The acceptance rate tuning aims for, in ``(0, 1)``; 0.574 is optimal in high dimension
        (Roberts & Rosenthal 1998).
    gamma : float, default 0.2
        Dual averaging's shrinkage towards its reference step size (Hoffman & Gelman 2014);
        why not NUTS's constants: docs/decisions/091.
    k : float, default 0.75
        Dual averaging's decay exponent of the averaging weights.
    t0 : float, default 10.0
        Dual averaging's offset that damps its first iterations.
    beta : float, default 1.0
        Inverse temperature: the target is ``logprior + beta * loglik``.
    Emax : float, default 1000.0
        A proposal whose log acceptance ratio is below ``-Emax``, or not finite, is rejected
        and counted as a divergence.
    steps_per_draw : int or "auto", default "auto"
        Transitions per recorded draw; ``"auto"``: about 1.5 diffusion times
        (docs/decisions/090).
    preconditioner : {"auto", "diag", "dense"}, default "auto"
        The form of :math:`M`; ``"auto"``: dense up to :data:`DENSE_MAX_PARAMS` parameters,
        else diagonal.
    localization : float, optional
        :math:`\gamma \ge 0`: adds :math:`-\tfrac\gamma2|x - w^*|^2` to the log density (the
        LLC's localised posterior, Lau et al. 2023: :mod:`pymc_tempering.singular.llc`).
        Default ``None`` (or 0): no localisation.
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
    G. O. Roberts and J. S. Rosenthal (1998), JRSS B 60(1), 255-268.
    M. D. Hoffman and A. Gelman (2014), The No-U-Turn sampler. JMLR 15, 1593-1623.
    """

    name = "mala"
    stats_dtypes_shapes = mala_stats.MALA_STATS
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
        steps_per_draw: int | str = "auto",
        preconditioner: str = "auto",
        localization: float | None = None,
        localization_center: dict | None = None,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        blocked: bool = True,
    ):
        self.steps_per_draw = check_steps_per_draw(steps_per_draw)
        if step_size is not None:
            step_size = positive_finite(
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
        self._initial_scaling = np.ones(n) if scaling is None else check_matrix_scaling(scaling, n)
        self.adapt_step_size = step_size is None if adapt_step_size is None else adapt_step_size
        self.adapt_scaling = scaling is None if adapt_scaling is None else adapt_scaling
        self.preconditioner = resolve_preconditioner(
            preconditioner, self._initial_scaling, self.adapt_scaling
        )
        if self.preconditioner == "dense" and self._initial_scaling.ndim == 1:
            self._initial_scaling = np.diag(self._initial_scaling)
        self.target_accept = float(target_accept)
        self._dual_average_args = (float(gamma), float(k), float(t0))
        self.tune = True
        self._reset_chain(n_tune=0)

    # -- per-chain state -------------------------------------------------------------------------
    def _reset_chain(self, n_tune: int):
        self.iteration = 0
        self._x = None  # a new chain evaluates its start afresh: pm.Data may have been set since
        self.divergences = 0
        self._warned: set[str] = set()  # Python warnings given in this chain
        self.n_tune = int(n_tune)
        self.step_size = self._initial_step_size
        self._set_scaling(self._initial_scaling.copy())
        self.dual_average = tuning.start_step_size(self.step_size)
        if self.preconditioner == "dense":
            self.moments, self.grad_moments = tuning.dense_window_init(self.n_params), None
        else:
            self.moments = self.grad_moments = moments_init(self.n_params)
        self.draw_steps = self._sampling_draw_steps()
        if self.n_tune:
            args = (self.steps_per_draw, self.adapt_step_size, self.n_params)
            self.draw_steps = tuning_draw_steps(*args)
        n_tune_steps = self.n_tune * self.draw_steps
        self.windows = tuning.tuning_windows(n_tune_steps, self.adapt_scaling)

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
            self.step_size = tuning.averaged_step_size(self.dual_average)
        if self.tune:
            self.draw_steps = self._sampling_draw_steps()
        self.tune = False

    def _sampling_draw_steps(self) -> int:
        args = (self.steps_per_draw, self.adapt_step_size, self.target_accept, self.step_size)
        return sampling_draw_steps(*args)

    def _set_scaling(self, scaling, chol=None):
        """The preconditioner (a vector, or a matrix and its lower Cholesky factor)."""
        self.scaling = scaling
        if scaling.ndim == 2:  # C-contiguous, as the compiled move needs
            self._chol = np.ascontiguousarray(np.linalg.cholesky(scaling) if chol is None else chol)
            diag = np.diag(scaling)
        else:
            self._chol, diag = None, scaling
        self._scaling_range = (float(diag.min()), float(diag.max()))
        self._moves = None  # (h, M, h M and sqrt(2 h M)) of the diagonal move

    # -- the step --------------------------------------------------------------------------------
    def astep(self, q0: RaveledVars):
        x, logp, grad = self._current(q0)
        accept_sum = accepted_sum = 0.0
        diverging, warning = False, None
        with np.errstate(over="ignore", invalid="ignore"):
            for _ in range(self.draw_steps):
                h = self.step_size
                x, logp, grad, accept, accepted, step_warning = self._mala_step(x, logp, grad)
                accept_sum += accept
                accepted_sum += accepted
                if step_warning is not None:
                    diverging, warning = True, step_warning
        self._x, self._logp, self._grad = x, logp, grad
        n = self.draw_steps
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
        """One MALA transition (and its tuning update) from ``x`` with known logp and grad.

        Call inside ``np.errstate(over="ignore", invalid="ignore")`` (as ``astep`` does): a
        huge gradient may overflow, and the proposal is then rejected as not finite.
        """
        h = self.step_size
        propose = self._diag_propose if self._chol is None else self._dense_propose
        y, logp_y, grad_y, log_alpha, finite = propose(x, logp, grad, h)
        log_u = math.log(self.rng.random())  # uniform() on [0, 1): the same draw, ~1 us less
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

    def _diag_propose(self, x, logp, grad, h):
        """The diagonal move, evaluated, its log Hastings ratio (-inf where NaN or where the
        proposal is not finite) and whether it is finite. ``h M`` and ``sqrt(2 h M)`` are kept
        while ``h`` and ``M`` stay (after tuning: for the whole run)."""
        m, moves = self.scaling, self._moves
        if moves is None or moves[0] != h or moves[1] is not m:
            moves = (h, m, {"step_scaling": h * m, "noise_scale": np.sqrt(2.0 * h * m)})
            self._moves = moves
        y, logp_y, grad_y, finite = self._propose(x, grad, h, m, **moves[2])
        if not finite:
            return y, logp_y, grad_y, -math.inf, False
        log_alpha = mala_log_accept_ratio(x, y, logp, logp_y, grad, grad_y, h, m)
        if log_alpha != log_alpha:  # NaN
            log_alpha = -math.inf
        return y, logp_y, grad_y, log_alpha, True

    def _dense_propose(self, x, logp, grad, h):
        """The dense move ``y = x + L u``, ``u = h L^T grad + sqrt(2h) xi``, evaluated, its
        log Hastings ratio (:func:`~pymc_tempering.kernels.dense.dense_log_accept_ratio`) and
        whether it is finite: not (rejected, ratio -inf) where ``y``, its log density or its
        gradient is not finite, since a non-finite gradient makes the backward residual so."""
        chol = self._chol
        noise = self.rng.standard_normal(x.size)
        # compiled: the NumPy formula's arithmetic in one call (kernels.mala_move)
        y, step, finite = dense_proposal(x, grad, chol, noise, h)
        if not finite:  # overflowed: no density evaluated there
            return y, -math.inf, None, -math.inf, False
        logp_y, grad_y = self._logp_grad(y)
        log_alpha = dense_log_accept_ratio(logp, logp_y, noise, step, grad_y, chol, h)
        if not math.isfinite(log_alpha):
            return y, logp_y, grad_y, -math.inf, False
        return y, logp_y, grad_y, log_alpha, True

    def _adapt(self, accept: float, x: np.ndarray, grad: np.ndarray):
        """One tuning update (:mod:`~pymc_tempering.step_methods.langevin.tuning`)."""
        if self.adapt_step_size:
            self.dual_average, self.step_size = tuning.step_size_update(
                self.dual_average, accept, self.target_accept, *self._dual_average_args
            )
        if not self.windows:
            return
        rule = tuning.dense_window_update if self._chol is not None else tuning.window_update
        update = rule(self.windows, self.iteration, self.moments, self.grad_moments, x, grad)
        self.moments, self.grad_moments, self.windows = update[:3]
        if update.scaling is not None:
            if self._chol is not None:
                self._set_scaling(*update.scaling)
            else:
                self._set_scaling(update.scaling)
            if self.adapt_step_size:
                self.step_size, self.dual_average = tuning.restart_step_size(self.dual_average)

    # -- PyMC integration ------------------------------------------------------------------------
    @staticmethod
    def _progressbar_config(n_chains=1):
        return mala_stats.progressbar_config(n_chains)

    @staticmethod
    def _make_progressbar_update_functions():
        return mala_stats.progressbar_update_functions()
