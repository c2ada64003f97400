r"""The Poisson change point (the coal-mining disasters of
:mod:`pymc_tempering.exact.datasets`), with the rates integrated out: exact switchpoint
posterior, :math:`\log Z_\beta` and power-posterior moments by summing over switchpoints.

The model follows PyMC's getting-started notebook: years :math:`t_1 < \dots < t_T`,

.. math::
    s \sim \mathrm{DiscreteUniform}(t_1, t_T),\quad e, l \sim \mathrm{Gamma}(a, b)\ \text{(rate
    } b),\quad y_i \sim \mathrm{Poisson}(e \text{ if } t_i \le s \text{ else } l),

so the early rate covers the switchpoint year itself (PyMC's ``switch(switchpoint >= years,
early_rate, late_rate)``), and :math:`s = t_T` puts every year on the early rate (the no-change
model with rate :math:`e`; :math:`l` then stays at its prior). With ``a = b = 1`` the rates are
PyMC's ``Exponential(1)``.

Given :math:`s`, each segment with :math:`n` years and :math:`S` disasters is Poisson-Gamma:
since :math:`\mathrm{Poisson}(y; \lambda)^\beta = e^{\beta(y\log\lambda - \lambda - \log y!)}`,

.. math::
    \int \mathrm{Gamma}(\lambda; a, b)\,e^{\beta(S\log\lambda - n\lambda)}\,d\lambda
    = \frac{b^a\,\Gamma(a + \beta S)}{\Gamma(a)\,(b + \beta n)^{a + \beta S}},

and :math:`Z_\beta = e^{-\beta\sum_i\log y_i!}\,T^{-1}\sum_s \prod_{\text{segments}}(\cdot)`.
Its :math:`\beta`-derivatives per switchpoint are closed forms too (digamma and trigamma),
which gives :math:`E_\beta[\ell]` and :math:`\mathrm{Var}_\beta[\ell]` exactly at every
:math:`\beta \in [0, 1]`. NumPy/SciPy only, except the model builders, which import PyMC when
called.
"""

from typing import NamedTuple

import numpy as np
from scipy.special import gammaln, logsumexp, polygamma, psi

from pymc_tempering.exact.datasets import coal_mining_disasters

__all__ = [
    "CHANGE_POINT_PRIOR",
    "ChangePointPosterior",
    "change_point_model",
    "no_change_model",
    "change_point_log_evidence",
    "change_point_posterior",
    "change_point_power_moments",
    "no_change_log_evidence",
    "no_change_power_moments",
]

#: Gamma shape ``alpha`` and rate of both Poisson rates: PyMC's ``Exponential(1)``.
CHANGE_POINT_PRIOR = {"alpha": 1.0, "rate": 1.0}


class ChangePointPosterior(NamedTuple):
    """Exact posterior of :func:`change_point_model`: ``probability[i]`` is
    :math:`P(s = \\text{switchpoint}[i] \\mid y)`; the rate means are :math:`E[e \\mid y]` and
    :math:`E[l \\mid y]`."""

    switchpoint: np.ndarray
    probability: np.ndarray
    early_rate_mean: float
    late_rate_mean: float


def _data(years, counts):
    """The coal-mining series by default; checked 1-D integer counts with one year each."""
    if counts is None:
        default = coal_mining_disasters()
        years = default.years if years is None else years
        counts = default.counts
    counts = np.asarray(counts)
    years = np.arange(counts.size) if years is None else np.asarray(years)
    if counts.ndim != 1 or counts.size < 2 or years.shape != counts.shape:
        raise ValueError(
            f"`counts` must be 1-D with at least 2 values and `years` the same shape, got "
            f"shapes {counts.shape} and {years.shape}."
        )
    if np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise ValueError("`counts` must hold non-negative integers.")
    if np.any(np.diff(years) <= 0):
        raise ValueError("`years` must increase strictly.")
    return years, counts.astype(float)


def _segments(counts):
    """Years ``n`` and counts ``S`` of the early (``[:, 0]``) and late segment by switchpoint."""
    n_early = np.arange(1, counts.size + 1, dtype=float)
    s_early = np.cumsum(counts)
    n = np.column_stack([n_early, counts.size - n_early])
    s = np.column_stack([s_early, counts.sum() - s_early])
    return n, s


def _log_segment(beta, n, s, alpha, rate):
    """log of the segment integral above, elementwise (0 for an empty segment)."""
    a = alpha + beta * s
    return alpha * np.log(rate) - gammaln(alpha) + gammaln(a) - a * np.log(rate + beta * n)


def _per_switchpoint(beta, counts, alpha, rate):
    """Per switchpoint: log of ``T^-1 Z_beta(s)``, and d/dbeta, d2/dbeta2 of ``log Z_beta(s)``."""
    n, s = _segments(counts)
    log_y_factorial = gammaln(counts + 1.0).sum()
    log_z = (
        _log_segment(beta, n, s, alpha, rate).sum(1) - beta * log_y_factorial - np.log(counts.size)
    )
    a, r = alpha + beta * s, rate + beta * n
    first = (s * psi(a) - s * np.log(r) - a * n / r).sum(1) - log_y_factorial
    second = (s**2 * polygamma(1, a) - 2.0 * s * n / r + a * n**2 / r**2).sum(1)
    return log_z, first, second


def change_point_log_evidence(beta=1.0, *, years=None, counts=None, alpha=1.0, rate=1.0):
    r"""Exact :math:`\log Z_\beta` of :func:`change_point_model` (sum over switchpoints).

    Parameters
    ----------
    beta : float, default 1.0
        Power of the likelihood, in [0, 1]; 1 gives the marginal likelihood, 0 gives 0.
    years : array_like, optional
        Strictly increasing labels of the years, one per count; default the coal-mining years
        (with default ``counts``), else ``0, 1, ...``. They only label the switchpoints and do
        not change :math:`Z`.
    counts : array_like, optional
        Non-negative integer counts per year, at least 2; default
        :func:`pymc_tempering.exact.datasets.coal_mining_disasters`.
    alpha : float, default 1.0
        Gamma shape of both Poisson rates.
    rate : float, default 1.0
        Gamma rate of both Poisson rates.

    Returns
    -------
    float

    Examples
    --------
    >>> round(change_point_log_evidence(), 4)
    -177.8042
    """
    years, counts = _data(years, counts)
    log_z, _, _ = _per_switchpoint(_beta(beta), counts, float(alpha), float(rate))
    return float(logsumexp(log_z))


def change_point_posterior(*, years=None, counts=None, alpha=1.0, rate=1.0):
    r"""Exact posterior of the switchpoint and of the two rates' means.

    :math:`P(s \mid y) \propto Z(s)`, and given :math:`s` the rates are independent
    :math:`\mathrm{Gamma}(a + S, b + n)` of their own segment (the prior for an empty segment),
    so :math:`E[e \mid y] = \sum_s P(s \mid y)\,(a + S_1(s))/(b + n_1(s))`.

    Parameters
    ----------
    years : array_like, optional
        Strictly increasing labels of the years, one per count; default the coal-mining years
        (with default ``counts``), else ``0, 1, ...``. They only label the switchpoints and do
        not change :math:`Z`.
    counts : array_like, optional
        Non-negative integer counts per year, at least 2; default
        :func:`pymc_tempering.exact.datasets.coal_mining_disasters`.
    alpha : float, default 1.0
        Gamma shape of both Poisson rates.
    rate : float, default 1.0
        Gamma rate of both Poisson rates.

    Returns
    -------
    ChangePointPosterior
    """
    years, counts = _data(years, counts)
    alpha, rate = float(alpha), float(rate)
    log_z, _, _ = _per_switchpoint(1.0, counts, alpha, rate)
    probability = np.exp(log_z - logsumexp(log_z))
    n, s = _segments(counts)
    means = (alpha + s) / (rate + n)
    return ChangePointPosterior(
        years.copy(),
        probability,
        float(probability @ means[:, 0]),
        float(probability @ means[:, 1]),
    )


def change_point_power_moments(betas, *, years=None, counts=None, alpha=1.0, rate=1.0):
    r"""Exact :math:`E_\beta[\ell]` and :math:`\mathrm{Var}_\beta[\ell]` of
    :func:`change_point_model` on every rung.

    With :math:`w_s \propto Z_\beta(s)` and :math:`d_s, d_s'` the first two
    :math:`\beta`-derivatives of :math:`\log Z_\beta(s)` (closed forms in digamma and
    trigamma): :math:`E_\beta[\ell] = \sum_s w_s d_s` and :math:`\mathrm{Var}_\beta[\ell] =
    \sum_s w_s(d_s' + d_s^2) - E_\beta[\ell]^2`. The first integrates to :math:`\log Z` over
    [0, 1] (thermodynamic integration); both are finite at :math:`\beta = 0`.

    Parameters
    ----------
    betas : array_like
        Inverse temperatures in [0, 1].
    years : array_like, optional
        Strictly increasing labels of the years, one per count; default the coal-mining years
        (with default ``counts``), else ``0, 1, ...``. They only label the switchpoints and do
        not change :math:`Z`.
    counts : array_like, optional
        Non-negative integer counts per year, at least 2; default
        :func:`pymc_tempering.exact.datasets.coal_mining_disasters`.
    alpha : float, default 1.0
        Gamma shape of both Poisson rates.
    rate : float, default 1.0
        Gamma rate of both Poisson rates.

    Returns
    -------
    mean, var : ndarray
        One value per ``beta``.
    """
    years, counts = _data(years, counts)
    moments = []
    for beta in np.atleast_1d(np.asarray(betas, dtype=float)):
        log_z, first, second = _per_switchpoint(_beta(beta), counts, float(alpha), float(rate))
        w = np.exp(log_z - logsumexp(log_z))
        mean = w @ first
        moments.append((mean, w @ (second + first**2) - mean**2))
    mean, var = np.array(moments).T
    return mean, var


def no_change_log_evidence(beta=1.0, *, counts=None, alpha=1.0, rate=1.0):
    r"""Exact :math:`\log Z_\beta` of :func:`no_change_model`: one rate for every year,
    :math:`\lambda \sim \mathrm{Gamma}(a, b)` (one Poisson-Gamma segment).

    Parameters
    ----------
    beta : float, default 1.0
        Power of the likelihood, in [0, 1]; 1 gives the marginal likelihood, 0 gives 0.
    counts : array_like, optional
        Non-negative integer counts per year, at least 2; default
        :func:`pymc_tempering.exact.datasets.coal_mining_disasters`.
    alpha : float, default 1.0
        Gamma shape of the rate.
    rate : float, default 1.0
        Gamma rate of the rate.

    Returns
    -------
    float

    Examples
    --------
    >>> round(no_change_log_evidence(), 4)
    -206.7375
    """
    _, counts = _data(None, counts)
    beta = _beta(beta)
    value = _log_segment(beta, counts.size, counts.sum(), float(alpha), float(rate))
    return float(value - beta * gammaln(counts + 1.0).sum())


def no_change_power_moments(betas, *, counts=None, alpha=1.0, rate=1.0):
    r""":math:`E_\beta[\ell]` and :math:`\mathrm{Var}_\beta[\ell]` of :func:`no_change_model`
    (the one-segment case of :func:`change_point_power_moments`).

    Parameters
    ----------
    betas : array_like
        Inverse temperatures in [0, 1].
    counts : array_like, optional
        Non-negative integer counts per year, at least 2; default
        :func:`pymc_tempering.exact.datasets.coal_mining_disasters`.
    alpha : float, default 1.0
        Gamma shape of the rate.
    rate : float, default 1.0
        Gamma rate of the rate.

    Returns
    -------
    mean, var : ndarray
        One value per ``beta``.
    """
    _, counts = _data(None, counts)
    n, s, a0 = counts.size, counts.sum(), float(alpha)
    betas = np.atleast_1d(np.asarray(betas, dtype=float))
    a, r = a0 + betas * s, float(rate) + betas * n
    mean = s * psi(a) - s * np.log(r) - a * n / r - gammaln(counts + 1.0).sum()
    var = s**2 * polygamma(1, a) - 2.0 * s * n / r + a * n**2 / r**2
    return mean, var


def _beta(beta):
    beta = float(beta)
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"`beta` must lie in [0, 1], got {beta}.")
    return beta


def change_point_model(*, years=None, counts=None, alpha=1.0, rate=1.0):
    """PyMC model of the change point with the priors of the exact references.

    Free variables ``switchpoint`` (``DiscreteUniform(years[0], years[-1])``), ``early_rate``
    and ``late_rate`` (``Gamma(alpha, beta=rate)``); observed ``disasters`` (Poisson, early
    rate for ``years <= switchpoint``). Its exact answers: :func:`change_point_log_evidence`,
    :func:`change_point_posterior`, :func:`change_point_power_moments`.

    Parameters
    ----------
    years : array_like, optional
        Strictly increasing labels of the years, one per count; default the coal-mining years
        (with default ``counts``), else ``0, 1, ...``. They only label the switchpoints and do
        not change :math:`Z`.
    counts : array_like, optional
        Non-negative integer counts per year, at least 2; default
        :func:`pymc_tempering.exact.datasets.coal_mining_disasters`.
    alpha : float, default 1.0
        Gamma shape of both Poisson rates.
    rate : float, default 1.0
        Gamma rate of both Poisson rates.

    Returns
    -------
    pymc.Model
    """
    import pymc as pm

    years, counts = _data(years, counts)
    with pm.Model(coords={"year": years}) as model:
        switchpoint = pm.DiscreteUniform("switchpoint", lower=int(years[0]), upper=int(years[-1]))
        early = pm.Gamma("early_rate", alpha=float(alpha), beta=float(rate))
        late = pm.Gamma("late_rate", alpha=float(alpha), beta=float(rate))
        rates = pm.math.switch(switchpoint >= years, early, late)
        pm.Poisson("disasters", rates, observed=counts.astype(np.int64), dims="year")
    return model


def no_change_model(*, counts=None, alpha=1.0, rate=1.0):
    """PyMC model with one Poisson rate ``rate ~ Gamma(alpha, beta=rate)`` for every year, the
    alternative to :func:`change_point_model`; exact answer :func:`no_change_log_evidence`.

    Parameters
    ----------
    counts : array_like, optional
        Non-negative integer counts per year, at least 2; default
        :func:`pymc_tempering.exact.datasets.coal_mining_disasters`.
    alpha : float, default 1.0
        Gamma shape of the rate.
    rate : float, default 1.0
        Gamma rate of the rate.

    Returns
    -------
    pymc.Model
    """
    import pymc as pm

    years, counts = _data(None, counts)
    with pm.Model() as model:
        lam = pm.Gamma("rate", alpha=float(alpha), beta=float(rate))
        pm.Poisson("disasters", lam, observed=counts.astype(np.int64))
    return model
