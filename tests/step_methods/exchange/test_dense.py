"""ExchangeMC with dense per-rung proposals (``proposal="dense"``): every rung samples its own
tempered target exactly (a correlated Gaussian whose tempered laws are all closed form, the
lecture model, the two-mode target), the covariances freeze when tuning ends, and bad
arguments are refused by name."""

import arviz as az
import numpy as np
import pymc as pm
import pytest
from helpers import (
    SAMPLE_KWARGS,
    assert_same_run,
    gaussian_tempered_law,
    mode_weight_check,
    rung_loglik_z,
    sample_bimodal,
)
from helpers import seed_lecture_model as lecture_model
from scipy import stats

from pymc_tempering.engine import explorers
from pymc_tempering.kernels import mala_rungs, rwm
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC

# a correlated Gaussian: theta ~ N(M0, S0), y_i ~ N(theta, S_LIK), i = 1..3
M0 = np.array([0.5, -0.5, 0.0])
S0 = 4.0 * np.eye(3)
S_LIK = np.array([[1.0, 0.95, 0.9], [0.95, 1.0, 0.95], [0.9, 0.95, 1.0]])
Y = np.random.default_rng(0).multivariate_normal([1.0, 2.0, 1.5], S_LIK, size=3)


def correlated_model():
    with pm.Model() as model:
        theta = pm.MvNormal("theta", M0, cov=S0)
        pm.MvNormal("y", theta, cov=S_LIK, observed=Y)
    return model


def tempered_law(beta):
    """The exact law of the rung at ``beta`` (:func:`helpers.gaussian_tempered_law`)."""
    return gaussian_tempered_law(beta, Y, S0, S_LIK, M0)


def sample_correlated(seed=3, draws=1500, tune=1000, **kwargs):
    with correlated_model():
        step = ExchangeMC(**{"explorer": "rwm", **kwargs}, n_rungs=8, proposal="dense")
        return pm.sample(draws=draws, tune=tune, chains=2, cores=1, step=step,
                         random_seed=seed, **SAMPLE_KWARGS)  # fmt: skip


def correlated_check(idata):
    """``(z, rhat)``: the largest |estimate - exact| / MCSE over every rung's mean
    log-likelihood and the beta = 1 rung's means and covariances (exact mean subtracted), and
    the largest R-hat of a rung's log-likelihood (a rung that drifts away has a huge MCSE too,
    which would hide it from the z alone)."""
    from pymc_tempering import tempering_dataset

    ds = tempering_dataset(idata)
    z, rhat = [], []
    for rung, beta in enumerate(ds.beta.values):
        trace = ds.rung_loglik.sel(rung=rung)
        z.append(abs(float(trace.mean()) - tempered_law(beta)[2]) / float(az.mcse(trace)))
        rhat.append(float(az.rhat(trace)))
    mean, cov, _ = tempered_law(1.0)
    theta = idata.posterior["theta"]
    for i in range(3):
        t = theta.sel(theta_dim_0=i)
        z.append(abs(float(t.mean()) - mean[i]) / float(az.mcse(t)))
        for j in range(i + 1):
            prod = (t - mean[i]) * (theta.sel(theta_dim_0=j) - mean[j])
            z.append(abs(float(prod.mean()) - cov[i, j]) / float(az.mcse(prod)))
    return max(z), max(rhat)


def test_the_target_is_strongly_correlated():
    _, cov, _ = tempered_law(1.0)
    corr = cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
    assert corr[0, 1] > 0.9 and corr[1, 2] > 0.9
    # and the closed form agrees with the model's own log-likelihood, averaged by Monte Carlo
    mean, cov, e_loglik = tempered_law(0.3)
    draws = np.random.default_rng(1).multivariate_normal(mean, cov, size=2000)
    with correlated_model() as model:
        loglik = model.compile_fn(model.datalogp)
    values = np.array([loglik({"theta": theta}) for theta in draws[:2000]])
    assert abs(values.mean() - e_loglik) < 4 * values.std() / np.sqrt(values.size)


def test_dense_proposal_samples_every_rung_of_a_correlated_gaussian():
    idata = sample_correlated()
    z, rhat = correlated_check(idata)
    assert z < 4 and rhat < 1.05, (z, rhat)
    accept = float(idata.sample_stats.rung_accept.isel(rung_accept_dim_0=slice(1, None)).mean())
    assert 0.15 < accept < 0.45, accept


def test_a_dense_move_that_reuses_its_noise_fails(monkeypatch):
    """A broken dense move in the path production runs (the first sweep's normals used again
    and again) must fail the exact-law check."""
    real, first = rwm.dense_step, []

    def stale(step_chol, noise):
        first.append(noise.copy()) if not first else None
        return real(step_chol, first[0])

    monkeypatch.setattr(explorers.rwm, "dense_step", stale)
    z, rhat = correlated_check(sample_correlated(draws=500, tune=500))
    assert z > 4 or rhat > 1.05, (z, rhat)


def test_dense_proposal_mixes_better_than_the_diagonal_one():
    """The point of it: on the correlated target, the same runs' ESS per draw at beta = 1."""
    ess = {}
    for proposal in ("diag", "dense"):
        with correlated_model():
            idata = pm.sample(
                draws=1000, tune=1000, chains=2, cores=1, random_seed=4,
                step=ExchangeMC(explorer="rwm", n_rungs=8, proposal=proposal), **SAMPLE_KWARGS,
            )  # fmt: skip
        ess[proposal] = float(az.ess(idata, method="bulk")["theta"].min())
    assert ess["dense"] > 1.5 * ess["diag"], ess


def test_dense_proposal_on_the_lecture_model():
    with lecture_model():
        idata = pm.sample(
            draws=1500, tune=1000, chains=2, cores=1, random_seed=8,
            step=ExchangeMC(explorer="rwm", n_rungs=10, ladder="power", proposal="dense"),
            **SAMPLE_KWARGS,
        )  # fmt: skip
    assert rung_loglik_z(idata) < 4


@pytest.mark.slow
def test_dense_proposal_on_the_bimodal_target():
    ok, info = mode_weight_check(
        sample_bimodal(lambda: ExchangeMC(explorer="rwm", n_rungs=32, proposal="dense"))
    )
    assert ok, info


def test_covariances_freeze_when_tuning_ends():
    with correlated_model() as model:
        step = ExchangeMC(explorer="rwm", n_rungs=4, proposal="dense")
    step.setup_chain(np.random.default_rng(0), tune=100, draws=200)
    point = model.initial_point()
    for _ in range(100):  # the first window ends at sweep 50
        point, _ = step.step(point)
    tuned = step.scales
    assert not np.allclose(tuned.chol, np.eye(3))  # learned
    step.stop_tuning()
    for _ in range(200):
        point, _ = step.step(point)
    assert step.scales is tuned  # nothing adapts any more


def test_a_continued_dense_run_equals_one_long_run():
    """The learned factors and the gradient window travel in the checkpoint: 60 + 60 draws
    (the second half without tuning) equal 120, bit for bit."""
    from pymc_tempering.resume import continue_sampling

    kw = dict(tune=80, chains=2, cores=1, random_seed=1, **SAMPLE_KWARGS)  # a window ends
    with correlated_model():
        full = pm.sample(120, step=ExchangeMC(explorer="rwm", n_rungs=4, proposal="dense"), **kw)
        half = pm.sample(60, step=ExchangeMC(explorer="rwm", n_rungs=4, proposal="dense"), **kw)
        joined = continue_sampling(half, 60, random_seed=99, **SAMPLE_KWARGS)
    assert_same_run(full, joined)


def test_auto_is_dense_for_small_models_only():
    with correlated_model():
        assert ExchangeMC(explorer="rwm", n_rungs=4, proposal="auto").options.dense
        assert not ExchangeMC(explorer="rwm", n_rungs=4).options.dense  # the walk: diagonal
        assert not ExchangeMC(n_rungs=4, explorer="auto").options.dense  # the walk first (auto.py)
        assert not ExchangeMC(n_rungs=4).options.dense  # the default: the diagonal walk
        assert ExchangeMC(n_rungs=4, proposal="auto", explorer="mala").options.dense
    with pm.Model():  # 30 parameters: dense for MALA only (no extra density rows)
        x = pm.Normal("x", 0, 1, shape=30)
        pm.Normal("y", x, 1, observed=np.zeros(30))
        assert not ExchangeMC(explorer="rwm", n_rungs=4, proposal="auto").options.dense
        assert ExchangeMC(n_rungs=4, proposal="auto", explorer="mala").options.dense
    with pm.Model():
        x = pm.Normal("x", 0, 1, shape=70)
        pm.Normal("y", x, 1, observed=np.zeros(70))
        assert not ExchangeMC(n_rungs=4, proposal="auto", explorer="mala").options.dense


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"proposal": "full"}, "`proposal`"),
    ],
)
def test_bad_proposal_arguments_are_refused_by_name(kwargs, match):
    with correlated_model(), pytest.raises(ValueError, match=match):
        ExchangeMC(n_rungs=4, **kwargs)


def test_dense_mala_with_discrete_variables_is_refused_and_auto_stays_diagonal():
    with pm.Model():
        k = pm.Poisson("k", 3.0)
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu + k, 1, observed=[0.1, 0.2])
        with pytest.raises(ValueError, match="`proposal='dense'` with explorer='mala'"):
            ExchangeMC(n_rungs=4, explorer="mala", proposal="dense")
        assert not ExchangeMC(n_rungs=4, explorer="mala", proposal="auto").options.dense
        assert ExchangeMC(
            explorer="rwm", n_rungs=4, proposal="dense"
        ).options.dense  # the random walk leaves k alone


# -- MALA with a dense preconditioner per rung ---------------------------------------------------
def test_dense_mala_samples_every_rung_of_a_correlated_gaussian():
    z, rhat = correlated_check(sample_correlated(explorer="mala"))
    assert z < 4 and rhat < 1.05, (z, rhat)


def test_dense_mala_log_q_ratio_equals_the_direct_gaussian_densities():
    """The whitened Hastings term against log N(x; x' + h M g', noise^2 M) - log N(x'; ...)."""
    rng = np.random.default_rng(9)
    d, noise = 3, np.array([0.7, 1.3])
    chol = np.linalg.cholesky(np.stack([S_LIK, 2.0 * S_LIK + np.eye(3)]))
    x, grad, prop_grad, z = (rng.normal(size=(2, d)) for _ in range(4))
    prop, u = mala_rungs.dense_mala_step(x, grad, chol, noise, z)
    h = 0.5 * noise**2
    for rung in range(2):
        m = chol[rung] @ chol[rung].T
        cov = noise[rung] ** 2 * m
        forward = stats.multivariate_normal(x[rung] + h[rung] * m @ grad[rung], cov)
        backward = stats.multivariate_normal(prop[rung] + h[rung] * m @ prop_grad[rung], cov)
        expected = backward.logpdf(x[rung]) - forward.logpdf(prop[rung])
        got = mala_rungs.dense_mala_log_q_ratio(u, z, prop_grad, chol, noise)[rung]
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_dense_mala_with_the_factor_transposed_in_the_forward_move_fails(monkeypatch):
    """A planted bug in the path production runs: the move uses ``L^T`` where the Hastings
    term assumes ``L``."""
    real = mala_rungs.dense_mala_step

    def transposed(x, grad, chol, noise, z):
        return real(x, grad, np.swapaxes(chol, -1, -2), noise, z)

    monkeypatch.setattr(mala_rungs, "dense_mala_step", transposed)
    z, rhat = correlated_check(sample_correlated(explorer="mala"))
    assert z > 4 or rhat > 1.05, (z, rhat)
