"""The local learning coefficient: MALA and SGLD against the exact finite-n value by quadrature,
the localisation option of the samplers, the warnings (issue 15), and the default localization
with the shares of the estimate that localization and prior take (issue 33)."""

import warnings

import numpy as np
import pymc as pm
import pytest
from targets import singular_model

from pymc_tempering.evidence import EvidenceWarning
from pymc_tempering.exact.monomial import monomial_llc
from pymc_tempering.exact.singular import reduced_rank_learning_coefficient
from pymc_tempering.singular.core import (
    confinement_shares,
    default_localization,
    diagonal_curvature,
    localization_term,
)
from pymc_tempering.singular.llc import LocalizationWarning, local_learning_coefficient
from pymc_tempering.step_methods.langevin import MALA
from pymc_tempering.step_methods.sgld import SGLD

N, GAMMA = 10_000, 10.0
BETA_STAR = 1 / np.log(N)
RUN = {"draws": 1000, "tune": 500, "chains": 4, "cores": 1}


def test_localization_term_gradient():
    x, c = np.array([0.3, -1.2]), np.array([1.0, 0.5])
    value, grad = localization_term(x, c, 4.0)
    eps = 1e-6
    numeric = [
        (localization_term(x + eps * e, c, 4.0)[0] - localization_term(x - eps * e, c, 4.0)[0])
        / (2 * eps)
        for e in np.eye(2)
    ]
    np.testing.assert_allclose(grad, numeric, rtol=1e-6)
    assert value == pytest.approx(-2.0 * np.sum((x - c) ** 2))


def test_samplers_refuse_bad_localization():
    with singular_model(100, 2):
        with pytest.raises(ValueError, match="localization_center"):
            MALA(localization=1.0)
        with pytest.raises(ValueError, match="lacks"):
            SGLD(localization=1.0, localization_center={"x": 0.0})
        with pytest.raises(ValueError, match=">= 0"):
            MALA(localization=-1.0, localization_center={"w": np.zeros(2)})
        with pytest.raises(ValueError, match="beta"):
            SGLD(beta=2.0)


def test_mala_localised_density_adds_the_term():
    with singular_model(100, 2) as model:
        plain = MALA(beta=0.3)
        local = MALA(beta=0.3, localization=5.0, localization_center={"w": np.array([0.5, 0])})
    x = np.array([0.2, -0.4])
    (lp0, g0), (lp1, g1) = plain._logp_grad(x), local._logp_grad(x)
    assert lp1 - lp0 == pytest.approx(-2.5 * (0.3**2 + 0.4**2))
    np.testing.assert_allclose(g1 - g0, -5.0 * (x - [0.5, 0.0]))
    assert model.compile_logp()({"w": x}) != lp0  # tempered: not the model's own density


@pytest.fixture(scope="module")
def mala_result():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # MALA divergences while tuning
        return local_learning_coefficient(
            singular_model(N, 2), {"w": np.zeros(2)}, n_obs=N, localization=GAMMA,
            random_seed=1, **RUN,
        )  # fmt: skip


def test_mala_llc_within_4_mcse_of_exact(mala_result):
    """w* = 0 sits on the singular set of H = w1^2 w2^2 (lambda 1/2, multiplicity 2)."""
    res = mala_result
    truth = monomial_llc(N, BETA_STAR, GAMMA, (1, 1), prior_sd=1.0)
    # 0.26 against lambda = 1/2: the localization's share is flagged, nothing else
    assert res.attrs["beta"] == BETA_STAR
    assert res.attrs["warning"].startswith("the localization takes")
    assert abs(float(res.local_learning_coefficient) - truth) < 4 * float(res.mcse)
    assert res.loss.dims == ("chain", "draw") and res.per_chain.size == 4
    assert float(res.loss_center) == 0.0


def test_wrong_beta_is_detected(mala_result):
    """Sampling at beta = 1 (n instead of n beta*) moves the estimate far outside 4 MCSE of the
    exact value at beta*: the test above can fail."""
    truth = monomial_llc(N, BETA_STAR, GAMMA, (1, 1), prior_sd=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrong = local_learning_coefficient(
            singular_model(N, 2), {"w": np.zeros(2)}, n_obs=N, localization=GAMMA, beta=1.0,
            random_seed=1, **RUN,
        )  # fmt: skip
    # the estimator then reads beta = 1 too; what the user meant is beta*
    rescaled = float(wrong.local_learning_coefficient) * BETA_STAR
    assert abs(rescaled - truth) > 4 * float(mala_result.mcse)


def _centred_data(n, seed=0):
    y = np.random.default_rng(seed).normal(size=n)
    return y - y.mean()  # loglik - loglik(0) = -(n / 2) w1^2 w2^2 exactly


def _product_model(y, batch_size=None):
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 1.0, shape=2)
        if batch_size is None:
            pm.Normal("y", w[0] * w[1], 1.0, observed=y)
        else:
            y_mb = pm.Minibatch(y, batch_size=batch_size)
            pm.Normal("y", w[0] * w[1], 1.0, observed=y_mb, total_size=len(y))
    return model


@pytest.mark.slow
def test_sgld_minibatch_llc_within_4_mcse_of_exact():
    """devinterp's setting: minibatched SGLD (batch 100 of 2000) at a constant step."""
    n = 2000
    y = _centred_data(n)
    res = local_learning_coefficient(
        _product_model(y), {"w": np.zeros(2)}, sampler="sgld", step_size=2e-3,
        minibatch_model=_product_model(y, 100), localization=GAMMA, check_step_size=False,
        draws=3000, tune=300, chains=4, cores=1, random_seed=1,
    )  # fmt: skip
    truth = monomial_llc(n / 2, 1 / np.log(n), GAMMA, (1, 1), prior_sd=1.0)
    assert res.attrs["n_obs"] == n and res.attrs["warning"].startswith("the localization takes")
    assert abs(float(res.local_learning_coefficient) - truth) < 4 * float(res.mcse)


def test_sgld_large_step_is_flagged():
    """At step 0.05 the estimate (about 0.23) sits far above the one at step 0.0125 (about 0.13):
    with 1000 draws the gap is 5-7 MCSE on seeds 2-5 (with 400 draws seed 2 missed it)."""
    y = _centred_data(500, seed=1)
    with pytest.warns(EvidenceWarning, match="step"):
        res = local_learning_coefficient(
            _product_model(y), {"w": np.zeros(2)}, sampler="sgld", step_size=0.05,
            localization=GAMMA, draws=1000, tune=100, chains=2, cores=1, random_seed=2,
        )  # fmt: skip
    assert "step" in res.attrs["warning"]


def test_centre_off_the_minimum_is_flagged():
    with pytest.warns(EvidenceWarning, match="not a local minimum"):
        local_learning_coefficient(
            singular_model(1000, 2), {"w": np.ones(2)}, n_obs=1000, localization=GAMMA,
            draws=300, tune=300, chains=2, cores=1, random_seed=3,
        )  # fmt: skip
    with pytest.raises(ValueError, match="n_obs"):
        local_learning_coefficient(singular_model(1000, 2), {"w": np.zeros(2)})


# --- the default localization and the shares of the estimate (issue 33) ---------------------------
def test_diagonal_curvature_and_default_rule():
    hessian = np.diag([4.0, 9.0, 0.0])
    curvature = diagonal_curvature(lambda x: -0.5 * np.einsum("ij,jk,ik->i", x, hessian, x),
                                   np.array([0.3, -1.0, 2.0]))  # fmt: skip
    np.testing.assert_allclose(curvature, [4.0, 9.0, 0.0], atol=1e-6)
    # the share lost along the least-pulled coordinate is exactly 5%
    gamma = default_localization([200.0, 900.0], 0.5)
    assert gamma / (0.5 * 200.0 + gamma) == pytest.approx(0.05)
    assert default_localization(curvature, 0.5) == 0.0  # a flat coordinate, a flat prior
    assert default_localization(curvature, 0.5, [1.0, 1.0, 1.0]) == 1.0  # the prior's curvature
    with pytest.raises(ValueError, match="share"):
        default_localization([1.0], 0.5, share=1.0)


def test_confinement_shares_are_the_regular_models_exact_shortfall():
    """Exact Gaussian draws of a localised tempered posterior (no MCMC): the localization's and
    the prior's shares add up to the estimate's relative shortfall from d/2, within MC error."""
    rng = np.random.default_rng(0)
    d, pull, gamma, prior_prec = 3, np.array([50.0, 20.0, 8.0]), 4.0, 1.0
    center = np.array([0.5, -0.2, 0.1])  # prior N(0, 1) centred away from w*
    precision = pull + gamma + prior_prec
    mean = -prior_prec * center / precision
    delta = mean + rng.normal(size=(200_000, d)) / np.sqrt(precision)
    terms = 0.5 * np.sum(pull * delta**2, axis=1)  # n beta (L - L*)
    llc = terms.mean()
    loc, prior = confinement_shares(
        llc, delta, gamma, prior_prec * np.sum(delta * (center + delta), axis=1)
    )
    exact_llc = 0.5 * np.sum(pull / precision) + 0.5 * np.sum(pull * mean**2)
    assert llc == pytest.approx(exact_llc, abs=4 * terms.std() / np.sqrt(terms.size))
    assert loc + prior == pytest.approx(1 - llc / (d / 2), abs=1e-2)
    assert loc == pytest.approx(0.5 * gamma * np.sum(1 / precision + mean**2) / (d / 2), rel=1e-2)


def _orthogonal_noise(X, shape, rng):
    """Noise orthogonal to X's columns: least squares then returns the true coefficients, so w*
    below is an exact minimiser of L_n and L_n - L_n(w*) is X's quadratic form exactly."""
    noise = rng.normal(size=shape)
    q, _ = np.linalg.qr(X)
    return noise - q @ (q.T @ noise)


def _regression(n, seed=0):
    rng = np.random.default_rng(seed)
    X, w0 = rng.normal(size=(n, 5)), np.array([0.5, -0.3, 0.2, 0.0, 0.1])
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 1.0, shape=5)
        pm.Normal("y", X @ w, 1.0, observed=X @ w0 + _orthogonal_noise(X, n, rng))
    return model, w0, X


def _regression_llc(X, w0, beta, gamma):
    """Exact E[n beta (L - L*)] under the Gaussian localised tempered posterior (prior N(0, I))."""
    hessian = X.T @ X
    cov = np.linalg.inv(beta * hessian + (gamma + 1.0) * np.eye(w0.size))
    shift = -cov @ w0
    return 0.5 * beta * (np.trace(hessian @ cov) + shift @ hessian @ shift)


LLC_RUN = {"draws": 1000, "tune": 500, "chains": 2, "cores": 1}


def _llc(model, center, seed=1, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = local_learning_coefficient(model, center, random_seed=seed, **LLC_RUN, **kwargs)
    # a LocalizationWarning alone, or inside an EvidenceWarning that names other problems too
    flagged = [
        w
        for w in caught
        if issubclass(w.category, EvidenceWarning)
        and "of the estimate (more than" in str(w.message)
    ]

    return res, float(res.local_learning_coefficient), float(res.mcse), flagged


@pytest.mark.parametrize("n", [1000, pytest.param(10_000, marks=pytest.mark.slow)])
def test_default_localization_keeps_a_regular_llc_near_d_over_2(n):
    """Linear regression, 5 parameters (lambda = 5/2): within 4 MCSE of the exact finite-n
    target, that target within the 10% the warning allows of 5/2, and no warning. The old
    default localization=100 gave 1.47 at n = 1000 (issue 33)."""
    model, w0, X = _regression(n)
    res, est, mcse, flagged = _llc(model, {"w": w0})
    target = _regression_llc(X, w0, res.attrs["beta"], res.attrs["localization"])
    assert abs(est - target) < 4 * mcse
    assert abs(est - 2.5) < 0.1 * 2.5 + 4 * mcse  # the 10% the warning allows
    assert not flagged and res.attrs["warning"] == ""
    assert float(res.localization_share) == pytest.approx(0.05, abs=0.02)


def test_explicit_localization_is_honoured_and_flagged():
    """localization=100 at n = 1000: the finite-gamma target (1.47, not 2.5) is estimated
    within 4 MCSE, and the warning names the localization's share and the fix."""
    model, w0, X = _regression(1000)
    res, est, mcse, flagged = _llc(model, {"w": w0}, localization=100.0)
    target = _regression_llc(X, w0, res.attrs["beta"], 100.0)
    assert res.attrs["localization"] == 100.0 and abs(est - target) < 4 * mcse
    assert flagged and "lower `localization`" in str(flagged[0].message)
    assert flagged[0].category is LocalizationWarning  # the only problem: its own category
    assert float(res.localization_share) == pytest.approx(1 - target / 2.5, abs=0.03)


def _product(n, seed=0):
    y = np.random.default_rng(seed).normal(size=n)
    with pm.Model() as model:
        a, b = pm.Normal("a", 0.0, 1.0), pm.Normal("b", 0.0, 1.0)
        pm.Normal("y", a * b, 1.0, observed=y - y.mean())  # loglik - loglik(0) = -(n/2) a^2 b^2
    return model


@pytest.mark.parametrize("n", [1000, pytest.param(10_000, marks=pytest.mark.slow)])
def test_singular_product_is_exact_and_warned(n):
    """y ~ N(a b, 1) at a b = 0 (lambda = 1/2): both coordinates are flat at w* = 0, so the
    default is the prior's curvature, gamma = 1; the estimate matches the exact finite-n target
    (0.311 at n = 10^3, 0.360 at 10^4), and the shares are flagged: the target is far from 1/2."""
    res, est, mcse, flagged = _llc(_product(n), {"a": np.array(0.0), "b": np.array(0.0)})
    assert res.attrs["localization"] == pytest.approx(1.0, rel=1e-6)
    target = monomial_llc(n / 2, res.attrs["beta"], 1.0, (1, 1), prior_sd=1.0)
    assert abs(est - target) < 4 * mcse
    assert (0.5 - target) / 0.5 > 0.1  # far from lambda ...
    assert flagged and "the prior" in str(flagged[0].message)  # ... and said so
    # (n/2) a^2 b^2 is homogeneous of degree 4 (kappa = 2): E[estimate] = (d/2 - c) / kappa, so
    # the bias bound |c| is twice the exact gap to lambda = 1/2, and covers it (issue 39). At
    # n = 10^4 MALA under-explores the arms of the cross (4 x 5000 draws: the estimate 6.3 MCSE
    # below its target, 2 estimate + c = 0.79 instead of 1, decision 060's addendum), so the
    # bound is checked against the exact gap at n = 10^3 only; it covers the gap at both.
    bound, bound_mcse = float(res.bias_bound), float(res.bias_bound_mcse)
    if n == 1000:
        assert abs(bound - 2 * (0.5 - target)) < 4 * bound_mcse
    assert 0.5 - est < bound + 4 * mcse


def _reduced_rank(n, seed=0):
    """y = B A x + noise, A (2, 3), B (3, 2), true matrix b a^T of rank 1; w* an exact minimiser."""
    rng = np.random.default_rng(seed)
    X, a, b = rng.normal(size=(n, 3)), np.array([1.0, -0.5, 0.5]), np.array([0.8, 0.4, -0.6])
    Y = X @ np.outer(b, a).T + _orthogonal_noise(X, (n, 3), rng)
    with pm.Model() as model:
        A, B = pm.Normal("A", 0, 1, shape=(2, 3)), pm.Normal("B", 0, 1, shape=(3, 2))
        pm.Normal("y", (X @ A.T) @ B.T, 1.0, observed=Y)
    return model, {"A": np.vstack([a, np.zeros(3)]), "B": np.column_stack([b, np.zeros(3)])}


@pytest.mark.slow
def test_reduced_rank_regression_is_warned_when_far_from_aoyagi():
    """3-2-3 network, true rank 1: lambda = 3.5 (Aoyagi & Watanabe 2005). No finite-n reference
    exists; the estimate may not exceed 3.5 by more than 4 MCSE, and wherever it is more than
    4 MCSE below 3.5 the run must say so (it is: ~3.3, prior share ~27%)."""
    lam, _ = reduced_rank_learning_coefficient(3, 3, 2, 1)
    model, center = _reduced_rank(1000)
    res, est, mcse, flagged = _llc(model, center)
    assert est < lam + 4 * mcse
    if lam - est > 4 * mcse:
        assert flagged
