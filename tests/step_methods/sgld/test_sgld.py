"""SGLD: pure maths, the minibatch gradient compiler, the step method, and known targets."""

import logging
from pathlib import Path

import matplotlib
import numpy as np
import pymc as pm
import pytensor
import pytest
import xarray as xr
from pymc.blocking import DictToArrayBijection
from scipy import stats

import pymc_tempering.step_methods.sgld.sampler as sgld_module
from pymc_tempering.diagnostics.sgld import sampling_threshold_crossing, step_size_weighted_mean
from pymc_tempering.kernels.sgld import (
    StepSizeSchedule,
    noise_variances,
    polynomial_schedule,
    rmsprop_preconditioner,
    rmsprop_update,
    sampling_threshold,
    score_covariance,
    sgld_step,
)
from pymc_tempering.kernels.sgld import step_size_weighted_mean as weighted_mean_array
from pymc_tempering.step_methods._compile import compile_minibatch_gradients
from pymc_tempering.step_methods.sgld import SGLD

# PyTensor's C virtual machine: the lowest per-call overhead for SGLD's one-gradient steps
FAST = {"mode": pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run")}
SAMPLE = {"progressbar": False, "compute_convergence_checks": False}


def batch_means_mcse(values, n_batches=40):
    """Monte Carlo standard error of the mean of a correlated series, by batch means."""
    values = np.asarray(values, dtype=float).ravel()
    size = values.size // n_batches
    means = values[: size * n_batches].reshape(n_batches, size).mean(axis=1)
    return means.std(ddof=1) / np.sqrt(n_batches)


def logistic_data(n_rows, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, 3))
    p = 1 / (1 + np.exp(-X @ np.array([1.0, -1.0, 0.5])))
    return X, (rng.uniform(size=n_rows) < p).astype("int32")  # int32: see PYMC_NOTES


def logistic_model(X, y, batch_size=None):
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=X.shape[1])
        if batch_size is None:
            pm.Bernoulli("y", logit_p=X @ beta, observed=y)
        else:
            X_mb, y_mb = pm.Minibatch(X, y, batch_size=batch_size)
            pm.Bernoulli("y", logit_p=X_mb @ beta, observed=y_mb, total_size=len(y))
    return model


# -- pure maths ----------------------------------------------------------------------------------
def test_polynomial_schedule_hits_both_ends():
    sched = polynomial_schedule(0.01, 1e-4, n_steps=10_000, gamma=0.55)
    np.testing.assert_allclose(sched(0), 0.01, rtol=1e-12)
    np.testing.assert_allclose(sched(9_999), 1e-4, rtol=1e-12)
    steps = sched(np.arange(10_000))
    assert np.all(np.diff(steps) < 0)
    np.testing.assert_allclose(steps, sched.a * (sched.b + np.arange(10_000)) ** -0.55)
    assert StepSizeSchedule.constant(0.3)(123) == 0.3
    assert polynomial_schedule(0.2, 0.2, 50).gamma == 0  # equal ends: constant


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"step_size": 0.0, "final_step_size": 1e-4}, "`step_size` must be a positive"),
        ({"step_size": 1e-2, "final_step_size": -1.0}, "`final_step_size` must be a positive"),
        ({"step_size": 1e-2, "final_step_size": 1e-4, "gamma": 0.5}, r"`gamma` must lie in"),
        ({"step_size": 1e-2, "final_step_size": 1e-4, "gamma": 1.2}, r"`gamma` must lie in"),
        ({"step_size": 1e-4, "final_step_size": 1e-2}, "must not exceed `step_size`"),
    ],
)
def test_schedule_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        polynomial_schedule(n_steps=100, **kwargs)


def test_sgld_step_has_the_stated_drift_and_noise():
    """theta' = theta + (eps/2) M g + N(0, eps M): check mean and variance over many coords."""
    rng = np.random.default_rng(0)
    d, eps = 400_000, 0.04
    precond = np.where(np.arange(d) % 2 == 0, 1.0, 4.0)
    out = sgld_step(np.zeros(d), np.ones(d), 2 * np.ones(d), eps, precond, rng)
    for m in (1.0, 4.0):
        part = out[precond == m]
        assert abs(part.mean() - 0.5 * eps * m * 3) < 4 * np.sqrt(eps * m / part.size)
        assert abs(part.var() / (eps * m) - 1) < 4 * np.sqrt(2 / part.size)


def test_sampling_threshold_and_noise_against_hand_computation():
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    precond = np.array([1.0, 4.0])
    # M^1/2 V M^1/2 = [[2, 1], [1, 4]]: largest eigenvalue 3 + sqrt(2)
    alpha = sampling_threshold(cov, step_size=0.01, n_data=100, batch_size=10, precond=precond)
    np.testing.assert_allclose(alpha, 0.01 * 100**2 / 40 * (3 + np.sqrt(2)), rtol=1e-12)
    grad_noise, injected = noise_variances(cov, 0.01, 100, 10, precond)
    np.testing.assert_allclose(grad_noise, 0.01**2 * 100**2 / 40 * np.array([2.0, 16.0]))
    np.testing.assert_allclose(injected, [0.01, 0.04])
    # in one dimension alpha is exactly the gradient-noise / injected-noise variance ratio
    a1 = sampling_threshold([[3.0]], 0.02, 50, 5, [2.0])
    g1, i1 = noise_variances(np.array([[3.0]]), 0.02, 50, 5, np.array([2.0]))
    np.testing.assert_allclose(a1, g1[0] / i1[0], rtol=1e-12)
    scores = np.random.default_rng(1).normal(size=(50, 3))
    np.testing.assert_allclose(score_covariance(scores), np.cov(scores.T), rtol=1e-12)


def test_rmsprop_is_li_et_al_algorithm_1():
    v = rmsprop_update(np.array([1.0, 0.0]), np.array([2.0, -3.0]), decay=0.9)
    np.testing.assert_allclose(v, [0.9 + 0.4, 0.9])
    np.testing.assert_allclose(rmsprop_preconditioner(v, 1e-5), 1 / (1e-5 + np.sqrt(v)))


def test_step_size_weighted_mean_eq_11():
    values = np.array([[1.0, 3.0], [5.0, 7.0], [2.0, 2.0]])
    eps = np.array([0.5, 0.25, 0.25])
    np.testing.assert_allclose(weighted_mean_array(values, eps), [2.25, 3.75])
    posterior = xr.Dataset({"mu": (("chain", "draw"), [[1.0, 5.0, 2.0], [0.0, 0.0, 4.0]])})
    sample_stats = xr.Dataset(
        {
            "step_size": (("chain", "draw"), [[0.5, 0.25, 0.25], [0.5, 0.25, 0.25]]),
            "sampling_threshold": (("chain", "draw"), [[0.5, np.nan, 0.05], [0.01, 0.2, 0.3]]),
        }
    )
    for ds in (posterior, sample_stats):
        ds.coords.update({"chain": [0, 1], "draw": [0, 1, 2]})
    idata = xr.DataTree.from_dict({"posterior": posterior, "sample_stats": sample_stats})
    mean = step_size_weighted_mean(idata)
    np.testing.assert_allclose(mean["mu"], (0.5 + 1.25 + 0.5 + 0 + 0 + 1.0) / 2.0)
    crossing = sampling_threshold_crossing(idata, threshold=0.1)
    np.testing.assert_array_equal(crossing, [2, 0])
    late = step_size_weighted_mean(idata, start=crossing)
    np.testing.assert_allclose(late["mu"], (0.25 * 2 + 0.5 * 0 + 0.25 * 0 + 0.25 * 4) / 1.25)
    with pytest.raises(ValueError, match="sample_stats"):
        step_size_weighted_mean(xr.DataTree.from_dict({"posterior": posterior}))


# -- the compiled minibatch gradients ------------------------------------------------------------
def test_minibatch_gradient_is_unbiased_over_a_partition():
    """Averaged over a partition of the rows into batches, (N/n) sum_batch = the full sum."""
    X, y = logistic_data(60)
    model = logistic_model(X, y, batch_size=10)
    grads = compile_minibatch_gradients(model, model.value_vars, model.initial_point(), FAST)
    assert (grads.total_size, grads.batch_size, grads.n_rows) == (60, 10, 60)
    beta = np.array([0.3, -0.2, 0.1])
    batches = np.random.default_rng(0).permutation(60).reshape(6, 10)
    per_batch = np.array([grads.indexed(beta, rows)[1] for rows in batches])
    full = X.T @ (y - 1 / (1 + np.exp(-X @ beta)))
    np.testing.assert_allclose(per_batch.mean(axis=0), full, rtol=1e-12, atol=1e-12)
    assert not np.allclose(per_batch[0], full)  # each batch alone is noisy
    # the full-batch model compiles the same full gradient, and the same prior gradient
    full_model = logistic_model(X, y)
    exact = compile_minibatch_gradients(full_model, full_model.value_vars, {"beta": beta}, FAST)
    assert not exact.minibatched
    prior_g, lik_g = exact.grads(beta)
    np.testing.assert_allclose(lik_g, full, rtol=1e-12)
    np.testing.assert_allclose(prior_g, -beta)
    # per-datum scores: unscaled gradient of log p(y_i | beta)
    rows = batches[0]
    p = 1 / (1 + np.exp(-X[rows] @ beta))
    np.testing.assert_allclose(grads.scores(beta, rows), X[rows] * (y[rows] - p)[:, None])


def test_random_minibatch_gradient_averages_to_full_gradient():
    X, y = logistic_data(40, seed=3)
    model = logistic_model(X, y, batch_size=5)
    grads = compile_minibatch_gradients(model, model.value_vars, model.initial_point(), FAST)
    grads.reseed(np.random.default_rng(1))
    beta = np.array([0.2, 0.1, -0.4])
    draws = np.array([grads.grads(beta)[1] for _ in range(4000)])
    full = X.T @ (y - 1 / (1 + np.exp(-X @ beta)))
    se = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - full) < 4 * se)


# -- bad input -----------------------------------------------------------------------------------
def test_minibatch_without_total_size_is_an_error():
    X, y = logistic_data(50)
    with pm.Model():
        X_mb, y_mb = pm.Minibatch(X, y, batch_size=10)
        beta = pm.Normal("beta", 0, 1, shape=3)
        pm.Bernoulli("y", logit_p=X_mb @ beta, observed=y_mb)
        with pytest.raises(ValueError, match=r"'y'.*no `total_size`.*total_size=len\(y\)"):
            SGLD(compile_kwargs=FAST)


def test_discrete_variables_are_an_error():
    with pm.Model():
        pm.Normal("mu", 0, 1)
        pm.Poisson("k", 3.0)
        with pytest.raises(ValueError, match=r"\['k'\] are discrete.*`vars=`"):
            SGLD(compile_kwargs=FAST)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"step_size": -1.0}, "`step_size` must be a positive"),
        ({"step_size": 0.0, "schedule": "constant"}, "`step_size` must be a positive"),
        ({"gamma": 0.4}, r"`gamma` must lie in \(0.5, 1\]"),
        ({"schedule": "cosine"}, "`schedule` must be"),
        ({"preconditioner": [1.0, -1.0]}, "`preconditioner` must hold positive"),
        ({"preconditioner": "adam"}, "`preconditioner` must be None"),
        ({"threshold_every": 0}, "`threshold_every` must be"),
    ],
)
def test_step_method_rejects_bad_arguments(kwargs, match):
    with pm.Model():
        mu = pm.Normal("mu", 0, 1, shape=2)
        pm.Normal("x", mu, 1, observed=np.zeros((5, 2)))
        with pytest.raises(ValueError, match=match):
            SGLD(compile_kwargs=FAST, **kwargs)


# -- Gaussian mean: the exact stationary law of constant-step SGLD -------------------------------
N_GAUSS, BATCH_GAUSS, PRIOR_SD = 100, 10, 10.0


def gaussian_data():
    return np.random.default_rng(42).normal(1.0, 1.0, size=N_GAUSS)


def gaussian_model(x, batch_size=None):
    with pm.Model() as model:
        theta = pm.Normal("theta", 0, PRIOR_SD)
        if batch_size is None:
            pm.Normal("x", theta, 1.0, observed=x)
        else:
            x_mb = pm.Minibatch(x, batch_size=batch_size)
            pm.Normal("x", theta, 1.0, observed=x_mb, total_size=len(x))
    return model


def gaussian_sgld_law(x, step_size, batch_size):
    r"""Mean and variance of constant-step SGLD's stationary law on the Gaussian-mean model.

    Model: x_i ~ N(theta, 1), i = 1..N, theta ~ N(0, s^2). Posterior precision
    P = N + 1/s^2, mean c / P with c = sum x_i. Per-datum score x_i - theta; a minibatch of n
    rows drawn uniformly with replacement estimates the log-likelihood gradient by
    (N/n) sum_B (x_i - theta) = (sum x_i - N theta) + xi, where xi has mean 0 and variance
    sigma_g^2 = (N^2/n) v, v = (1/N) sum (x_i - xbar)^2, *whatever theta is*. So SGLD is the
    AR(1) recursion

        theta' = theta + (eps/2)(c - P theta + xi) + sqrt(eps) z = a theta + (eps/2) c + e,
        a = 1 - eps P / 2,   Var(e) = eps + eps^2 sigma_g^2 / 4,

    whose stationary law (|a| < 1) has mean c / P (the posterior mean, no bias) and variance
    Var(e) / (1 - a^2) = (eps + eps^2 sigma_g^2/4) / (eps P (1 - eps P/4))
                      = (1 + eps sigma_g^2 / 4) / (P (1 - eps P / 4)).
    With the full batch (sigma_g = 0) this is ULA's exact law N(c/P, 1/(P(1 - eps P/4))),
    Gaussian, against the posterior's 1/P.
    """
    n_data = len(x)
    precision = n_data + 1 / PRIOR_SD**2
    grad_var = 0.0 if batch_size is None else n_data**2 / batch_size * x.var()
    var = (1 + step_size * grad_var / 4) / (precision * (1 - step_size * precision / 4))
    return x.sum() / precision, var


def constant_sgld_draws(x, batch_size, draws=6000, seed=11):
    precision = len(x) + 1 / PRIOR_SD**2
    eps = 0.8 / precision  # eps P / 4 = 0.2: ULA's variance is 25% above the posterior's
    with gaussian_model(x, batch_size):
        step = SGLD(step_size=eps, schedule="constant", compile_kwargs=FAST, threshold_every=50)
        idata = pm.sample(draws=draws, tune=200, chains=1, step=step, random_seed=seed, **SAMPLE)
    return idata, eps


def law_z_scores(draws, mean, var):
    """|estimate - truth| / MCSE for the mean and for the variance (second central moment)."""
    z_mean = abs(draws.mean() - mean) / batch_means_mcse(draws)
    sq = (draws - mean) ** 2
    z_var = abs(sq.mean() - var) / batch_means_mcse(sq)
    return z_mean, z_var


def test_full_batch_sgld_reproduces_ula_exact_law():
    x = gaussian_data()
    idata, eps = constant_sgld_draws(x, batch_size=None)
    draws = idata.posterior["theta"].values.ravel()
    mean, var = gaussian_sgld_law(x, eps, None)
    z_mean, z_var = law_z_scores(draws, mean, var)
    assert z_mean < 4 and z_var < 4, (z_mean, z_var)
    # the biased law, not the posterior: 1/P is excluded
    precision = len(x) + 1 / PRIOR_SD**2
    assert law_z_scores(draws, mean, 1 / precision)[1] > 4
    # and the law is Gaussian (thinned draws are nearly independent: lag-10 corr 0.6^10)
    thinned = draws[::10]
    assert stats.kstest(thinned, stats.norm(mean, np.sqrt(var)).cdf).pvalue > 1e-3
    # full data: no gradient noise, so the sampling threshold is 0
    alpha = idata.sample_stats["sampling_threshold"].values.ravel()
    np.testing.assert_array_equal(alpha[np.isfinite(alpha)], 0.0)


def _broken_noise(theta, grad_logprior, grad_loglik, step_size, precond, rng):
    """Injects N(0, 2 eps) instead of N(0, eps): the classic factor-2 slip."""
    return sgld_step(theta, grad_logprior, grad_loglik, 2 * step_size, precond, rng) - (
        0.5 * step_size * precond * (grad_logprior + grad_loglik)
    )


def _broken_scaling(theta, grad_logprior, grad_loglik, step_size, precond, rng):
    """Forgets the N/n factor on the minibatch log-likelihood gradient."""
    return sgld_step(
        theta, grad_logprior, grad_loglik * BATCH_GAUSS / N_GAUSS, step_size, precond, rng
    )


@pytest.mark.parametrize("broken", [None, _broken_noise, _broken_scaling])
def test_minibatch_sgld_stationary_law_and_broken_variants_fail(broken, monkeypatch):
    """Minibatch SGLD has mean c/P and variance (1 + eps sigma_g^2/4)/(P(1 - eps P/4)) (see
    ``gaussian_sgld_law``); a sampler with noise 2 eps, or without the N/n scaling, fails."""
    if broken is not None:
        monkeypatch.setattr(sgld_module, "sgld_step", broken)
    x = gaussian_data()
    idata, eps = constant_sgld_draws(x, batch_size=BATCH_GAUSS)
    draws = idata.posterior["theta"].values.ravel()
    mean, var = gaussian_sgld_law(x, eps, BATCH_GAUSS)
    z_mean, z_var = law_z_scores(draws, mean, var)
    if broken is None:
        assert z_mean < 4 and z_var < 4, (z_mean, z_var)
        # the gradient noise really is there: ULA's law without it is excluded
        assert law_z_scores(draws, *gaussian_sgld_law(x, eps, None))[1] > 4
    else:
        assert z_mean > 4 or z_var > 4, (z_mean, z_var)


# -- stats: the sampling threshold and the noise variances -----------------------------------------
def test_threshold_cadence_and_noise_stats(caplog):
    """Stat dtypes and shapes are in tests/step_methods/test_contract.py; here, their values."""
    X, y = logistic_data(200)
    with logistic_model(X, y, batch_size=20):
        step = SGLD(threshold_every=7, threshold=1e9, compile_kwargs=FAST)
        with caplog.at_level(logging.INFO, logger="pymc"):
            idata = pm.sample(draws=30, tune=5, chains=1, step=step, random_seed=3, **SAMPLE)
    ss = idata.sample_stats
    for name in ("grad_noise_var", "injected_noise_var"):  # one value per parameter
        assert ss[name].shape == (1, 30, 3), name
    alpha = ss["sampling_threshold"].values[0]
    steps = np.arange(5, 35)  # the chain's step counter includes the 5 tuning steps
    np.testing.assert_array_equal(np.isfinite(alpha), steps % 7 == 0)
    assert np.all(alpha[np.isfinite(alpha)] > 0)
    gnv = ss["grad_noise_var"].values[0]
    assert np.all(np.isfinite(gnv[steps % 7 == 0])) and np.all(np.isnan(gnv[steps % 7 != 0]))
    eps = ss["step_size"].values[0]
    np.testing.assert_allclose(ss["injected_noise_var"].values[0], eps[:, None] * np.ones(3))
    assert np.all(np.diff(eps) < 0)
    assert "sampling threshold fell" in caplog.text
    assert not ss["diverging"].values.any()


def test_non_finite_state_is_flagged_and_trace_stays_finite():
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("x", pm.math.exp(pm.math.exp(mu)), 1, observed=[0.0])
        step = SGLD(step_size=5.0, schedule="constant", compile_kwargs=FAST)
        with pytest.warns(UserWarning, match="SGLD"):
            idata = pm.sample(
                draws=50, tune=0, chains=1, step=step, random_seed=1, initvals={"mu": 2.0},
                **SAMPLE,
            )  # fmt: skip
    assert idata.sample_stats["diverging"].values.any()
    assert np.all(np.isfinite(idata.posterior["mu"].values))


def test_a_step_size_that_blows_up_is_flagged_and_warned():
    """step_size * P = 1000 on a Gaussian of precision P: |theta| would grow ~500-fold per step;
    the first move (the log density falls by far more than 1000 nats) and every later one are
    discarded and flagged, so the chain stays where it started."""
    x = gaussian_data()
    with gaussian_model(x):
        step = SGLD(step_size=10.0, schedule="constant", compile_kwargs=FAST)
        with pytest.warns(UserWarning, match=r"SGLD diverged.*Reduce `step_size`") as record:
            idata = pm.sample(draws=100, tune=0, chains=1, step=step, random_seed=1, **SAMPLE)
    assert sum("SGLD" in str(w.message) for w in record) == 1  # once per chain
    diverging = idata.sample_stats["diverging"].values[0]
    first = int(np.argmax(diverging))
    assert diverging[first:].all()
    theta = idata.posterior["theta"].values[0]
    assert np.all(np.isfinite(theta)) and np.all(theta[first:] == theta[first])
    assert np.abs(theta).max() < 100


def test_a_blow_up_that_the_schedule_would_undo_is_flagged():
    """The default schedule decays from step_size=10: unchecked, |theta| grew to 1e23 while the
    log density stayed finite, then came back, and nothing was flagged. A fall of the full-data
    log density by more than 1000 nats marks the move as diverging."""
    x = gaussian_data()
    with gaussian_model(x):
        step = SGLD(step_size=10.0, compile_kwargs=FAST)
        with pytest.warns(UserWarning, match=r"SGLD diverged.*Reduce `step_size`"):
            idata = pm.sample(draws=200, tune=0, chains=1, step=step, random_seed=1, **SAMPLE)
    assert idata.sample_stats["diverging"].values.any()
    assert np.abs(idata.posterior["theta"].values).max() < 100


# -- what a gradient-only sampler cannot see ---------------------------------------------------
Y_UNIFORM = np.linspace(-4.0, 4.75, 20)  # y ~ U(ub - 10, ub): every valid ub lies in [4.75, 6]


def test_moves_into_zero_density_are_discarded_flagged_and_warned(seed=1):
    """A hard constraint the gradient cannot see: the log density is -inf outside
    [max y, min y + 10]. Without the check, 73% of the draws fell outside, none flagged."""
    with pm.Model():
        ub = pm.Normal("ub", 0, 10)
        pm.Uniform("y", ub - 10, ub, observed=Y_UNIFORM)
        step = SGLD(step_size=0.02, schedule="constant", compile_kwargs=FAST)
        with pytest.warns(UserWarning, match="SGLD entered a region of zero density") as record:
            idata = pm.sample(
                draws=1000, tune=100, chains=2, cores=1, step=step, random_seed=seed,
                initvals={"ub": 5.5}, **SAMPLE,
            )  # fmt: skip
    messages = [str(w.message) for w in record if "zero density" in str(w.message)]
    assert len(messages) == 2  # once per chain
    assert "hard constraints" in messages[0] and "pmt.MALA or pmt.ExchangeMC" in messages[0]
    ub = idata.posterior["ub"].values
    assert np.all((ub >= Y_UNIFORM.max()) & (ub <= Y_UNIFORM.min() + 10))
    assert idata.sample_stats["diverging"].values.any()


def test_sgld_does_not_see_a_jump_of_the_density(seed=4):
    """The limitation SGLD's docstring states: a jump of +2 in the log density at x = 1 on
    N(0, 1) gives P(x > 1) = 0.58; full-batch SGLD with constant eps samples ULA's jump-free
    law N(0, 1 / (1 - eps / 4)), whose P(x > 1) is 0.17."""
    eps = 0.4
    with pm.Model():
        x = pm.Normal("x", 0, 1)
        pm.Potential("jump", pm.math.switch(x > 1, 2.0, 0.0))
        step = SGLD(step_size=eps, schedule="constant", compile_kwargs=FAST)
        idata = pm.sample(draws=5000, tune=100, chains=2, step=step, random_seed=seed, **SAMPLE)
    above = (idata.posterior["x"].values > 1).astype(float)
    jump_free = stats.norm.sf(1, scale=1 / np.sqrt(1 - eps / 4))
    z = (above.mean() - jump_free) / batch_means_mcse(above)
    assert abs(z) < 4, z
    assert above.mean() < 0.2  # against 0.58 with the jump


# -- the chain starts where pm.sample starts it -------------------------------------------------
def test_initvals_start_chains_where_the_default_initial_point_has_zero_density(seed=3):
    """x ~ N(0, 10^2), y = 5 ~ N(x, 0.5^2), a Potential -inf for x <= 0: the default start
    x = 0 has zero density. With initvals, constant-step full-batch SGLD samples ULA's exact
    law N(m, v / (1 - eps / (4 v))) of the posterior N(m, v)."""
    eps = 0.2
    post_var = 1 / (1 / 100 + 4)
    post_mean, law_var = 20 * post_var, post_var / (1 - eps / (4 * post_var))
    with pm.Model():
        x = pm.Normal("x", 0, 10)
        pm.Normal("y", x, 0.5, observed=5.0)
        pm.Potential("positive", pm.math.switch(x > 0, 0.0, -np.inf))
        make = lambda: SGLD(step_size=eps, schedule="constant", compile_kwargs=FAST)  # noqa: E731
        with pytest.raises(ValueError, match=r"\{'x': 0.0\}.*not finite.*initvals=\{'x'"):
            pm.sample(draws=5, tune=0, chains=1, step=make(), random_seed=0, **SAMPLE)
        idata = pm.sample(
            draws=3000, tune=200, chains=2, cores=1, step=make(), random_seed=seed,
            initvals={"x": 4.0}, **SAMPLE,
        )  # fmt: skip
    draws = idata.posterior["x"].values
    z_mean, z_var = law_z_scores(draws.ravel(), post_mean, law_var)
    assert z_mean < 4 and z_var < 4, (z_mean, z_var)


# -- a model that other samplers have touched ----------------------------------------------------
def sgld_trace(model, seed=6):
    with model:
        step = SGLD(step_size=1e-3, schedule="constant", compile_kwargs=FAST)
        idata = pm.sample(draws=30, tune=0, chains=1, step=step, random_seed=seed, **SAMPLE)
    return idata.posterior["beta"].values, step


def test_one_minibatch_call_after_nuts_and_compile_dlogp_touched_the_model():
    """PyMC's pre-gradient rewrites (run when NUTS is built and by model.compile_dlogp) give one
    copy of the pm.Minibatch node a new op, in place. SGLD must still see one call (it said
    'found 2') and still draw a fresh minibatch every step: the same trace as on a fresh
    model, and a gradient that is unbiased for the full-data one."""
    X, y = logistic_data(100)
    fresh, _ = sgld_trace(logistic_model(X, y, batch_size=10))
    touched = logistic_model(X, y, batch_size=10)
    with touched:
        pm.NUTS()
    touched.compile_dlogp()
    trace, step = sgld_trace(touched)
    np.testing.assert_array_equal(trace, fresh)
    grads = step.gradients
    assert len(grads.rngs) == 1  # the minibatch RNG is updated at every call
    grads.reseed(np.random.default_rng(1))
    beta = np.array([0.2, 0.1, -0.4])
    draws = np.array([grads.grads(beta)[1] for _ in range(2000)])
    full = X.T @ (y - 1 / (1 + np.exp(-X @ beta)))
    se = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - full) < 4 * se)


# -- Welling & Teh (2011) sec. 5.1: a two-mode posterior -----------------------------------------
def welling_teh_data():
    """100 points from x ~ 0.5 N(theta1, 2) + 0.5 N(theta1 + theta2, 2), theta = (0, 1)."""
    rng = np.random.default_rng(1)
    second = rng.uniform(size=100) < 0.5
    return rng.normal(np.where(second, 1.0, 0.0), np.sqrt(2.0))


def welling_teh_model(x, batch_size=1):
    with pm.Model() as model:
        theta1 = pm.Normal("theta1", 0, np.sqrt(10.0))
        theta2 = pm.Normal("theta2", 0, 1.0)
        components = [
            pm.Normal.dist(theta1, np.sqrt(2.0)),
            pm.Normal.dist(theta1 + theta2, np.sqrt(2.0)),
        ]
        x_mb = pm.Minibatch(x, batch_size=batch_size)
        pm.Mixture("x", w=[0.5, 0.5], comp_dists=components, observed=x_mb, total_size=len(x))
    return model


def welling_teh_gradients(theta, rows_x, n_data):
    """NumPy gradients of log prior and (N/n) sum log p(x_i | theta), theta of shape (K, 2)."""
    d1 = rows_x - theta[:, :1]  # (K, n)
    d2 = d1 - theta[:, 1:]
    r = 1 / (1 + np.exp((d2**2 - d1**2) / 4))  # responsibility of the second component
    scale = n_data / rows_x.shape[1]
    g2 = scale * (r * d2 / 2).sum(axis=1)
    g1 = scale * ((1 - r) * d1 / 2).sum(axis=1) + g2
    return -theta * np.array([0.1, 1.0]), np.stack([g1, g2], axis=1)


def welling_teh_grid(x):
    """Marginal CDFs of the posterior on a 600 x 600 grid (spacing 0.015)."""
    t1, t2 = np.linspace(-4, 5, 600), np.linspace(-5, 5, 600)
    T1, T2 = np.meshgrid(t1, t2, indexing="ij")
    logp = stats.norm.logpdf(T1, 0, np.sqrt(10)) + stats.norm.logpdf(T2, 0, 1)
    for xi in x:
        logp += np.logaddexp(
            stats.norm.logpdf(xi, T1, np.sqrt(2)), stats.norm.logpdf(xi, T1 + T2, np.sqrt(2))
        ) + np.log(0.5)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    return (t1, np.cumsum(p.sum(axis=1))), (t2, np.cumsum(p.sum(axis=0)))


def weighted_quantiles(values, weights, q):
    order = np.argsort(values)
    cdf = np.cumsum(weights[order]) / weights.sum()
    return np.interp(q, cdf, values[order])


def test_welling_teh_gradients_match_the_pymc_mixture_model():
    """Ties the NumPy experiment below to what SGLD compiles for the pm.Mixture model."""
    x = welling_teh_data()
    model = welling_teh_model(x)
    grads = compile_minibatch_gradients(model, model.value_vars, model.initial_point(), FAST)
    for theta, row in [((0.0, 1.0), 3), ((1.2, -0.7), 50), ((-0.4, 2.0), 99)]:
        theta = np.array(theta)
        prior, lik = grads.indexed(theta, np.array([row]))
        np_prior, np_lik = welling_teh_gradients(theta[None], x[[row]][None], 100)
        np.testing.assert_allclose(prior, np_prior[0], rtol=1e-10)
        np.testing.assert_allclose(lik, np_lik[0], rtol=1e-10)


@pytest.mark.slow
def test_welling_teh_two_mode_posterior():
    """Sec. 5.1: batch size 1, eps from 0.01 to 0.0001 with gamma = 0.55, eq. (11) weighting;
    16 independent chains of 5,000 sweeps (5e5 steps; the paper runs one of 10,000).

    The experiment runs the package's SGLD kernel (``sgld_step``, ``polynomial_schedule``)
    vectorised over chains with the mixture gradients in NumPy (checked against the
    compiled pm.Mixture model above): 2e6 steps through pm.sample would take ~8 minutes.

    Tolerance on each marginal quantile (10/25/50/75/90%) and on the mean: 4 Monte Carlo
    standard errors, from the spread of the per-chain values (sd / sqrt(16); with 4 chains the
    chains' shares of time in each mode varied too much for a fixed 0.1 on the mean, which
    failed ~5% of seeds), plus 0.05 for SGLD's
    own bias: its early, large steps with batch-size-1 gradient noise (sampling threshold
    >> 1) carry weight in eq. (11). The bias is small against the posterior sds (0.41, 0.77).
    """
    x = welling_teh_data()
    n_chains, n_steps, keep, chunk = 16, 500_000, 10, 20_000
    schedule = polynomial_schedule(0.01, 1e-4, n_steps, gamma=0.55)
    rng = np.random.default_rng(2024)
    theta, precond = np.zeros((n_chains, 2)), np.ones(2)
    trace, weights = [], []
    for start in range(0, n_steps, chunk):
        eps = schedule(np.arange(start, start + chunk))
        rows = x[rng.integers(0, len(x), size=(chunk, n_chains, 1))]
        for t in range(chunk):
            grad_prior, grad_lik = welling_teh_gradients(theta, rows[t], len(x))
            theta = sgld_step(theta, grad_prior, grad_lik, eps[t], precond, rng)
            if t % keep == 0:
                trace.append(theta)
                weights.append(eps[t])
    trace = np.transpose(np.array(trace), (1, 0, 2))  # (chain, draw, 2)
    eps = np.broadcast_to(np.array(weights), trace.shape[:2])
    dims = ("chain", "draw")
    posterior = {"theta1": (dims, trace[..., 0]), "theta2": (dims, trace[..., 1])}
    idata = xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset(posterior),
            "sample_stats": xr.Dataset({"step_size": (dims, eps)}),
        }
    )
    # both modes, (0, 1)-ish and (1, -1)-ish, visited by every chain
    for chain in range(n_chains):
        in_second = weighted_mean_array(trace[chain, :, 1] < 0, eps[chain])
        assert 0.2 < in_second < 0.8, in_second
    q = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    grids = welling_teh_grid(x)
    means = step_size_weighted_mean(idata)
    for j, (name, (grid, cdf)) in enumerate(zip(("theta1", "theta2"), grids, strict=True)):
        reference = np.interp(q, cdf, grid)
        pooled = weighted_quantiles(trace[..., j].ravel(), eps.ravel(), q)
        per_chain = [weighted_quantiles(trace[c, :, j], eps[c], q) for c in range(n_chains)]
        tol = 4 * np.std(per_chain, axis=0, ddof=1) / np.sqrt(n_chains) + 0.05
        assert np.all(np.abs(pooled - reference) < tol), (name, pooled, reference, tol)
        grid_mean = np.sum(grid * np.diff(cdf, prepend=0.0))
        chain_means = [weighted_mean_array(trace[c, :, j], eps[c]) for c in range(n_chains)]
        tol = 4 * np.std(chain_means, ddof=1) / np.sqrt(n_chains) + 0.05
        err = float(means[name]) - grid_mean
        assert abs(err) < tol, (name, float(means[name]), grid_mean, tol)


# -- logistic regression on real data ------------------------------------------------------------
def google_daily_data():
    """Real data shipped with an installed package: matplotlib's sample ``goog.npz``, daily
    Google prices 2004-2008 (Yahoo Finance). No standard classification set ships with what
    is installed (no scikit-learn or statsmodels; scipy.datasets downloads), so the task is
    "does the day close above its open?" from the opening gap, the previous day's return,
    volume change and range (standardised), with an intercept. It is nearly unpredictable:
    held-out accuracy sits near chance for any sampler, so the test compares SGLD with NUTS
    rather than with a target accuracy."""
    path = Path(matplotlib.get_data_path()) / "sample_data" / "goog.npz"
    d = np.load(path)["price_data"]
    o, h, lo, c, v = (d[k].astype(float) for k in ("open", "high", "low", "close", "volume"))
    features = np.column_stack(
        [
            np.log(o[2:] / c[1:-1]),
            np.log(c[1:-1] / c[:-2]),
            np.log(v[1:-1] / v[:-2]),
            np.log(h[1:-1] / lo[1:-1]),
        ]
    )
    features = (features - features.mean(axis=0)) / features.std(axis=0)
    X = np.column_stack([np.ones(len(features)), features])
    return X, (c[2:] > o[2:]).astype("int32")


@pytest.mark.slow
def test_logistic_regression_on_real_data_matches_nuts():
    """SGLD (batch 50, eps from 1/N to 0.1/N, eq. 11) against NUTS on the full training data.

    Tolerance per coefficient: 4 combined Monte Carlo standard errors (batch means of each
    sampler's draws) plus 0.1 posterior sd for SGLD's discretisation bias, which is
    O(eps P) = O(0.1) at the first step and shrinks with it. Held-out accuracy of the
    posterior-mean classifier: within 3 points (7 of 245 test days) of NUTS's.
    """
    X, y = google_daily_data()
    n_train = 800
    X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    with logistic_model(X_train, y_train):
        nuts = pm.sample(1000, tune=500, chains=1, random_seed=5, **SAMPLE)
    with logistic_model(X_train, y_train, batch_size=50):
        step = SGLD(final_step_size=0.1 / n_train, compile_kwargs=FAST)
        sgld = pm.sample(15_000, tune=1000, chains=2, step=step, random_seed=5, **SAMPLE)
    nuts_beta = nuts.posterior["beta"].values.reshape(-1, X.shape[1])
    sgld_beta = sgld.posterior["beta"].values  # (chain, draw, 5)
    nuts_mean, sd = nuts_beta.mean(axis=0), nuts_beta.std(axis=0)
    sgld_mean = step_size_weighted_mean(sgld, var_names="beta")["beta"].values
    for j in range(X.shape[1]):
        mcse = np.hypot(
            batch_means_mcse(nuts_beta[:, j], n_batches=20),
            np.hypot(*[batch_means_mcse(sgld_beta[c, :, j], 20) for c in range(2)]) / 2,
        )
        assert abs(sgld_mean[j] - nuts_mean[j]) < 4 * mcse + 0.1 * sd[j], (j, mcse, sd[j])
    accuracy = [((X_test @ m > 0) == y_test).mean() for m in (nuts_mean, sgld_mean)]
    assert abs(accuracy[0] - accuracy[1]) <= 0.03, accuracy


# -- SGLD-CV -------------------------------------------------------------------------------------
def test_control_variates_cut_gradient_noise_and_keep_the_gradient_unbiased():
    """Baker et al. (2019): near the anchor the SGLD-CV gradient's variance falls by orders of
    magnitude; it stays an unbiased estimate of the full gradient."""
    X, y = logistic_data(2000, seed=4)
    model = logistic_model(X, y, batch_size=20)
    # the anchor: the posterior mode by Newton's method (logistic likelihood, N(0, 1) prior)
    mode = np.zeros(3)
    for _ in range(25):
        p = 1 / (1 + np.exp(-X @ mode))
        hess = X.T @ (X * (p * (1 - p))[:, None]) + np.eye(3)
        mode += np.linalg.solve(hess, X.T @ (y - p) - mode)
    sd = np.sqrt(np.diag(np.linalg.inv(hess)))
    with model:
        plain = SGLD(compile_kwargs=FAST)
        cv = SGLD(control_variate={"beta": mode}, compile_kwargs=FAST)
    theta = mode + sd  # one posterior sd away from the anchor
    full = X.T @ (y - 1 / (1 + np.exp(-X @ theta)))
    plain.gradients.reseed(np.random.default_rng(0))
    draws_plain = np.array([plain.gradients.grads(theta)[1] for _ in range(3000)])
    draws_cv = np.array(
        [
            cv.anchor_grad + cv.gradients.control_variate_grads(theta, cv.anchor)[1]
            for _ in range(3000)
        ]
    )
    ratio = draws_plain.var(axis=0) / draws_cv.var(axis=0)
    assert np.all(ratio > 100), ratio
    se = draws_cv.std(axis=0) / np.sqrt(len(draws_cv))
    assert np.all(np.abs(draws_cv.mean(axis=0) - full) < 4 * se)
    # and the step method reports the reduced gradient noise
    with model:
        for step in (plain, cv):
            step.setup_chain(np.random.default_rng(1), tune=0, draws=10)
    q = DictToArrayBijection.map({"beta": theta})
    noise = [step.astep(q)[1][0]["grad_noise_var"] for step in (plain, cv)]
    assert np.all(noise[0] / noise[1] > 100), noise


def test_sgld_on_some_variables_sees_the_others_current_values():
    """In a CompoundStep, SGLD's gradient must use the other samplers' latest values."""
    x = np.random.default_rng(3).normal(3.0, 1.0, size=50)
    with pm.Model():
        a = pm.Normal("a", 0, 10)
        b = pm.Normal("b", 5, 0.1)
        pm.Normal("x", a + b, 1.0, observed=x)
        steps = [SGLD(vars=[a], step_size=0.02, compile_kwargs=FAST), pm.Metropolis(vars=[b])]
        idata = pm.sample(
            draws=1500, tune=500, chains=1, step=steps, random_seed=4, initvals={"b": 0.0},
            **SAMPLE,
        )  # fmt: skip
    # a + b is pinned near mean(x) and b near 5: a near mean(x) - 5, not mean(x) - 0
    a_mean = float(step_size_weighted_mean(idata, var_names="a")["a"])
    assert abs(a_mean - (x.mean() - 5)) < 0.3, a_mean
