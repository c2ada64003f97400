"""MALA's argument checks and the rules of its "auto" options: which preconditioner, how many
transitions per recorded draw."""

import math

import numpy as np

from pymc_tempering.kernels.langevin import moves_to_forget
from pymc_tempering.step_methods.langevin.base import check_scaling

__all__ = [
    "DENSE_MAX_PARAMS",
    "MAX_AUTO_STEPS",
    "check_matrix_scaling",
    "resolve_preconditioner",
    "check_steps_per_draw",
    "tuning_draw_steps",
    "sampling_draw_steps",
]


def check_matrix_scaling(scaling, n_params: int) -> np.ndarray:
    """A vector (:func:`check_scaling`) or a symmetric positive definite ``(n, n)`` matrix."""
    arr = np.asarray(scaling, dtype=np.float64)
    if arr.ndim != 2:
        return check_scaling(scaling, n_params, "MALA")
    ok = arr.shape == (n_params, n_params) and np.all(np.isfinite(arr))
    if ok and np.allclose(arr, arr.T):
        try:
            np.linalg.cholesky(arr)
            return 0.5 * (arr + arr.T)
        except np.linalg.LinAlgError:
            pass
    raise ValueError(
        f"A matrix `scaling` of MALA must be a symmetric positive definite {n_params} x "
        f"{n_params} matrix (about the posterior covariance of the flattened, transformed "
        f"variables); got shape {arr.shape}."
    )


DENSE_MAX_PARAMS = 100  # preconditioner="auto": dense up to this many parameters
MAX_AUTO_STEPS = 20  # "auto" steps per draw: at most this many transitions per recorded draw
DIFFUSION_TIMES_PER_DRAW = 1.5  # "auto" steps per draw: about this many diffusion times


def resolve_preconditioner(preconditioner: str, scaling: np.ndarray, adapt_scaling: bool) -> str:
    """``"diag"`` or ``"dense"``: ``"auto"`` learns a dense matrix up to
    :data:`DENSE_MAX_PARAMS` parameters, and keeps a matrix or a fixed vector ``scaling`` as
    given (a fixed vector is a diagonal M)."""
    if preconditioner not in ("diag", "dense", "auto"):
        raise ValueError(
            f"`preconditioner` must be 'diag', 'dense' or 'auto', got {preconditioner!r}."
        )
    if scaling.ndim == 2 and preconditioner == "diag":
        raise ValueError(
            "A matrix `scaling` is a dense preconditioner: pass preconditioner='dense' (or "
            "'auto'), or a vector for the diagonal one."
        )
    if preconditioner != "auto":
        return preconditioner
    if scaling.ndim == 2:
        return "dense"
    if not adapt_scaling:
        return "diag"
    return "dense" if scaling.size <= DENSE_MAX_PARAMS else "diag"


def check_steps_per_draw(steps_per_draw):
    """``"auto"`` or a positive int, else a ValueError naming the argument."""
    if isinstance(steps_per_draw, str) and steps_per_draw == "auto":
        return "auto"
    if isinstance(steps_per_draw, bool) or not isinstance(steps_per_draw, int | np.integer):
        raise ValueError(
            f"`steps_per_draw` must be a positive integer or 'auto', got {steps_per_draw!r}."
        )
    if steps_per_draw < 1:
        raise ValueError(f"`steps_per_draw` must be a positive integer, got {steps_per_draw}.")
    return int(steps_per_draw)


def tuning_draw_steps(steps_per_draw, adapt_step_size: bool, n_params: int) -> int:
    r"""Transitions per tuning draw: ``steps_per_draw`` as given; for ``"auto"``,
    :math:`\lceil d^{1/3} \rceil`, or 1 with the user's (fixed) step size."""
    if steps_per_draw != "auto":
        return steps_per_draw
    if not adapt_step_size:  # the user's step size: the user's transitions
        return 1
    return moves_to_forget(n_params)


def sampling_draw_steps(steps_per_draw, adapt_step_size, target_accept, step_size) -> int:
    r"""Transitions per draw after tuning: ``steps_per_draw`` as given; for ``"auto"``,
    :math:`\lceil c / (\text{target\_accept} \cdot h) \rceil` with :math:`c` =
    :data:`DIFFUSION_TIMES_PER_DRAW` (at most :data:`MAX_AUTO_STEPS`) from the tuned step
    size, or 1 with the user's step size. With per-transition autocorrelation about
    :math:`1 - \text{target\_accept} \cdot h`, ESS per draw grows like
    :math:`(1 - \rho^k) / (1 + \rho^k)` while a draw costs PyMC's loop plus :math:`k`
    transitions; the measurements that chose :math:`c` are in docs/decisions/090."""
    if steps_per_draw != "auto":
        return steps_per_draw
    if not adapt_step_size:
        return 1
    steps = math.ceil(DIFFUSION_TIMES_PER_DRAW / (target_accept * step_size))
    return int(min(max(steps, 1), MAX_AUTO_STEPS))
