"""The change-point references (pymc_tempering.exact.change_point) and the coal-mining data
against 1-D quadrature over each rate, finite differences, and the PyMC model's own density."""

import numpy as np
import pytest
import scipy.integrate
from scipy import stats
from scipy.special import logsumexp

from pymc_tempering.exact.change_point import (
    change_point_log_evidence,
    change_point_model,
    change_point_posterior,
    change_point_power_moments,
    no_change_log_evidence,
    no_change_model,
    no_change_power_moments,
)
from pymc_tempering.exact.datasets import coal_mining_disasters

# a short series keeps the quadrature fast; the coal series is checked through the same code
SHORT = np.array([4, 5, 3, 6, 4, 1, 0, 2, 1, 0, 1])
PRIOR = {"alpha": 2.0, "rate": 0.5}


def _log_segment_quad(counts, beta, alpha, rate):
    """log of int Gamma(lam; alpha, rate) prod Poisson(y; lam)^beta d lam by adaptive quadrature."""
    if counts.size == 0:
        return 0.0
    log_lik = stats.poisson.logpmf(counts[:, None], np.atleast_1d(1.0)).sum()  # scale
    mode = max((alpha - 1 + beta * counts.sum()) / (rate + beta * counts.size), 1e-3)

    def f(lam):
        value = beta * stats.poisson.logpmf(counts, lam).sum() - beta * log_lik
        return np.exp(value + stats.gamma.logpdf(lam, alpha, scale=1 / rate))

    pieces = [0.0, mode / 4, mode, 4 * mode, 40 * mode + 50]
    total = sum(
        scipy.integrate.quad(f, a, b, epsabs=0, epsrel=1e-12, limit=200)[0]
        for a, b in zip(pieces[:-1], pieces[1:], strict=True)
    )
    return np.log(total) + beta * log_lik


def _log_z_by_switchpoint(counts, beta, alpha, rate):
    """log Z_beta(s) - log T for every switchpoint s (early rate for the first k = 1..T years)."""
    return np.array(
        [
            _log_segment_quad(counts[:k], beta, alpha, rate)
            + _log_segment_quad(counts[k:], beta, alpha, rate)
            - np.log(counts.size)
            for k in range(1, counts.size + 1)
        ]
    )


def test_coal_mining_disasters_series():
    years, counts = coal_mining_disasters()
    assert years[0] == 1851 and years[-1] == 1962 and np.all(np.diff(years) == 1)
    assert counts.size == 112 and counts.sum() == 191 and counts.dtype == np.int64
    # the two years where boot::coal's tabulated dates differ (one event at the year boundary)
    assert counts[years == 1941][0] + counts[years == 1942][0] == 6
    assert counts.max() == 6 and set(years[counts == 6]) == {1860, 1866}
    counts[0] = 99  # fresh arrays: a caller's change does not leak into the next call
    assert coal_mining_disasters().counts[0] == 4


@pytest.mark.parametrize("beta", [1.0, 0.3])
def test_change_point_log_evidence_against_quadrature(beta):
    log_z = _log_z_by_switchpoint(SHORT, beta, **PRIOR)
    assert change_point_log_evidence(beta, counts=SHORT, **PRIOR) == pytest.approx(
        logsumexp(log_z), abs=1e-9
    )
    value = no_change_log_evidence(beta, counts=SHORT, **PRIOR)
    assert value == pytest.approx(_log_segment_quad(SHORT, beta, **PRIOR), abs=1e-9)
    assert change_point_log_evidence(0.0, counts=SHORT) == pytest.approx(0.0, abs=1e-12)


def test_change_point_posterior_against_quadrature():
    log_z = _log_z_by_switchpoint(SHORT, 1.0, **PRIOR)
    years = np.arange(2000, 2000 + SHORT.size)
    post = change_point_posterior(years=years, counts=SHORT, **PRIOR)
    np.testing.assert_allclose(post.probability, np.exp(log_z - logsumexp(log_z)), atol=1e-10)
    np.testing.assert_array_equal(post.switchpoint, years)
    # E[e | y] by quadrature of lam * integrand over the early segment, for each switchpoint
    a, r = PRIOR["alpha"], PRIOR["rate"]
    early = [(a + SHORT[:k].sum()) / (r + k) for k in range(1, SHORT.size + 1)]
    assert post.early_rate_mean == pytest.approx(post.probability @ early, rel=1e-12)
    late_last = a / r  # s = last year: the late rate keeps its prior
    late = [(a + SHORT[k:].sum()) / (r + SHORT.size - k) for k in range(1, SHORT.size)]
    assert post.late_rate_mean == pytest.approx(
        post.probability @ np.r_[late, late_last], rel=1e-12
    )


@pytest.mark.parametrize("model", ["change", "no change"])
def test_power_moments_are_derivatives_of_log_z(model):
    log_z = change_point_log_evidence if model == "change" else no_change_log_evidence
    moments = change_point_power_moments if model == "change" else no_change_power_moments
    for beta in (0.0, 1e-3, 0.2, 1.0):
        h = 1e-6 if beta < 0.01 else 1e-4  # near 0 the curve bends fast (Var_0 ~ 2e4)
        lo, hi = max(beta - h, 0.0), min(beta + h, 1.0)
        mid = (lo + hi) / 2
        values = [log_z(b, **PRIOR) for b in (lo, mid, hi)]
        mean, var = moments([mid], **PRIOR)
        assert mean[0] == pytest.approx((values[2] - values[0]) / (hi - lo), rel=1e-7)
        second = (values[2] - 2 * values[1] + values[0]) / ((hi - lo) / 2) ** 2
        assert var[0] == pytest.approx(second, rel=1e-3)


def test_power_moments_integrate_to_log_z():
    betas = np.linspace(0.0, 1.0, 2001) ** 4  # dense near 0, where E_beta falls fastest
    mean, _ = change_point_power_moments(betas)
    integral = scipy.integrate.simpson(
        mean * 4 * np.linspace(0, 1, 2001) ** 3, x=np.linspace(0, 1, 2001)
    )
    assert integral == pytest.approx(change_point_log_evidence(), abs=1e-6)


def test_change_point_on_the_coal_series():
    """One change beats no change by about 28.9 nats; the switchpoint sits in 1886-1895."""
    log_bf = change_point_log_evidence() - no_change_log_evidence()
    assert 25 < log_bf < 33
    post = change_point_posterior()
    assert post.probability.sum() == pytest.approx(1.0)
    window = (post.switchpoint >= 1886) & (post.switchpoint <= 1895)
    assert post.probability[window].sum() > 0.9
    assert post.early_rate_mean > 2.5 and post.late_rate_mean < 1.2


def _numpy_joint(point, years, counts, alpha, rate):
    """log prior + log likelihood of the change point written with scipy.stats."""
    s, e, l = point["switchpoint"], point["early_rate"], point["late_rate"]
    prior = -np.log(years.size) + stats.gamma.logpdf([e, l], alpha, scale=1 / rate).sum()
    lam = np.where(years <= s, e, l)
    return prior, stats.poisson.logpmf(counts, lam).sum()


def test_pymc_change_point_model_has_the_exact_references_density():
    years, counts = coal_mining_disasters()
    model = change_point_model(alpha=2.0, rate=0.5)
    logprior = model.compile_fn(model.varlogp, point_fn=True)
    loglik = model.compile_fn(model.datalogp, point_fn=True)
    rng = np.random.default_rng(0)
    for _ in range(10):
        point = {
            "switchpoint": rng.integers(1851, 1963),
            "early_rate": rng.gamma(2.0),
            "late_rate": rng.gamma(2.0),
        }
        transformed = {
            "switchpoint": point["switchpoint"],
            "early_rate_log__": np.log(point["early_rate"]),
            "late_rate_log__": np.log(point["late_rate"]),
        }
        prior, lik = _numpy_joint(point, years, counts, 2.0, 0.5)
        jacobian = transformed["early_rate_log__"] + transformed["late_rate_log__"]
        assert logprior(transformed) == pytest.approx(prior + jacobian, abs=1e-6)
        assert loglik(transformed) == pytest.approx(lik, abs=1e-9)
    assert set(model.named_vars) >= {"switchpoint", "early_rate", "late_rate", "disasters"}
    none = no_change_model(alpha=2.0, rate=0.5)
    value = none.compile_fn(none.datalogp, point_fn=True)({"rate_log__": np.log(1.7)})
    assert value == pytest.approx(stats.poisson.logpmf(counts, 1.7).sum(), abs=1e-9)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="beta"):
        change_point_log_evidence(1.5)
    with pytest.raises(ValueError, match="counts"):
        change_point_log_evidence(counts=[1, -2, 3])
    with pytest.raises(ValueError, match="years"):
        change_point_posterior(years=[3, 2, 1], counts=[1, 2, 3])
