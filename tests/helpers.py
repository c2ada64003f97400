"""Helpers shared by the test modules: ExchangeMC targets with exact answers, their checks,
and :func:`recompiled`, which plants a bug in a compiled rule. Test modules import from here
(``from helpers import ...``), never from each other or from ``conftest.py``."""

import types

import arviz as az
import numba
import numpy as np
import pymc as pm

from pymc_tempering import exact

SAMPLE_KWARGS = {"progressbar": False, "compute_convergence_checks": False}


TWO_MODE_WEIGHTS = exact.TWO_MODE_WEIGHTS
TWO_MODES = np.array(exact.TWO_MODE_MEANS)  # 10 sd apart along each axis
X_SEED_LECTURE = np.random.default_rng(2024).normal(0.5, 1.0, size=20)
B_PRIOR = 1.5


def bimodal_model():
    """2-D mixture 0.3 N((-5,-5), I) + 0.7 N((5,5), I) as the likelihood, wide N(0, 20^2) prior
    (:func:`pymc_tempering.exact.two_mode_model`): the posterior weights stay 0.3 / 0.7."""
    return exact.two_mode_model()


def mode_weight_check(idata):
    """Weight of the (-5,-5) mode at beta = 1: estimate, MCSE, R-hat, and whether it passes.

    Pass means: chains agree (R-hat < 1.05, ESS > 100) and |weight - 0.3| < 4 MCSE, and every
    draw sits within 6 sd of a mode (P(|z| > 6) = exp(-18) per draw in 2-D, so ~1e-4 over the
    6,000 draws; a sampler that records junk from the sd-20 prior fails here).
    """
    x = idata.posterior["x"]
    lower = (x.sel(x_dim_0=0) < 0).astype(float)
    est = float(lower.mean())
    mcse = float(az.mcse(lower, method="mean"))
    rhat = float(az.rhat(lower))
    ess = float(az.ess(lower))
    dist = np.minimum(
        np.linalg.norm(x.values - TWO_MODES[0], axis=-1),
        np.linalg.norm(x.values - TWO_MODES[1], axis=-1),
    )
    ok = rhat < 1.05 and ess > 100 and abs(est - TWO_MODE_WEIGHTS[0]) < 4 * mcse and dist.max() < 6
    return ok, {"weight": est, "mcse": mcse, "rhat": rhat, "ess": ess, "max_dist": dist.max()}


def seed_lecture_model(x=X_SEED_LECTURE, b=B_PRIOR):
    """x_i ~ N(mu, 1), mu ~ N(0, b^2): every rung's tempered posterior is known."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, b)
        pm.Normal("x", mu, 1, observed=x)
    return model


def exact_tempered_moments(beta, x=X_SEED_LECTURE, b=B_PRIOR):
    """Tempered posterior N(m, v) of mu and E_beta[loglik] for x_i ~ N(mu, 1), mu ~ N(0, b^2)."""
    n = x.size
    v = 1.0 / (beta * n + b**-2)
    m = v * beta * x.sum()
    e_loglik = -0.5 * n * np.log(2 * np.pi) - 0.5 * (np.sum((x - m) ** 2) + n * v)
    return m, v, e_loglik


def rung_loglik_z(idata):
    """Per-rung |mean loglik - exact| / MCSE on :func:`seed_lecture_model` (max over rungs)."""
    import pymc_tempering as pmt

    ds = pmt.tempering_dataset(idata)
    z = []
    for rung, beta in enumerate(ds.beta.values):
        trace = ds.rung_loglik.sel(rung=rung)
        est, mcse = float(trace.mean()), float(az.mcse(trace, method="mean"))
        z.append(abs(est - exact_tempered_moments(beta)[2]) / mcse)
    return max(z)


def recompiled(kernel, **replacements):
    """``kernel`` (a numba function) compiled again with some of the functions it calls
    replaced: how a test plants a bug in the rule that production runs.

    Example: ``recompiled(fused.sweep_kernel, log_swap_ratio=flipped)``, with ``flipped`` itself
    a ``numba.njit`` function, then ``monkeypatch.setattr(fused, "sweep_kernel", ...)``.
    """
    func = kernel.py_func
    names = {**func.__globals__, **replacements}
    clone = types.FunctionType(func.__code__, names, func.__name__, func.__defaults__)
    return numba.njit(clone)


def sample_bimodal(step_factory, seed=11, draws=1500, tune=1000):
    """4 chains on :func:`bimodal_model` with the step ``step_factory()``."""
    with bimodal_model():
        return pm.sample(draws=draws, tune=tune, chains=4, cores=1, step=step_factory(),
                         random_seed=seed, **SAMPLE_KWARGS)  # fmt: skip
