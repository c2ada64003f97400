r"""The seed paper's singular model (Nagata & Watanabe 2008): :math:`H(w) = \prod_j w_j^2`,
prior :math:`N(0, I_d)`, target :math:`e^{-nH(w)}\varphi(w)`.

Its stochastic complexity :math:`F(n) = -\log Z(n)` by 1-D quadrature (``d = 2``) or a
Mellin-Barnes contour integral (any ``d``), the paper's asymptotic eq. (4), and the exact per-rung
mean log-likelihood :math:`E_t[-nH]` that thermodynamic integration integrates; and the learning
coefficient of reduced-rank regression (Aoyagi & Watanabe 2005). NumPy/SciPy only.
"""

import warnings

import numpy as np
import scipy.integrate
from scipy import stats
from scipy.special import loggamma

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
        Sample size (the likelihood's scale), >= 0.
    betas : array_like
        Inverse temperatures in [0, 1].
    d : int, default 2
        The number of parameters :math:`w_j`.

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
        Sample size (the expansion is asymptotic in it).
    d : int, default 2
        The number of parameters :math:`w_j`.
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


# --- reduced-rank regression -------------------------------------------------------------------
def reduced_rank_learning_coefficient(n_inputs, n_outputs, n_hidden, true_rank):
    r"""The learning coefficient :math:`(\lambda, m)` of reduced-rank regression.

    The model :math:`y = BAx + \varepsilon`, :math:`A` of shape ``(H, M)``, :math:`B` of shape
    ``(N, H)``, Gaussian noise, a prior positive at the truth, and a true matrix of rank ``r``
    (:math:`M` = ``n_inputs``, :math:`N` = ``n_outputs``, :math:`H` = ``n_hidden``, :math:`r`
    = ``true_rank`` :math:`\le H`). Aoyagi & Watanabe (2005), Main Theorem:

    * :math:`N + r \le M + H`, :math:`M + r \le N + H`, :math:`H + r \le M + N`:
      :math:`\lambda = [2(H + r)(M + N) - (M - N)^2 - (H + r)^2 + \delta] / 8` with
      :math:`\delta = 0, m = 1` when :math:`M + N + H + r` is even and :math:`\delta = 1,
      m = 2` when it is odd;
    * :math:`M + H < N + r`: :math:`\lambda = (HM - Hr + Nr) / 2`;
    * :math:`N + H < M + r`: :math:`\lambda = (HN - Hr + Mr) / 2`;
    * :math:`M + N < H + r`: :math:`\lambda = MN / 2`; :math:`m = 1` in the last three.

    At :math:`r = H` (a regular point) it is half the dimension of the rank-:math:`H`
    matrices, :math:`(H(M + N) - H^2) / 2`.

    Parameters
    ----------
    n_inputs : int
        :math:`M`, the dimension of :math:`x`.
    n_outputs : int
        :math:`N`, the dimension of :math:`y`.
    n_hidden : int
        :math:`H`, the inner dimension of :math:`BA`.
    true_rank : int
        :math:`r \le H`, the rank of the true matrix.

    Returns
    -------
    tuple of (float, int)
        :math:`(\lambda, m)`.

    References
    ----------
    M. Aoyagi and S. Watanabe, "Stochastic complexities of reduced rank regression in Bayesian
    estimation", Neural Networks 18 (2005) 924-933.

    Examples
    --------
    >>> reduced_rank_learning_coefficient(3, 3, 2, 1)   # the 3-2-3 network, true rank 1
    (3.5, 2)
    """
    m_, n_, h_, r_ = (int(v) for v in (n_inputs, n_outputs, n_hidden, true_rank))
    if min(m_, n_, h_) < 1 or not 0 <= r_ <= h_:
        raise ValueError(
            "Need n_inputs, n_outputs, n_hidden >= 1 and 0 <= true_rank <= n_hidden; got "
            f"{(n_inputs, n_outputs, n_hidden, true_rank)}."
        )
    if m_ + h_ < n_ + r_:
        return (h_ * m_ - h_ * r_ + n_ * r_) / 2, 1
    if n_ + h_ < m_ + r_:
        return (h_ * n_ - h_ * r_ + m_ * r_) / 2, 1
    if m_ + n_ < h_ + r_:
        return m_ * n_ / 2, 1
    odd = (m_ + n_ + h_ + r_) % 2
    value = 2 * (h_ + r_) * (m_ + n_) - (m_ - n_) ** 2 - (h_ + r_) ** 2 + odd
    return value / 8, 1 + odd
