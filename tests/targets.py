"""Known models with exact answers, for the evidence tests and benchmarks (and anyone else).

Each builder returns a PyMC model with proper priors and the exact log marginal likelihood of
its data, computed in closed form (or by 1-D quadrature for the singular model).
"""

from pathlib import Path

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import scipy.integrate
from scipy import stats
from scipy.special import betaln, gammaln

# --- the seed lecture's model: x_i ~ N(mu, 1), mu ~ N(0, b^2) ----------------------------------


def lecture_data(n=20, true_mu=0.5, seed=20):
    """``n`` points from N(true_mu, 1), as in the empirical-Bayes lecture's exercise."""
    return np.random.default_rng(seed).normal(true_mu, 1.0, size=n)


def lecture_model(x, b=1.0):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, b)
        pm.Normal("x", mu, 1.0, observed=x)
    return model


def lecture_log_evidence(x, b=1.0):
    """Exact log Z: marginally ``x ~ N(0, I + b^2 1 1^T)``."""
    n = len(x)
    cov = np.eye(n) + b**2 * np.ones((n, n))
    return float(stats.multivariate_normal(np.zeros(n), cov).logpdf(x))


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


def singular_free_energy(n):
    """Exact ``F(n) = -log Z`` for d = 2 by 1-D quadrature.

    Integrating ``w2`` out, ``E_w2[exp(-n w1^2 w2^2)] = (1 + 2 n w1^2)^(-1/2)``, so
    ``Z = E_w1[(1 + 2 n w1^2)^(-1/2)]``, computed over ``u = sqrt(2 n) w1`` where the integrand
    is smooth on the scale of 1.
    """
    scale = np.sqrt(2.0 * n)

    def integrand(u):
        return stats.norm.pdf(u / scale) / np.sqrt(1.0 + u * u)

    pieces = [0.0, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 1e7]
    pieces = [p for p in pieces if p < 40 * scale] + [40 * scale]
    total = sum(
        scipy.integrate.quad(integrand, lo, hi, limit=200, epsabs=0, epsrel=1e-12)[0]
        for lo, hi in zip(pieces[:-1], pieces[1:], strict=True)
    )
    return float(-np.log(2.0 * total / scale))


SINGULAR_CONSTANT_D2 = 4 * np.log(2) - np.euler_gamma


def singular_free_energy_asymptotic(n, d=2, constant=SINGULAR_CONSTANT_D2):
    """Nagata & Watanabe's eq. (4): ``F(n) = 1/2 log n - (d-1) log log n + (d-1)/2 log pi +
    d/2 log 2 - log(1 + c / log n)``; ``c`` is their ``4 log 2 - gamma`` for d = 2 (pass
    ``constant=0`` to drop the O(1/log n) term)."""
    log_n = np.log(n)
    return float(
        0.5 * log_n
        - (d - 1) * np.log(log_n)
        + 0.5 * (d - 1) * np.log(np.pi)
        + 0.5 * d * np.log(2.0)
        - np.log1p(constant / log_n)
    )


# --- radiata pine (Williams 1959) under the conjugate Normal-Gamma prior --------------------------

RADIATA_PRIOR = {
    "mean": np.array([3000.0, 185.0]),
    "precision": np.diag([0.06, 6.0]),  # Q0: (alpha, beta) | tau ~ N(mean, (tau Q0)^-1)
    "shape": 3.0,  # tau ~ Gamma(shape, rate)
    "rate": 2.0 * 300.0**2,
}


def radiata_pine_path():
    """``../shared/data/radiata_pine.csv`` beside the repository, or None when it is missing."""
    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "radiata_pine.csv"
    return path if path.is_file() else None


def radiata_pine_data(path=None):
    """Columns ``y``, ``x``, ``z`` of the original table as a dict of arrays."""
    path = radiata_pine_path() if path is None else Path(path)
    table = np.genfromtxt(path, delimiter=",", names=True)
    return {name: np.asarray(table[name], dtype=float) for name in ("y", "x", "z")}


def radiata_log_evidence(y, covariate, prior=RADIATA_PRIOR):
    """Exact log Z of ``y = a + b (c - mean c) + e``, ``e ~ N(0, 1/tau)``, Normal-Gamma prior.

    With ``Qn = Q0 + X^T X``, ``mn = Qn^-1 (Q0 m0 + X^T y)``, ``an = a0 + n/2`` and
    ``bn = b0 + (y^T y + m0^T Q0 m0 - mn^T Qn mn) / 2``:
    ``log Z = -n/2 log 2 pi + 1/2 log(|Q0| / |Qn|) + a0 log b0 - an log bn + lgamma(an) -
    lgamma(a0)``.
    """
    n = len(y)
    X = np.column_stack([np.ones(n), covariate - covariate.mean()])
    m0, q0, a0, b0 = prior["mean"], prior["precision"], prior["shape"], prior["rate"]
    qn = q0 + X.T @ X
    mn = np.linalg.solve(qn, q0 @ m0 + X.T @ y)
    an = a0 + 0.5 * n
    bn = b0 + 0.5 * (y @ y + m0 @ q0 @ m0 - mn @ qn @ mn)
    logdet = np.linalg.slogdet(q0)[1] - np.linalg.slogdet(qn)[1]
    return float(
        -0.5 * n * np.log(2 * np.pi)
        + 0.5 * logdet
        + a0 * np.log(b0)
        - an * np.log(bn)
        + gammaln(an)
        - gammaln(a0)
    )


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
