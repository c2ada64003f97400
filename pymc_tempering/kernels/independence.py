r"""Independence Metropolis-Hastings proposals per rung, fitted to the rung's tuning draws.
NumPy only.

Each rung ``l`` gets a mixture of ``K`` multivariate t distributions
:math:`q_l(x) = \sum_k \pi_{lk}\, t_\nu(x; \mu_{lk}, c\,\Sigma_{lk})`, fitted by EM (a Gaussian
mixture, vectorised over rungs) to draws the rung made while tuning; ``K`` is 1 or 2 per rung
(the smaller BIC). The t's heavier tails (``df``) and the inflation ``c`` keep the ratio
:math:`\pi(x) / q(x)` bounded where the fit is too narrow. The proposal ignores the current
state, so the Metropolis-Hastings correction is
``log_q_ratio = log q(x) - log q(x')`` (:func:`log_q_ratio`); a well fitted rung then makes
nearly independent draws (Tierney 1994; Pigeons.jl's fitted-reference idea per rung).
Where the fit is poor its moves are rejected, and the random walk that runs beside it keeps
the chain ergodic (a mixture or cycle of kernels that each leave the rung's target invariant
leaves it invariant).

Tuning keeps a buffer of each rung's latest draws (:class:`FitTuning`); :func:`fit_rungs`
makes the fit, which is frozen when tuning ends.

References
----------
L. Tierney (1994), Markov chains for exploring posterior distributions. Ann. Statist. 22(4).
"""

from typing import NamedTuple

import numba
import numpy as np

__all__ = [
    "IndependenceFit",
    "FitTuning",
    "fit_tuning_init",
    "store_draws",
    "fit_rungs",
    "take_rungs",
    "log_density",
    "log_q_ratio",
    "propose",
    "DF",
    "INFLATE",
    "BUFFER",
]

DF = 10.0  # degrees of freedom of the proposal's t components
INFLATE = 1.0  # scale matrix = INFLATE * the fitted component covariance
BUFFER = 256  # draws kept per rung (the latest)
EM_ITERATIONS = 6
BIMODALITY = 5 / 9  # Sarle's coefficient above which a rung's draws get a 2-component fit
MIN_PER_COMPONENT = 2  # each of two components needs this many draws per parameter
POOL = 1  # a rung's fit pools the draws of the rungs up to this many places below and above
FLOOR = 1e-8  # variance floor added to every component's covariance


class IndependenceFit(NamedTuple):
    """Per rung ``l`` and component ``k``: log weight, mean, Cholesky factor of the scale
    matrix (``INFLATE`` times the fitted covariance) and its inverse; ``K`` components per
    rung, unused ones with log weight ``-inf``."""

    log_weight: np.ndarray  # (n_rungs, K)
    mean: np.ndarray  # (n_rungs, K, d)
    chol: np.ndarray  # (n_rungs, K, d, d)
    inv_chol: np.ndarray  # (n_rungs, K, d, d)
    df: float
    log_scale: np.ndarray  # (n_rungs, K): log weight - log det chol (-inf where unused)

    @property
    def n_components(self) -> np.ndarray:
        """Components in use per rung."""
        return np.isfinite(self.log_weight).sum(axis=1)


class FitTuning(NamedTuple):
    """The latest draws of every rung (a ring buffer) and the fit made from them so far."""

    draws: np.ndarray  # (n_rungs, BUFFER, d)
    count: int  # draws stored since the buffer was cleared
    fit: IndependenceFit | None
    final: bool = False  # the fit made at the last tuning sweep (frozen)


def fit_tuning_init(n_rungs: int, n_params: int, fit=None, size: int = BUFFER) -> FitTuning:
    """An empty buffer (keeping ``fit``, the fit made so far, if any)."""
    return FitTuning(np.zeros((n_rungs, size, n_params)), 0, fit)


def store_draws(tuning: FitTuning, x) -> FitTuning:
    """Store every rung's replica ``x`` (n_rungs, d) in the buffer, in place (the oldest
    draw makes room once it is full)."""
    tuning.draws[:, tuning.count % tuning.draws.shape[1]] = x
    return tuning._replace(count=tuning.count + 1)


def take_rungs(fit: IndependenceFit, rungs) -> IndependenceFit:
    """The fit of rungs ``rungs`` (an index array), in that order."""
    return fit._replace(
        **{
            name: getattr(fit, name)[rungs]
            for name in ("log_weight", "mean", "chol", "inv_chol", "log_scale")
        }
    )


def _stored(tuning: FitTuning, pool: int = POOL) -> np.ndarray:
    """Each rung's stored draws with those of its neighbours up to ``pool`` rungs away
    (fewer at the ends of the ladder, whose own draws are repeated instead): (R, m, d)."""
    draws = tuning.draws[:, : min(tuning.count, tuning.draws.shape[1])]
    rungs = np.arange(draws.shape[0])
    near = [np.clip(rungs + k, 0, rungs.size - 1) for k in range(-pool, pool + 1)]
    return np.concatenate([draws[index] for index in near], axis=1)


def _mixture_step(x, resp):
    """M step from responsibilities ``resp`` (R, n, K) of draws ``x`` (R, n, d), centred per
    rung: log weights (R, K), means (R, K, d) and covariances (R, K, d, d), each shrunk
    towards its diagonal with weight ``d / (n_k + d)`` (``n_k`` the component's share of
    draws) plus a small floor."""
    d = x.shape[-1]
    n_k = resp.sum(axis=1)  # (R, K)
    safe = np.maximum(n_k, 1e-300)
    with np.errstate(divide="ignore"):
        log_weight = np.log(n_k / x.shape[1])
    mean = (resp.transpose(0, 2, 1) @ x) / safe[..., None]
    second = np.stack(
        [(x * resp[..., k, None]).transpose(0, 2, 1) @ x for k in range(resp.shape[-1])], axis=1
    )
    cov = second / safe[..., None, None] - mean[..., :, None] * mean[..., None, :]
    w = (d / (n_k + d))[..., None, None]
    diag = np.eye(d) * np.diagonal(cov, axis1=-2, axis2=-1)[..., None, :]
    return log_weight, mean, (1 - w) * cov + w * diag + FLOOR * np.eye(d)


def _log_pdf(x, log_weight, mean, cov):
    """``log pi_k + log N(x_n; mean_k, cov_k)`` per rung, component and draw: (R, K, n)."""
    d = x.shape[-1]
    inv_chol = np.linalg.inv(np.linalg.cholesky(cov))
    shift = (inv_chol @ mean[..., None])[..., 0]  # (R, K, d)
    maha = np.stack(
        [
            np.square(x @ inv_chol[:, k].transpose(0, 2, 1) - shift[:, k, None]).sum(-1)
            for k in range(mean.shape[1])
        ],
        axis=1,
    )
    log_det = -np.log(np.diagonal(inv_chol, axis1=-2, axis2=-1)).sum(-1)
    return (log_weight - log_det - 0.5 * d * np.log(2 * np.pi))[..., None] - 0.5 * maha


def _logsumexp(a, axis):
    """``log(sum(exp(a)))`` along ``axis``; -inf entries allowed (not all)."""
    top = a.max(axis=axis, keepdims=True)
    return (top + np.log(np.exp(a - top).sum(axis=axis, keepdims=True))).squeeze(axis)


def _principal_split(x):
    """Per rung, the projections of the (centred) draws on their first principal axis
    (R, n), and Sarle's bimodality coefficient of those projections, ``(skew**2 + 1) /
    kurtosis``: 1/3 for a Gaussian, near 1 for two separated modes whatever their weights;
    above 5/9 suggests two modes."""
    cov = x.transpose(0, 2, 1) @ x
    axis = np.linalg.eigh(cov)[1][..., -1]  # (R, d)
    proj = (x @ axis[..., None])[..., 0]
    sd = np.maximum(proj.std(axis=1), 1e-300)
    z = proj / sd[:, None]
    skew, kurt = (z**3).mean(axis=1), (z**4).mean(axis=1)
    return proj, (skew**2 + 1) / np.maximum(kurt, 1e-300)


def _em(x, resp, iterations=EM_ITERATIONS):
    """EM for a Gaussian mixture per rung from responsibilities ``resp`` (R, n, K):
    ``(log_weight, mean, cov, total log-likelihood per rung)``."""
    for it in range(iterations + 1):
        log_weight, mean, cov = _mixture_step(x, resp)
        with np.errstate(invalid="ignore"):  # -inf weights of emptied components
            log_pdf = _log_pdf(x, log_weight, mean, cov)
            total = _logsumexp(log_pdf, axis=1)  # (R, n)
            if it < iterations:
                resp = np.exp(log_pdf - total[:, None, :]).transpose(0, 2, 1)
    return log_weight, mean, cov, total.sum(axis=1)


def fit_rungs(
    tuning: FitTuning, df: float = DF, inflate: float = INFLATE, pool: int = POOL
) -> IndependenceFit:
    """Each rung's proposal from its stored draws and its neighbours' (:func:`_stored`; on a
    fine ladder neighbouring targets barely differ, and pooling triples the draws): a
    Gaussian, or a two-component Gaussian mixture where that has the smaller BIC (and every
    component keeps at least ``MIN_PER_COMPONENT * d`` draws' weight), then t components of
    ``df`` degrees of freedom with ``inflate`` times the covariances."""
    stored = _stored(tuning, pool)
    centre = stored.mean(axis=1, keepdims=True)
    x = stored - centre
    n_rungs, n, d = x.shape
    one = _mixture_step(x, np.ones((n_rungs, n, 1)))
    log_weight = np.concatenate([one[0], np.full((n_rungs, 1), -np.inf)], axis=1)
    mean = np.concatenate([one[1], one[1]], axis=1)
    cov = np.concatenate([one[2], one[2]], axis=1)
    proj, coefficient = _principal_split(x)
    maybe = np.flatnonzero(coefficient > BIMODALITY) if n >= 2 * MIN_PER_COMPONENT * d else []
    if len(maybe):  # EM started from the split at the principal axis, on those rungs only
        side = (proj[maybe] >= 0)[..., None]
        two = _em(x[maybe], np.concatenate([~side, side], axis=-1).astype(float))
        n_params = d + d * (d + 1) / 2
        fit_one = _logsumexp(_log_pdf(x[maybe], *(part[maybe] for part in one)), axis=1)
        bic_one = -2 * fit_one.sum(axis=1) + n_params * np.log(n)
        bic_two = -2 * two[3] + (2 * n_params + 1) * np.log(n)
        enough = np.all(np.exp(two[0]) * n >= MIN_PER_COMPONENT * d, axis=1)
        better = enough & np.isfinite(bic_two) & (bic_two < bic_one)
        rungs = maybe[better]
        log_weight[rungs], mean[rungs], cov[rungs] = two[0][better], two[1][better], two[2][better]
    chol = np.linalg.cholesky(inflate * cov)
    inv_chol = np.linalg.inv(chol)
    log_scale = log_weight - np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
    return IndependenceFit(log_weight, mean + centre, chol, inv_chol, float(df), log_scale)


def log_density(fit: IndependenceFit, x) -> np.ndarray:
    """``log q_l(x[l])`` per rung, up to a constant that is the same for every ``x`` on a
    rung (the t's normalising constant; it cancels in :func:`log_q_ratio`)."""
    out = np.empty(x.shape[0])
    _log_density_kernel(
        fit.log_scale,
        fit.mean,
        fit.inv_chol,
        float(fit.df),
        np.ascontiguousarray(x, dtype=np.float64),
        out,
    )
    return out


@numba.njit(cache=True, nogil=True)
def _log_density_kernel(log_scale, mean, inv_chol, df, x, out):
    """``out[r] = logsumexp_k(log_scale[r, k] + kernel(|inv_chol[r, k] (x[r] - mean[r, k])|^2))``
    with the t kernel ``-(df + d) / 2 log1p(m / df)`` (Gaussian ``-m / 2`` for ``df = inf``)."""
    n_rungs, n_comp, d = mean.shape
    terms = np.empty(n_comp)
    dev = np.empty(d)
    for r in range(n_rungs):
        top = -np.inf
        for k in range(n_comp):
            if log_scale[r, k] == -np.inf:
                terms[k] = -np.inf
                continue
            for j in range(d):
                dev[j] = x[r, j] - mean[r, k, j]
            maha = 0.0
            for i in range(d):
                white = 0.0
                for j in range(i + 1):  # lower triangular
                    white += inv_chol[r, k, i, j] * dev[j]
                maha += white * white
            if np.isinf(df):
                kernel = -0.5 * maha
            else:
                kernel = -0.5 * (df + d) * np.log1p(maha / df)
            terms[k] = log_scale[r, k] + kernel
            top = max(top, terms[k])
        total = 0.0
        for k in range(n_comp):
            total += np.exp(terms[k] - top)
        out[r] = top + np.log(total)


def log_q_ratio(fit: IndependenceFit, x, proposal) -> np.ndarray:
    """``log q(x) - log q(x')`` per rung: the Hastings correction of an independence move
    from ``x`` to ``proposal``."""
    return log_density(fit, x) - log_density(fit, proposal)


def propose(fit: IndependenceFit, normals, uniforms, chi2) -> np.ndarray:
    """One draw from every rung's :class:`IndependenceFit` (n_rungs, d): ``normals``
    (n_rungs, d) standard normals, ``uniforms`` (n_rungs,) pick the component (by its
    weight), ``chi2`` (n_rungs,) chi-square draws with ``fit.df`` degrees of freedom (ignored
    for a Gaussian, ``df = inf``)."""
    out = np.empty(normals.shape)
    radial = np.ones(normals.shape[0]) if np.isinf(fit.df) else np.sqrt(fit.df / chi2)
    _propose_kernel(np.exp(fit.log_weight), fit.mean, fit.chol, normals, uniforms, radial, out)
    return out


@numba.njit(cache=True, nogil=True)
def _propose_kernel(weight, mean, chol, normals, uniforms, radial, out):
    n_rungs, n_comp, d = mean.shape
    for r in range(n_rungs):
        total = 0.0
        for k in range(n_comp):
            total += weight[r, k]
        k, cum = 0, weight[r, 0] / total
        while uniforms[r] >= cum and k < n_comp - 1 and weight[r, k + 1] > 0:
            k += 1
            cum += weight[r, k] / total
        for i in range(d):
            step = 0.0
            for j in range(i + 1):  # lower triangular
                step += chol[r, k, i, j] * normals[r, j]
            out[r, i] = mean[r, k, i] + radial[r] * step
