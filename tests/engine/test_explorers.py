"""ExchangeMC(explorer="independent"): every rung's law on exact targets (a tempered Gaussian,
the 2-D two-mode target), a broken Hastings ratio that must fail the same check, a restored
state that repeats draws with the fit in use, and the option's errors."""

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
from helpers import run_steps

from pymc_tempering.engine.discrete import Mixed
from pymc_tempering.engine.explorers import EXPLORERS, Explorer, Independent
from pymc_tempering.exact import two_mode_model
from pymc_tempering.kernels import independence
from pymc_tempering.resume import codec
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC

PRIOR_SD = 3.0
CENTRE = np.array([1.0, -1.0, 0.5])
PRECISION = np.array([[4.0, 1.5, 0.0], [1.5, 2.0, -0.5], [0.0, -0.5, 1.0]])
TUNE, DRAWS = 300, 1200


def gaussian_model():
    """Prior N(0, 3^2 I_3); log-likelihood -(x - m)' P (x - m) / 2 (a Potential): every
    tempered posterior is Gaussian."""
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, PRIOR_SD, shape=3)
        dev = x - CENTRE
        pm.Potential("loglik", -0.5 * (dev @ PRECISION @ dev))
    return model


def tempered_moments(beta):
    """Mean and covariance of the beta-tempered posterior and its E[loglik]."""
    precision = np.eye(3) / PRIOR_SD**2 + beta * PRECISION
    cov = np.linalg.inv(precision)
    mean = cov @ (beta * PRECISION @ CENTRE)
    dev = mean - CENTRE
    return mean, cov, -0.5 * (np.trace(PRECISION @ cov) + dev @ PRECISION @ dev)


def _sample(model, seed, n_rungs=6, draws=DRAWS, tune=TUNE):
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step = ExchangeMC(n_rungs=n_rungs, explorer="independent")
        idata = pm.sample(draws=draws, tune=tune, chains=2, step=step, random_seed=seed,
                          cores=1, progressbar=False, compute_convergence_checks=False)  # fmt: skip
    return step, idata


def _z(samples, exact):
    """(mean - exact) / MCSE, the MCSE from the bulk ESS of (chain, draw) samples."""
    return (samples.mean() - exact) / (samples.std() / np.sqrt(az.ess(samples)))


def _gaussian_z_scores(step, idata):
    """z-scores of every rung's mean loglik and of the top rung's mean of each parameter."""
    loglik = idata.sample_stats["rung_loglik"].values  # (chain, draw, rung)
    z = [_z(loglik[:, :, r], tempered_moments(b)[2]) for r, b in enumerate(step.betas) if b > 0]
    x = idata.posterior["x"].values
    mean = tempered_moments(1.0)[0]
    z += [_z(x[:, :, j], mean[j]) for j in range(3)]
    return np.array(z)


def _imh_accept(idata, tune=TUNE):
    """Mean acceptance of the independence moves per rung (after tuning: the sweeps
    :meth:`Independent.independence_sweep` picks)."""
    accept = idata.sample_stats["rung_accept"].values
    even = Independent.independence_sweep(tune + np.arange(accept.shape[1]))
    return accept[:, even].mean(axis=(0, 1))


@pytest.fixture(scope="module")
def gaussian():
    return gaussian_model()


@pytest.mark.parametrize("seed", [1, 2])
def test_every_rung_of_a_tempered_gaussian_within_4_mcse(gaussian, seed):
    """Each rung's mean loglik (exact E_beta[loglik]) and the top rung's means within 4
    MCSE, with the independence moves doing the work (accepted more often than not)."""
    step, idata = _sample(gaussian, seed)
    z = _gaussian_z_scores(step, idata)
    assert np.all(np.abs(z) < 4), z
    assert np.all(_imh_accept(idata)[1:] > 0.5)
    assert step.scales.independence.final


def test_a_hastings_ratio_with_the_wrong_sign_fails(gaussian, monkeypatch):
    """The production path with log q(x') - log q(x) instead of log q(x) - log q(x'): the
    chains then target pi * q^2 / ... on the independence sweeps, and the same check fails."""
    right = independence.log_q_ratio
    monkeypatch.setattr(independence, "log_q_ratio", lambda fit, x, y: -right(fit, x, y))
    step, idata = _sample(gaussian, 1)
    assert np.max(np.abs(_gaussian_z_scores(step, idata))) > 4


def test_two_mode_weights_at_the_top_rung():
    """The 2-D two-mode target (modes 10 sds apart, weights 0.3 / 0.7): the top rung's share
    of the light mode within 4 MCSE of 0.3, and the fitted mixture proposing both modes
    (its moves accepted at the top rung more often than not)."""
    step, idata = _sample(two_mode_model(), 3, n_rungs=10, draws=1500)
    light = (idata.posterior["x"].values.sum(axis=-1) < 0).astype(float)
    assert abs(_z(light, 0.3)) < 4
    assert step.scales.independence.fit.n_components[-1] == 2
    assert _imh_accept(idata)[-1] > 0.5


def _same(first, again):
    for (p1, s1), (p2, s2) in zip(first, again, strict=True):
        np.testing.assert_array_equal(p1["x"], p2["x"])
        for name, value in s1[0].items():
            if name != "sampling_state":
                np.testing.assert_array_equal(np.asarray(value), np.asarray(s2[0][name]))


def test_a_restored_state_repeats_the_draws_with_the_fit_in_use(gaussian):
    """Save the state while tuning with a fit (sweep 170 of 200: the last window's fit, made
    at sweep 150, in use), then after tuning (independence and walk sweeps in turn): 6 draws,
    restore, the same 6 draws. The state survives the checkpoint codec too."""
    with gaussian:
        step = ExchangeMC(n_rungs=4, explorer="independent")
    step.setup_chain(np.random.default_rng(4), tune=200, draws=50)
    point = run_steps(step, gaussian.initial_point(), 170)[-1][0]
    assert step.scales.independence.fit is not None and not step.scales.independence.final
    point = _check_restore(step, point)  # sweeps 170-176, twice
    point = run_steps(step, point, 24)[-1][0]
    assert step.sweep == 200 and step.scales.independence.final
    step.stop_tuning()
    _check_restore(step, point)


def _check_restore(step, point):
    state = step.sampling_state
    first = run_steps(step, point, 6)
    step.sampling_state = codec.decode(codec.encode(state))
    _same(first, run_steps(step, point, 6))
    return first[-1][0]


def test_refuses_discrete_variables_by_name():
    with pm.Model():
        pm.Poisson("k", 3.0)
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1, observed=[0.1])
        with pytest.raises(ValueError, match="explorer='independent'.*explorer='rwm'"):
            ExchangeMC(explorer="independent")


def test_the_random_walk_keeps_the_plain_scale_record(gaussian):
    """Only the independence explorer carries a fit: the others' sampling state is as before."""
    with gaussian:
        plain = ExchangeMC(explorer="rwm", n_rungs=4)
        fitted = ExchangeMC(n_rungs=4, explorer="independent")
    assert not hasattr(plain.scales, "independence")
    assert fitted.scales.independence.fit is None


@pytest.mark.parametrize("name", sorted(EXPLORERS))
def test_each_registered_explorer_satisfies_the_protocol(name, gaussian):
    """Every explorer ``explorer=`` names, alone and wrapped for discrete variables, is an
    Explorer: it declares so, has every member, and each method takes the protocol's
    arguments (by name, in order)."""
    import inspect

    density = ExchangeMC(model=gaussian, n_rungs=3, explorer=name).density
    cls = EXPLORERS[name]
    assert Explorer in cls.__mro__ and cls.name == name  # declared, not only matching
    for explorer in (cls(density), Mixed(cls(density), moves=None)):
        assert isinstance(explorer, Explorer), type(explorer)
        for member in ("default_target_accept", "init_aux", "explore"):
            wanted = list(inspect.signature(getattr(Explorer, member)).parameters)[1:]
            got = list(inspect.signature(getattr(explorer, member)).parameters)
            assert got == wanted, (type(explorer).__name__, member, got)
        assert isinstance(explorer.needs_gradient, bool)
        assert isinstance(explorer.fits_rungs, bool)
        assert 0 < explorer.default_target_accept(3) < 1
        assert explorer.init_aux(np.zeros((3, density.n_params))).shape[0] == 3


def test_the_protocol_check_refuses_an_explorer_without_explore():
    """The check above can fail: an object lacking a member is not an Explorer."""

    class NoExplore:
        name, needs_gradient, fits_rungs = "none", False, False

        def default_target_accept(self, n_params):
            return 0.5

        def init_aux(self, x):
            return x[:, :0]

    assert not isinstance(NoExplore(), Explorer)
