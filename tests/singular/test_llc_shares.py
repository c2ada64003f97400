"""The LLC's shares, bias bound, warnings and summary as functions, without sampling: `_shares`
against closed forms (the prior's radial pull of a non-quadratic prior, exact Gaussian draws of a
regular model's localised posterior), the share warning at its limit, and the printed summary
(issue 39)."""

import types
import warnings

import numpy as np
import pytest
import xarray as xr

import pymc_tempering.singular.llc as llc
from pymc_tempering.evidence import EvidenceWarning
from pymc_tempering.evidence.core.mcse import mean_mcse
from pymc_tempering.singular.core import confinement_draws
from pymc_tempering.singular.llc import LocalizationWarning

# A strongly correlated, non-round prior precision, centred away from w*, plus a quartic term
# (the central difference of a quadratic would be exact for any step).
PRIOR_MEAN = np.array([0.4, -0.7, 0.2])
PRIOR_PRECISION = np.array([[2.0, 1.7, 0.3], [1.7, 3.0, -0.9], [0.3, -0.9, 1.5]])
CENTER = np.array([0.3, 0.5, -0.6])


class _Prior:
    """A stand-in for the compiled density: ``batch(points) -> (logprior, loglik)``, with the
    prior's exact gradient beside it."""

    def __init__(self, precision=PRIOR_PRECISION, mean=PRIOR_MEAN, quartic=0.1):
        self.precision, self.mean, self.quartic = precision, mean, quartic

    def batch(self, points):
        z = points - self.mean
        logprior = -0.5 * np.einsum("ij,jk,ik->i", z, self.precision, z)
        return logprior - self.quartic * np.sum(z**4, axis=1), np.zeros(len(points))

    def pull(self, points, center):
        """-Delta . grad log prior, exactly."""
        z = points - self.mean
        grad = -z @ self.precision - 4 * self.quartic * z**3
        return -np.sum((points - center) * grad, axis=1)


def _exact_shares(prior, draws, center, gamma, estimate):
    """Closed forms on the same draws: c_gamma = gamma/2 E|Delta|^2, c_phi = E[pull]/2."""
    delta = draws - center
    loc_terms = 0.5 * gamma * np.sum(delta**2, axis=-1)
    prior_terms = 0.5 * prior.pull(draws.reshape(-1, draws.shape[-1]), center).reshape(
        draws.shape[:-1]
    )
    c_loc, c_prior = loc_terms.mean(), prior_terms.mean()
    total = estimate + c_loc + c_prior
    terms = loc_terms + prior_terms
    return c_loc / total, c_prior / total, terms.mean(), mean_mcse(terms).mcse


def _chains(rng, n_chains, draws):
    """Draws that differ between chains (shifted, scaled), (chain, draw, 3)."""
    base = rng.normal(size=(n_chains, draws, 3)) @ np.array([[1, 0.8, 0], [0, 0.6, 0.3], [0, 0, 1]])
    return CENTER + 0.3 * base * (1 + np.arange(n_chains))[:, None, None] + 0.05


def test_shares_match_the_closed_forms_on_the_same_draws():
    """Every draw kept (2 x 300 < SHARE_DRAWS): shares, c and its MCSE equal the closed forms
    to 1e-7; a one-sided or a larger difference step, a flipped sign or a lost factor 2 are
    each off by more than 1e-5."""
    prior, draws = _Prior(), _chains(np.random.default_rng(5), 2, 300)
    got = llc._shares(prior, draws.reshape(-1, 3), CENTER, 3.5, 1.3, n_chains=2)
    want = _exact_shares(prior, draws, CENTER, 3.5, 1.3)
    np.testing.assert_allclose(got, want, rtol=1e-7)
    assert abs(want[1]) > 0.05 and want[2] > 0.2  # the prior's term is not negligible here


def test_shares_step_resolution(monkeypatch):
    """The planted counterpart of the test above: a step of 1e-2 instead of PULL_STEP moves the
    prior's term of this quartic prior by more than the 1e-7 the test allows."""
    prior, draws = _Prior(), _chains(np.random.default_rng(5), 2, 300)
    want = _exact_shares(prior, draws, CENTER, 3.5, 1.3)
    monkeypatch.setattr(llc, "PULL_STEP", 1e-2)
    got = llc._shares(prior, draws.reshape(-1, 3), CENTER, 3.5, 1.3, n_chains=2)
    assert abs(got[1] / want[1] - 1) > 1e-6


def test_shares_keep_draws_spread_over_each_chain():
    """2 x 1500 draws (above SHARE_DRAWS) that drift linearly within each chain: the kept draws
    span each chain, so c matches its value over all draws to within the drift's 1%; the first
    half of each chain alone would be 30% off."""
    t = np.linspace(0.0, 1.0, 1500)[None, :, None]
    draws = CENTER + np.array([[[1.0, 0.5, -0.5]], [[-0.4, 1.0, 0.8]]]) * (0.2 + t)
    prior = _Prior()
    got = llc._shares(prior, draws.reshape(-1, 3), CENTER, 2.0, 1.0, n_chains=2)
    full = _exact_shares(prior, draws, CENTER, 2.0, 1.0)
    first = _exact_shares(prior, draws[:, :750], CENTER, 2.0, 1.0)
    assert got[2] == pytest.approx(full[2], rel=0.01)
    assert abs(first[2] / full[2] - 1) > 0.3


# --- a regular model: the localised tempered posterior is Gaussian, c is its exact gap -------
D, BETA, GAMMA = 3, 0.15, 15.0
HESSIAN = 1000 * np.array([[1.0, 0.9, 0.2], [0.9, 1.2, 0.3], [0.2, 0.3, 0.6]])  # n X^T X / n


def _gaussian_prior():
    return _Prior(quartic=0.0)


def _localised_posterior():
    """Precision beta H + gamma I + prior precision; mean offset s = P^-1 P_phi (m - w*); the
    finite-gamma target beta/2 (tr(H P^-1) + s^T H s) and its exact gap d/2 - target."""
    precision = BETA * HESSIAN + GAMMA * np.eye(D) + PRIOR_PRECISION
    cov = np.linalg.inv(precision)
    shift = cov @ PRIOR_PRECISION @ (PRIOR_MEAN - CENTER)
    target = 0.5 * BETA * (np.trace(HESSIAN @ cov) + shift @ HESSIAN @ shift)
    return cov, shift, target


def _exact_draws(seed, chains=2, draws=2000):
    cov, shift, _ = _localised_posterior()
    z = np.random.default_rng(seed).normal(size=(chains, draws, D))
    return CENTER + shift + z @ np.linalg.cholesky(cov).T


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bias_is_the_regular_models_exact_gap(seed):
    """Exact draws: c (the bias the result reports) is d/2 minus the finite-gamma target within
    4 of its MCSE, and the estimate plus c is d/2 within 4 MCSE (the identity behind it)."""
    draws = _exact_draws(seed)
    _, _, target = _localised_posterior()
    delta = draws - CENTER
    terms = 0.5 * BETA * np.einsum("cdi,ij,cdj->cd", delta, HESSIAN, delta)
    estimate = terms.mean()
    *_, c, c_mcse = llc._shares(_gaussian_prior(), draws.reshape(-1, D), CENTER, GAMMA, estimate, 2)
    gap = D / 2 - target
    assert gap > 0.1 and c_mcse < 0.1 * gap  # a gap the test resolves
    assert abs(c - gap) < 4 * c_mcse
    assert abs(estimate + c - D / 2) < 4 * mean_mcse(terms).mcse


def test_bias_without_the_prior_fails(monkeypatch):
    """The planted counterpart: dropping the prior's term (the localization's alone) misses the
    exact gap by many MCSE."""
    draws = _exact_draws(0)
    _, _, target = _localised_posterior()
    monkeypatch.setattr(
        llc, "confinement_draws", lambda *a: (confinement_draws(*a)[0], np.zeros(a[0].shape[:-1]))
    )
    *_, c, c_mcse = llc._shares(_gaussian_prior(), draws.reshape(-1, D), CENTER, GAMMA, 1.0, 2)
    assert abs(c - (D / 2 - target)) > 4 * c_mcse


# --- the share warning at its limit -------------------------------------------------------------
@pytest.mark.parametrize(
    "shares",
    [(0.05, 0.05), (0.1, 0.0), (0.0, 0.1), (0.07, 0.03 - 1e-9), (np.nan, np.nan), (0.3, -0.2)],
)
def test_no_share_warning_up_to_the_limit(shares):
    assert llc.SHARE_LIMIT == 0.1
    assert sum(shares) <= llc.SHARE_LIMIT or np.isnan(sum(shares))
    assert llc._share_problems(shares, localization_given=True) == []


@pytest.mark.parametrize(
    ("shares", "fixes"),
    [
        ((0.05 + 1e-9, 0.05 + 1e-9), ["lower `localization`", "the prior confines"]),
        ((0.05 + 1e-9, 0.05), ["lower `localization`"]),
        ((0.05, 0.05 + 1e-9), ["the prior confines"]),
        ((0.1 + 1e-9, 0.0), ["lower `localization`"]),
        ((0.0, 0.1 + 1e-9), ["the prior confines"]),
        ((0.3, 0.01), ["lower `localization`"]),
    ],
)
def test_share_warning_above_the_limit_names_each_fix(shares, fixes):
    (message,) = llc._share_problems(shares, localization_given=False)
    assert message.startswith(
        f"the localization takes {shares[0]:.0%} and the prior {shares[1]:.0%} of the estimate "
        "(more than 10% together)"
    )
    for fix in ["lower `localization`", "the prior confines"]:
        assert (fix in message) == (fix in fixes), fix
    assert "localization=None" not in message  # the default rule is already in use
    (given,) = llc._share_problems(shares, localization_given=True)
    assert ("localization=None" in given) == ("lower `localization`" in fixes)


# --- which warning, and the printed summary -------------------------------------------------------
def _result(problems, share_problems, confinement=0.1007):
    idata = types.SimpleNamespace(posterior=xr.Dataset(coords={"chain": [0, 1], "draw": [0, 1]}))
    terms = np.array([[1.8, 2.0], [1.9, 1.9]])
    loglik = np.array([[-1001.0, -1002.0], [-1003.0, -1000.0]])
    stats = (0.036, 1467.0, terms.mean(axis=1), np.array([0.05, 0.05]))
    attrs = {"summary": llc._summary(1.9, 0.036, confinement, 0.003)}
    return llc._result(
        idata, terms, loglik, -999.0, 1000, stats, {}, (problems, share_problems), attrs
    )


def test_share_problems_alone_are_a_localization_warning_others_an_evidence_warning():
    with pytest.warns(LocalizationWarning, match="share"):
        res = _result([], ["share"])
    assert res.attrs["warning"] == "share"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = _result(["unsettled"], ["share"])
    (warning,) = caught
    assert warning.category is EvidenceWarning and "unsettled; share" in str(warning.message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = _result([], [])
    np.testing.assert_allclose(res.loss, [[1.001, 1.002], [1.003, 1.0]])
    assert float(res.loss_center) == 0.999 and float(res.local_learning_coefficient) == 1.9


def test_summary_carries_the_bound_and_where_lambda_lies():
    """The issue's case (1.904 +- 0.036, bound 0.1): the bound exceeds the MCSE, and the summary
    gives the interval [estimate, estimate + bound] that holds lambda(w*) = 2."""
    text = _result([], []).attrs["summary"]
    assert text.startswith("LLC 1.9 +- 0.036 (MCSE) is up to 0.1 below lambda(w*) (bias_bound")
    assert "more than the MCSE" in text and "lambda(w*) lies in about [1.9, 2.001]" in text
    assert "finite-gamma LLC" in text
    # a bound between one and four MCSE still exceeds the error bar
    assert "more than the MCSE" in llc._summary(1.9, 0.036, 0.04, 0.003)
    within = llc._summary(1.9, 0.036, 0.03, 0.003)
    assert within.endswith("within the MCSE)") and "lies in" not in within
    above = llc._summary(1.9, 0.036, -0.2, 0.003)
    assert "0.2 above lambda(w*)" in above and "[1.7, 1.9]" in above


def test_confinement_fields_report_the_bound_as_a_magnitude():
    """c < 0 (a prior that pushes the draws outward more than the localization holds them):
    the bound is |c|, the shares pass through."""
    fields = llc._confinement_fields((0.02, -0.07, -0.1, 0.004))
    assert fields == {
        "localization_share": 0.02,
        "prior_share": -0.07,
        "bias_bound": 0.1,
        "bias_bound_mcse": 0.004,
    }
