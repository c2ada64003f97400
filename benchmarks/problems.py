"""The problems that more than one benchmark measures, each with its exact answer.

A benchmark takes its shared problems from here and never imports another benchmark; a problem
only one benchmark uses stays in that benchmark, unless it is one of the tests' known models
(``tests/targets.py``), which reach the benchmarks through this module only. Every exact value
comes from :mod:`pymc_tempering.exact` (closed forms and quadrature, checked in
``tests/exact/``), except the closed forms of ``tests/targets.py``: the lecture model's
power-posterior moments and the conjugate regression's log Z.

A :class:`Problem` unpacks as ``model, log_evidence``.
"""

import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pymc as pm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import targets  # noqa: E402

from pymc_tempering import exact  # noqa: E402

__all__ = [
    "CORRELATED",
    "EVIDENCE_PROBLEMS",
    "Problem",
    "ar2_model",
    "ar_model",
    "changepoint_model",
    "eight_schools",
    "correlated_regression",
    "latent_ar1_model",
    "lecture",
    "lecture_power_moments",
    "logistic_regression",
    "radiata",
    "radiata_available",
    "regression",
    "singular",
    "singular_model",
    "two_mode_10d",
]


class Problem(NamedTuple):
    """A PyMC model and its exact log marginal likelihood."""

    model: pm.Model
    log_evidence: float


# --- evidence: regular, multimodal and singular models with exact log Z ------------------------


def lecture() -> Problem:
    """The seed lecture's model: x_i ~ N(mu, 1), mu ~ N(0, 1), n = 20 (``targets.lecture_data``)."""
    x = targets.lecture_data()
    return Problem(targets.lecture_model(x), exact.lecture_log_evidence(x))


def lecture_power_moments(betas):
    """Exact ``(E_beta[loglik], Var_beta[loglik])`` of :func:`lecture`'s model on each rung."""
    return targets.lecture_power_moments(targets.lecture_data(), 1.0, betas)


def radiata_available() -> bool:
    """Whether ``../shared/data/radiata_pine.csv`` is beside the repository."""
    return targets.radiata_pine_path() is not None


def radiata(covariate="x", noncentred=True) -> Problem:
    """Radiata pine (Williams 1959) under the Normal-Gamma prior, 3 parameters: M1 regresses on
    the density ``"x"``, M2 on the adjusted density ``"z"``; ``noncentred=False`` samples the
    data's raw parametrisation (intercept near 3000). Needs :func:`radiata_available`."""
    data = targets.radiata_pine_data()
    return Problem(
        targets.radiata_model(data["y"], data[covariate], noncentred=noncentred),
        exact.radiata_pine_log_evidence(data["y"], data[covariate]),
    )


def regression(X, y) -> Problem:
    """Conjugate linear regression with known noise (``tests/targets.py``): w ~ N(0, 2^2 I),
    y ~ N(X w, 0.7^2 I); exact log Z of ``y ~ N(0, 0.7^2 I + 2^2 X X^T)``."""
    return Problem(targets.regression_model(X, y), targets.regression_log_evidence(X, y))


def two_mode_10d() -> Problem:
    """Modes at -m and +m, m from 3 to 5 per axis (25 sds apart), weights 0.3 / 0.7, prior
    N(0, 20^2 I)."""
    half = np.linspace(3.0, 5.0, 10)
    means = (-half, half)
    return Problem(exact.two_mode_model(means=means), exact.two_mode_log_evidence(means=means))


def singular_model(n=100_000, d=2):
    """The seed paper's singular model: loglik ``-n prod_j w_j^2``, prior N(0, I_d)."""
    return targets.singular_model(n, d)


def singular(n=100_000, d=2) -> Problem:
    """:func:`singular_model` with its exact log Z = -F(n) (quadrature)."""
    return Problem(singular_model(n, d), -exact.singular_free_energy(n, d))


#: the problems of ``marginal_likelihood`` against ``pm.sample_smc`` and of the experiments
#: that set its defaults
EVIDENCE_PROBLEMS = {"two_mode_10d": two_mode_10d, "radiata": radiata}


# --- sampling efficiency: correlated posteriors and a logistic regression ---------------------


def correlated_regression(n=100, k=8, rho=0.95, seed=0):
    """Linear regression with equicorrelated predictors (not centred): the intercept and the
    coefficients are strongly correlated a posteriori."""
    rng = np.random.default_rng(seed)
    X = rng.multivariate_normal(np.zeros(k), rho + (1 - rho) * np.eye(k), size=n) + 2.0
    y = 1.0 + X @ rng.normal(size=k) + rng.normal(size=n)
    with pm.Model() as model:
        intercept = pm.Normal("intercept", 0, 10)
        coef = pm.Normal("coef", 0, 10, shape=k)
        sigma = pm.HalfNormal("sigma", 5)
        pm.Normal("y", intercept + pm.math.dot(X, coef), sigma, observed=y)
    return model


def ar2_model(n=200, seed=0):
    """An AR(2) series with a constant; the constant and the two lags are correlated."""
    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    for t in range(2, n):
        y[t] = 0.5 + 0.9 * y[t - 1] - 0.3 * y[t - 2] + rng.normal()
    with pm.Model() as model:
        const = pm.Normal("const", 0, 5)
        rho = pm.Normal("rho", 0, 1, shape=2)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", const + rho[0] * y[1:-1] + rho[1] * y[:-2], sigma, observed=y[2:])
    return model


def latent_ar1_model(n=50, seed=0):
    """A latent AR(1) state (rho = 0.95) observed with noise: 50 correlated parameters."""
    rng = np.random.default_rng(seed)
    z = np.zeros(n)
    for t in range(1, n):
        z[t] = 0.95 * z[t - 1] + 0.3 * rng.normal()
    y = z + 0.5 * rng.normal(size=n)
    with pm.Model() as model:
        state = pm.AR("z", rho=[0.95], sigma=0.3, init_dist=pm.Normal.dist(0, 1), steps=n - 1)
        pm.Normal("y", state, 0.5, observed=y)
    return model


def ar_model(p=5, n=300, seed=0):
    """An AR(p) series with a constant (coefficients 0.5, -0.2, 0.15, -0.1, 0.05 for p = 5): the
    constant and the p lags are strongly correlated a posteriori; p + 2 parameters."""
    rng = np.random.default_rng(seed)
    phi = np.array([0.5, -0.2, 0.15, -0.1, 0.05])[:p]
    y = np.zeros(n + p)
    for t in range(p, n + p):
        y[t] = 0.3 + phi @ y[t - p : t][::-1] + rng.normal()
    lags = np.stack([y[p - k : n + p - k] for k in range(1, p + 1)], axis=1)
    with pm.Model() as model:
        const = pm.Normal("const", 0, 5)
        rho = pm.Normal("rho", 0, 1, shape=p)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", const + pm.math.dot(lags, rho), sigma, observed=y[p:])
    return model


EIGHT_SCHOOLS_Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
EIGHT_SCHOOLS_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def eight_schools(centred=False):
    """Rubin's eight schools (Gelman et al., BDA3 5.5): mu ~ N(0, 5), tau ~ HalfCauchy(5), the
    school effects centred (a funnel) or non-centred; 10 parameters."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        tau = pm.HalfCauchy("tau", 5)
        if centred:
            theta = pm.Normal("theta", mu, tau, shape=8)
        else:
            theta = pm.Deterministic("theta", mu + tau * pm.Normal("eta", 0, 1, shape=8))
        pm.Normal("y", theta, EIGHT_SCHOOLS_SIGMA, observed=EIGHT_SCHOOLS_Y)
    return model


def changepoint_model(seed=0):
    """A discrete change point: Poisson counts of 60 years whose rate jumps from 3 to 1 at year
    40; the switch year (DiscreteUniform) and the two rates are sampled."""
    rng = np.random.default_rng(seed)
    counts = np.concatenate([rng.poisson(3.0, 40), rng.poisson(1.0, 20)])
    years = np.arange(counts.size)
    with pm.Model() as model:
        switch = pm.DiscreteUniform("switch", 0, counts.size - 1)
        early = pm.Exponential("early", 1.0)
        late = pm.Exponential("late", 1.0)
        pm.Poisson("counts", pm.math.switch(years < switch, early, late), observed=counts)
    return model


CORRELATED = {
    "corr-regression": correlated_regression,
    "ar2": ar2_model,
    "latent-ar1": latent_ar1_model,
}


def logistic_regression(n, k, prior_sd, seed=0):
    """Bayesian logistic regression: ``n`` rows of N(0, 1) predictors, ``k`` coefficients drawn
    from N(0, 1) for the data and given a N(0, prior_sd^2) prior."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, k))
    w = rng.normal(size=k)
    y = rng.binomial(1, 1 / (1 + np.exp(-X @ w))).astype("int32")
    with pm.Model() as model:
        coef = pm.Normal("coef", 0.0, prior_sd, shape=k)
        pm.Bernoulli("y", logit_p=pm.math.dot(X, coef), observed=y)
    return model


# --- posteriors that concentrate, for the variational reference (issue 32) ---------------------


def known_noise_regression_log_evidence(X, y, prior_sd=2.0, noise_sd=0.7):
    """Exact log Z of :func:`regression`'s model for any ``n``: ``y ~ N(0, s^2 I + p^2 X X^T)``
    by the matrix determinant lemma and Woodbury's identity (``k x k`` algebra only; the same
    value as ``targets.regression_log_evidence``, which forms the ``n x n`` covariance)."""
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    n, k = X.shape
    ratio = (prior_sd / noise_sd) ** 2
    gram, xty = X.T @ X, X.T @ y
    logdet = np.linalg.slogdet(np.eye(k) + ratio * gram)[1]
    quad = (y @ y - xty @ np.linalg.solve(gram + np.eye(k) / ratio, xty)) / noise_sd**2
    return float(-0.5 * n * np.log(2 * np.pi * noise_sd**2) - 0.5 * logdet - 0.5 * quad)


def large_regression(n=100_000, k=5, seed=0, prior_sd=2.0, noise_sd=0.7, sufficient=True):
    """Conjugate linear regression with known noise, ``n`` rows of ``k`` N(0, 1) predictors
    (the first a column of ones), w ~ N(0, prior_sd^2 I); exact log Z by
    :func:`known_noise_regression_log_evidence`. ``sufficient=True`` writes the same
    log-likelihood through ``X^T X``, ``X^T y`` and ``y^T y`` as a Potential (a cost per
    evaluation independent of ``n``; the posterior and log Z are those of the ``n`` rows);
    ``False`` observes ``y`` row by row (:func:`regression`)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, k - 1))])
    y = X @ rng.normal(size=k) + noise_sd * rng.standard_normal(n)
    exact_log_z = known_noise_regression_log_evidence(X, y, prior_sd, noise_sd)
    if not sufficient:
        return Problem(targets.regression_model(X, y, prior_sd, noise_sd), exact_log_z)
    gram, xty, yty = X.T @ X, X.T @ y, float(y @ y)
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, prior_sd, shape=k)
        rss = yty - 2.0 * pm.math.dot(xty, w) + pm.math.dot(w, pm.math.dot(gram, w))
        const = -0.5 * n * np.log(2 * np.pi * noise_sd**2)
        pm.Potential("loglik", const - 0.5 * rss / noise_sd**2)
    return Problem(model, exact_log_z)


def hierarchical_model(n_groups=50, per_group=40, seed=0):
    """Normal hierarchical model, centred: theta_j ~ N(mu, tau^2), y_ij ~ N(theta_j, sigma^2),
    mu ~ N(0, 10^2), tau ~ HalfNormal(10), sigma ~ HalfNormal(10); ``n_groups + 3``
    parameters, data from mu = 1, tau = 2, sigma = 1.5 (``per_group`` rows per group)."""
    rng = np.random.default_rng(seed)
    theta = 1.0 + 2.0 * rng.standard_normal(n_groups)
    group = np.repeat(np.arange(n_groups), per_group)
    y = theta[group] + 1.5 * rng.standard_normal(group.size)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        tau = pm.HalfNormal("tau", 10.0)
        sigma = pm.HalfNormal("sigma", 10.0)
        effects = pm.Normal("theta", mu, tau, shape=n_groups)
        pm.Normal("y", effects[group], sigma, observed=y)
    return model


def radiata_vague(covariate="x", scale=0.01) -> Problem:
    """:func:`radiata`, non-centred, under a vaguer Normal-Gamma prior: the coefficients'
    prior precision times ``scale`` (prior sds ``1 / sqrt(scale)`` times wider), so the
    posterior is a smaller part of the prior. Needs :func:`radiata_available`."""
    data = targets.radiata_pine_data()
    prior = dict(exact.RADIATA_PINE_PRIOR)
    prior["precision"] = prior["precision"] * scale
    return Problem(
        targets.radiata_model(data["y"], data[covariate], prior=prior, noncentred=True),
        exact.radiata_pine_log_evidence(data["y"], data[covariate], prior=prior),
    )


def egg_box() -> Problem:
    """The egg box of Feroz, Hobson & Bridges (2009) (``exact.egg_box_model``), exact log Z."""
    return Problem(exact.egg_box_model(), exact.egg_box_log_evidence())


__all__ += [
    "egg_box",
    "hierarchical_model",
    "known_noise_regression_log_evidence",
    "large_regression",
    "radiata_vague",
]


def gaussian_shells(d=2, radius=2.0, width=0.1, centre=3.5, half_width=6.0) -> Problem:
    """Feroz & Hobson (2008)'s Gaussian shells: a uniform prior on ``[-6, 6]^d`` and the
    likelihood ``sum_i N(|x - c_i|; radius, width^2)`` of two thin shells centred at
    ``(+-3.5, 0, ..., 0)``. Exact log Z by 1-D radial quadrature, each shell's integral
    ``S_{d-1} int N(rho; radius, width^2) rho^(d-1) d rho`` (the shells lie inside the box to
    5 widths and do not overlap): -1.746 (d = 2), -5.674 (5), -14.59 (10), as published."""
    import pytensor.tensor as pt
    from scipy import integrate, special

    centres = np.zeros((2, d))
    centres[:, 0] = (-centre, centre)
    with pm.Model() as model:
        x = pm.Uniform("x", -half_width, half_width, shape=d)
        dist = pt.sqrt(((x[None, :] - centres) ** 2).sum(axis=1))
        per_shell = -0.5 * ((dist - radius) / width) ** 2 - 0.5 * np.log(2 * np.pi * width**2)
        pm.Potential("loglik", pm.math.logsumexp(per_shell))
    log_sphere = np.log(2) + 0.5 * d * np.log(np.pi) - special.gammaln(0.5 * d)

    def radial(rho):
        z = (rho - radius) / width
        return np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi * width**2) * rho ** (d - 1)

    lo, hi = max(radius - 12 * width, 0.0), radius + 12 * width
    shell = integrate.quad(radial, lo, hi, epsabs=0, epsrel=1e-12)[0]
    log_z = np.log(2 * shell) + log_sphere - d * np.log(2 * half_width)
    return Problem(model, float(log_z))


__all__ += ["gaussian_shells"]
