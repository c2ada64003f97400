"""Known models with exact answers, for the evidence tests and benchmarks (and anyone else).

Each builder returns a PyMC model with proper priors; the exact log marginal likelihoods come
from :mod:`pymc_tempering.exact` (checked against brute-force integrals in tests/exact/) or are
computed here in closed form.
"""

from pathlib import Path

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import stats
from scipy.special import betaln

from pymc_tempering.exact import (
    EIGHT_SCHOOLS_SIGMA,
    EIGHT_SCHOOLS_Y,
    lecture_log_evidence,  # noqa: F401 - re-exported for the tests
    read_radiata_pine,
    singular_free_energy,  # noqa: F401
    singular_free_energy_asymptotic,  # noqa: F401
)
from pymc_tempering.exact import RADIATA_PINE_PRIOR as RADIATA_PRIOR
from pymc_tempering.exact import radiata_pine_log_evidence as radiata_log_evidence  # noqa: F401

# --- the seed lecture's model: x_i ~ N(mu, 1), mu ~ N(0, b^2) ----------------------------------


def lecture_data(n=20, true_mu=0.5, seed=20):
    """``n`` points from N(true_mu, 1), as in the empirical-Bayes lecture's exercise."""
    return np.random.default_rng(seed).normal(true_mu, 1.0, size=n)


def lecture_model(x, b=1.0):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, b)
        pm.Normal("x", mu, 1.0, observed=x)
    return model


def _lecture_power_posterior(x, b, betas):
    """Mean and sd of mu under prior * lik**beta (Gaussian, conjugate)."""
    betas = np.asarray(betas, dtype=float)
    precision = 1.0 / b**2 + betas * len(x)
    return betas * np.sum(x) / precision, 1.0 / np.sqrt(precision)


def lecture_power_moments(x, b, betas):
    """Closed-form ``E_beta[loglik]`` and ``Var_beta[loglik]`` (= dE/dbeta) on each rung.

    ``loglik = c - (S + n (mu - xbar)^2) / 2`` with ``S = sum (x - xbar)^2``; under the power
    posterior ``mu - xbar ~ N(delta, s^2)``, so ``E = c - (S + n (delta^2 + s^2)) / 2`` and
    ``Var = n^2 (2 s^4 + 4 delta^2 s^2) / 4``.
    """
    n, xbar = len(x), np.mean(x)
    c = -0.5 * n * np.log(2 * np.pi)
    s_within = np.sum((x - xbar) ** 2)
    mean_mu, sd_mu = _lecture_power_posterior(x, b, betas)
    delta = mean_mu - xbar
    mean = c - 0.5 * (s_within + n * (delta**2 + sd_mu**2))
    var = 0.25 * n**2 * (2 * sd_mu**4 + 4 * delta**2 * sd_mu**2)
    return mean, var


def lecture_power_draws(x, b, betas, n_chains, n_draws, rng):
    """Independent ``loglik`` draws from every exact power posterior, shape (chain, draw, rung)."""
    mean_mu, sd_mu = _lecture_power_posterior(x, b, betas)
    mu = mean_mu + sd_mu * rng.standard_normal((n_chains, n_draws, len(betas)))
    n, xbar = len(x), np.mean(x)
    s_within = np.sum((x - xbar) ** 2)
    return -0.5 * n * np.log(2 * np.pi) - 0.5 * (s_within + n * (mu - xbar) ** 2)


# --- conjugate linear regression with known noise ----------------------------------------------


def regression_data(n=30, seed=3):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=n), rng.uniform(-1, 1, size=n)])
    y = X @ np.array([0.5, -1.0, 2.0]) + 0.7 * rng.standard_normal(n)
    return X, y


def regression_model(X, y, prior_sd=2.0, noise_sd=0.7):
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, prior_sd, shape=X.shape[1])
        pm.Normal("y", pt.dot(X, w), noise_sd, observed=y)
    return model


def regression_log_evidence(X, y, prior_sd=2.0, noise_sd=0.7):
    """Exact log Z: ``y ~ N(0, noise_sd^2 I + prior_sd^2 X X^T)``."""
    cov = noise_sd**2 * np.eye(len(y)) + prior_sd**2 * X @ X.T
    return float(stats.multivariate_normal(np.zeros(len(y)), cov).logpdf(y))


# --- Beta-Bernoulli ----------------------------------------------------------------------------


def bernoulli_data(n=40, p=0.3, seed=5):
    return np.random.default_rng(seed).binomial(1, p, size=n).astype(np.int32)


def bernoulli_model(y, a=2.0, b=3.0):
    with pm.Model() as model:
        p = pm.Beta("p", a, b)
        pm.Bernoulli("y", p, observed=y)
    return model


def bernoulli_log_evidence(y, a=2.0, b=3.0):
    """Exact log Z = log B(a + k, b + n - k) - log B(a, b), k successes in n trials."""
    k, n = int(np.sum(y)), len(y)
    return float(betaln(a + k, b + n - k) - betaln(a, b))


# --- the seed paper's singular model: H(w) = prod_j w_j^2, prior N(0, I_d) ------------------------


def singular_model(n, d=2):
    """Target ``exp(-n H(w)) phi(w)``: loglik is the Potential ``-n prod_j w_j^2``."""
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 1.0, shape=d)
        pm.Potential("loglik", -n * pt.prod(w**2))
    return model


# --- radiata pine (Williams 1959) under the conjugate Normal-Gamma prior --------------------------


def radiata_pine_path():
    """``../shared/data/radiata_pine.csv`` beside the repository, or None when it is missing."""
    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "radiata_pine.csv"
    return path if path.is_file() else None


def radiata_pine_data(path=None):
    """Columns ``y``, ``x``, ``z`` of the original table as a dict of arrays."""
    return read_radiata_pine(radiata_pine_path() if path is None else Path(path))


def radiata_model(y, covariate, prior=RADIATA_PRIOR, noncentred=True):
    """The Normal-Gamma regression as a PyMC model.

    ``noncentred=True`` writes ``(a, b) = m0 + z / sqrt(tau * diag(Q0))`` with ``z ~ N(0, I)``,
    so every free variable is of order 1 whatever the data's scale: the same prior and
    likelihood (the evidence is unchanged by reparametrising), but easy for a random walk.
    """
    m0, q0 = prior["mean"], np.diag(prior["precision"])
    centred_cov = covariate - covariate.mean()
    with pm.Model() as model:
        tau = pm.Gamma("tau", alpha=prior["shape"], beta=prior["rate"])
        if noncentred:
            z = pm.Normal("z", 0.0, 1.0, shape=2)
            coef = m0 + z / pt.sqrt(tau * q0)
        else:
            coef = pm.Normal("coef", m0, 1.0 / pt.sqrt(tau * q0), shape=2)
        pm.Normal("y", coef[0] + coef[1] * centred_cov, 1.0 / pt.sqrt(tau), observed=y)
    return model


# --- models that have broken evidence estimators before (issue 18) ------------------------------


def schools_model():
    """Centred eight schools (mu ~ N(0, 5), tau ~ HalfCauchy(5)): a heavy-tailed prior."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta = pm.Normal("theta", mu, tau, shape=8)
        pm.Normal("y", theta, EIGHT_SCHOOLS_SIGMA, observed=EIGHT_SCHOOLS_Y)
    return model


def support_data(n=20, seed=3):
    """Uniform(ub - 10, ub) data whose support leaves ub in [-0.3, 0.5]: P(support) = 0.31."""
    y = np.random.default_rng(seed).uniform(-9.5, -0.3, size=n)
    y[:2] = -0.3, -9.5
    return y


def support_model(y):
    """ub ~ N(0, 1), y ~ Uniform(ub - 10, ub): the likelihood is zero for most prior draws."""
    with pm.Model() as model:
        ub = pm.Normal("ub", 0.0, 1.0)
        pm.Uniform("y", ub - 10.0, ub, observed=y)
    return model


def constraint_data(n=10, seed=4):
    return np.random.default_rng(seed).normal(0.3, 1.0, size=n)


def constraint_model(y):
    """x ~ N(0, 1), y ~ N(x, 1), and a Potential that is -inf for x <= 0 (half the prior)."""
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, initval=0.5)
        pm.Normal("y", x, 1.0, observed=y)
        pm.Potential("positive", pt.switch(x > 0, 0.0, -np.inf))
    return model


# --- the gradient samplers' models (ULA, MALA, SGLD) -------------------------------------------


def logistic_data(n_rows, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, 3))
    p = 1 / (1 + np.exp(-X @ np.array([1.0, -1.0, 0.5])))
    return X, (rng.uniform(size=n_rows) < p).astype("int32")


def logistic_model(X, y, batch_size=None):
    """Logistic regression with N(0, 1) coefficients; ``batch_size``: a ``pm.Minibatch`` of the
    rows, with ``total_size`` so that SGLD rescales the minibatch likelihood."""
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=X.shape[1])
        if batch_size is None:
            pm.Bernoulli("y", logit_p=X @ beta, observed=y)
        else:
            X_mb, y_mb = pm.Minibatch(X, y, batch_size=batch_size)
            pm.Bernoulli("y", logit_p=X_mb @ beta, observed=y_mb, total_size=len(y))
    return model


# x_i ~ N(theta, 1), theta ~ N(0, PRIOR_SD^2): constant-step SGLD's stationary law is exact here
N_GAUSS, BATCH_GAUSS, PRIOR_SD = 100, 10, 10.0


def gaussian_mean_data():
    return np.random.default_rng(42).normal(1.0, 1.0, size=N_GAUSS)


def gaussian_mean_model(x, batch_size=None):
    with pm.Model() as model:
        theta = pm.Normal("theta", 0, PRIOR_SD)
        if batch_size is None:
            pm.Normal("x", theta, 1.0, observed=x)
        else:
            x_mb = pm.Minibatch(x, batch_size=batch_size)
            pm.Normal("x", theta, 1.0, observed=x_mb, total_size=len(x))
    return model


def normal_sd_model(sd):
    """Independent x_i ~ N(0, sd_i^2), one per entry of ``sd``."""
    with pm.Model() as model:
        pm.Normal("x", 0.0, np.asarray(sd), shape=np.size(sd))
    return model


def quartic_model():
    """pi(x) proportional to exp(-x^4): a free Flat variable and a Potential (the likelihood)."""
    with pm.Model() as model:
        x = pm.Flat("x")
        pm.Potential("quartic", -(x**4))
    return model
