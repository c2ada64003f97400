"""SGLD's options: argument checks and the defaults derived from the model, each a function of
its arguments, so :class:`~pymc_tempering.step_methods.sgld.SGLD` only stores the results."""

import numpy as np
from pymc.blocking import DictToArrayBijection
from pymc.vartypes import discrete_types

from pymc_tempering.kernels.sgld import StepSizeSchedule, polynomial_schedule

__all__ = [
    "SCHEDULES",
    "DEFAULT_N_STEPS",
    "check_continuous",
    "check_options",
    "step_sizes",
    "make_schedule",
    "preconditioner_option",
    "score_batches",
    "control_variate_anchor",
]

SCHEDULES = ("polynomial", "constant")
DEFAULT_N_STEPS = 10_000  # steps the polynomial schedule spans until pm.sample sets up a chain


def check_continuous(vars) -> None:
    """A ValueError naming the discrete variables among ``vars`` (SGLD needs gradients)."""
    discrete = [v.name for v in vars if v.dtype in discrete_types]
    if discrete:
        raise ValueError(
            f"SGLD needs gradients and samples continuous variables only; {discrete} are "
            "discrete. Pass `vars=` with the continuous ones and give the discrete ones "
            "another step method (e.g. pm.CategoricalGibbsMetropolis), or marginalise them."
        )


def check_options(schedule, threshold_every, rmsprop_decay) -> None:
    """ValueErrors for a ``schedule`` other than :data:`SCHEDULES`, a ``threshold_every`` below
    1 and an ``rmsprop_decay`` outside (0, 1)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"`schedule` must be 'polynomial' or 'constant', got {schedule!r}.")
    if int(threshold_every) < 1:
        raise ValueError(f"`threshold_every` must be a positive integer, got {threshold_every}.")
    if not 0 < rmsprop_decay < 1:
        raise ValueError(f"`rmsprop_decay` must lie in (0, 1), got {rmsprop_decay}.")


def step_sizes(step_size, final_step_size, gamma, schedule, n_data) -> tuple[float, float, float]:
    """``(step_size, final_step_size, gamma)`` of the schedule, defaults filled in: the first
    step ``1 / n_data``, the last ``step_size / 100`` (the step size itself when constant)."""
    if step_size is None:
        step_size = 1.0 / n_data
    if final_step_size is None:
        final_step_size = step_size / 100.0 if schedule == "polynomial" else step_size
    return float(step_size), float(final_step_size), float(gamma)


def make_schedule(kind: str, args: tuple[float, float, float], n_steps: int) -> StepSizeSchedule:
    """The step-size schedule of ``kind`` over ``n_steps`` steps (it validates ``args``)."""
    step_size, final_step_size, gamma = args
    if kind == "constant":
        return StepSizeSchedule.constant(step_size)
    return polynomial_schedule(step_size, final_step_size, max(int(n_steps), 2), gamma)


def preconditioner_option(preconditioner, n_params: int) -> tuple[bool, np.ndarray]:
    r"""``(rmsprop, fixed)``: whether pSGLD's RMSprop preconditioner adapts, and the fixed
    diagonal (ones for None and for RMSprop's start).

    RMSprop is :math:`M = 1 / (\lambda + \sqrt{V})`, :math:`V \leftarrow \alpha V + (1 - \alpha)
    \bar g^2` (Li et al. 2016). pSGLD's correction :math:`\Gamma = \sum_j \partial M_{ij} /
    \partial \theta_j` is left out, as in Li et al.'s experiments: it is zero once :math:`M` is
    frozen, and while it adapts :math:`M` depends on :math:`\theta` only through past gradients.
    """
    rmsprop = isinstance(preconditioner, str)
    if rmsprop and preconditioner != "rmsprop":
        raise ValueError(
            f"`preconditioner` must be None, a positive array or 'rmsprop', got {preconditioner!r}."
        )
    if preconditioner is None or rmsprop:
        return rmsprop, np.ones(n_params)
    fixed = np.broadcast_to(np.asarray(preconditioner, dtype=float), (n_params,)).copy()
    if not np.all(np.isfinite(fixed) & (fixed > 0)):
        raise ValueError(
            "`preconditioner` must hold positive finite numbers, one per flattened "
            f"parameter ({n_params}); got {preconditioner}."
        )
    return rmsprop, fixed


def score_batches(threshold_rows, batch_size: int, minibatched: bool) -> int:
    """Minibatches of scores per sampling-threshold estimate: ``threshold_rows`` rounded up to
    whole batches (default the smallest multiple of the batch size >= 32), and at least two
    rows with minibatches (one row gives no covariance)."""
    if threshold_rows is None:
        threshold_rows = max(32, batch_size)
    n_batches = max(1, -(-int(threshold_rows) // batch_size))
    if minibatched and n_batches * batch_size < 2:
        n_batches = 2
    return n_batches


def control_variate_anchor(control_variate, vars, gradients):
    """``(anchor, anchor_grad)`` of SGLD-CV: the flat anchor point and the full-data
    log-likelihood gradient there (``N / n`` compiled calls); ``(None, None)`` without one."""
    if control_variate is None:
        return None, None
    if not gradients.minibatched:
        raise ValueError(
            "`control_variate` needs a model with pm.Minibatch data: a full-batch "
            "gradient is already exact. Drop `control_variate`."
        )
    missing = [v.name for v in vars if v.name not in control_variate]
    if missing:
        raise ValueError(
            f"`control_variate` must give a value for every sampled variable (in "
            f"value space, as pm.find_MAP returns); it lacks {missing}."
        )
    anchor = {v.name: np.asarray(control_variate[v.name]) for v in vars}
    anchor = DictToArrayBijection.map(anchor).data.astype(np.float64)
    return anchor, gradients.full_loglik_grad(anchor)
