"""The LLC's target check: E[Delta . grad U] = d under the sampled density e^{-U}, whatever the
model (integration by parts). As functions on exact draws of a known localised Gaussian (the
check passes over seeds; a law 0.8x too narrow, or one cut off along the rays, fails it), then
on a run: the a b model at n = 10^4, where MALA does not reach the target (decision 060's
addendum), warns. (The regular d = 4 regression passes it: test_llc_bias.py.)"""

import warnings

import numpy as np
import pytest
from test_llc import _product

import pymc_tempering.singular.llc as llc
from pymc_tempering.evidence import EvidenceWarning
from pymc_tempering.evidence.core.mcse import mean_mcse
from pymc_tempering.exact.monomial import monomial_llc
from pymc_tempering.singular.core import virial_draws

# A regular model's localised tempered posterior: loglik -1/2 Delta^T H Delta (H strongly
# correlated, non-round), a Gaussian prior centred away from w*, localization gamma.
D, BETA, GAMMA = 3, 0.15, 4.0
HESSIAN = 800 * np.array([[1.0, 0.9, 0.2], [0.9, 1.2, 0.3], [0.2, 0.3, 0.6]])
PRIOR_MEAN = np.array([0.4, -0.7, 0.2])
PRIOR_PRECISION = np.array([[2.0, 1.7, 0.3], [1.7, 3.0, -0.9], [0.3, -0.9, 1.5]])
CENTER = np.array([0.3, 0.5, -0.6])


class _Density:
    """A stand-in for the compiled density: ``batch(points) -> (logprior, loglik)``."""

    n_params = D

    def batch(self, points):
        z, delta = points - PRIOR_MEAN, points - CENTER
        logprior = -0.5 * np.einsum("ij,jk,ik->i", z, PRIOR_PRECISION, z)
        return logprior, -0.5 * np.einsum("ij,jk,ik->i", delta, HESSIAN, delta)


def _posterior():
    """Mean and covariance of the localised tempered posterior exp(beta loglik + logprior -
    gamma/2 |Delta|^2): precision beta H + gamma I + P_phi, mean w* + P^-1 P_phi (m - w*)."""
    precision = BETA * HESSIAN + GAMMA * np.eye(D) + PRIOR_PRECISION
    cov = np.linalg.inv(precision)
    return CENTER + cov @ PRIOR_PRECISION @ (PRIOR_MEAN - CENTER), cov


def _draws(seed, scale=1.0, chains=2, draws=1500):
    mean, cov = _posterior()
    z = np.random.default_rng(seed).normal(size=(chains, draws, D))
    return mean + scale * z @ np.linalg.cholesky(cov).T


def _check(draws, chains=2):
    return llc._target_check(_Density(), draws.reshape(-1, D), CENTER, GAMMA, BETA, chains)


def _z(check):
    return (check[0] - D) / check[1]


def test_virial_terms_are_the_radial_derivative_of_u():
    """virial_draws against Delta . grad U from the exact gradient, on scattered points."""
    points = _draws(3, chains=1, draws=50)[0]
    delta = points - CENTER
    grad_loglik = -delta @ HESSIAN
    grad_logprior = -(points - PRIOR_MEAN) @ PRIOR_PRECISION
    grad_u = -BETA * grad_loglik - grad_logprior + GAMMA * delta
    got = virial_draws(
        delta, GAMMA, BETA, np.sum(delta * grad_loglik, 1), np.sum(delta * grad_logprior, 1)
    )
    np.testing.assert_allclose(got, np.sum(delta * grad_u, axis=1), rtol=1e-12)


def test_check_terms_match_the_exact_gradient_on_the_same_draws():
    """Every draw kept (2 x 1500 < CHECK_DRAWS): mean and MCSE equal the closed form's to 1e-7
    (the radial differences of these quadratics are exact up to rounding)."""
    draws = _draws(0)
    mean, cov = _posterior()
    precision = np.linalg.inv(cov)
    exact = np.einsum("cdi,ij,cdj->cd", draws - CENTER, precision, draws - mean)
    got = _check(draws)
    np.testing.assert_allclose(got, (exact.mean(), mean_mcse(exact).mcse), rtol=1e-7)


@pytest.mark.parametrize("seed", range(8))
def test_exact_draws_pass(seed):
    """Exact draws of the target: within TARGET_Z MCSE of d (here the terms' spread makes the
    MCSE about 0.04, so a wrong beta, gamma or sign moves the mean by tens of MCSE)."""
    check = _check(_draws(seed))
    assert check[1] < 0.06
    assert abs(_z(check)) < llc.TARGET_Z
    assert llc._target_problems(check, D) == []


@pytest.mark.parametrize("seed", range(4))
def test_too_narrow_draws_fail(seed):
    """Draws 0.8x the target's scale: E = 0.64 d, about 36 MCSE low; the warning says what
    happened and what to do."""
    check = _check(_draws(seed, scale=0.8))
    assert _z(check) < -llc.TARGET_Z
    (text,) = llc._target_problems(check, D)
    assert "do not follow the localised posterior" in text and "not to be trusted" in text
    assert "tune longer" in text and "smaller step_size" in text and "another sampler" in text


def test_draws_cut_off_along_the_rays_fail():
    """A chain that never leaves a ball around w* (the arms of a singular set left unexplored
    along the rays): exact draws with |Delta| below its 60% quantile fail."""
    draws = _draws(1, chains=2, draws=4000)
    radius = np.linalg.norm(draws - CENTER, axis=-1)
    kept = radius < np.quantile(radius, 0.6)
    per_chain = kept.sum(axis=1).min()
    inner = np.stack([draws[c][kept[c]][:per_chain] for c in range(2)])
    assert _z(_check(inner)) < -llc.TARGET_Z


def test_direction_only_reweighting_is_invisible():
    """The check's blind spot, stated: e^{-U} cut to a cone around w* (here the half-space
    Delta . u > 0) still gives d exactly, so chains stuck on one arm of a cross that still
    spread along it correctly are not caught (docs/guide/singular.md)."""
    draws = _draws(2, chains=2, draws=4000)
    side = (draws - CENTER) @ np.array([1.0, -0.5, 0.3]) > 0
    per_chain = side.sum(axis=1).min()
    half = np.stack([draws[c][side[c]][:per_chain] for c in range(2)])
    assert abs(_z(_check(half))) < llc.TARGET_Z


@pytest.mark.parametrize(
    "check, flagged",
    [((3.0, 0.1), False), ((3.4, 0.1), False), ((2.6, 0.1), False), ((3.41, 0.1), True),
     ((2.59, 0.1), True), ((3.0, np.nan), True)],
)  # fmt: skip
def test_target_problems_threshold(check, flagged):
    assert llc.TARGET_Z == 4.0
    assert bool(llc._target_problems(check, D)) is flagged
    line = llc._check_line(check, D)
    assert ("FAILED" in line) is flagged and f"against d = {D}" in line


def test_check_keeps_draws_spread_over_each_chain(monkeypatch):
    """Above CHECK_DRAWS (lowered to 1000 here) the kept draws are 500 evenly spaced over each
    chain of 3000: the check equals the closed form on exactly those draws."""
    monkeypatch.setattr(llc, "CHECK_DRAWS", 1000)
    draws = _draws(4, draws=3000)
    kept = np.linspace(0, 2999, 500).astype(int)
    mean, cov = _posterior()
    exact = np.einsum(
        "cdi,ij,cdj->cd", draws[:, kept] - CENTER, np.linalg.inv(cov), draws[:, kept] - mean
    )
    np.testing.assert_allclose(_check(draws), (exact.mean(), mean_mcse(exact).mcse), rtol=1e-7)


# --- runs -------------------------------------------------------------------------------------
RUN = {"draws": 1000, "tune": 500, "chains": 2, "cores": 1}


def _run(model, center, seed=1):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = llc.local_learning_coefficient(model, center, random_seed=seed, **RUN)
    return res, [w for w in caught if issubclass(w.category, EvidenceWarning)]


@pytest.mark.slow
def test_product_model_at_n_1e4_leans_below_and_warns_past_the_threshold():
    """y ~ N(a b, 1), n = 10^4: MALA under-explores the arms of the cross, so over seeds 1-3
    its estimates lie below the exact target on average and the target check below d = 2,
    and on each seed the check warns (and the summary says FAILED) exactly where it passes
    TARGET_Z. Which seeds pass it depends on the compiled density's last bits (decision 101),
    so no seed is assumed to; and the check does not catch every miss of 4 MCSE (decision
    060, last section)."""
    n = 10_000
    estimates, zs = [], []
    for seed in (1, 2, 3):
        res, caught = _run(_product(n), {"a": np.array(0.0), "b": np.array(0.0)}, seed=seed)
        target = monomial_llc(n / 2, res.attrs["beta"], 1.0, (1, 1), prior_sd=1.0)
        assert res.attrs["n_params"] == 2
        z = (float(res.target_check) - 2) / float(res.target_check_mcse)
        warned = any("do not follow the localised posterior" in str(w.message) for w in caught)
        assert warned == (z < -llc.TARGET_Z) == ("FAILED" in res.attrs["summary"]), seed
        estimates.append(float(res.local_learning_coefficient))
        zs.append(z)
    assert np.mean(estimates) < target and np.mean(zs) < 0, (estimates, target, zs)
