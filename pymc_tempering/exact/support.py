r"""Two models whose :math:`E_0[\ell] = -\infty`: a uniform likelihood whose support
depends on a parameter, and a hard constraint written as a Potential. Thermodynamic integration
fails on both in ways stepping stone does not; the exact values here say by how much.
NumPy/SciPy only.
"""

import numpy as np
from scipy import stats
from scipy.special import log_ndtr

from pymc_tempering.exact.conjugate import lecture_log_evidence


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

    Parameters
    ----------
    y : array_like, shape (n,)
        The observations.
    width : float, default 10.0
        :math:`w`, the width of the uniform likelihood's support.

    Returns
    -------
    float
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
        The observations.
    width : float, default 10.0
        :math:`w`, the width of the uniform likelihood's support.

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
    :math:`\ell = -\infty`).

    Parameters
    ----------
    y : array_like, shape (n,)
        The observations.
    betas : array_like
        Inverse temperatures in [0, 1].
    width : float, default 10.0
        :math:`w`, the width of the uniform likelihood's support.

    Returns
    -------
    ndarray
        One value per ``beta``.
    """
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

    Parameters
    ----------
    y : array_like, shape (n,)
        The observations.

    Returns
    -------
    float

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

    Parameters
    ----------
    y : array_like, shape (n,)
        The observations.
    betas : array_like
        Inverse temperatures in [0, 1].

    Returns
    -------
    ndarray
        One value per ``beta``.
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
