r"""SGLD's sampler stats: their dtypes and shapes, the record of one draw, the gradient-noise
stats (Welling & Teh's sampling threshold) and the progress-bar columns.

Per draw: ``step_size`` (:math:`\epsilon_t`); ``sampling_threshold``, Welling & Teh's eq. (10)
:math:`\alpha = \epsilon_t N^2/(4n)\,\lambda_{max}(M^{1/2} V_s M^{1/2})` with :math:`V_s` the
covariance of per-datum scores, every ``threshold_every`` steps and NaN between (0 on the full
data, whose gradient is exact); ``grad_noise_var`` and ``injected_noise_var``, per-parameter
variances :math:`\epsilon^2 N^2/(4n)\,\mathrm{diag}(M V_s M)` (same cadence) and
:math:`\epsilon\,\mathrm{diag}(M)` (object stats, dims ``(chain, draw, <name>_dim_0)``);
``diverging`` (:mod:`.divergence`); ``beta`` (checked by :func:`pymc_tempering.singular.wbic`).
The raw names are read back by :func:`pymc_tempering.trace.sgld_stats`
(:data:`pymc_tempering.trace.SGLD_NOISE_STATS`).
"""

import logging

import numpy as np

from pymc_tempering.kernels.sgld import noise_variances, sampling_threshold, score_covariance
from pymc_tempering.step_methods._progress import progress_columns

__all__ = [
    "STATS_DTYPES_SHAPES",
    "draw_stats",
    "noise_stats",
    "log_threshold_crossing",
    "progressbar_config",
    "progressbar_update_functions",
]

_log = logging.getLogger("pymc")

STATS_DTYPES_SHAPES = {
    "tune": (bool, []),
    "step_size": (np.float64, []),
    "sampling_threshold": (np.float64, []),
    "grad_noise_var": (object, None),
    "injected_noise_var": (object, None),
    "diverging": (bool, []),
    "beta": (np.float64, []),  # the run's inverse temperature, for pmt.wbic
}


def draw_stats(*, tune, step_size, alpha, grad_noise, precond, diverging, beta) -> dict:
    """The stats of one draw (:data:`STATS_DTYPES_SHAPES`); the injected noise's variance is
    ``step_size * precond``."""
    return {
        "tune": tune,
        "step_size": step_size,
        "sampling_threshold": alpha,
        "grad_noise_var": grad_noise,
        "injected_noise_var": step_size * precond,
        "diverging": diverging,
        "beta": beta,
    }


def noise_stats(gradients, x, eps, rng, n_batches, anchor, beta, precond):
    r"""``(alpha, grad_noise)``: the sampling threshold :math:`\alpha` (Welling & Teh's eq. 10)
    and the per-parameter variance of the gradient noise at ``x``, from the scores of
    ``n_batches`` minibatches of rows drawn with ``rng``.

    SGLD-CV's per-datum terms when ``anchor`` is given, scaled by ``beta``. ``(0, zeros)`` for
    a full-batch model, whose gradient is exact; ``(nan, nans)`` when a score is not finite.
    """
    g = gradients
    if not g.minibatched:  # exact gradient: no gradient noise
        return 0.0, np.zeros(x.size)
    rows = rng.integers(0, g.n_rows, size=(n_batches, g.batch_size))
    scores = np.concatenate([g.scores(x, r) for r in rows])
    if anchor is not None:  # SGLD-CV's per-datum terms
        scores -= np.concatenate([g.scores(anchor, r) for r in rows])
    if beta != 1.0:  # the tempered gradient's noise
        scores = beta * scores
    if not np.all(np.isfinite(scores)):
        return np.nan, np.full(x.size, np.nan)
    cov = score_covariance(scores)
    alpha = sampling_threshold(cov, eps, g.total_size, g.batch_size, precond)
    grad_noise, _ = noise_variances(cov, eps, g.total_size, g.batch_size, precond)
    return alpha, grad_noise


def log_threshold_crossing(alpha, threshold, iteration, eps) -> None:
    """Log (once per chain: the caller's choice) that the sampling threshold fell below
    ``threshold``, so burn-in can be cut there."""
    _log.info(
        "SGLD: the sampling threshold fell to %.3g < %.3g at step %d (step size %.3g); "
        "earlier draws are burn-in (pmt.sampling_threshold_crossing finds the draw).",
        alpha,
        threshold,
        iteration,
        eps,
    )


def progressbar_config(n_chains=1):
    """PyMC's progress-bar columns: the step size and the last sampling threshold."""
    fields = [
        ("step_size", "Step size", ":0.2e", 0.0),
        ("sampling_threshold", "Sampling threshold", ":0.3g", float("nan")),
    ]
    return progress_columns(fields, n_chains)


def progressbar_update_functions():
    """PyMC's progress-bar update: a draw fails when it diverged; the sampling threshold shown
    is the last one computed."""

    def update_stats(step_stats):
        out = {"step_size": step_stats["step_size"], "failing": step_stats["diverging"]}
        if np.isfinite(step_stats["sampling_threshold"]):  # keep the last value shown
            out["sampling_threshold"] = step_stats["sampling_threshold"]
        return out

    return (update_stats,)
