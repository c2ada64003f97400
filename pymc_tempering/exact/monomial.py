r"""Exact finite-n references for singular learning theory: WBIC, the learning coefficient and
the local learning coefficient, on models whose power posteriors reduce to 1-D integrals.

Monomial models. The log-likelihood is :math:`\ell(w) = -n\prod_j w_j^{2k_j}` and the prior
:math:`N(0, s^2 I_d)`; the seed paper's model is ``k = (1, 1)`` (``d = 2``) or ``(1,)*d``. Its
learning coefficient is :math:`\lambda = \min_j 1/(2k_j)` with multiplicity the number of
``j`` attaining the minimum (Watanabe 2009, sec. 2.4 and 7.1), so these models cover both
singular (``k = (1, 1)``: lambda 1/2, not d/2 = 1) and regular cases (``k = (1,)``: lambda 1/2 =
d/2). With :math:`X = \prod_j u_j^{2k_j}`, :math:`u \sim N(0, I)`, the power posterior's
normaliser is :math:`Z(m) = E[e^{-mX}]` at :math:`m = n\beta s^{2K}`, :math:`K = \sum_j k_j`,
and by the Mellin-Barnes integral :math:`e^{-z} = \frac1{2\pi i}\int_{c-i\infty}^{c+i\infty}
\Gamma(t) z^{-t}\,dt`,

.. math::
    Z(m) = \frac1{2\pi}\int_{-\infty}^{\infty}\Gamma(t)\,m^{-t}\,\prod_j
    \frac{2^{-k_j t}\,\Gamma(\tfrac12 - k_j t)}{\Gamma(\tfrac12)}\,dy,\quad t = c + iy,

valid for :math:`0 < c < 1/(2\max_j k_j)`; :math:`mZ'(m)` and :math:`m^2Z''(m)` carry the
extra factors :math:`-t` and :math:`t(t+1)`. Then :math:`E_\beta[\ell] = (mZ'/Z)/\beta` and
:math:`\mathrm{Var}_\beta[\ell] = (m^2Z''/Z - (mZ'/Z)^2)/\beta^2`. The integrand decays like
:math:`e^{-\pi(1+K)|y|/2}`. NumPy/SciPy only.

Regular model. :math:`\ell(w) = -n\sum_j w_j^2`, prior :math:`N(0, s^2 I_d)`: every power
posterior is Gaussian, :math:`\lambda = d/2`.
"""

import warnings

import numpy as np
import scipy.integrate
from scipy.special import loggamma

__all__ = [
    "monomial_power_moments",
    "monomial_free_energy",
    "monomial_learning_coefficient",
    "regular_power_moments",
    "exact_wbic",
    "exact_learning_coefficients",
    "monomial_llc",
]


def _check_k(k) -> np.ndarray:
    k = np.atleast_1d(np.asarray(k, dtype=float))
    if k.ndim != 1 or k.size < 1 or np.any(k <= 0) or np.any(k != np.round(k)):
        raise ValueError(f"`k` must hold positive integers (the powers k_j), got {k}.")
    return k


def _mellin(m, k, powers, c):
    """``[Z(m), m Z'(m), m^2 Z''(m)]`` (the entries named by ``powers``) by Mellin-Barnes."""
    log_m = np.log(m)
    const = -k.size * loggamma(0.5)

    def integrand(y):
        t = c + 1j * y
        log_f = loggamma(t) - t * log_m + const
        log_f = log_f + np.sum(-k * t * np.log(2.0) + loggamma(0.5 - k * t))
        f = np.exp(log_f)
        factors = {0: 1.0, 1: -t, 2: t * (t + 1.0)}
        return np.array([(factors[p] * f).real for p in powers])

    y_max = 80.0 / (1.0 + k.sum())
    edges = np.linspace(0.0, y_max, 33)
    with warnings.catch_warnings():  # roundoff flags on the far tail pieces, which are ~0
        warnings.simplefilter("ignore", scipy.integrate.IntegrationWarning)
        total = sum(
            scipy.integrate.quad_vec(integrand, lo, hi, epsabs=1e-15, epsrel=1e-11)[0]
            for lo, hi in zip(edges[:-1], edges[1:], strict=True)
        )
    return total / np.pi  # the real part is even in y: (1/2pi) * 2 * integral over y > 0


def _prior_moments(k):
    """``E[X]`` and ``E[X^2]`` of ``X = prod u_j^{2k_j}``, ``u ~ N(0, I)``: double factorials."""

    def moment(p):  # E[u^(2p)] = (2p - 1)!!
        return np.exp(loggamma(p + 0.5) - loggamma(0.5) + p * np.log(2.0))

    return float(np.prod(moment(k))), float(np.prod(moment(2 * k)))


def monomial_power_moments(n, betas, k=(1, 1), prior_sd=1.0):
    r"""Exact :math:`E_\beta[\ell]` and :math:`\mathrm{Var}_\beta[\ell]` of the monomial model.

    :math:`\ell(w) = -n\prod_j w_j^{2k_j}`, prior :math:`N(0, s^2 I)`, rung :math:`\beta`
    samples :math:`\propto e^{\beta\ell(w)}\varphi(w)` (module docstring for the method).

    Parameters
    ----------
    n : float
        Sample size (the likelihood's scale).
    betas : array_like
        Inverse temperatures >= 0.
    k : sequence of int, default (1, 1)
        Powers :math:`k_j`; ``(1, 1)`` is the seed paper's :math:`w_1^2 w_2^2`.
    prior_sd : float, default 1.0
        :math:`s`.

    Returns
    -------
    mean, var : ndarray
        One value per ``beta``; relative accuracy about 1e-9.

    Examples
    --------
    >>> mean, var = monomial_power_moments(1e4, [0.1], k=(1,))   # regular, d = 1
    >>> round(float(-0.1 * mean[0]), 4), round(float(0.01 * var[0]), 4)   # both near 1/2
    (0.4998, 0.4995)
    """
    k, n, s = _check_k(k), float(n), float(prior_sd)
    betas = np.atleast_1d(np.asarray(betas, dtype=float))
    if n <= 0 or s <= 0 or np.any(betas < 0):
        raise ValueError(f"Need n > 0, prior_sd > 0 and betas >= 0; got {n}, {s}, {betas}.")
    scale = n * s ** (2.0 * k.sum())  # l = -scale * X(u)
    c = 0.5 / (2.0 * k.max())
    mean, var = np.empty_like(betas), np.empty_like(betas)
    for i, beta in enumerate(betas):
        if beta == 0:
            ex, ex2 = _prior_moments(k)
            mean[i], var[i] = -scale * ex, scale**2 * (ex2 - ex**2)
            continue
        z, z1, z2 = _mellin(beta * scale, k, (0, 1, 2), c)
        mean[i] = z1 / z / beta
        var[i] = (z2 / z - (z1 / z) ** 2) / beta**2
    return mean, var


def monomial_free_energy(n, k=(1, 1), prior_sd=1.0):
    r"""Exact :math:`F(n) = -\log\int e^{-n\prod_j w_j^{2k_j}}\varphi(w)\,dw` (prior sd ``s``).

    Parameters
    ----------
    n : float
        Sample size (the likelihood's scale).
    k : sequence of int, default (1, 1)
        Powers :math:`k_j`; ``(1, 1)`` is the seed paper's :math:`w_1^2 w_2^2`.
    prior_sd : float, default 1.0
        :math:`s`, the prior's standard deviation.

    Returns
    -------
    float
    """
    k = _check_k(k)
    m = float(n) * float(prior_sd) ** (2.0 * k.sum())
    if m == 0:
        return 0.0
    return float(-np.log(_mellin(m, k, (0,), 0.5 / (2.0 * k.max()))[0]))


def monomial_learning_coefficient(k):
    r"""Asymptotic :math:`(\lambda, m)` of the monomial model: :math:`\min_j 1/(2k_j)` and how
    many ``j`` attain it (Watanabe 2009, sec. 7.1).

    Parameters
    ----------
    k : sequence of int
        Powers :math:`k_j`, positive integers.

    Returns
    -------
    tuple of (float, int)
    """
    k = _check_k(k)
    return float(1.0 / (2.0 * k.max())), int(np.sum(k == k.max()))


def regular_power_moments(n, betas, d=2, prior_sd=1.0):
    r"""Exact :math:`E_\beta[\ell]`, :math:`\mathrm{Var}_\beta[\ell]` of the regular model
    :math:`\ell(w) = -n\sum_{j\le d} w_j^2`, prior :math:`N(0, s^2 I_d)`.

    Each :math:`w_j` is :math:`N(0, \sigma^2)` with :math:`\sigma^{-2} = s^{-2} + 2n\beta`, so
    :math:`E[\ell] = -nd\sigma^2` and :math:`\mathrm{Var}[\ell] = 2n^2d\sigma^4`; its
    learning coefficient is :math:`d/2`.

    Parameters
    ----------
    n : float
        Sample size (the likelihood's scale).
    betas : array_like
        Inverse temperatures >= 0.
    d : int, default 2
        The number of parameters.
    prior_sd : float, default 1.0
        :math:`s`, the prior's standard deviation.

    Returns
    -------
    mean, var : ndarray
        One value per ``beta``.
    """
    betas = np.atleast_1d(np.asarray(betas, dtype=float))
    sigma2 = 1.0 / (1.0 / float(prior_sd) ** 2 + 2.0 * float(n) * betas)
    return -float(n) * d * sigma2, 2.0 * float(n) ** 2 * d * sigma2**2


def exact_wbic(moments, n_obs):
    r"""WBIC's exact value at finite ``n_obs``: :math:`-E_{\beta^*}[\ell]`, :math:`\beta^* =
    1/\log n`, from ``moments(betas) -> (mean, var)`` (e.g. a :func:`functools.partial` of
    :func:`monomial_power_moments`).

    Parameters
    ----------
    moments : callable
        ``moments(betas) -> (mean, var)``, the exact power-posterior moments of the model.
    n_obs : int
        The number of observations :math:`n` (at least 3).

    Returns
    -------
    float
    """
    beta_star = 1.0 / np.log(float(n_obs))
    return float(-moments([beta_star])[0][0])


def exact_learning_coefficients(moments, beta_1, beta_2=None):
    r"""Exact targets of the two estimators of :math:`\lambda` at finite ``n``.

    Returns ``(two_temperature, fluctuation)``: :math:`(E_{\beta_1}[-\ell] -
    E_{\beta_2}[-\ell]) / (1/\beta_1 - 1/\beta_2)` (NaN without ``beta_2``) and
    :math:`\beta_1^2\,\mathrm{Var}_{\beta_1}[\ell]`.

    Parameters
    ----------
    moments : callable
        ``moments(betas) -> (mean, var)``, the exact power-posterior moments of the model.
    beta_1 : float
        The first inverse temperature (e.g. :math:`\beta^* = 1/\log n`).
    beta_2 : float, optional
        The second one of the two-temperature estimator; default ``None``: that estimator is
        NaN.
    """
    betas = [beta_1] if beta_2 is None else [beta_1, beta_2]
    mean, var = moments(betas)
    fluctuation = float(beta_1**2 * var[0])
    if beta_2 is None:
        return np.nan, fluctuation
    return float((mean[1] - mean[0]) / (1.0 / beta_1 - 1.0 / beta_2)), fluctuation


def monomial_llc(n, beta, localization, k=(1, 1), prior_sd=1.0):
    r"""Exact expectation of the LLC estimator of the monomial model at :math:`w^* = 0`.

    The sampled density is :math:`e^{\beta\ell(w) - \gamma|w|^2/2}\varphi(w)`; with the model's
    prior :math:`N(0, s^2 I)` (``prior_sd=None``: without a prior, as devinterp) it is the
    monomial model's power posterior with prior sd :math:`(s^{-2} + \gamma)^{-1/2}`. Since
    :math:`n L_n(w) - nL_n(0) = -\ell(w)`, :math:`E[\hat\lambda(0)] = -\beta E[\ell]`.

    Parameters
    ----------
    n : float
        Sample size (the likelihood's scale).
    beta : float
        The inverse temperature of the sampled density.
    localization : float
        :math:`\gamma \ge 0`, the localisation strength (positive without a prior).
    k : sequence of int, default (1, 1)
        Powers :math:`k_j`; ``(1, 1)`` is the seed paper's :math:`w_1^2 w_2^2`.
    prior_sd : float or None, default 1.0
        :math:`s`; ``None``: no prior, as devinterp.

    Returns
    -------
    float
    """
    precision = float(localization) + (0.0 if prior_sd is None else 1.0 / float(prior_sd) ** 2)
    if precision <= 0:
        raise ValueError("Without a prior, `localization` must be positive.")
    mean, _ = monomial_power_moments(n, [beta], k, prior_sd=precision**-0.5)
    return float(-beta * mean[0])
