"""Helpers shared by the test modules: the compile mode and MCSE z-scores of the gradient
samplers' tests, ExchangeMC targets with exact answers, their checks, :func:`recompiled`, which
plants a bug in a compiled rule, the ExchangeMC runs that the diagnostics, plot and trace tests
share (sampled once per session), and the plot tests' checks. Test modules import from here
(``from helpers import ...``), never from each other or from ``conftest.py``."""

import contextlib
import functools
import os
import types
import warnings

import arviz as az
import matplotlib.pyplot as plt
import numba
import numpy as np
import pymc as pm
import pytensor
import pytest
import targets
import xarray as xr

import pymc_tempering as pmt
from pymc_tempering import exact
from pymc_tempering.evidence import EvidenceWarning

SAMPLE_KWARGS = {"progressbar": False, "compute_convergence_checks": False}
# PyTensor's C virtual machine: the lowest per-call overhead for one-gradient steps
FAST = {"mode": pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run")}


TWO_MODE_WEIGHTS = exact.TWO_MODE_WEIGHTS
TWO_MODES = np.array(exact.TWO_MODE_MEANS)  # 10 sd apart along each axis
X_SEED_LECTURE = np.random.default_rng(2024).normal(0.5, 1.0, size=20)
B_PRIOR = 1.5


def bimodal_model():
    """2-D mixture 0.3 N((-5,-5), I) + 0.7 N((5,5), I) as the likelihood, wide N(0, 20^2) prior
    (:func:`pymc_tempering.exact.two_mode_model`): the posterior weights stay 0.3 / 0.7."""
    return exact.two_mode_model()


def normal_model():
    """A small model with a constrained variable (mu ~ N(0, 1), sigma ~ HalfNormal(1), four
    observations): the step-method checks' model where no exact answer is needed."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", mu, sigma, observed=[0.3, -0.4, 1.1, 0.2])
    return model


def z_score(draws, truth):
    """(mean - truth) / MCSE of a (chain, draw) array, MCSE from ArviZ (ESS-based)."""
    draws = np.asarray(draws, dtype=float)
    return (draws.mean() - truth) / float(az.mcse(draws))


def batch_means_mcse(values, n_batches=40):
    """Monte Carlo standard error of the mean of a correlated series, by batch means."""
    values = np.asarray(values, dtype=float).ravel()
    size = values.size // n_batches
    means = values[: size * n_batches].reshape(n_batches, size).mean(axis=1)
    return means.std(ddof=1) / np.sqrt(n_batches)


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


def gaussian_tempered_law(beta, y, prior_cov, lik_cov, prior_mean=None):
    """Mean, covariance and E[loglik] of the rung at ``beta`` of a Gaussian-mean model: prior
    N(prior_mean, prior_cov) (mean 0 by default), rows of ``y`` i.i.d. N(theta, lik_cov); the
    prior times the likelihood to the power beta is Gaussian with precision
    prior_cov^-1 + beta n lik_cov^-1."""
    n, d = y.shape
    prior_mean = np.zeros(d) if prior_mean is None else prior_mean
    lik_prec = np.linalg.inv(lik_cov)
    cov = np.linalg.inv(np.linalg.inv(prior_cov) + beta * n * lik_prec)
    mean = cov @ (np.linalg.solve(prior_cov, prior_mean) + beta * lik_prec @ y.sum(axis=0))
    resid = y - mean
    e_loglik = -0.5 * (
        n * (d * np.log(2 * np.pi) + np.linalg.slogdet(lik_cov)[1])
        + np.einsum("ij,jk,ik->", resid, lik_prec, resid)
        + n * np.trace(lik_prec @ cov)
    )
    return mean, cov, e_loglik


def assert_same_run(full, joined):
    """Every posterior value and every stat but the checkpoint stat, bit for bit: a continued
    run against one long run."""
    from pymc_tempering.resume import STATE_STAT

    assert full.posterior.sizes == joined.posterior.sizes
    for name in full.posterior.data_vars:
        np.testing.assert_array_equal(joined.posterior[name].values, full.posterior[name].values)
    for name in full.sample_stats.data_vars:
        if name != STATE_STAT:
            a, b = joined.sample_stats[name].values, full.sample_stats[name].values
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name


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


def run_steps(step, point, n):
    """``n`` calls of ``step.step`` from ``point``: the list of ``(point, stats)``."""
    out = []
    for _ in range(n):
        point, stats = step.step(point)
        out.append((point, stats))
    return out


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


# --- ExchangeMC runs shared by tests/diagnostics, tests/plots and test_trace.py --------------
# (sampled once per session; moved from the old tests/test_diagnostics.py)
X_LECTURE = targets.lecture_data()
N_RUNGS = 8


@functools.cache
def exchange_run():
    """A fixed geometric ladder of 8 rungs, 2 chains, on the lecture model."""
    with targets.lecture_model(X_LECTURE):
        return pm.sample(
            draws=400,
            tune=300,
            chains=2,
            cores=1,
            step=pmt.ExchangeMC(n_rungs=N_RUNGS),
            random_seed=7,
            **SAMPLE_KWARGS,
        )


@functools.cache
def adaptive_run():
    """ladder="adaptive": each of the 2 chains tunes its own 8-rung ladder."""
    with targets.lecture_model(X_LECTURE):
        idata = pm.sample(
            draws=300,
            tune=300,
            chains=2,
            cores=1,
            step=pmt.ExchangeMC(n_rungs=8, ladder="adaptive"),
            random_seed=2,
            **SAMPLE_KWARGS,
        )
    assert pmt.tempering_dataset(idata)["beta"].dims == ("chain", "rung")
    return idata


@functools.cache
def padded_run():
    """adapt_n_rungs=True where the 2 chains settle on different numbers of rungs (6 and 5), so
    the shorter one is padded with NaN betas."""
    with targets.lecture_model(targets.lecture_data(n=100), b=10.0):
        idata = pm.sample(
            draws=300,
            tune=300,
            chains=2,
            cores=1,
            step=pmt.ExchangeMC(n_rungs=8, ladder="adaptive", adapt_n_rungs=True),
            random_seed=1,
            **SAMPLE_KWARGS,
        )
    n_used = np.isfinite(pmt.tempering_dataset(idata)["beta"].values).sum(axis=-1)
    assert n_used[0] != n_used[1], f"the chains now settle on equal rungs {n_used}: reseed"
    return idata


def with_zero_likelihood(idata, fraction=0.2, seed=0):
    """A copy of ``idata`` whose beta = 0 rung has loglik -inf in about ``fraction`` of the
    draws, as where the prior rung draws outside the likelihood's support."""
    out = idata.copy(deep=True)
    stats = out["sample_stats"].to_dataset()
    loglik = stats["rung_loglik"].values.copy()
    loglik[np.random.default_rng(seed).random(loglik.shape[:2]) < fraction, 0] = -np.inf
    stats["rung_loglik"] = (stats["rung_loglik"].dims, loglik)
    out["sample_stats"] = xr.DataTree(stats)
    return out


# --- checks shared by the plot tests (tests/plots) -------------------------------------------
def render(tmp_path, name, plot, *args, **kwargs):
    """Call ``plot`` and save its figure with every warning an error (but the EvidenceWarnings
    of these short runs); return what it returned."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", EvidenceWarning)
        out = plot(*args, **kwargs)
        fig = out[0]
        path = tmp_path / f"{name}.png"
        fig.savefig(path, dpi=80)
    assert path.stat().st_size > 5_000
    plt.close(fig)
    return out


def assert_labelled(axis):
    assert axis.get_xlabel() and axis.get_ylabel()
    assert axis.get_legend() is not None and axis.get_legend().get_texts()


def lines_labelled(axis, prefix):
    return [line for line in axis.get_lines() if line.get_label().startswith(prefix)]


def legend_text(axis):
    return " ".join(t.get_text() for t in axis.get_legend().get_texts())


#: Dask's idle bookkeeping off for test clusters: the workers' statistical profiler (every
#: 10 ms) and system monitor took 16% of a core per idle 2-worker cluster, 2% without (a
#: session's clusters idle between their tests, on CI's 2 cores)
QUIET_CLUSTER = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.tick.interval": "500ms",
    "distributed.worker.memory.monitor-interval": "1s",
}


EXACT_BITS = "numba__fastmath=False"


def exact_bits_flags() -> str:
    """``PYTENSOR_FLAGS`` as this process has them, with numba's fastmath off."""
    return ",".join(f for f in (os.environ.get("PYTENSOR_FLAGS", ""), EXACT_BITS) if f)


@contextlib.contextmanager
def exact_bits():
    """PyTensor's numba fastmath off in this process and in every process started inside the
    context (``PYTENSOR_FLAGS``), for tests that compare draws made in different processes bit
    for bit. With fastmath on, a density compiled into an empty cache and one loaded from it
    differ in the last bits (decision 101), so such a test failed on a fresh machine's first
    run (28 tests); the promise with fastmath on is ``test_reproducibility.py``'s."""
    with pytest.MonkeyPatch.context() as patch, pytensor.config.change_flags(numba__fastmath=False):
        patch.setenv("PYTENSOR_FLAGS", exact_bits_flags())
        yield


@contextlib.contextmanager
def local_client(n_workers: int, exact: bool = False):
    """A Dask client of a LocalCluster of ``n_workers`` worker processes, one thread each,
    with :data:`QUIET_CLUSTER`'s settings; ``exact``: the workers compile without fastmath
    (:func:`exact_bits`), restarted ones too (the nannies' environment)."""
    import dask
    import distributed

    env = {"PYTENSOR_FLAGS": exact_bits_flags()} if exact else {}
    with dask.config.set(QUIET_CLUSTER):
        cluster = distributed.LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0",
            env=env,
        )  # fmt: skip
        with cluster, distributed.Client(cluster) as client:
            client.wait_for_workers(n_workers, timeout=120)
            yield client
