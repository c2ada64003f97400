r"""Singular learning theory from power-posterior draws: the NumPy cores. No PyMC import.

Watanabe's WBIC (2013), the learning coefficient (real log canonical threshold) :math:`\lambda`
by the two-temperature and the fluctuation estimators, and the local learning coefficient
(LLC, Lau et al. 2023). The log-likelihood :math:`\ell(w) = \sum_i \log p(x_i \mid w) = -nL_n(w)
+ \text{const}` is what ExchangeMC records per rung, so with :math:`E_\beta` the mean under
:math:`\propto \varphi(w)e^{\beta\ell(w)}`:

* :math:`\mathrm{WBIC} = E_{\beta^*}[-\ell]`, :math:`\beta^* = 1/\log n` (Watanabe 2013,
  eq. 8): it estimates the free energy :math:`F = -\log Z` to :math:`O_p(\sqrt{\log n})`.
* two-temperature: :math:`\hat\lambda = (E_{\beta_1}[-\ell] - E_{\beta_2}[-\ell]) /
  (1/\beta_1 - 1/\beta_2)` (Watanabe 2013, Corollary 3), since
  :math:`E_\beta[-\ell] \approx nL_n(w_0) + \lambda/\beta`;
* fluctuation: :math:`\hat\lambda = \beta^2\,\mathrm{Var}_\beta[\ell]`, the derivative of the
  same relation (:math:`dE_\beta[\ell]/d\beta = \mathrm{Var}_\beta[\ell]`);
* LLC: :math:`\hat\lambda(w^*) = n\beta^*(E[L_n(w)] - L_n(w^*)) = \beta^*(\ell(w^*) -
  E[\ell(w)])` under the localised tempered posterior.

Every function returns per-draw terms whose mean is the estimate (the delta-method influence
of each draw added to the estimate, as :func:`pymc_tempering.evidence.core.tempered.ti_draws` does),
so an autocorrelation-aware MCSE of their mean is the estimate's MCSE, with the correlation
between rungs (both rungs of a two-temperature pair come from the same sweeps) included.
Where the wanted :math:`\beta` is not a rung, :func:`reweighted_moments` reads it from a
neighbouring rung by self-normalised importance weights :math:`e^{(\beta - \beta_l)\ell}`, at
the cost in ESS that it reports.
"""

import numpy as np

__all__ = [
    "reweighted_moments",
    "wbic_draws",
    "fluctuation_draws",
    "two_temperature_draws",
    "learning_coefficient_curve",
    "llc_draws",
    "localization_term",
    "check_localization",
    "diagonal_curvature",
    "default_localization",
    "confinement_draws",
    "confinement_shares",
    "virial_draws",
]

#: The share of the estimate the default localization may take in a direction of median
#: curvature (docs/decisions/060-llc-default-localization.md).
LOCALIZATION_SHARE = 0.05


def reweighted_moments(loglik, delta_beta=0.0):
    r"""Mean and variance of ``loglik`` under :math:`\beta_l + \delta`, from draws at
    :math:`\beta_l`, with the per-draw terms of both.

    Self-normalised importance sampling with weights :math:`w_d \propto e^{\delta\ell_d}`,
    :math:`W_d = w_d / \bar w`: :math:`\hat m = \overline{W\ell}`, :math:`\hat V =
    \overline{W(\ell - \hat m)^2}`; the terms :math:`\hat m + W_d(\ell_d - \hat m)` and
    :math:`\hat V + W_d((\ell_d - \hat m)^2 - \hat V)` have means :math:`\hat m` and
    :math:`\hat V` and carry each draw's influence (delta method). ``delta_beta = 0`` gives
    the plain mean, the draws themselves, and the ``ddof=0`` variance.

    Parameters
    ----------
    loglik : array_like
        Finite log-likelihood draws of one rung, any shape (e.g. ``(chain, draw)``).
    delta_beta : float, default 0.0
        :math:`\delta`, the target's :math:`\beta` minus the rung's.

    Returns
    -------
    mean, var : float
    mean_terms, var_terms : ndarray
        ``loglik``'s shape.
    ess_fraction : float
        Kish's :math:`(\sum w)^2 / (S\sum w^2)`: the share of the draws' ESS that survives the
        reweighting (1 for ``delta_beta = 0``).

    Examples
    --------
    >>> m, v, mt, vt, f = reweighted_moments(np.array([1.0, 2.0, 3.0]))
    >>> float(m), float(v), float(f)
    (2.0, 0.6666666666666666, 1.0)
    """
    loglik = np.asarray(loglik, dtype=float)
    if not np.all(np.isfinite(loglik)):
        raise ValueError(
            "`loglik` holds non-finite values; WBIC and the learning coefficient need a rung "
            "with beta > 0, where every draw has a finite log-likelihood."
        )
    if delta_beta == 0:
        weights = np.ones_like(loglik)
    else:
        log_w = float(delta_beta) * loglik
        weights = np.exp(log_w - log_w.max())
        weights = weights / weights.mean()
    mean = float(np.mean(weights * loglik))
    squares = (loglik - mean) ** 2
    var = float(np.mean(weights * squares))
    mean_terms = mean + weights * (loglik - mean)
    var_terms = var + weights * (squares - var)
    ess_fraction = float(1.0 / np.mean(weights**2))
    return mean, var, mean_terms, var_terms, ess_fraction


def wbic_draws(loglik, delta_beta=0.0):
    r"""Per-draw terms of WBIC, :math:`E_{\beta^*}[-\ell]`, from one rung's draws (reweighted by
    ``delta_beta`` = :math:`\beta^* - \beta_l` when the rung is not at :math:`\beta^*`).

    Returns
    -------
    terms : ndarray
        Mean = WBIC.
    ess_fraction : float
        As :func:`reweighted_moments`.
    """
    _, _, mean_terms, _, ess_fraction = reweighted_moments(loglik, delta_beta)
    return -mean_terms, ess_fraction


def fluctuation_draws(loglik, beta, delta_beta=0.0):
    r"""Per-draw terms of the fluctuation estimator :math:`\beta^2\,\mathrm{Var}_\beta[\ell]`
    at :math:`\beta` = ``beta``, from draws at ``beta - delta_beta``.

    Returns
    -------
    terms : ndarray
        Mean = :math:`\beta^2\hat V`.
    ess_fraction : float
    """
    _, _, _, var_terms, ess_fraction = reweighted_moments(loglik, delta_beta)
    return float(beta) ** 2 * var_terms, ess_fraction


def two_temperature_draws(loglik_1, loglik_2, beta_1, beta_2):
    r"""Per-draw terms of Watanabe's two-temperature estimator of :math:`\lambda`.

    :math:`(E_{\beta_1}[-\ell] - E_{\beta_2}[-\ell]) / (1/\beta_1 - 1/\beta_2)` from draws of
    two rungs recorded at the same sweeps (arrays of equal shape), so that the terms' MCSE
    includes the rungs' correlation.

    Returns
    -------
    ndarray
        ``loglik_1``'s shape; mean = the estimate.
    """
    beta_1, beta_2 = float(beta_1), float(beta_2)
    if not 0 < beta_1 < beta_2:
        raise ValueError(f"Need 0 < beta_1 < beta_2, got {beta_1} and {beta_2}.")
    loglik_1, loglik_2 = np.asarray(loglik_1, float), np.asarray(loglik_2, float)
    if loglik_1.shape != loglik_2.shape:
        raise ValueError(
            f"The two rungs' draws differ in shape: {loglik_1.shape} and {loglik_2.shape}."
        )
    return (loglik_2 - loglik_1) / (1.0 / beta_1 - 1.0 / beta_2)


def learning_coefficient_curve(betas, loglik, *, rung_axis=-1):
    r"""Both estimators of :math:`\lambda` at every rung (fluctuation) and rung pair
    (two-temperature) of a ladder, as per-draw terms.

    Parameters
    ----------
    betas : array_like, shape (n_rungs,)
        Strictly increasing; rungs with :math:`\beta = 0` get NaN (no :math:`\lambda` there).
    loglik : array_like
        Draws with the rungs on ``rung_axis``.

    Returns
    -------
    fluctuation : ndarray
        ``loglik``'s shape (rungs last): terms whose mean over draws is
        :math:`\beta_l^2\,\mathrm{Var}_{\beta_l}[\ell]`.
    two_temperature : ndarray
        Rungs-last, one fewer: the two-temperature terms of each pair ``(l, l + 1)``.
    """
    betas = np.asarray(betas, dtype=float)
    loglik = np.moveaxis(np.asarray(loglik, dtype=float), rung_axis, -1)
    if loglik.shape[-1] != betas.size or np.any(np.diff(betas) <= 0):
        raise ValueError("`betas` must be strictly increasing, one per rung of `loglik`.")
    fluctuation = np.full(loglik.shape, np.nan)
    pairs = np.full((*loglik.shape[:-1], betas.size - 1), np.nan)
    for rung, beta in enumerate(betas):
        if beta > 0:
            fluctuation[..., rung] = fluctuation_draws(loglik[..., rung], beta)[0]
            if rung + 1 < betas.size:
                pairs[..., rung] = two_temperature_draws(
                    loglik[..., rung], loglik[..., rung + 1], beta, betas[rung + 1]
                )
    return fluctuation, pairs


def llc_draws(loglik, loglik_center, beta):
    r"""Per-draw terms of the local learning coefficient :math:`\hat\lambda(w^*) =
    \beta(\ell(w^*) - E[\ell(w)])`, ``loglik`` the full-data log-likelihood of draws of the
    localised tempered posterior and ``loglik_center`` that of :math:`w^*`.

    Examples
    --------
    >>> llc_draws(np.array([-3.0, -5.0]), -2.0, 0.5)
    array([0.5, 1.5])
    """
    loglik = np.asarray(loglik, dtype=float)
    if not (np.all(np.isfinite(loglik)) and np.isfinite(loglik_center)):
        raise ValueError("The log-likelihoods of the draws and of the centre must be finite.")
    return float(beta) * (float(loglik_center) - loglik)


def localization_term(x, center, strength):
    r"""The LLC's localising log density :math:`-\tfrac\gamma2|x - w^*|^2` and its gradient
    :math:`-\gamma(x - w^*)` (``strength`` = :math:`\gamma`), added by the samplers' option
    ``localization=`` to the tempered log density; it is not tempered by :math:`\beta`.

    Examples
    --------
    >>> localization_term(np.array([1.0, 2.0]), np.array([1.0, 0.0]), 3.0)
    (-6.0, array([-0., -6.]))
    """
    diff = np.asarray(x, dtype=float) - center
    return -0.5 * strength * float(diff @ diff), -strength * diff


def check_localization(localization, center, vars_point_map):
    """``(strength, flat centre)`` from a sampler's ``localization`` and
    ``localization_center`` arguments; ``vars_point_map(center) -> flat array`` maps a dict
    of value-space arrays to the sampler's flat vector. ``(0.0, None)`` when off."""
    strength = 0.0 if localization is None else float(localization)
    if not (np.isfinite(strength) and strength >= 0):
        raise ValueError(
            f"`localization` (gamma of the term -gamma/2 |w - w*|^2) must be a finite number "
            f">= 0, got {localization}."
        )
    if strength == 0:
        return 0.0, None
    if center is None:
        raise ValueError(
            "`localization` needs `localization_center=` (w*): a dict {value variable name: "
            "array} in the transformed (value) space, as pm.find_MAP returns it."
        )
    flat = np.asarray(vars_point_map(center), dtype=np.float64)
    if not np.all(np.isfinite(flat)):
        raise ValueError(f"`localization_center` must be finite, got {center}.")
    return strength, flat


def diagonal_curvature(loglik_batch, center, rel_step=1e-3):
    r"""The likelihood's pull along each coordinate at :math:`w^*`: :math:`-\partial^2\ell /
    \partial w_j^2` by central second differences, clipped at 0.

    ``loglik_batch(points) -> loglik`` evaluates an ``(m, d)`` array of value-space points in one
    call; the step is ``rel_step * (1 + |w*_j|)``. Coordinates along which :math:`\ell` is flat
    to second order (a singular direction) get 0.

    Examples
    --------
    >>> def loglik(x): return -50.0 * x[:, 0] ** 2 - 0.0 * x[:, 1]
    >>> diagonal_curvature(loglik, np.zeros(2)).round(6)
    array([100.,   0.])
    """
    center = np.asarray(center, dtype=float)
    step = rel_step * (1.0 + np.abs(center))
    shifts = np.diag(step)
    points = np.concatenate([center[None], center + shifts, center - shifts])
    values = np.asarray(loglik_batch(points), dtype=float)
    d = center.size
    second = (values[1 : d + 1] - 2.0 * values[0] + values[d + 1 :]) / step**2
    return np.maximum(-second, 0.0)


def default_localization(curvature, beta, prior_curvature=None, share=LOCALIZATION_SHARE):
    r"""The default :math:`\gamma`: at most ``share`` of the estimate along every coordinate
    the likelihood pulls, and no more than the prior's own pull along a flat one.

    Along a quadratic direction of curvature :math:`h_j` (:func:`diagonal_curvature` of the
    log-likelihood) the localised tempered posterior has precision :math:`\beta h_j + p_j +
    \gamma` and a share :math:`\gamma / (\beta h_j + \gamma)` of that direction's
    :math:`\tfrac12` is lost: bounded by ``share`` where :math:`\gamma \le \tfrac{s}{1-s}\beta
    h_j`. Along a flat (singular) coordinate no :math:`\gamma` is small; there
    :math:`\gamma \le p_j`, the prior's curvature, at most doubles the confinement the model
    already has and keeps the sampler's arms short. Hence :math:`\gamma = \min_j
    \max(\tfrac{s}{1-s}\beta h_j, p_j)`; :func:`confinement_shares` measures what it costs.
    Derivation and measurements: ``docs/decisions/060-llc-default-localization.md``.

    Examples
    --------
    >>> round(default_localization(np.full(5, 1000.0), 1 / np.log(1000)), 3)   # n beta = 145
    7.619
    >>> default_localization([0.0, 1000.0], 0.1, prior_curvature=[1.0, 1.0])   # a flat one
    1.0
    """
    if not 0 < share < 1:
        raise ValueError(f"`share` must lie in (0, 1), got {share}.")
    pulled = share / (1.0 - share) * float(beta) * np.asarray(curvature, float)
    prior = np.zeros_like(pulled) if prior_curvature is None else np.asarray(prior_curvature)
    return float(np.min(np.maximum(pulled, prior)))


def confinement_draws(displacement, strength, prior_pull):
    r"""Per-draw terms of the confinement :math:`c = \tfrac12 E[\Delta\cdot\nabla C]`: the
    localization's :math:`\tfrac\gamma2|\Delta|^2` and the prior's
    :math:`-\tfrac12\Delta\cdot\nabla\log\varphi(w)`.

    Their means are :math:`c_\gamma` and :math:`c_\varphi`. Where :math:`L_n - L_n^*` is
    quadratic (a regular :math:`w^*`) the estimate's expectation is exactly :math:`d/2 - c`, so
    :math:`|c|` is the finite-:math:`\gamma` bias against :math:`\lambda = d/2`; where it is
    homogeneous of degree :math:`2\kappa > 2` (:math:`a^2b^2`: :math:`\kappa = 2`,
    :math:`\lambda = d/(2\kappa)`) the expectation is :math:`(d/2 - c)/\kappa` and the gap
    :math:`c/\kappa`, again at most :math:`|c|` (:func:`confinement_shares`,
    ``docs/decisions/060-llc-default-localization.md``).

    Parameters
    ----------
    displacement : ndarray, shape (..., d)
        :math:`\Delta = w - w^*` of each draw (value space).
    strength : float
        :math:`\gamma`.
    prior_pull : ndarray, shape (...)
        :math:`-\Delta\cdot\nabla\log\varphi(w)` of each draw.

    Returns
    -------
    localization, prior : ndarray
        ``displacement.shape[:-1]``.

    Examples
    --------
    >>> confinement_draws(np.array([[1.0, 2.0]]), 0.5, np.array([3.0]))
    (array([1.25]), array([1.5]))
    """
    displacement = np.asarray(displacement, dtype=float)
    localization = 0.5 * float(strength) * np.sum(displacement**2, axis=-1)
    return localization, 0.5 * np.asarray(prior_pull, dtype=float)


def confinement_shares(llc, displacement, strength, prior_pull):
    r"""The shares of the estimate that the localization and the prior take, from the draws.

    Integration by parts under the sampled density :math:`e^{-U}`, :math:`U = n\beta(L_n -
    L_n^*) + C`, gives :math:`E[\Delta\cdot\nabla U] = d` (:math:`\Delta = w - w^*`). Where
    :math:`L_n - L_n^*` is quadratic, :math:`\Delta\cdot\nabla` of it is twice itself, so
    :math:`\hat\lambda = d/2 - c` with :math:`c = \tfrac12 E[\Delta\cdot\nabla C]` exactly: the
    confinement :math:`C` (localization :math:`\tfrac\gamma2|\Delta|^2` and prior
    :math:`-\log\varphi`) takes the share :math:`c / (\hat\lambda + c)` of :math:`d/2`. Where
    :math:`L_n - L_n^*` grows faster (degree :math:`2\kappa > 2` along the singular set, e.g.
    :math:`a^2b^2`), the same ratio bounds the relative gap to the quasi-homogeneous
    :math:`\lambda` from above.

    Parameters
    ----------
    llc : float
        :math:`\hat\lambda`.
    displacement : ndarray, shape (draws, d)
        :math:`\Delta` of each draw (value space).
    strength : float
        :math:`\gamma`.
    prior_pull : ndarray, shape (draws,)
        :math:`-\Delta\cdot\nabla\log\varphi(w)` of each draw.

    Returns
    -------
    localization, prior : float
        :math:`c_\gamma / (\hat\lambda + c)` and :math:`c_\varphi / (\hat\lambda + c)`; NaN
        where :math:`\hat\lambda + c \le 0` (then :math:`w^*` is not a minimum).

    Examples
    --------
    >>> confinement_shares(2.0, np.ones((4, 2)), 0.25, np.full(4, 0.5))   # c = 0.25 + 0.25
    (0.1, 0.1)
    """
    loc_terms, prior_terms = confinement_draws(displacement, strength, prior_pull)
    c_loc, c_prior = float(np.mean(loc_terms)), float(np.mean(prior_terms))
    total = float(llc) + c_loc + c_prior
    if not total > 0:
        return np.nan, np.nan
    return c_loc / total, c_prior / total


def virial_draws(displacement, strength, beta, loglik_slope, prior_slope):
    r"""Per-draw terms of the target check :math:`\Delta\cdot\nabla U`, whose expectation
    under the localised tempered posterior :math:`\propto e^{-U}` is exactly :math:`d`.

    :math:`U = -\beta\ell - \log\varphi + \tfrac\gamma2|\Delta|^2`, :math:`\Delta = w -
    w^*`: :math:`\int \Delta\cdot\nabla U\,e^{-U} = -\int \Delta\cdot\nabla e^{-U} =
    \int (\nabla\cdot\Delta)\,e^{-U} = d\,Z` (integration by parts; the virial theorem),
    whatever :math:`\ell` and :math:`\varphi`, singular or not. A mean of these terms more
    than a few MCSE from :math:`d` says the draws do not follow that density. Blind to a law
    reweighted by direction alone (:math:`e^{-U}g(\Delta/|\Delta|)` also gives :math:`d`).

    Parameters
    ----------
    displacement : ndarray, shape (..., d)
        :math:`\Delta` of each draw (value space).
    strength, beta : float
        :math:`\gamma` and :math:`\beta`.
    loglik_slope, prior_slope : ndarray, shape (...)
        :math:`\Delta\cdot\nabla\ell` and :math:`\Delta\cdot\nabla\log\varphi` of each
        draw (the radial derivatives :math:`\tfrac{d}{dt}f(w^* + t\Delta)` at :math:`t = 1`).

    Returns
    -------
    ndarray
        ``displacement.shape[:-1]``.

    Examples
    --------
    >>> virial_draws(np.array([[1.0, 2.0]]), 0.5, 0.25, np.array([-4.0]), np.array([-1.0]))
    array([4.5])
    """
    displacement = np.asarray(displacement, dtype=float)
    localization = float(strength) * np.sum(displacement**2, axis=-1)
    return (
        localization
        - float(beta) * np.asarray(loglik_slope, float)
        - np.asarray(prior_slope, float)
    )
