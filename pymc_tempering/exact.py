r"""Exact reference values to validate samplers and evidence estimates against.

Models whose marginal likelihood is known without sampling:

* the seed paper's singular model (Nagata & Watanabe 2008): :math:`H(w) = \prod_j w_j^2`,
  prior :math:`N(0, I_d)`, target :math:`e^{-nH(w)}\varphi(w)`; its stochastic complexity
  :math:`F(n) = -\log Z(n)` by 1-D quadrature (``d = 2``) or a Mellin-Barnes contour integral
  (any ``d``), the paper's asymptotic eq. (4), and the exact per-rung mean log-likelihood
  :math:`E_t[-nH]` that thermodynamic integration integrates;
* the seed lecture on empirical Bayes: :math:`x_i \sim N(\mu, 1)`, :math:`\mu \sim N(0, b^2)`,
  for which :math:`x \sim N(0, I + b^2 11^T)` exactly;
* conjugate Normal-Gamma linear regression, the classic radiata pine benchmark (Williams 1959;
  Friel & Pettitt 2008);
* the centred eight schools (Rubin 1981), :math:`\log Z_\beta` and :math:`E_\beta[\ell]` by
  1-D quadrature over :math:`\tau` (everything else integrates out);
* two models whose :math:`E_0[\ell] = -\infty`: a uniform likelihood whose support depends on
  a parameter, and a hard constraint written as a Potential;
* the egg box of Feroz, Hobson & Bridges (2009): a 2-D likelihood with many sharp maxima.

Every function is NumPy/SciPy only: no sampling, no PyMC.
"""

import warnings
from pathlib import Path

import numpy as np
import scipy.integrate
from scipy import stats
from scipy.special import gammaln, log_ndtr, loggamma, logsumexp

from pymc_tempering._exact_singular import (
    exact_learning_coefficients,
    exact_wbic,
    monomial_free_energy,
    monomial_learning_coefficient,
    monomial_llc,
    monomial_power_moments,
    regular_power_moments,
)

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
    "EIGHT_SCHOOLS_Y",
    "EIGHT_SCHOOLS_SIGMA",
    "EIGHT_SCHOOLS_PRIOR",
    "eight_schools_log_evidence",
    "eight_schools_mean_loglik",
    "uniform_support_log_evidence",
    "uniform_support_mean_loglik",
    "uniform_support_prior_probability",
    "constrained_log_evidence",
    "constrained_mean_loglik",
    "EGG_BOX_SIDE",
    "egg_box_loglik",
    "egg_box_log_evidence",
    "egg_box_power_moments",
    "monomial_power_moments",
    "monomial_free_energy",
    "monomial_learning_coefficient",
    "regular_power_moments",
    "exact_wbic",
    "exact_learning_coefficients",
    "monomial_llc",
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


# --- eight schools (Rubin 1981), centred -------------------------------------------------------
#: Observed effects and their standard errors of the eight schools (Rubin 1981; Gelman et al.,
#: BDA3 sec. 5.5).
EIGHT_SCHOOLS_Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
EIGHT_SCHOOLS_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
#: Prior scales: ``mu ~ N(0, mu_sd)``, ``tau ~ HalfCauchy(tau_scale)``.
EIGHT_SCHOOLS_PRIOR = {"mu_sd": 5.0, "tau_scale": 5.0}


def _schools_marginal(tau, beta, y, sigma, mu_sd):
    r"""``log N(y; 0, Sigma)`` and ``E[loglik | tau]`` at each ``tau``, under likelihood^beta.

    :math:`\Sigma = D + m^2 11^T`, :math:`D = \mathrm{diag}(\sigma_j^2/\beta + \tau^2)`, inverted
    by Sherman-Morrison. Given :math:`\tau`, the residual :math:`r = y - \theta` is Gaussian with
    mean :math:`s\Sigma^{-1}y` and variance :math:`s - s^2\Sigma^{-1}_{jj}`,
    :math:`s = \sigma_j^2/\beta`.
    """
    tau = np.asarray(tau, dtype=float)[..., None]
    s = sigma**2 / beta
    u = 1.0 / (s + tau**2)
    den = 1.0 + mu_sd**2 * u.sum(-1, keepdims=True)
    sinv_y = u * y - mu_sd**2 * u * (u * y).sum(-1, keepdims=True) / den
    sinv_jj = u - mu_sd**2 * u**2 / den
    log_det = -np.log(u).sum(-1) + np.log(den[..., 0])
    log_n = -0.5 * (y.size * np.log(2 * np.pi) + log_det + (y * sinv_y).sum(-1))
    r2 = s + s**2 * (sinv_y**2 - sinv_jj)  # E[r_j^2]
    loglik = -0.5 * (np.log(2 * np.pi * sigma**2) + r2 / sigma**2).sum(-1)
    return log_n, loglik


def _schools_tau_quad(beta, y, sigma, mu_sd, tau_scale):
    """``log Z_beta`` (up to the beta-only constant) and ``E_beta[loglik]``, over phi = atan."""
    # tau = scale * tan(phi) makes HalfCauchy(scale) uniform on (0, pi/2); likelihood^beta
    # flattens out to tau ~ sigma / sqrt(beta): break the range there
    knees = sigma.max() / np.sqrt(beta) * np.array([0.1, 1.0, 10.0])
    points = np.arctan(np.concatenate([[sigma.min()], knees]) / tau_scale)
    grid = np.tan(np.linspace(0, np.pi / 2, 2001)[:-1]) * tau_scale
    shift = _schools_marginal(grid, beta, y, sigma, mu_sd)[0].max()

    def integrand(phi):
        log_n, loglik = _schools_marginal(tau_scale * np.tan(phi), beta, y, sigma, mu_sd)
        weight = np.exp(log_n - shift) * 2.0 / np.pi
        return np.array([weight, weight * loglik])

    total = scipy.integrate.quad_vec(
        integrand, 0.0, np.pi / 2, points=np.sort(points), epsabs=0.0, epsrel=1e-12
    )[0]
    return shift + np.log(total[0]), total[1] / total[0]


def eight_schools_log_evidence(beta=1.0, y=EIGHT_SCHOOLS_Y, sigma=EIGHT_SCHOOLS_SIGMA, **prior):
    r"""Exact :math:`\log Z_\beta` of the centred eight-schools model (by 1-D quadrature).

    :math:`\mu \sim N(0, m^2)`, :math:`\tau \sim \mathrm{HalfCauchy}(c)`,
    :math:`\theta_j \sim N(\mu, \tau^2)`, :math:`y_j \sim N(\theta_j, \sigma_j^2)`;
    :math:`Z_\beta = \int p(\mu,\tau,\theta)\prod_j N(y_j;\theta_j,\sigma_j^2)^\beta`. Since
    :math:`N(y;\theta,\sigma^2)^\beta = (2\pi\sigma^2)^{(1-\beta)/2}\beta^{-1/2}
    N(y;\theta,\sigma^2/\beta)`, :math:`\theta` and :math:`\mu` integrate out:
    :math:`y \mid \tau \sim N(0, \mathrm{diag}(\sigma_j^2/\beta + \tau^2) + m^2 11^T)`, and
    :math:`\tau = c\tan\phi` turns the last integral into one over :math:`\phi \sim U(0,\pi/2)`
    (adaptive quadrature, relative accuracy about 1e-12). Gelman et al., *Bayesian Data
    Analysis* (3rd ed.), sec. 5.4-5.5.

    Parameters
    ----------
    beta : float, default 1.0
        Power of the likelihood, in (0, 1]; 1 gives the marginal likelihood.
    y, sigma : array_like, default the eight schools
    **prior
        ``mu_sd`` and ``tau_scale``, default :data:`EIGHT_SCHOOLS_PRIOR` (5 and 5).

    Returns
    -------
    float

    Examples
    --------
    >>> round(eight_schools_log_evidence(), 4)
    -31.3113
    """
    y, sigma, beta = np.asarray(y, float), np.asarray(sigma, float), float(beta)
    prior = EIGHT_SCHOOLS_PRIOR | prior
    if not 0 < beta <= 1:
        raise ValueError(f"`beta` must lie in (0, 1], got {beta}.")
    log_z, _ = _schools_tau_quad(beta, y, sigma, prior["mu_sd"], prior["tau_scale"])
    const = np.sum(0.5 * (1 - beta) * np.log(2 * np.pi * sigma**2) - 0.5 * np.log(beta))
    return float(log_z + const)


def eight_schools_mean_loglik(betas, y=EIGHT_SCHOOLS_Y, sigma=EIGHT_SCHOOLS_SIGMA, **prior):
    r"""Exact :math:`E_\beta[\ell]` of the centred eight-schools model on every rung.

    :math:`E_\beta[\ell] = \int E_\beta[\ell\mid\tau]\,p_\beta(\tau)\,d\tau` with
    :math:`p_\beta(\tau) \propto p(\tau) N(y; 0, \Sigma_\beta(\tau))` as in
    :func:`eight_schools_log_evidence`, and, given :math:`\tau`,
    :math:`E[(y_j-\theta_j)^2] = s_j + s_j^2((\Sigma^{-1}y)_j^2 - \Sigma^{-1}_{jj})`,
    :math:`s_j = \sigma_j^2/\beta` (Gaussian conditioning). It equals
    :math:`d\log Z_\beta/d\beta`. At :math:`\beta = 0` it is :math:`-\infty`: under the prior
    :math:`\theta_j` has the half-Cauchy's infinite variance, and near 0 the curve falls like
    :math:`\beta^{-1/2}` (integrable).

    Parameters
    ----------
    betas : array_like
        Inverse temperatures in [0, 1].
    y, sigma, **prior
        As :func:`eight_schools_log_evidence`.

    Returns
    -------
    ndarray
    """
    y, sigma = np.asarray(y, float), np.asarray(sigma, float)
    prior = EIGHT_SCHOOLS_PRIOR | prior
    betas = np.atleast_1d(np.asarray(betas, dtype=float))
    return np.array(
        [
            _schools_tau_quad(b, y, sigma, prior["mu_sd"], prior["tau_scale"])[1] if b > 0
            else -np.inf
            for b in betas
        ]
    )  # fmt: skip


# --- a support that depends on a parameter -----------------------------------------------------
def _log_normal_interval(a, b):
    r""":math:`\log(\Phi(b) - \Phi(a))` for :math:`a < b`, stable in both tails."""
    if a > 0:  # upper tail: Phi(b) - Phi(a) = Phi(-a) - Phi(-b)
        a, b = -b, -a
    lb, la = log_ndtr(b), log_ndtr(a)
    return float(lb + np.log1p(-np.exp(la - lb)))


def uniform_support_prior_probability(y, width=10.0):
    r"""Prior probability of the support of :math:`y_i \sim U(u - w, u)`, :math:`u \sim N(0, 1)`.

    The likelihood is non-zero iff :math:`\max_i y_i \le u \le \min_i y_i + w`:
    :math:`P = \Phi(\min y + w) - \Phi(\max y)` (0 when the data span more than ``w``).
    """
    y = np.asarray(y, dtype=float)
    lo, hi = y.max(), y.min() + width
    return float(np.exp(_log_normal_interval(lo, hi))) if lo < hi else 0.0


def uniform_support_log_evidence(y, width=10.0):
    r"""Exact :math:`\log Z` of :math:`u \sim N(0,1)`, :math:`y_i \sim U(u - w, u)`, ``i = 1..n``.

    The likelihood is :math:`w^{-n}` on :math:`\max y \le u \le \min y + w` and 0 elsewhere, so
    :math:`Z = w^{-n}(\Phi(\min y + w) - \Phi(\max y))`; the difference of normal CDFs is taken
    in logs (:func:`scipy.special.log_ndtr`, the upper tail by symmetry). ``-inf`` when the
    data span more than ``w``.

    Parameters
    ----------
    y : array_like, shape (n,)
    width : float, default 10.0

    Returns
    -------
    float

    Notes
    -----
    Thermodynamic integration misses :math:`\log P(\text{support})` here: for every
    :math:`\beta > 0` the power posterior lives on the support and
    :math:`E_\beta[\ell] = -n\log w` (:func:`uniform_support_mean_loglik`), so
    :math:`\int_0^1 E_\beta[\ell]\,d\beta = -n\log w`; the jump sits at :math:`\beta = 0`, where
    :math:`E_0[\ell] = -\infty`. Stepping stone's first stone,
    :math:`E_0[e^{\beta_1\ell}] = P(\text{support})\,w^{-n\beta_1}`, gets it right.

    Examples
    --------
    >>> round(uniform_support_log_evidence([-1.0, 2.0]), 4)   # -2 log 10 + log(Phi(9) - Phi(2))
    -8.3884
    """
    y = np.asarray(y, dtype=float)
    lo, hi = y.max(), y.min() + width
    log_p = _log_normal_interval(lo, hi) if lo < hi else -np.inf
    return float(-y.size * np.log(width) + log_p)


def uniform_support_mean_loglik(y, betas, width=10.0):
    r""":math:`E_\beta[\ell]` of :func:`uniform_support_log_evidence`'s model: :math:`-n\log w`
    for :math:`\beta > 0` (the log-likelihood is constant on the support), :math:`-\infty` at
    :math:`\beta = 0` (the prior puts mass :math:`1 - P(\text{support}) > 0` where
    :math:`\ell = -\infty`)."""
    betas = np.atleast_1d(np.asarray(betas, dtype=float))
    return np.where(betas > 0, -np.size(y) * np.log(width), -np.inf)


# --- a hard constraint written as a Potential --------------------------------------------------
def _constrained_posterior(y, beta):
    """Mean and sd of x under N(0, 1) * prod N(y_i; x, 1)^beta, before the constraint."""
    y = np.asarray(y, dtype=float)
    var = 1.0 / (1.0 + beta * y.size)
    return var * beta * y.sum(), np.sqrt(var)


def constrained_log_evidence(y):
    r"""Exact :math:`\log Z` of :math:`x \sim N(0,1)`, :math:`y_i \sim N(x, 1)`, and the hard
    constraint :math:`x > 0` (a Potential of 0 or :math:`-\infty`).

    :math:`Z = Z_0\,P_0(x > 0 \mid y)`, with :math:`Z_0` the unconstrained evidence
    (:func:`lecture_log_evidence` with ``b = 1``) and the unconstrained posterior
    :math:`x \mid y \sim N(S/(1+n), 1/(1+n))`, so
    :math:`\log Z = \log Z_0 + \log\Phi(S/\sqrt{1+n})`, :math:`S = \sum_i y_i`.

    Examples
    --------
    >>> round(constrained_log_evidence([0.0]), 6)   # N(0, 2) density at 0, times 1/2
    -1.958659
    """
    mean, sd = _constrained_posterior(y, 1.0)
    return float(lecture_log_evidence(y, 1.0) + log_ndtr(mean / sd))


def constrained_mean_loglik(y, betas):
    r""":math:`E_\beta[\ell]` of :func:`constrained_log_evidence`'s model, the Potential counted
    in :math:`\ell` (as ``model.datalogp`` does).

    For :math:`\beta > 0` the power posterior is :math:`N(m_\beta, s_\beta^2)` truncated to
    :math:`x > 0`, :math:`s_\beta^2 = 1/(1 + n\beta)`, :math:`m_\beta = s_\beta^2\beta S`, and
    :math:`E_\beta[\ell] = -\tfrac n2\log 2\pi - \tfrac12(\sum_i(y_i-\bar y)^2
    + n\,E[(x-\bar y)^2])` with the truncated normal's moments; :math:`-\infty` at
    :math:`\beta = 0` (half the prior violates the constraint).
    """
    y = np.asarray(y, dtype=float)
    n, ybar = y.size, y.mean()
    out = []
    for beta in np.atleast_1d(np.asarray(betas, dtype=float)):
        if beta == 0:
            out.append(-np.inf)
            continue
        mean, sd = _constrained_posterior(y, beta)
        x = stats.truncnorm(-mean / sd, np.inf, loc=mean, scale=sd)
        sq = x.var() + (x.mean() - ybar) ** 2
        out.append(-0.5 * n * np.log(2 * np.pi) - 0.5 * (np.sum((y - ybar) ** 2) + n * sq))
    return np.array(out)


# --- the egg-box likelihood (Feroz, Hobson & Bridges 2009) -------------------------------------
#: Side of the egg-box's uniform prior square, ``[0, 10 pi]^2``.
EGG_BOX_SIDE = 10.0 * np.pi


def egg_box_loglik(x, y):
    r"""The egg-box log-likelihood :math:`(2 + \cos(x/2)\cos(y/2))^5` (NumPy)."""
    return (2.0 + np.cos(np.asarray(x) / 2.0) * np.cos(np.asarray(y) / 2.0)) ** 5


def _egg_box_grid(n_grid):
    """The log-likelihood on the periodic ``n_grid`` x ``n_grid`` grid of one period (raveled)."""
    c = np.cos(2.0 * np.pi * np.arange(int(n_grid)) / int(n_grid))
    return ((2.0 + c[:, None] * c[None, :]) ** 5).ravel()


def egg_box_log_evidence(beta=1.0, n_grid=512):
    r"""Exact :math:`\log Z_\beta` of the egg box: uniform prior on :math:`[0, 10\pi]^2`,
    :math:`\ell(x, y) = (2 + \cos(x/2)\cos(y/2))^5` (Feroz, Hobson & Bridges 2009, sec. 6.2).

    With :math:`u = x/2`, :math:`v = y/2` on :math:`[0, 5\pi]`, the integrand depends on
    :math:`\cos u` and :math:`\cos v` only, and the mean of any function of :math:`\cos u` over
    :math:`[0, 5\pi]` equals its mean over one period (:math:`[4\pi, 5\pi]` mirrors onto
    :math:`[\pi, 2\pi]`), so :math:`Z_\beta = (2\pi)^{-2}\int_0^{2\pi}\!\int_0^{2\pi}
    e^{\beta(2+\cos u\cos v)^5}du\,dv`: a smooth periodic integrand, for which the trapezoid
    rule on an ``n_grid``-point grid per axis converges geometrically (at ``beta = 1`` the peaks
    have width :math:`1/\sqrt{405} \approx 0.05` in :math:`u`; 128 points already agree with
    2048 to 1e-13). Summed by log-sum-exp.

    Parameters
    ----------
    beta : float, default 1.0
        Power of the likelihood.
    n_grid : int, default 512

    Returns
    -------
    float
        At ``beta = 1``, 235.85594033225 (to about 1e-12). Feroz et al. quote 235.88, which
        is what a 64-point grid gives.

    Examples
    --------
    >>> round(egg_box_log_evidence(), 4)
    235.8559
    """
    loglik = _egg_box_grid(n_grid)
    return float(logsumexp(float(beta) * loglik) - np.log(loglik.size))


def egg_box_power_moments(betas, n_grid=512):
    r""":math:`E_\beta[\ell]` and :math:`\mathrm{Var}_\beta[\ell]` of the egg box on every rung.

    Weighted means over the periodic grid of :func:`egg_box_log_evidence`, weights
    :math:`\propto e^{\beta\ell}`: the first two derivatives of :math:`\log Z_\beta`, and the
    inputs of the (corrected) trapezoid rule of thermodynamic integration.

    Returns
    -------
    mean, var : ndarray
        One value per ``beta``.
    """
    loglik = _egg_box_grid(n_grid)
    moments = []
    for beta in np.atleast_1d(np.asarray(betas, dtype=float)):
        w = np.exp(beta * loglik - logsumexp(beta * loglik))
        mean = w @ loglik
        moments.append((mean, w @ (loglik - mean) ** 2))
    mean, var = np.array(moments).T
    return mean, var
