r"""Exact reference values to validate samplers and evidence estimates against.

Three families of models whose marginal likelihood is known without sampling:

* the seed paper's singular model (Nagata & Watanabe 2008): :math:`H(w) = \prod_j w_j^2`,
  prior :math:`N(0, I_d)`, target :math:`e^{-nH(w)}\varphi(w)`; its stochastic complexity
  :math:`F(n) = -\log Z(n)` by 1-D quadrature (``d = 2``) or a Mellin-Barnes contour integral
  (any ``d``), the paper's asymptotic eq. (4), and the exact per-rung mean log-likelihood
  :math:`E_t[-nH]` that thermodynamic integration integrates;
* the seed lecture on empirical Bayes: :math:`x_i \sim N(\mu, 1)`, :math:`\mu \sim N(0, b^2)`,
  for which :math:`x \sim N(0, I + b^2 11^T)` exactly;
* conjugate Normal-Gamma linear regression, the classic radiata pine benchmark (Williams 1959;
  Friel & Pettitt 2008).

Every function is NumPy/SciPy only: no sampling, no PyMC.
"""

import warnings
from pathlib import Path

import numpy as np
import scipy.integrate
from scipy import stats
from scipy.special import gammaln, loggamma

__all__ = [
    "SINGULAR_CONSTANT_D2",
    "RADIATA_PINE_PRIOR",
    "singular_free_energy",
    "singular_free_energy_asymptotic",
    "singular_mean_loglik",
    "lecture_log_evidence",
    "normal_gamma_log_evidence",
    "radiata_pine_log_evidence",
    "read_radiata_pine",
    "TWO_MODE_WEIGHTS",
    "TWO_MODE_MEANS",
    "two_mode_model",
    "two_mode_log_evidence",
]

#: The O(1/log n) constant of eq. (4) for d = 2: ``4 log 2 - gamma``.
SINGULAR_CONSTANT_D2 = 4.0 * np.log(2.0) - np.euler_gamma


# --- the singular model ------------------------------------------------------------------------
def _z_quadrature_d2(n):
    """``Z(n) = E_{w1}[(1 + 2 n w1^2)^{-1/2}]`` (``w2`` integrated out) over ``u = sqrt(2n) w1``."""
    scale = np.sqrt(2.0 * n)

    def integrand(u):
        return stats.norm.pdf(u / scale) / np.sqrt(1.0 + u * u)

    edges = [0.0] + [p for p in (1.0, 10.0, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7) if p < 40 * scale]
    edges.append(40.0 * scale)
    total = sum(
        scipy.integrate.quad(integrand, lo, hi, limit=200, epsabs=0.0, epsrel=1e-12)[0]
        for lo, hi in zip(edges[:-1], edges[1:], strict=True)
    )
    return 2.0 * total / scale


def _mellin_integrand(t, n, d, power, c):
    r"""Real part of the Mellin-Barnes integrand at ``s = c + i t`` (times ``s**power``)."""
    s = c + 1j * t
    log_m = (
        loggamma(-s)
        + loggamma(0.5 + s)
        - loggamma(0.5)
        + s * np.log(2.0 * n)
        + (d - 1) * (s * np.log(2.0) + loggamma(s + 0.5) - loggamma(0.5))
    )
    return (s**power * np.exp(log_m)).real


def _z_mellin(n, d, power=0, c=-0.25):
    r"""``Z(n)`` (``power=0``) or ``n Z'(n)`` (``power=1``) by a Mellin-Barnes integral.

    With :math:`X = \prod_{j<d} w_j^2`, :math:`Z(n) = E[(1 + 2nX)^{-1/2}]`,
    :math:`(1+z)^{-1/2} = \frac{1}{2\pi i}\int \Gamma(-s)\Gamma(\tfrac12+s)/\Gamma(\tfrac12)\,
    z^s ds` on :math:`\Re s = c \in (-\tfrac12, 0)` and
    :math:`E[w^{2s}] = 2^s\Gamma(s+\tfrac12)/\Gamma(\tfrac12)`; the integrand decays like
    :math:`e^{-(d+1)\pi|t|/2}`.
    """
    t_max = 60.0 / (d + 1)
    edges = np.linspace(0.0, t_max, 25)
    with warnings.catch_warnings():  # roundoff flags on the far tail pieces, which are ~0
        warnings.simplefilter("ignore", scipy.integrate.IntegrationWarning)
        total = sum(
            scipy.integrate.quad(
                _mellin_integrand, lo, hi, args=(n, d, power, c), epsabs=1e-14, epsrel=1e-10
            )[0]
            for lo, hi in zip(edges[:-1], edges[1:], strict=True)
        )
    return total / np.pi  # (1/2pi) * integral over t in R, integrand's real part is even


def singular_free_energy(n, d=2):
    r"""Exact stochastic complexity :math:`F(n) = -\log \int e^{-n\prod_j w_j^2}\varphi(w)\,dw`.

    Parameters
    ----------
    n : float
        Sample size (the inverse temperature times ``n`` for a tempered rung: the free energy
        :math:`f(n, t)` of the seed paper is ``singular_free_energy(n * t, d)``). ``n = 0``
        gives 0.
    d : int, default 2
        Dimension of ``w``.

    Returns
    -------
    float
        :math:`F(n)`. For ``d = 2`` by adaptive 1-D quadrature of
        :math:`Z = E_{w_1}[(1 + 2nw_1^2)^{-1/2}]` (``w_2`` integrates out in closed form); for
        other ``d`` by the Mellin-Barnes integral
        :math:`Z = \frac{1}{2\pi}\int \Gamma(-s)\Gamma(\tfrac12+s)^d (2n)^s 2^{(d-1)s}
        \pi^{-d/2}\,dt`, :math:`s = -\tfrac14 + it`. Relative accuracy about 1e-9.

    Examples
    --------
    >>> round(singular_free_energy(10_000), 4)
    3.4366
    >>> round(singular_free_energy_asymptotic(10_000), 4)
    3.4366
    """
    n, d = float(n), int(d)
    if n < 0 or d < 1:
        raise ValueError(f"Need n >= 0 and d >= 1, got n={n}, d={d}.")
    if n == 0:
        return 0.0
    if d == 1:
        return float(0.5 * np.log1p(2.0 * n))
    z = _z_quadrature_d2(n) if d == 2 else _z_mellin(n, d)
    return float(-np.log(z))


def singular_mean_loglik(n, betas, d=2):
    r"""Exact :math:`E_t[\ell]` on every rung: the integrand of thermodynamic integration.

    Rung ``t`` samples :math:`\propto e^{-ntH(w)}\varphi(w)` and records
    :math:`\ell = -nH(w)`; :math:`E_t[\ell] = -\frac{d}{dt} f(n, t)`, computed from the
    Mellin-Barnes representation of :math:`Z` and its derivative (exactly :math:`-n` at
    ``t = 0``).

    Parameters
    ----------
    n : float
    betas : array_like
        Inverse temperatures in [0, 1].
    d : int, default 2

    Returns
    -------
    ndarray
        ``E_t[loglik]`` for each ``t`` in ``betas``; its integral over [0, 1] is ``-F(n)``.
    """
    betas = np.atleast_1d(np.asarray(betas, dtype=float))
    out = np.empty_like(betas)
    for i, t in enumerate(betas):
        if t == 0:
            out[i] = -float(n)
            continue
        m = float(n) * t
        out[i] = _z_mellin(m, int(d), power=1) / _z_mellin(m, int(d)) / t
    return out


def singular_free_energy_asymptotic(n, d=2, constant=None):
    r"""The seed paper's eq. (4): the asymptotic stochastic complexity.

    :math:`F(n) \approx \tfrac12\log n - (d-1)\log\log n + \tfrac{d-1}{2}\log\pi +
    \tfrac d2 \log 2 - \log(1 + c/\log n)`.

    Parameters
    ----------
    n : float
    d : int, default 2
    constant : float, optional
        ``c``; default :data:`SINGULAR_CONSTANT_D2` (``4 log 2 - gamma``) for ``d = 2`` and 0
        otherwise (the paper gives the O(1/log n) term only for ``d = 2``).

    Returns
    -------
    float
    """
    if constant is None:
        constant = SINGULAR_CONSTANT_D2 if int(d) == 2 else 0.0
    log_n = np.log(float(n))
    return float(
        0.5 * log_n
        - (d - 1) * np.log(log_n)
        + 0.5 * (d - 1) * np.log(np.pi)
        + 0.5 * d * np.log(2.0)
        - np.log1p(constant / log_n)
    )


# --- the empirical-Bayes lecture's model -------------------------------------------------------
def lecture_log_evidence(x, b=1.0):
    r"""Exact :math:`\log Z` of :math:`x_i \sim N(\mu, 1)`, :math:`\mu \sim N(0, b^2)`.

    Marginally :math:`x \sim N(0, I + b^2 11^T)`; with :math:`n` points, sum :math:`S` and
    sum of squares :math:`Q`: :math:`\log Z = -\tfrac n2\log 2\pi - \tfrac12\log(1 + nb^2)
    - \tfrac12(Q - b^2 S^2/(1 + nb^2))`.

    Parameters
    ----------
    x : array_like, shape (n,)
    b : float or array_like, default 1.0
        Prior standard deviation of ``mu``; an array gives one value per ``b``.

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> round(lecture_log_evidence([0.0], b=1.0), 6)   # N(0, 2) density at 0
    -1.265512
    """
    x = np.asarray(x, dtype=float)
    b2 = np.asarray(b, dtype=float) ** 2
    n, s, q = x.size, x.sum(), np.sum(x**2)
    value = (
        -0.5 * n * np.log(2 * np.pi) - 0.5 * np.log1p(n * b2) - 0.5 * (q - b2 * s**2 / (1 + n * b2))
    )
    return float(value) if value.ndim == 0 else value


# --- conjugate Normal-Gamma regression (radiata pine) ------------------------------------------
#: The usual prior for radiata pine: ``(alpha, beta) | tau ~ N(mean, (tau Q0)^-1)``,
#: ``tau ~ Gamma(shape, rate)``.
RADIATA_PINE_PRIOR = {
    "mean": np.array([3000.0, 185.0]),
    "precision": np.diag([0.06, 6.0]),
    "shape": 3.0,
    "rate": 2.0 * 300.0**2,
}


def normal_gamma_log_evidence(y, X, mean, precision, shape, rate):
    r"""Exact :math:`\log Z` of :math:`y = X\theta + e`, :math:`e \sim N(0, \tau^{-1}I)`, with
    :math:`\theta \mid \tau \sim N(m_0, (\tau Q_0)^{-1})`, :math:`\tau \sim
    \mathrm{Gamma}(a_0, \text{rate } b_0)`.

    With :math:`Q_n = Q_0 + X^TX`, :math:`m_n = Q_n^{-1}(Q_0 m_0 + X^Ty)`,
    :math:`a_n = a_0 + n/2`, :math:`b_n = b_0 + (y^Ty + m_0^TQ_0m_0 - m_n^TQ_nm_n)/2`:
    :math:`\log Z = -\tfrac n2\log 2\pi + \tfrac12\log(|Q_0|/|Q_n|) + a_0\log b_0 - a_n\log b_n
    + \log\Gamma(a_n) - \log\Gamma(a_0)`.

    Parameters
    ----------
    y : array_like, shape (n,)
    X : array_like, shape (n, k)
    mean : array_like, shape (k,)
    precision : array_like, shape (k, k)
    shape, rate : float

    Returns
    -------
    float
    """
    y, X = np.asarray(y, dtype=float), np.asarray(X, dtype=float)
    m0, q0 = np.asarray(mean, dtype=float), np.asarray(precision, dtype=float)
    n = y.size
    qn = q0 + X.T @ X
    mn = np.linalg.solve(qn, q0 @ m0 + X.T @ y)
    an = shape + 0.5 * n
    bn = rate + 0.5 * (y @ y + m0 @ q0 @ m0 - mn @ qn @ mn)
    logdet = np.linalg.slogdet(q0)[1] - np.linalg.slogdet(qn)[1]
    return float(
        -0.5 * n * np.log(2 * np.pi)
        + 0.5 * logdet
        + shape * np.log(rate)
        - an * np.log(bn)
        + gammaln(an)
        - gammaln(shape)
    )


def radiata_pine_log_evidence(y, covariate, prior=None):
    r"""Exact :math:`\log Z` of the radiata pine regression :math:`y_i = \alpha +
    \beta(c_i - \bar c) + e_i` under the Normal-Gamma prior (default
    :data:`RADIATA_PINE_PRIOR`).

    Parameters
    ----------
    y : array_like
        Compression strength.
    covariate : array_like
        Density ``x`` (model M1) or resin-adjusted density ``z`` (model M2); centred here.
    prior : dict, optional
        Keys ``mean``, ``precision``, ``shape``, ``rate``.

    Returns
    -------
    float

    Notes
    -----
    For the variant table whose row 9 reads (3670, 32.3, 29.0) this gives the published
    -310.1283 (M1) and -301.7046 (M2) (Friel & Pettitt 2008).
    """
    prior = RADIATA_PINE_PRIOR if prior is None else prior
    c = np.asarray(covariate, dtype=float)
    X = np.column_stack([np.ones(c.size), c - c.mean()])
    return normal_gamma_log_evidence(y, X, **prior)


def read_radiata_pine(path):
    """Columns ``y``, ``x``, ``z`` of a radiata pine CSV (header ``y,x,z``) as a dict of arrays."""
    table = np.genfromtxt(Path(path), delimiter=",", names=True)
    return {name: np.asarray(table[name], dtype=float) for name in ("y", "x", "z")}


# --- a well-separated two-mode target ----------------------------------------------------------
#: Mode weights and centres of :func:`two_mode_model`: 10 standard deviations apart per axis.
TWO_MODE_WEIGHTS = (0.3, 0.7)
TWO_MODE_MEANS = ((-5.0, -5.0), (5.0, 5.0))


def two_mode_model(weights=TWO_MODE_WEIGHTS, means=TWO_MODE_MEANS, prior_sd=20.0):
    r"""PyMC model: prior :math:`x \sim N(0, s^2 I_2)`, likelihood the mixture
    :math:`\sum_k w_k N(x; \mu_k, I)` (a Potential).

    With the symmetric default means the prior density is equal at both modes, so the posterior
    mode weights are ``weights`` (up to the modes' negligible overlap), and plain Metropolis
    started between them sticks to one. The exact evidence is :func:`two_mode_log_evidence`.
    """
    import pymc as pm

    means = np.asarray(means, dtype=float)
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, prior_sd, shape=means.shape[1])
        comps = [
            np.log(w) + pm.logp(pm.MvNormal.dist(mu, np.eye(mu.size)), x)
            for w, mu in zip(weights, means, strict=True)
        ]
        pm.Potential("mixture", pm.math.logsumexp(pm.math.stack(comps)))
    return model


def two_mode_log_evidence(weights=TWO_MODE_WEIGHTS, means=TWO_MODE_MEANS, prior_sd=20.0):
    r"""Exact :math:`\log Z = \log \sum_k w_k N(\mu_k; 0, (s^2 + 1) I)` of
    :func:`two_mode_model` (a Gaussian convolution per component).

    Examples
    --------
    >>> round(two_mode_log_evidence(), 4)
    -7.8942
    """
    means = np.asarray(means, dtype=float)
    cov = (prior_sd**2 + 1.0) * np.eye(means.shape[1])
    logs = [np.log(w) + stats.multivariate_normal(np.zeros(mu.size), cov).logpdf(mu)
            for w, mu in zip(weights, means, strict=True)]  # fmt: skip
    return float(np.logaddexp.reduce(logs))
