"""Evidence estimators: exact layer, exact-draw layer, then end to end against closed-form log Z.

Layers (STYLE.md, "Tests that establish correctness", item 6):
1. exact ``E_beta[loglik]`` and ``Var_beta[loglik]`` fed to the quadrature: discretisation only;
2. independent draws from the exact power posteriors: the MCSE is calibrated, no MCMC;
3. ExchangeMC end to end: |error| < 4 MCSE on models with known log Z, and a sign-flipped swap
   rule (a broken sampler) must fail the same check.
"""

import warnings

import numba
import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
import targets
import xarray as xr
from helpers import recompiled

import pymc_tempering as pmt
from pymc_tempering import evidence as ev
from pymc_tempering.kernels import fused

SAMPLE = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}


def _run(model, seed, draws=2000, tune=1000, chains=2, ladder="geometric", **kwargs):
    """marginal_likelihood on the fixed geometric ladder these tests were sized for (the
    adaptive default has its own tests: tests/evidence/test_marginal_likelihood.py)."""
    return ev.marginal_likelihood(
        model, draws=draws, tune=tune, chains=chains, random_seed=seed, return_idata=True,
        ladder=ladder, **kwargs, **SAMPLE,
    )  # fmt: skip


def _within(result, exact, n_mcse=4.0):
    err = result.log_marginal_likelihood.values - exact
    return np.abs(err) < n_mcse * result.mcse.values, err


# --- layer 1: exact moments, quadrature only -----------------------------------------------------


def test_quadrature_is_exact_where_it_should_be():
    betas = np.array([0.0, 0.1, 0.35, 0.5, 1.0])
    trapezoid, _ = ev.ti_quadrature(betas, 2.0 + 3.0 * betas)  # linear: exact
    assert trapezoid == pytest.approx(3.5, abs=1e-12)
    # cubic: the corrected trapezoid (Hermite) is exact, the plain one is not
    mean, var = betas**3 - betas, 3 * betas**2 - 1
    trapezoid, corrected = ev.ti_quadrature(betas, mean, var)
    assert corrected == pytest.approx(0.25 - 0.5, abs=1e-12)
    assert abs(trapezoid - (-0.25)) > 1e-3


def test_quadrature_rejects_a_mislabelled_ladder():
    betas = targets_ladder(16)
    shuffled = betas.copy()
    shuffled[[3, 9]] = shuffled[[9, 3]]
    with pytest.raises(ValueError, match="strictly increasing"):
        ev.ti_quadrature(shuffled, np.zeros(16))


def targets_ladder(n_rungs, beta_min=1e-6):
    return ev.evidence_ladder(n_rungs, beta_min)


def test_lecture_moments_are_consistent():
    """Var_beta[loglik] = d E_beta[loglik] / d beta, and the integral is the exact log Z."""
    x = targets.lecture_data()
    betas = np.linspace(0.0, 1.0, 7)
    h = 1e-6
    up, _ = targets.lecture_power_moments(x, 1.0, betas + h)
    down, _ = targets.lecture_power_moments(x, 1.0, betas - h)
    _, var = targets.lecture_power_moments(x, 1.0, betas)
    np.testing.assert_allclose((up - down) / (2 * h), var, rtol=1e-5)
    fine = np.concatenate([[0.0], np.geomspace(1e-9, 1.0, 4000)])
    _, corrected = ev.ti_quadrature(fine, *targets.lecture_power_moments(x, 1.0, fine))
    assert corrected == pytest.approx(targets.lecture_log_evidence(x), abs=1e-7)


@pytest.mark.parametrize("ladder", ["geometric", "power"])
def test_exact_layer_error_falls_with_rungs_and_correction_wins(ladder):
    x = targets.lecture_data()
    exact = targets.lecture_log_evidence(x)
    errors = []
    for n_rungs in (8, 16, 32, 64, 128):
        betas = targets_ladder(n_rungs) if ladder == "geometric" else pmt.power_ladder(n_rungs)
        trapezoid, corrected = ev.ti_quadrature(
            betas, *targets.lecture_power_moments(x, 1.0, betas)
        )
        errors.append((abs(trapezoid - exact), abs(corrected - exact)))
    errors = np.array(errors)
    assert np.all(np.diff(errors, axis=0) < 0), errors  # both fall as rungs are added
    assert np.all(errors[:, 1] < errors[:, 0]), errors  # the correction always wins
    assert np.all(errors[1:, 1] < errors[1:, 0] / 5), errors  # by far, from 16 rungs on
    # and converges faster: O(h^4) against O(h^2) per doubling of the rungs
    rates = errors[-3:-1] / errors[-2:]
    assert np.all(rates[:, 1] > 2.5 * rates[:, 0]), rates
    assert errors[-1, 1] < 1e-3


# --- layer 2: independent draws from the exact power posteriors --------------------------------


def _exact_draws_dataset(x, betas, n_chains, n_draws, rng):
    loglik = targets.lecture_power_draws(x, 1.0, betas, n_chains, n_draws, rng)
    return xr.Dataset(
        {"rung_loglik": (("chain", "draw", "rung"), loglik)},
        coords={"rung": np.arange(betas.size), "beta": ("rung", betas)},
    )


def test_mcse_is_calibrated_on_exact_draws():
    """Over 150 seeds, |error| < 1.96 MCSE about 95% of the time, for both estimators."""
    x = targets.lecture_data()
    betas = targets_ladder(32)
    exact = targets.lecture_log_evidence(x)
    # TI's Monte Carlo target is the quadrature of the exact moments on this ladder
    _, ti_target = ev.ti_quadrature(betas, *targets.lecture_power_moments(x, 1.0, betas))
    rng = np.random.default_rng(2024)
    z_ti, z_ss = [], []
    for _ in range(150):
        ds = _exact_draws_dataset(x, betas, 2, 500, rng)
        ti, ss = ev.thermodynamic_integration(ds), ev.stepping_stone(ds)
        z_ti.append(float((ti.log_marginal_likelihood - ti_target) / ti.mcse))
        z_ss.append(float((ss.log_marginal_likelihood - exact) / ss.mcse))
    for z in (np.array(z_ti), np.array(z_ss)):
        coverage = np.mean(np.abs(z) < 1.96)
        assert 0.91 <= coverage <= 0.99, coverage
        assert abs(np.mean(z)) < 0.25  # unbiased up to 0.25 MCSE
        assert 0.85 < np.std(z) < 1.15


def test_mcse_sees_variation_slower_than_a_chain():
    """Each chain's draws shifted by its own offset (a component slower than a chain, as
    replicas travelling the ladder make on multimodal targets): with 8 chains the spread of
    the chain means enters the MCSE and the bars cover; within-chain ESS alone cannot see it."""
    x = targets.lecture_data()
    betas = targets_ladder(32)
    _, ti_target = ev.ti_quadrature(betas, *targets.lecture_power_moments(x, 1.0, betas))
    rng = np.random.default_rng(7)
    z = []
    for _ in range(80):
        ds = _exact_draws_dataset(x, betas, 8, 250, rng)
        offset = rng.normal(0.0, 0.05, size=(8, 1, 1))  # about twice the within-chain MCSE
        ds = ds.assign(rung_loglik=ds.rung_loglik + offset)
        ti = ev.thermodynamic_integration(ds)
        z.append(float((ti.log_marginal_likelihood - ti_target) / ti.mcse))
    coverage = np.mean(np.abs(np.array(z)) < 1.96)
    assert 0.88 <= coverage <= 1.0, coverage


def test_per_draw_terms_average_to_the_estimates():
    x = targets.lecture_data()
    betas = targets_ladder(16)
    loglik = targets.lecture_power_draws(x, 1.0, betas, 2, 300, np.random.default_rng(1))
    mean, var = loglik.mean(axis=(0, 1)), loglik.var(axis=(0, 1))
    trapezoid, corrected = ev.ti_quadrature(betas, mean, var)
    assert ev.ti_draws(betas, loglik, "trapezoid").mean() == pytest.approx(trapezoid)
    assert ev.ti_draws(betas, loglik, "corrected").mean() == pytest.approx(corrected)
    log_ratio, terms = ev.stepping_stone_draws(betas, loglik)
    assert terms.mean() == pytest.approx(betas.size - 1)
    brute = np.log(np.mean(np.exp(np.diff(betas) * loglik[..., :-1]), axis=(0, 1)))
    np.testing.assert_allclose(log_ratio, brute, rtol=1e-10)


def test_stepping_stone_is_stable_for_huge_logliks():
    betas = np.array([0.0, 0.5, 1.0])
    loglik = np.full((1, 50, 3), -1e6) + np.random.default_rng(0).normal(size=(1, 50, 3))
    log_ratio, _ = ev.stepping_stone_draws(betas, loglik)
    assert np.all(np.isfinite(log_ratio)) and log_ratio.sum() == pytest.approx(-1e6, rel=1e-4)


# --- warnings and bad input --------------------------------------------------------------------


def _synthetic(betas, n_chains=2, n_draws=500, swap_rate=0.5, seed=0):
    rng = np.random.default_rng(seed)
    x = targets.lecture_data()
    ds = _exact_draws_dataset(x, np.asarray(betas), n_chains, n_draws, rng)
    swap_accept = np.full((n_chains, n_draws, len(betas) - 1), swap_rate)
    return ds.assign(swap_accept=(("chain", "draw", "rung_pair"), swap_accept))


def test_no_warning_on_a_healthy_trace():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ev.EvidenceWarning)
        ev.thermodynamic_integration(_synthetic(targets_ladder(32)))
        ev.stepping_stone(_synthetic(targets_ladder(32)))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"betas": np.geomspace(1e-3, 1, 16)}, "starts at beta = 0.001"),
        ({"n_draws": 100}, "only 200 draws"),
        ({"n_draws": 10}, "only 20 draws"),  # too few for a tail fit: warned, not a crash
        ({"swap_rate": 0.0}, "swap with rate below"),
    ],
)
def test_untrustworthy_estimates_warn(kwargs, match):
    kwargs = {"betas": targets_ladder(16)} | kwargs
    with pytest.warns(ev.EvidenceWarning, match=match):
        ev.thermodynamic_integration(_synthetic(**kwargs))
    with pytest.warns(ev.EvidenceWarning, match=match):
        ev.stepping_stone(_synthetic(**kwargs))


def test_tiny_ess_warns():
    ds = _synthetic(targets_ladder(8), n_draws=1000)
    stuck = np.repeat(ds.rung_loglik.values[:, ::50], 50, axis=1)  # 20 distinct values
    with pytest.warns(ev.EvidenceWarning, match="ESS below"):
        ev.thermodynamic_integration(ds.assign(rung_loglik=(ds.rung_loglik.dims, stuck)))


def _result(log_z, mcse, fingerprint="same"):
    return xr.Dataset(
        {"log_marginal_likelihood": log_z, "mcse": mcse},
        attrs={"estimator": "thermodynamic_integration", "observed_data": fingerprint},
    )


def test_compare_evidence_ranks_and_normalises():
    table = pmt.compare_evidence({"a": _result(-10.0, 0.1), "b": _result(-8.0, 0.2)})
    assert isinstance(table, pd.DataFrame)
    assert list(table.index) == ["b", "a"] and list(table["rank"]) == [0, 1]
    assert table.loc["a", "log_bayes_factor"] == pytest.approx(-2.0)
    assert table.loc["a", "log_bayes_factor_mcse"] == pytest.approx(np.hypot(0.1, 0.2))
    assert table.loc["b", "log_bayes_factor_mcse"] == 0.0
    assert table.loc["b", "model_probability"] == pytest.approx(1 / (1 + np.exp(-2)))
    assert table["model_probability"].sum() == pytest.approx(1.0)
    weighted = pmt.compare_evidence(
        {"a": _result(-10.0, 0.1), "b": _result(-8.0, 0.2)}, model_prior={"a": 3, "b": 1}
    )
    odds = weighted.loc["b", "model_probability"] / weighted.loc["a", "model_probability"]
    assert odds == pytest.approx(np.exp(2.0) / 3.0)


def test_model_probability_mcse_matches_simulated_estimates():
    """The delta-method MCSE of the posterior model probabilities against brute force: the sd
    of the probabilities over 200,000 log Z vectors drawn from N(estimate, mcse^2)."""
    log_z, mcse = np.array([-10.0, -9.2, -8.5]), np.array([0.05, 0.08, 0.03])
    table = pmt.compare_evidence(
        {name: _result(z, e) for name, z, e in zip("abc", log_z, mcse, strict=True)}
    )
    draws = np.random.default_rng(0).normal(log_z, mcse, size=(200_000, 3))
    prob = np.exp(draws - draws.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    brute = pd.Series(prob.std(axis=0), index=list("abc"))
    # the sd of a sample sd of 200,000 draws is about 0.16% of it; the delta method's own
    # error at these MCSE is below 2%
    np.testing.assert_allclose(table["model_probability_mcse"].loc[list("abc")], brute, rtol=0.03)


@pytest.mark.parametrize("n_chains", [2, 4])
def test_per_chain_estimates_pool_with_the_mcse_of_a_mean(n_chains):
    """Chains with their own ladders are independent estimates: the pooled value is their mean
    and its MCSE sqrt(sum mcse_c^2) / n (hand-derived), with 4 or more chains at least their
    sd / sqrt(n); the ESS adds up."""
    from pymc_tempering.evidence.tempered import pool_chains

    values, mcses = np.array([-10.0, -10.1, -9.95, -10.02]), np.array([0.05, 0.04, 0.06, 0.03])
    parts = [
        xr.Dataset(
            {"log_marginal_likelihood": v, "mcse": e, "ess": 100.0}, attrs={"ladder_start": 0.0}
        )  # fmt: skip
        for v, e in zip(values[:n_chains], mcses[:n_chains], strict=True)
    ]
    pooled = pool_chains(parts, xr.Dataset(coords={"chain": np.arange(n_chains)}))
    v, e = values[:n_chains], mcses[:n_chains]
    expected = np.sqrt(np.sum(e**2)) / n_chains
    if n_chains >= 4:
        expected = max(expected, np.std(v, ddof=1) / np.sqrt(n_chains))
    assert float(pooled["log_marginal_likelihood"]) == pytest.approx(v.mean(), rel=1e-12)
    assert float(pooled["mcse"]) == pytest.approx(expected, rel=1e-12)
    assert float(pooled["ess"]) == 100.0 * n_chains


def test_compare_evidence_warns_when_data_differ():
    with pytest.warns(UserWarning, match="different observed data"):
        pmt.compare_evidence({"a": _result(-1.0, 0.1, "x"), "b": _result(-2.0, 0.1, "y")})


def test_compare_evidence_says_what_to_run_without_rung_traces():
    idata = xr.DataTree.from_dict(
        {"sample_stats": xr.Dataset({"accept": (("chain", "draw"), np.ones((1, 5)))})}
    )
    with pytest.raises(ValueError, match=r"'nuts'.*ExchangeMC.*marginal_likelihood"):
        pmt.compare_evidence({"nuts": idata, "b": _result(-2.0, 0.1)})


# --- Laplace and BIC baselines -----------------------------------------------------------------


def test_laplace_is_exact_for_a_gaussian_posterior_and_labelled():
    x = targets.lecture_data()
    res = pmt.laplace_evidence(targets.lecture_model(x))
    assert float(res.log_marginal_likelihood) == pytest.approx(
        targets.lecture_log_evidence(x), abs=1e-6
    )
    assert res.attrs["approximation"] and "approximation" in res.attrs["method"]
    X, y = targets.regression_data()
    res = pmt.laplace_evidence(targets.regression_model(X, y))
    assert float(res.log_marginal_likelihood) == pytest.approx(
        targets.regression_log_evidence(X, y), abs=1e-6
    )


def test_laplace_and_bic_approximate_a_non_gaussian_evidence():
    y = targets.bernoulli_data()
    exact = targets.bernoulli_log_evidence(y)
    model = targets.bernoulli_model(y)
    laplace = float(pmt.laplace_evidence(model).log_marginal_likelihood)
    res = pmt.bic(model)
    assert res.attrs["method"] == "BIC approximation" and int(res.n_obs) == y.size
    k = y.sum()
    max_loglik = k * np.log(k / y.size) + (y.size - k) * np.log(1 - k / y.size)
    assert float(res.max_loglik) == pytest.approx(max_loglik, abs=1e-6)
    assert float(res.bic) == pytest.approx(-2 * max_loglik + np.log(y.size), abs=1e-6)
    assert abs(laplace - exact) < 0.05  # close, not exact: the posterior is not Gaussian
    assert abs(float(res.log_marginal_likelihood) - exact) < 2.0  # BIC: O(1) error


# --- layer 3: ExchangeMC end to end ------------------------------------------------------------


@pytest.fixture(scope="module")
def lecture_run():
    x = targets.lecture_data()
    result, idata = _run(targets.lecture_model(x), seed=11, n_rungs=64, beta_min=1e-6)
    return x, result, idata


def test_lecture_model_end_to_end(lecture_run):
    x, result, idata = lecture_run
    ok, err = _within(result, targets.lecture_log_evidence(x))
    assert ok.all(), (err, result.mcse.values)
    assert list(result.estimator.values) == ["thermodynamic_integration", "stepping_stone"]
    # the labelled per-rung output agrees with the closed-form power-posterior means
    ti = ev.thermodynamic_integration(idata)
    exact_mean, _ = targets.lecture_power_moments(x, 1.0, ti.beta.values)
    z = (ti.mean_loglik - exact_mean) / ti.mean_loglik_mcse
    assert float(np.abs(z).max()) < 4.5  # Bonferroni over 64 rungs
    assert set(ti.data_vars) >= {"mean_loglik", "mean_loglik_mcse", "var_loglik", "ess_loglik"}
    assert float(ti.discretisation_error) > 0


def test_same_seed_same_estimate():
    model = targets.lecture_model(targets.lecture_data())
    kwargs = {"draws": 200, "tune": 100, "n_rungs": 16, "beta_min": 1e-4}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ev.EvidenceWarning)
        a, _ = _run(model, seed=5, **kwargs)
        b, _ = _run(model, seed=5, **kwargs)
    xr.testing.assert_identical(a, b)


@numba.njit
def _flipped_swap_ratio(beta_lower, beta_upper, loglik_lower, loglik_upper):
    return (beta_upper - beta_lower) * (loglik_upper - loglik_lower)


@pytest.mark.parametrize("explorer", ["rwm", "independent"])
def test_sign_flipped_swap_rule_is_caught(lecture_run, monkeypatch, explorer):
    """The issue text's ``exp(-Delta)`` with the sign of the ratio flipped: rungs are wrong.
    Planted in the compiled rule that every sweep runs (pymc_tempering.kernels.rules). With
    the random walk every estimate misses; with ``explorer="independent"`` (the evidence
    default: independence moves in turn with the walk, which partly repair each rung's law)
    each estimate misses or carries a warning."""
    x, _, _ = lecture_run
    broken = recompiled(fused.sweep_kernel, log_swap_ratio=_flipped_swap_ratio)
    monkeypatch.setattr(fused, "sweep_kernel", broken)
    step_kwargs = {"explorer": explorer}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ev.EvidenceWarning)
        result, idata = _run(targets.lecture_model(x), seed=11, n_rungs=64, beta_min=1e-6,
                             step_kwargs=step_kwargs)  # fmt: skip
    ok, err = _within(result, targets.lecture_log_evidence(x))
    if explorer == "independent":
        flagged = ~ok | (result.warning.values != "")
        assert flagged.all(), (err, result.mcse.values, result.warning.values)
        return
    assert not ok.any(), (err, result.mcse.values)
    ti = ev.thermodynamic_integration(idata)
    exact_mean, _ = targets.lecture_power_moments(x, 1.0, ti.beta.values)
    assert float(np.abs((ti.mean_loglik - exact_mean) / ti.mean_loglik_mcse).max()) > 8


def test_conjugate_regression_end_to_end():
    X, y = targets.regression_data()
    result, _ = _run(targets.regression_model(X, y), seed=12, n_rungs=64, beta_min=1e-6)
    ok, err = _within(result, targets.regression_log_evidence(X, y))
    assert ok.all(), (err, result.mcse.values)


def test_beta_bernoulli_end_to_end():
    y = targets.bernoulli_data()
    result, _ = _run(targets.bernoulli_model(y), seed=13, n_rungs=64, beta_min=1e-6)
    ok, err = _within(result, targets.bernoulli_log_evidence(y))
    assert ok.all(), (err, result.mcse.values)


def test_compare_evidence_on_traces(lecture_run):
    x, result, idata = lecture_run
    wide_model = targets.lecture_model(x, b=10.0)
    wide, wide_idata = _run(wide_model, seed=14, n_rungs=64, beta_min=1e-6)
    table = pmt.compare_evidence({"b=1": idata, "b=10": wide_idata, "b=10 (result)": wide})
    exact = {b: targets.lecture_log_evidence(x, b) for b in (1.0, 10.0)}
    assert table.index[0] == "b=1"  # the tighter prior wins for data near 0.5
    expected_bf = exact[10.0] - exact[1.0]
    for name in ("b=10", "b=10 (result)"):
        row = table.loc[name]
        assert abs(row.log_bayes_factor - expected_bf) < 4 * row.log_bayes_factor_mcse


# --- the seed paper's singular model -----------------------------------------------------------


def test_singular_targets_agree():
    # the 1-D quadrature against brute-force 2-D quadrature is in the benchmark; here eq. (4)
    for n in (1e4, 1e5):
        f_exact = targets.singular_free_energy(n)
        assert targets.singular_free_energy_asymptotic(n) == pytest.approx(f_exact, abs=1e-3)
        assert abs(targets.singular_free_energy_asymptotic(n, constant=0) - f_exact) > 0.1


@pytest.mark.slow
def test_singular_model_free_energy():
    n = 100_000
    f_exact = targets.singular_free_energy(n)
    result, _ = _run(targets.singular_model(n), seed=15, draws=4000, n_rungs=512, beta_min=1e-7)
    ok, err = _within(result, -f_exact)
    assert ok.all(), (err, result.mcse.values)
    g = -result.log_marginal_likelihood.values / f_exact - 1.0  # G = (F_hat - F) / F
    assert np.all(np.abs(g) < 0.01), g


# --- radiata pine: a real model selection with exact evidences ----------------------------------

PINE = targets.radiata_pine_path()


@pytest.mark.slow
@pytest.mark.skipif(PINE is None, reason="../shared/data/radiata_pine.csv is not beside the repo")
def test_radiata_pine_model_selection():
    data = targets.radiata_pine_data(PINE)
    results, exact = {}, {}
    for name, covariate in (("density", "x"), ("adjusted density", "z")):
        exact[name] = targets.radiata_log_evidence(data["y"], data[covariate])
        model = targets.radiata_model(data["y"], data[covariate], noncentred=True)
        results[name], _ = _run(model, seed=16, draws=3000, n_rungs=128, beta_min=1e-6)
        ok, err = _within(results[name], exact[name])
        assert ok.all(), (name, err, results[name].mcse.values)
    table = pmt.compare_evidence(results)
    assert table.index[0] == "adjusted density"
    row = table.loc["density"]
    expected = exact["density"] - exact["adjusted density"]  # about -8.86
    assert abs(row.log_bayes_factor - expected) < 4 * row.log_bayes_factor_mcse
    assert table.loc["adjusted density", "model_probability"] > 0.999


# --- calibration end to end ----------------------------------------------------------------------


@pytest.mark.slow
def test_exchange_mc_error_bars_cover_the_truth():
    """20 seeds on the lecture model: |error| < 2 MCSE in at least 16 (nominal 95%)."""
    x = targets.lecture_data()
    exact = targets.lecture_log_evidence(x)
    model = targets.lecture_model(x)
    z = []
    for seed in range(20):
        result, _ = _run(model, seed=100 + seed, draws=1000, tune=500, n_rungs=64, beta_min=1e-6)
        z.append((result.log_marginal_likelihood.values - exact) / result.mcse.values)
    covered = (np.abs(np.array(z)) < 2).sum(axis=0)
    assert np.all(covered >= 16), (covered, np.array(z))


# --- discrete models: tied log-likelihoods (issue 33.3) ------------------------------------------


_COUNTS = np.arange(800)


def _discrete_draws(y, betas, seed, n_chains=2, n_draws=1000, prior_rate=200.0):
    """Exact independent draws of n ~ Poisson(prior_rate), y_i ~ Poisson(n) on every rung (by
    enumeration), and the exact log Z: the loglik takes one value per count, so ties abound."""
    rng = np.random.default_rng(seed)
    logprior = st.poisson.logpmf(_COUNTS, prior_rate)
    loglik = st.poisson.logpmf(np.asarray(y)[:, None], _COUNTS).sum(axis=0)
    draws = np.empty((n_chains, n_draws, len(betas)))
    for rung, beta in enumerate(betas):
        logp = logprior + (beta * loglik if beta > 0 else 0.0)
        p = np.exp(logp - logp.max())
        draws[..., rung] = loglik[rng.choice(_COUNTS.size, (n_chains, n_draws), p=p / p.sum())]
    ds = xr.Dataset(
        {"rung_loglik": (("chain", "draw", "rung"), draws)},
        coords={"rung": np.arange(len(betas)), "beta": ("rung", np.asarray(betas, float))},
    )
    return ds, float(np.logaddexp.reduce(logprior + loglik))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_discrete_model_stepping_stone_raises_no_false_alarm(seed):
    """Poisson(200) prior, 3 counts: exact draws on evidence_ladder(32) give an estimate within
    4 MCSE of the enumerated log Z, and no warning (the tied weights once read as Pareto k =
    inf on most stones)."""
    ds, truth = _discrete_draws([190, 210, 205], ev.evidence_ladder(32), seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ev.EvidenceWarning)
        ss = ev.stepping_stone(ds)
    assert abs(float(ss.log_marginal_likelihood) - truth) < 4 * float(ss.mcse)


def test_discrete_model_with_far_apart_rungs_warns():
    """Data far from the prior and a 3-rung ladder: the last stone's weights are heavy-tailed
    (the estimate is 1-6 MCSE off); the warning must come."""
    ds, _ = _discrete_draws([300, 310, 305], [0.0, 0.1, 1.0], seed=0)
    with pytest.warns(ev.EvidenceWarning, match="heavy-tailed importance weights"):
        ev.stepping_stone(ds)


def test_tied_weights_carried_by_a_few_draws_warn():
    """A two-valued parameter whose rare value holds the likelihood: at beta = 0 about 4 of
    2000 draws carry the stone's weight, tied, so no Pareto tail fits; the concentration
    check must warn."""
    rng = np.random.default_rng(3)
    rare = rng.random((2, 1000)) < 0.002
    loglik = np.stack([np.where(rare, 0.0, -10.0), np.zeros((2, 1000))], axis=-1)
    loglik[..., 1] = np.where(rng.random((2, 1000)) < 0.8, 0.0, -10.0)
    ds = xr.Dataset(
        {"rung_loglik": (("chain", "draw", "rung"), loglik)},
        coords={"rung": [0, 1], "beta": ("rung", [0.0, 1.0])},
    )
    with pytest.warns(ev.EvidenceWarning, match="largest importance weights"):
        ev.stepping_stone(ds)
