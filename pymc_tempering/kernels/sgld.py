r"""Stochastic-gradient Langevin dynamics (Welling & Teh 2011): one step, schedules, noise.

NumPy only. Convention (the paper's): with a diagonal preconditioner :math:`M`,

.. math::
    \theta' = \theta + \tfrac{\epsilon_t}{2} M \big(\nabla \log p(\theta)
    + \tfrac{N}{n} \textstyle\sum_{i=1}^{n} \nabla \log p(x_{ti} \mid \theta)\big) + \eta_t,
    \qquad \eta_t \sim \mathcal N(0, \epsilon_t M).

With the full data (:math:`n = N`) this is the unadjusted Langevin algorithm with step
:math:`h = \epsilon/2` in ``theta - h grad U + sqrt(2h) xi``.
"""

from dataclasses import dataclass

import numpy as np

__all__ = [
    "sgld_step",
    "StepSizeSchedule",
    "polynomial_schedule",
    "rmsprop_update",
    "rmsprop_preconditioner",
    "score_covariance",
    "sampling_threshold",
    "noise_variances",
    "step_size_weighted_mean",
]


def sgld_step(theta, grad_logprior, grad_loglik, step_size, precond, rng):
    r"""One (preconditioned) SGLD update.

    Parameters
    ----------
    theta : ndarray, shape (d,)
    grad_logprior : ndarray, shape (d,)
    grad_loglik : ndarray, shape (d,)
        The minibatch log-likelihood gradient already scaled by ``N / n``.
    step_size : float
        :math:`\epsilon_t > 0`.
    precond : ndarray, shape (d,)
        Diagonal of :math:`M` (positive).
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (d,)
        :math:`\theta + \frac{\epsilon}{2} M (g_{prior} + g_{lik}) + \sqrt{\epsilon M}\, z`.
    """
    drift = 0.5 * step_size * precond * (grad_logprior + grad_loglik)
    noise = np.sqrt(step_size * precond) * rng.standard_normal(np.shape(theta))
    return theta + drift + noise


@dataclass(frozen=True)
class StepSizeSchedule:
    r"""Step sizes :math:`\epsilon_t = a (b + t)^{-\gamma}`, ``t = 0, 1, ...``.

    ``gamma = 0`` is a constant step ``a`` (then ``b`` is ignored). Welling & Teh need
    :math:`\sum \epsilon_t = \infty`, :math:`\sum \epsilon_t^2 < \infty`, i.e.
    :math:`\gamma \in (0.5, 1]`; :func:`polynomial_schedule` checks it.
    """

    a: float
    b: float
    gamma: float

    def __call__(self, t):
        if type(t) is int and self.b + t > 0:  # one step: Python floats, NumPy's numbers
            return self.a if self.gamma == 0 else self.a * (self.b + t) ** (-self.gamma)
        if self.gamma == 0:
            return self.a * np.ones_like(np.asarray(t, dtype=float))[()]
        return self.a * (self.b + np.asarray(t, dtype=float)) ** (-self.gamma)

    @classmethod
    def constant(cls, step_size: float) -> "StepSizeSchedule":
        _check_positive(step_size, "step_size")
        return cls(float(step_size), 1.0, 0.0)


def _check_positive(value, name):
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"`{name}` must be a positive finite number, got {value}.")


def polynomial_schedule(
    step_size: float, final_step_size: float, n_steps: int, gamma: float = 0.55
) -> StepSizeSchedule:
    r"""The schedule :math:`a (b + t)^{-\gamma}` going from ``step_size`` at ``t = 0`` to
    ``final_step_size`` at ``t = n_steps - 1``.

    Solving :math:`a b^{-\gamma} = \epsilon_0` and :math:`a (b + T)^{-\gamma} = \epsilon_T`
    with :math:`T = n_{steps} - 1`, :math:`r = (\epsilon_T / \epsilon_0)^{1/\gamma}` gives
    :math:`b = r T / (1 - r)` and :math:`a = \epsilon_0 b^{\gamma}`. Equal sizes give a
    constant schedule.

    Parameters
    ----------
    step_size, final_step_size : float
        :math:`\epsilon_0 \ge \epsilon_T > 0`.
    n_steps : int
        Number of steps the schedule spans (>= 2 unless the sizes are equal).
    gamma : float, default 0.55
        Decay exponent in (0.5, 1] (Welling & Teh's conditions).
    """
    _check_positive(step_size, "step_size")
    _check_positive(final_step_size, "final_step_size")
    if not 0.5 < gamma <= 1:
        raise ValueError(
            f"`gamma` must lie in (0.5, 1] so that the step sizes sum to infinity while their "
            f"squares do not (Welling & Teh 2011); got {gamma}. Use 0.55 as in the paper, or "
            "`schedule='constant'` for a fixed step."
        )
    if final_step_size > step_size:
        raise ValueError(
            f"`final_step_size` ({final_step_size}) must not exceed `step_size` ({step_size}): "
            "the schedule decreases. Swap them, or use `schedule='constant'`."
        )
    if final_step_size == step_size:
        return StepSizeSchedule.constant(step_size)
    if n_steps < 2:
        raise ValueError(f"A decreasing schedule needs `n_steps` >= 2, got {n_steps}.")
    ratio = (final_step_size / step_size) ** (1.0 / gamma)
    b = ratio * (n_steps - 1) / (1.0 - ratio)
    return StepSizeSchedule(float(step_size * b**gamma), float(b), float(gamma))


def rmsprop_update(v, mean_grad, decay: float):
    r"""pSGLD's running second moment :math:`V \leftarrow \alpha V + (1 - \alpha)\,\bar g^2`.

    ``mean_grad`` is the mean per-datum log-likelihood gradient of the minibatch,
    :math:`\bar g = \frac{1}{n}\sum_i \nabla \log p(x_{ti} \mid \theta)` (Li et al. 2016, Alg. 1).
    """
    return decay * v + (1.0 - decay) * np.square(mean_grad)


def rmsprop_preconditioner(v, eps: float):
    r"""pSGLD's diagonal :math:`M = 1 / (\lambda + \sqrt{V})`.

    Li et al.'s exact update adds :math:`\frac{\epsilon}{2}\Gamma(\theta)`,
    :math:`\Gamma_i = \sum_j \partial M_{ij} / \partial \theta_j`, to the drift. We leave it
    out, as Li et al. do in their experiments: ``SGLD`` adapts :math:`M` only while tuning and
    then freezes it, so :math:`\Gamma = 0` exactly for the draws kept; while adapting,
    :math:`M` depends on :math:`\theta` only through a running average of past gradients and
    the omitted term is of order :math:`(1 - \alpha)`.
    """
    return 1.0 / (eps + np.sqrt(v))


def score_covariance(scores):
    r"""Empirical covariance :math:`V_s` of per-datum scores (rows), divisor ``n - 1``.

    The prior's share :math:`\nabla \log p(\theta) / N` of Welling & Teh's
    :math:`s_{ti}` is the same for every datum, so it does not change :math:`V_s`.
    """
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    if scores.shape[0] < 2:
        raise ValueError("The score covariance needs at least two data points.")
    centred = scores - scores.mean(axis=0)
    return centred.T @ centred / (scores.shape[0] - 1)


def sampling_threshold(cov_scores, step_size, n_data, batch_size, precond):
    r"""Welling & Teh's eq. (10): :math:`\alpha = \frac{\epsilon N^2}{4 n}
    \lambda_{max}(M^{1/2} V_s M^{1/2})`.

    It is the largest ratio of the gradient-noise variance to the injected-noise variance
    (in the coordinates where :math:`M` is the identity); samples are trustworthy once
    :math:`\alpha \ll 1` (the paper: 0.1).
    """
    root = np.sqrt(np.asarray(precond, dtype=float))
    whitened = root[:, None] * np.asarray(cov_scores) * root[None, :]
    lam = float(np.linalg.eigvalsh(whitened)[-1])
    return step_size * n_data**2 / (4.0 * batch_size) * max(lam, 0.0)


def noise_variances(cov_scores, step_size, n_data, batch_size, precond):
    r"""Per-parameter variances of the gradient noise and of the injected noise in one step.

    With minibatch rows drawn uniformly with replacement, the drift's noise
    :math:`\frac{\epsilon}{2} M (\frac{N}{n}\sum_i \nabla \ell_i - \nabla \ell)` has covariance
    :math:`\frac{\epsilon^2 N^2}{4 n} M V_s M`; the injected noise has :math:`\epsilon M`.
    Returns both diagonals (Welling & Teh's Figure 2 quantities).
    """
    precond = np.asarray(precond, dtype=float)
    grad_noise = step_size**2 * n_data**2 / (4.0 * batch_size) * precond**2 * np.diag(cov_scores)
    return grad_noise, step_size * precond


def step_size_weighted_mean(values, step_sizes, axis=0):
    r"""Welling & Teh's eq. (11): :math:`\sum_t \epsilon_t f(\theta_t) / \sum_t \epsilon_t`.

    ``step_sizes`` broadcasts against ``values`` along ``axis``.
    """
    values = np.asarray(values, dtype=float)
    weights = np.asarray(step_sizes, dtype=float)
    shape = [1] * values.ndim
    shape[axis] = -1
    weights = weights.reshape(shape) if weights.ndim == 1 else weights
    weights = np.broadcast_to(weights, values.shape)
    return (weights * values).sum(axis=axis) / weights.sum(axis=axis)
