r"""Bennett's acceptance ratio (BAR) and its multistate form (MBAR) along a tempering ladder.

Rung :math:`k` samples :math:`\pi_k(x) \propto p(x)\, L(x)^{\beta_k}`; the log normalising
constants :math:`f_k = \log Z_{\beta_k}` differ by log ratios that every pair of rungs can
estimate from both sides. The log density of rung :math:`i` at a draw depends on the draw only
through its log-likelihood :math:`\ell`: :math:`\log q_i = \log p + \beta_i \ell`, the prior
cancelling from every ratio. So both estimators need only the ``(chain, draw, rung)`` array of
``loglik`` draws that ExchangeMC records.

* BAR (Bennett 1976) for neighbours :math:`l, u` with :math:`w = (\beta_u - \beta_l)\ell` and
  equal draw counts solves :math:`\sum_{x \sim l} \sigma(w(x) - \Delta) = \sum_{x \sim u}
  \sigma(\Delta - w(x))` for :math:`\Delta = f_u - f_l` (:math:`\sigma` the logistic function);
  it is the minimum-variance estimator that uses both rungs' draws (stepping stone uses the
  lower rung's only).
* MBAR (Shirts & Chodera 2008) pools every rung's draws: :math:`f` solves
  :math:`\sum_n p_i(x_n) = N_i` with :math:`p_i(x) = e^{\beta_i \ell(x) - f_i} / \sum_j
  e^{\beta_j \ell(x) - f_j}` (equal :math:`N_j` cancel), :math:`f_0` fixed; solved by Newton's
  method from the BAR solution.

Both return per-draw influence terms ``(chain, draw, rung)``: the estimate of :math:`f_k`
linearised around the solution, one term per ExchangeMC draw (which holds one draw of every
rung), whose mean is the estimate. Their MCSE, with ArviZ's ESS over chains and draws, counts
the autocorrelation along draws and the correlation between rungs of the same sweep, as the
TI and stepping-stone terms of :mod:`pymc_tempering.evidence.core.tempered` do.

Conventions: ``loglik = -inf`` (a draw outside the likelihood's support) is admissible only on
a rung with ``beta = 0``, where its weight :math:`0 \cdot \ell` is 0.

References
----------
C. H. Bennett (1976), Efficient estimation of free energy differences from Monte Carlo data.
J. Comput. Phys. 22(2). M. R. Shirts and J. D. Chodera (2008), Statistically optimal analysis
of samples from multiple equilibrium states. J. Chem. Phys. 129, 124105.
"""

from typing import NamedTuple

import numba
import numpy as np
from scipy.special import expit, logsumexp

__all__ = ["LadderFit", "bar", "mbar", "log_weights"]

_NEWTON_STEPS = 100
_TOL = 1e-12  # Newton stops when no equation is off by more than this share of a rung's draws
_CELLS = 2**22  # (draw, rung, rung) cells of one MBAR block: 32 MiB of float64
_DROP = 40.0  # nats below a draw's most probable state beyond which MBAR drops states
_BINS = 8192  # groups of pooled log-likelihoods behind MBAR's Jacobian and first solution
_EXACT_PASSES = 5  # passes over every draw after the grouped solution (one or two suffice)
_STEP_TOL = 1e-4  # an exact Newton step below this (in log Z) is MBAR's last


class LadderFit(NamedTuple):
    """``log_z``: :math:`f_k - f_0` per rung; ``terms``: per-draw influence terms of ``log_z``,
    shape ``(chain, draw, rung)``, whose mean over (chain, draw) is ``log_z``; ``converged``:
    whether the equations were solved to tolerance (MBAR's Newton, or every pair's BAR root)."""

    log_z: np.ndarray
    terms: np.ndarray
    converged: bool


def _check(betas, loglik):
    betas = np.asarray(betas, dtype=float)
    loglik = np.asarray(loglik, dtype=float)
    if betas.ndim != 1 or betas.size < 2 or np.any(np.diff(betas) <= 0) or betas[0] < 0:
        raise ValueError(
            "`betas` must be an increasing 1-D ladder of at least 2 values >= 0, got "
            f"{np.round(betas, 6).tolist()}"
        )
    if loglik.ndim != 3 or loglik.shape[-1] != betas.size:
        raise ValueError(
            f"`loglik` must have shape (chain, draw, rung) with {betas.size} rungs, got "
            f"{loglik.shape}"
        )
    bad = np.isnan(loglik) | (np.isneginf(loglik) & (betas > 0)) | np.isposinf(loglik)
    if bad.any():
        raise ValueError(
            "`loglik` must be finite on rungs with beta > 0 (and not nan anywhere); found "
            f"{int(bad.sum())} such draws"
        )
    return betas, loglik


def log_weights(betas, loglik) -> np.ndarray:
    r""":math:`\beta_i \ell` for every draw and every rung ``i``: shape ``loglik.shape +
    (len(betas),)``, with :math:`0 \cdot (-\infty) = 0`."""
    betas = np.asarray(betas, dtype=float)
    with np.errstate(invalid="ignore"):
        out = np.asarray(loglik, dtype=float)[..., None] * betas
    out[..., betas == 0] = 0.0
    return out


def _bar_roots(w_lower, w_upper):
    """Every pair's BAR root by safeguarded Newton, vectorised over pairs.

    ``w_lower``, ``w_upper``: ``(n, pairs)`` of :math:`w` at the lower and upper rungs' draws.
    Returns the roots and whether each converged. The root is bracketed by
    ``[min finite w - 50, max finite w + 50]``, where the two sums differ in sign.
    """
    finite = np.concatenate([w_lower, w_upper])
    finite = np.where(np.isfinite(finite), finite, np.nan)
    lo, hi = np.nanmin(finite, axis=0) - 50.0, np.nanmax(finite, axis=0) + 50.0
    with np.errstate(over="ignore"):  # the forward stepping-stone estimate as a start
        delta = logsumexp(w_lower, axis=0) - np.log(len(w_lower))
    delta = np.clip(np.where(np.isfinite(delta), delta, lo), lo, hi)
    converged = np.zeros(delta.shape, dtype=bool)
    for _ in range(_NEWTON_STEPS):
        a, b = expit(w_lower - delta), expit(delta - w_upper)
        g = a.mean(axis=0) - b.mean(axis=0)  # decreasing in delta
        slope = (a * (1 - a)).mean(axis=0) + (b * (1 - b)).mean(axis=0)
        lo, hi = np.where(g > 0, delta, lo), np.where(g > 0, hi, delta)
        converged = np.abs(g) <= _TOL
        if converged.all():
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            step = delta + g / slope
        inside = (step > lo) & (step < hi) & np.isfinite(step)
        delta = np.where(converged, delta, np.where(inside, step, 0.5 * (lo + hi)))
    # with no finite w below, the equation's left side is 0 and its "root" runs off to -inf
    return delta, converged & np.isfinite(w_lower).any(axis=0)


def bar(betas, loglik) -> LadderFit:
    r"""BAR between every pair of neighbouring rungs, chained to :math:`f_k - f_0`.

    Parameters
    ----------
    betas : array_like, shape (rung,)
        The increasing ladder.
    loglik : array_like, shape (chain, draw, rung)
        Log-likelihood draws of every rung.

    Returns
    -------
    LadderFit
        ``log_z[0] = 0``. A pair whose lower rung has no draw with finite :math:`w` (no prior
        draw inside the likelihood's support) has no root: its log ratio and those above it
        are NaN and ``converged`` is False.

    Notes
    -----
    Per-draw terms of a pair: :math:`\Delta + (a_d - b_d) / D`, with
    :math:`a_d = \sigma(w_{l,d} - \Delta)`, :math:`b_d = \sigma(\Delta - w_{u,d})` and
    :math:`D` the mean of :math:`a(1-a) + b(1-b)` (the derivative of the estimating equation);
    the terms of :math:`f_k` are their cumulative sums over the pairs below rung :math:`k`.
    """
    betas, loglik = _check(betas, loglik)
    n_chains, n_draws, n_rungs = loglik.shape
    flat = loglik.reshape(n_chains * n_draws, n_rungs)
    gaps = np.diff(betas)
    with np.errstate(invalid="ignore"):
        w_lower, w_upper = flat[:, :-1] * gaps, flat[:, 1:] * gaps
    delta, converged = _bar_roots(w_lower, w_upper)
    a, b = expit(w_lower - delta), expit(delta - w_upper)
    slope = (a * (1 - a)).mean(axis=0) + (b * (1 - b)).mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        pair_terms = delta + (a - b) / slope
    pair_terms[:, ~converged] = np.nan
    terms = np.concatenate([np.zeros((len(flat), 1)), np.cumsum(pair_terms, axis=1)], axis=1)
    log_z = np.concatenate([[0.0], np.cumsum(np.where(converged, delta, np.nan))])
    return LadderFit(log_z, terms.reshape(n_chains, n_draws, n_rungs), bool(converged.all()))


def _softmax(logits):
    """``exp(logits)`` normalised over the last axis, in place."""
    logits -= logits.max(axis=-1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=-1, keepdims=True)
    return logits


def _state_probs(betas, loglik, f):
    """:math:`p_i(x)` of every draw in ``loglik`` (any shape) for every state ``i``."""
    return _softmax(log_weights(betas, loglik) - f)


@numba.njit(cache=True, nogil=True)
def _log_weight(beta, loglik, f):
    return (0.0 if beta == 0.0 else beta * loglik) - f


@numba.njit(cache=True, nogil=True)
def _draw_probs(betas, ell, f, crossings, buffer):  # pragma: no cover - compiled
    """Add :math:`p_i(x)` of one draw with log-likelihood ``ell`` to ``buffer`` over the
    window of states that matter; returns the window ``(lo, hi)`` (inclusive)."""
    n_states = betas.size
    best = 0 if ell == -np.inf else min(np.searchsorted(crossings, ell), n_states - 1)
    here = _log_weight(betas[best], ell, f[best])
    while best + 1 < n_states and _log_weight(betas[best + 1], ell, f[best + 1]) > here:
        best += 1
        here = _log_weight(betas[best], ell, f[best])
    while best > 0 and _log_weight(betas[best - 1], ell, f[best - 1]) > here:
        best -= 1
        here = _log_weight(betas[best], ell, f[best])
    lo, hi, total = best, best, 1.0
    buffer[best] = 1.0
    while lo > 0:
        step = _log_weight(betas[lo - 1], ell, f[lo - 1]) - here
        if step < -_DROP:
            break
        lo -= 1
        buffer[lo] = np.exp(step)
        total += buffer[lo]
    while hi + 1 < n_states:
        step = _log_weight(betas[hi + 1], ell, f[hi + 1]) - here
        if step < -_DROP:
            break
        hi += 1
        buffer[hi] = np.exp(step)
        total += buffer[hi]
    for i in range(lo, hi + 1):
        buffer[i] /= total
    return lo, hi


@numba.njit(cache=True, nogil=True, parallel=True)
def _mbar_sums(betas, loglik, f):  # pragma: no cover - compiled; tested through mbar()
    """The probabilities summed over the rungs' draws of each ExchangeMC draw, ``(draw,
    state)``; their column sums are the left-hand sides of MBAR's equations.

    ``loglik``: ``(draw, rung)``. A draw's log weight :math:`\\beta_i \\ell - f_i` is concave
    in :math:`\\beta_i` (:math:`f` is convex), so each draw climbs to its most probable state
    from the state where the ladder's crossing points put it (``searchsorted``), then adds
    states on both sides until they fall :data:`_DROP` nats below the best: the states left out
    weigh less than ``rung * exp(-_DROP)`` of the draw's total (exact to double precision), and
    a draw costs its window's width instead of the whole ladder. Draws run in parallel threads.
    """
    n_draws, n_rungs = loglik.shape
    n_states = betas.size
    crossings = np.empty(n_states - 1)
    top = -np.inf
    for i in range(n_states - 1):  # where state i + 1 overtakes state i, made monotone
        top = max(top, (f[i + 1] - f[i]) / (betas[i + 1] - betas[i]))
        crossings[i] = top
    out = np.zeros((n_draws, n_states))
    for d in numba.prange(n_draws):
        buffer = np.empty(n_states)
        for k in range(n_rungs):
            lo, hi = _draw_probs(betas, loglik[d, k], f, crossings, buffer)
            for i in range(lo, hi + 1):
                out[d, i] += buffer[i]
    return out


class _Binned(NamedTuple):
    """The pooled draws as at most :data:`_BINS` groups of equal count (sorted finite
    log-likelihoods, each group at its mean), plus the draws at ``-inf``."""

    loglik: np.ndarray
    counts: np.ndarray
    n_outside: int


def _binned(loglik) -> _Binned:
    pooled = np.sort(loglik[np.isfinite(loglik)])
    edges = np.linspace(0, pooled.size, min(_BINS, pooled.size) + 1).astype(int)
    counts = np.diff(edges).astype(float)
    means = np.add.reduceat(pooled, edges[:-1]) / counts
    return _Binned(means, counts, int(loglik.size - pooled.size))


def _binned_equations(betas, binned: _Binned, f):
    r"""MBAR's column sums and Jacobian :math:`\partial F_i / \partial f_k` (states ``1..K-1``)
    from the grouped draws: ``bins x rung`` and ``bins x rung^2`` operations instead of
    ``draws x rung`` and ``draws x rung^2``.

    :math:`J = \sum_n p(x_n) p(x_n)^T - \mathrm{diag}(\sum_n p(x_n))` depends on a draw only
    through its log-likelihood, as do the sums; with each group at its mean the equations are
    off by the within-group spread of ``p`` (relative ``1e-6`` or less on the ladders tested),
    which the exact passes of :func:`mbar` remove. A draw at ``-inf`` has all its weight on
    the ``beta = 0`` state 0, outside these equations.
    """
    probs = _state_probs(betas, binned.loglik, f)
    weighted = probs * binned.counts[:, None]
    colsum = weighted.sum(axis=0)
    jac = weighted.T @ probs - np.diag(colsum)
    return colsum[1:], jac[1:, 1:]


def _binned_solution(betas, binned: _Binned, f, n):
    """Newton's method on the grouped equations, from ``f``; cheap, and within the grouping
    error of MBAR's solution."""
    f = f.copy()
    for _ in range(_NEWTON_STEPS):
        colsum, jac = _binned_equations(betas, binned, f)
        step = np.linalg.lstsq(jac, colsum - n, rcond=None)[0]
        f[1:] -= step
        if np.max(np.abs(step)) < 1e-12:
            break
    return f


def mbar(betas, loglik) -> LadderFit:
    r"""MBAR over all rungs at once: :math:`f_k - f_0` for every rung.

    Parameters
    ----------
    betas, loglik
        As for :func:`bar`.

    Returns
    -------
    LadderFit
        ``log_z[0] = 0``; ``converged`` says whether Newton's last step on the exact equations
        moved no ``log_z`` by more than ``1e-4`` (after it, the error is about its square).

    Notes
    -----
    Newton's method first solves the equations with the draws grouped by log-likelihood
    (:func:`_binned_equations`, cheap), then takes exact steps, each one pass over the
    ``(chain x draw) x rung`` draws and the states within reach of each
    (:func:`_mbar_sums`), until a step is below ``1e-4``: usually the first. The Jacobian
    :math:`J = \sum_n p(x_n) p(x_n)^T - \mathrm{diag}(\sum_n p(x_n))` is the grouped one.
    Per-draw influence terms: :math:`\hat f - n J^{-1} \Psi_d`, with :math:`\Psi_d = \sum_k
    p(x_{d,k}) - 1` summed over the rungs' draws of ExchangeMC draw :math:`d` and :math:`n`
    the draws per rung (rows and columns of state 0 removed: :math:`f_0` is fixed).
    """
    betas, loglik = _check(betas, loglik)
    n_chains, n_draws, n_rungs = loglik.shape
    n = n_chains * n_draws
    flat = loglik.reshape(n, n_rungs)
    binned = _binned(flat)
    start = bar(betas, loglik).log_z
    f = _binned_solution(betas, binned, np.where(np.isfinite(start), start, 0.0), n)
    _, jac = _binned_equations(betas, binned, f)
    for last in range(_EXACT_PASSES - 1, -1, -1):
        per_draw = _mbar_sums(betas, flat, f)
        step = np.linalg.lstsq(jac, per_draw[:, 1:].sum(axis=0) - n, rcond=None)[0]
        converged = np.max(np.abs(step)) < _STEP_TOL
        if converged or not last:  # the influence terms below take this step from these sums
            break
        f[1:] -= step
    # f + influence is linear in the per-draw sums at f: its mean is f after one more Newton
    # step, which from within _STEP_TOL lands within about _STEP_TOL^2 of MBAR's solution
    influence = -n * np.linalg.lstsq(jac, (per_draw[:, 1:] - 1.0).T, rcond=None)[0].T
    terms = np.concatenate([np.zeros((n, 1)), f[1:] + influence], axis=1)
    log_z = terms.mean(axis=0)
    return LadderFit(log_z, terms.reshape(n_chains, n_draws, n_rungs), converged)
