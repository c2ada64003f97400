r"""The centred eight schools (Rubin 1981): :math:`\log Z_\beta` and
:math:`E_\beta[\ell]` by 1-D quadrature over :math:`\tau` (everything else integrates out).
NumPy/SciPy only.
"""

import numpy as np
import scipy.integrate

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
    y : array_like, default EIGHT_SCHOOLS_Y
        The schools' estimated effects :math:`y_j` (:data:`EIGHT_SCHOOLS_Y`).
    sigma : array_like, default EIGHT_SCHOOLS_SIGMA
        Their standard errors :math:`\sigma_j` (:data:`EIGHT_SCHOOLS_SIGMA`).
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
    y : array_like, default EIGHT_SCHOOLS_Y
        The schools' estimated effects :math:`y_j` (:data:`EIGHT_SCHOOLS_Y`).
    sigma : array_like, default EIGHT_SCHOOLS_SIGMA
        Their standard errors :math:`\sigma_j` (:data:`EIGHT_SCHOOLS_SIGMA`).
    **prior
        ``mu_sd`` and ``tau_scale``, as for :func:`eight_schools_log_evidence`.

    Returns
    -------
    ndarray
    """
    y, sigma = np.asarray(y, float), np.asarray(sigma, float)
    prior = EIGHT_SCHOOLS_PRIOR | prior
    betas = np.atleast_1d(np.asarray(betas, dtype=float))
    return np.array(
        [
            _schools_tau_quad(b, y, sigma, prior["mu_sd"], prior["tau_scale"])[1]
            if b > 0
            else -np.inf
            for b in betas
        ]
    )
