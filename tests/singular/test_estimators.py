"""WBIC and the learning coefficient: kernels by hand, exact references, and ExchangeMC runs
within 4 MCSE of the exact finite-n targets (issue 15)."""

import os
import warnings
from functools import partial

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import integrate, stats
from targets import singular_model

import pymc_tempering as pmt
from pymc_tempering.evidence import EvidenceWarning
from pymc_tempering.exact.monomial import (
    exact_learning_coefficients,
    exact_wbic,
    monomial_free_energy,
    monomial_learning_coefficient,
    monomial_power_moments,
    regular_power_moments,
)
from pymc_tempering.ladder import wbic_beta, wbic_ladder
from pymc_tempering.singular.core import (
    fluctuation_draws,
    learning_coefficient_curve,
    llc_draws,
    reweighted_moments,
    two_temperature_draws,
    wbic_draws,
)
from pymc_tempering.singular.estimators import learning_coefficient, observation_count, wbic
from pymc_tempering.trace import tempering_dataset


# --- kernels and ladder, by hand -----------------------------------------------------------------
def test_reweighted_moments_by_hand():
    x = np.array([1.0, 2.0, 4.0])
    w = np.exp(0.3 * x) / np.exp(0.3 * x).mean()
    mean, var, mean_terms, var_terms, frac = reweighted_moments(x, 0.3)
    assert mean == pytest.approx(np.mean(w * x))
    assert var == pytest.approx(np.mean(w * (x - mean) ** 2))
    assert mean_terms.mean() == pytest.approx(mean) and var_terms.mean() == pytest.approx(var)
    assert frac == pytest.approx(w.sum() ** 2 / (3 * np.sum(w**2)))
    with pytest.raises(ValueError, match="non-finite"):
        reweighted_moments(np.array([1.0, -np.inf]))


def test_estimators_on_exact_gaussian_draws():
    """Independent draws of the regular model's exact power posteriors: every estimator is within
    4 standard errors of its exact finite-n target, including reweighting to another beta."""
    rng = np.random.default_rng(0)
    n, d, betas = 500.0, 3, np.array([0.1, 0.16, 0.2])
    sd = (1.0 + 2 * n * betas) ** -0.5
    loglik = -n * ((sd * rng.standard_normal((20_000, d, 3))) ** 2).sum(1)  # (draw, rung)
    mean, var = regular_power_moments(n, betas, d)
    for rung, beta in enumerate(betas):
        terms = fluctuation_draws(loglik[:, rung], beta)[0]
        assert abs(terms.mean() - beta**2 * var[rung]) < 4 * terms.std() / np.sqrt(terms.size)
    pair = two_temperature_draws(loglik[:, 0], loglik[:, 2], betas[0], betas[2])
    target = (mean[2] - mean[0]) / (1 / betas[0] - 1 / betas[2])
    assert abs(pair.mean() - target) < 4 * pair.std() / np.sqrt(pair.size)
    terms, frac = wbic_draws(loglik[:, 0], betas[1] - betas[0])  # rung 0 reweighted to 0.16
    assert 0.3 < frac < 1.0
    assert abs(terms.mean() + mean[1]) < 4 * terms.std() / np.sqrt(terms.size * frac)
    fluct, pairs = learning_coefficient_curve(betas, loglik)
    assert fluct.shape == (20_000, 3) and pairs.shape == (20_000, 2)
    np.testing.assert_allclose(llc_draws(np.array([-3.0]), -1.0, 0.5), [1.0])


def test_wbic_ladder_inserts_beta_star():
    assert wbic_beta(np.e**2) == pytest.approx(0.5)
    ladder = wbic_ladder(1000)
    assert ladder.size == 33 and np.any(ladder == 1 / np.log(1000))
    again = wbic_ladder(1000, ladder)
    np.testing.assert_array_equal(again, ladder)
    with pytest.raises(ValueError, match="n_obs"):
        wbic_beta(2)


# --- exact references ----------------------------------------------------------------------------
def test_monomial_moments_match_independent_quadrature():
    """k = (1, 2): w1 integrates out in closed form given w2, leaving a 1-D integral."""
    n, beta, s = 200.0, 0.4, 0.7

    def parts(w2):
        sig2 = 1 / (1 / s**2 + 2 * n * beta * w2**4)
        wz = stats.norm.pdf(w2, 0, s) * np.sqrt(sig2) / s
        return np.array([wz, -wz * n * w2**4 * sig2, wz * 3 * n**2 * w2**8 * sig2**2])

    z, e1, e2 = integrate.quad_vec(parts, -10, 10, epsabs=1e-14, epsrel=1e-12)[0]
    mean, var = monomial_power_moments(n, [beta], (1, 2), s)
    assert mean[0] == pytest.approx(e1 / z, rel=1e-8)
    assert var[0] == pytest.approx(e2 / z - (e1 / z) ** 2, rel=1e-7)
    assert monomial_free_energy(n * beta, (1, 2), s) == pytest.approx(-np.log(z), rel=1e-8)


@pytest.mark.parametrize("d", [2, 3, 4])
def test_monomial_moments_match_seed_model(d):
    betas = [0.0, 0.1, 1.0]
    mean, _ = monomial_power_moments(1e4, betas, (1,) * d)
    np.testing.assert_allclose(mean, pmt.exact.singular_mean_loglik(1e4, betas, d), rtol=1e-9)
    assert monomial_free_energy(1e4, (1,) * d) == pytest.approx(
        pmt.exact.singular_free_energy(1e4, d), rel=1e-9
    )


def test_exact_targets_approach_lambda():
    """At huge n both estimators' exact targets near lambda: 1/2 (singular), d/2 (regular)."""
    n = 1e12
    beta = wbic_beta(n)
    regular = partial(regular_power_moments, n, d=3)
    assert exact_learning_coefficients(regular, beta, 2 * beta)[0] == pytest.approx(1.5, 1e-6)
    assert monomial_learning_coefficient((1, 2)) == (0.25, 1)
    lam_1d = exact_learning_coefficients(partial(monomial_power_moments, n, k=(2,)), beta)[1]
    assert lam_1d == pytest.approx(0.25, rel=1e-3)


# --- ExchangeMC runs against the exact finite-n targets ------------------------------------------
def _regular_model(n, d):
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 1.0, shape=d)
        pm.Potential("loglik", -n * pt.sum(w**2))
    return model


def _monomial_model(n, k):
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 1.0, shape=len(k))
        pm.Potential("loglik", -n * pt.prod(w ** (2 * np.asarray(k))))
    return model


def _run(model, betas, seed, draws=1500):
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.sample(
            step=pmt.ExchangeMC(betas=betas), draws=draws, tune=500, chains=2, cores=1,
            random_seed=seed, progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip


N_OBS = 1000
SEED = int(os.environ.get("SLT_TEST_SEED", 11))  # other seeds: see the report
CASES = {
    "seed d=2": (lambda: singular_model(N_OBS, 2), partial(monomial_power_moments, k=(1, 1))),
    "seed d=3": (lambda: singular_model(N_OBS, 3), partial(monomial_power_moments, k=(1,) * 3)),
    "seed d=4": (lambda: singular_model(N_OBS, 4), partial(monomial_power_moments, k=(1,) * 4)),
    "regular d=2": (lambda: _regular_model(N_OBS, 2), partial(regular_power_moments, d=2)),
    "monomial k=(1,2)": (
        lambda: _monomial_model(N_OBS, (1, 2)),
        partial(monomial_power_moments, k=(1, 2)),
    ),
}


@pytest.fixture(scope="module", params=list(CASES))
def run(request):
    build, moments = CASES[request.param]
    idata = _run(build(), wbic_ladder(N_OBS, pmt.geometric_ladder(16)), seed=SEED)
    return idata, partial(moments, N_OBS)


def test_wbic_within_4_mcse_of_exact(run):
    idata, moments = run
    res = wbic(idata, n_obs=N_OBS)
    truth = exact_wbic(moments, N_OBS)
    assert res.attrs["warning"] == "" and res.attrs["ess_fraction"] == 1.0
    assert float(res.log_marginal_likelihood) == -float(res.wbic)
    assert abs(float(res.wbic) - truth) < 4 * float(res.mcse), (float(res.wbic), truth)


def test_learning_coefficient_within_4_mcse_of_exact(run):
    idata, moments = run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)  # the two may disagree at this n
        res = learning_coefficient(idata, n_obs=N_OBS)
    pair, fluct = exact_learning_coefficients(moments, float(res.beta_1), float(res.beta_2))
    assert float(res.beta_1) == wbic_beta(N_OBS)
    assert abs(float(res.two_temperature) - pair) < 4 * float(res.two_temperature_mcse)
    assert abs(float(res.fluctuation) - fluct) < 4 * float(res.fluctuation_mcse)
    assert float(res.learning_coefficient) == float(res.two_temperature)
    # the curve: the rungs within a factor 4 of beta* within 4 MCSE of their exact beta^2 Var
    near = np.abs(np.log(res.beta_rung.values / wbic_beta(N_OBS))) < np.log(4.5)
    betas = res.beta_rung.values[near]
    curve = res.fluctuation_curve[near]
    z = (curve.values - betas**2 * moments(betas)[1]) / res.fluctuation_curve_mcse[near].values
    assert near.sum() == 5 and np.all(np.abs(z) < 4), z


def test_off_ladder_beta_star_is_reweighted_and_warned():
    n, moments = 1000, partial(monomial_power_moments, 1000, k=(1, 1))
    idata = _run(singular_model(n, 2), pmt.geometric_ladder(16), seed=3)
    with pytest.warns(EvidenceWarning, match="not a rung of the ladder.*keep"):
        res = wbic(idata, n_obs=n)
    assert 0 < res.attrs["ess_fraction"] < 1 and res.attrs["source_beta"] < wbic_beta(n)
    assert abs(float(res.wbic) - exact_wbic(moments, n)) < 4 * float(res.mcse)
    with pytest.warns(EvidenceWarning, match="fluctuation: beta\\*"):
        lam = learning_coefficient(idata, n_obs=n, method="fluctuation")
    _, fluct = exact_learning_coefficients(moments, wbic_beta(n))
    assert abs(float(lam.learning_coefficient) - fluct) < 4 * float(lam.mcse)
    assert float(lam.beta_1) < wbic_beta(n) < float(lam.beta_2)


def test_n_obs_is_read_from_observed_data_or_demanded(run):
    idata, _ = run
    with pytest.raises(ValueError, match="Pass n_obs"):
        wbic(idata)
    x = np.zeros(40)
    with pm.Model():
        pm.Normal("x", pm.Normal("mu"), 1, observed=x)
        tree = pm.sample(draws=5, tune=5, chains=1, progressbar=False)
    assert observation_count(tree) == 40
    with pytest.raises(ValueError, match="learning_coefficient|method"):
        learning_coefficient(idata, n_obs=N_OBS, method="bogus")
    assert tempering_dataset(idata).sizes["rung"] == 17


def test_compare_evidence_and_plot_take_the_results(run):
    idata, _ = run
    import matplotlib

    matplotlib.use("Agg")
    from pymc_tempering.evidence.compare import compare_evidence
    from pymc_tempering.plots import plot_learning_coefficient

    table = compare_evidence({"wbic": wbic(idata, n_obs=N_OBS)})
    assert table.loc["wbic", "method"] == "WBIC approximation"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        lam = learning_coefficient(idata, n_obs=N_OBS)
    fig, ax = plot_learning_coefficient(lam, reference={"lambda": 0.5})
    assert len(ax.lines) >= 3
    with pytest.raises(ValueError, match="learning_coefficient"):
        plot_learning_coefficient(wbic(idata, n_obs=N_OBS))


# --- one-temperature runs: MALA, ULA, SGLD at beta* ----------------------------------------------
def _one_temperature_run(model, step, seed, draws):
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.sample(
            step=step, draws=draws, tune=1000, chains=2, cores=1, random_seed=seed,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip


def test_wbic_from_mala_at_beta_star_and_a_wrong_beta_fails():
    """MALA at beta* on the regular model (exact WBIC n d / (1 + 2 n beta*)): within 4 MCSE.
    The same run at beta = 1 ("n instead of n beta*") is refused with its beta named, and its
    mean of -loglik lies far outside 4 MCSE of the exact WBIC, so the refusal is needed."""
    n, d = 1000, 2
    truth = exact_wbic(partial(regular_power_moments, n, d=d), n)
    model = _regular_model(n, d)
    idata = _one_temperature_run(model, pmt.MALA(model=model, beta=wbic_beta(n)), SEED, 2000)
    np.testing.assert_array_equal(idata.sample_stats["beta"].values, wbic_beta(n))
    res = wbic(idata, n_obs=n, model=model)
    assert res.attrs["source"] == "one temperature" and res.attrs["loglik_source"] == "model"
    assert res.attrs["warning"] == "" and res.attrs["source_rung"] == -1
    assert abs(float(res.wbic) - truth) < 4 * float(res.mcse), (float(res.wbic), truth)
    with model:  # the model from the context
        assert float(wbic(idata, n_obs=n).wbic) == float(res.wbic)

    wrong = _one_temperature_run(model, pmt.MALA(model=model, beta=1.0), SEED, 1000)
    with pytest.raises(ValueError, match=r"sampled at beta = 1 .*wbic_beta\(1000\)"):
        wbic(wrong, n_obs=n, model=model)
    minus_loglik = n * (wrong.posterior["w"].values ** 2).sum(-1)  # what it would have read
    from pymc_tempering.evidence.core.mcse import mean_mcse

    assert abs(minus_loglik.mean() - truth) > 4 * mean_mcse(minus_loglik).mcse


def test_wbic_refuses_draws_of_data_set_since():
    """WBIC from a model evaluates its log-likelihood at the run's draws: a ``pm.Data`` set
    since sampling would give another run's value, so it is refused by name."""
    n = 50
    with pm.Model() as model:
        x = pm.Data("x", np.linspace(-1.0, 1.0, n))
        w = pm.Normal("w", 0.0, 1.0)
        pm.Normal("y", w * x, 1.0, observed=np.zeros(n))
    idata = _one_temperature_run(model, pmt.MALA(model=model, beta=wbic_beta(n)), SEED, 30)
    assert np.isfinite(float(wbic(idata, n_obs=n, model=model).wbic))  # the data sampled
    with model:
        pm.set_data({"x": np.linspace(-2.0, 2.0, n)})
    with pytest.raises(ValueError, match=r"^WBIC: .*other data than the model's pm.Data \['x'\]"):
        wbic(idata, n_obs=n, model=model)


def _quartic_data_model(y, batch_size=None):
    """y_i ~ N(w^2, 1): with centred y, loglik(w) = loglik(0) - (n/2) w^4, singular (lambda
    1/4, not d/2 = 1/2)."""
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 1.0)
        if batch_size is None:
            pm.Normal("y", w**2, 1.0, observed=y)
        else:
            batch = pm.Minibatch(y, batch_size=batch_size)
            pm.Normal("y", w**2, 1.0, observed=batch, total_size=len(y))
    return model


@pytest.mark.slow
def test_wbic_from_minibatch_sgld_at_beta_star():
    """devinterp's setting: SGLD on pm.Minibatch data at beta*, the loglik evaluated on the
    full-data model: within 4 MCSE of the exact WBIC, with the unadjusted-sampler warning; the
    log_likelihood group (pm.compute_log_likelihood) gives the same number."""
    n = 1000
    y = np.random.default_rng(SEED).normal(size=n)
    y -= y.mean()
    full = _quartic_data_model(y)
    truth = -stats.norm.logpdf(y).sum() + exact_wbic(
        partial(monomial_power_moments, n / 2, k=(2,)), n
    )
    minibatch = _quartic_data_model(y, batch_size=100)
    step = pmt.SGLD(model=minibatch, beta=wbic_beta(n), step_size=1e-3, schedule="constant")
    idata = _one_temperature_run(minibatch, step, SEED, 6000)
    with pytest.warns(EvidenceWarning, match="unadjusted sampler"):
        res = wbic(idata, n_obs=n, model=full)
    assert abs(float(res.wbic) - truth) < 4 * float(res.mcse), (float(res.wbic), truth)
    with pytest.raises(ValueError, match="pm.Minibatch"):
        wbic(idata, n_obs=n, model=minibatch)

    some = idata.isel(draw=slice(0, None, 50))
    with pytest.raises(ValueError, match="pass model=.*compute_log_likelihood"):
        wbic(some, n_obs=n)
    pm.compute_log_likelihood(some, model=full, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        from_group, from_model = wbic(some, n_obs=n), wbic(some, n_obs=n, model=full)
    assert from_group.attrs["loglik_source"] == "log_likelihood group"
    assert float(from_group.wbic) == pytest.approx(float(from_model.wbic), rel=1e-10)


def test_wbic_refuses_runs_without_beta_star():
    n = 100
    with _regular_model(n, 1) as model:
        ula = pm.sample(step=pmt.ULA(step_size=1e-3, beta=0.3), draws=20, tune=0, chains=1,
                        progressbar=False, random_seed=1)  # fmt: skip
        nuts = pm.sample(draws=20, tune=20, chains=1, progressbar=False, random_seed=1)
    with pytest.raises(ValueError, match="sampled at beta = 0.3 .*1/log n = 0.217"):
        wbic(ula, n_obs=n, model=model)
    with pytest.raises(ValueError, match="neither ExchangeMC's rung traces.*MALA"):
        wbic(nuts, n_obs=n, model=model)
    with pytest.raises(ValueError, match="whole DataTree"):
        wbic(ula.sample_stats.to_dataset().assign(beta=lambda s: s.beta * 0 + wbic_beta(n)),
             n_obs=n)  # fmt: skip


# --- lambda as an approximation of log Z in compare_evidence -------------------------------------
def test_learning_coefficient_evidence_rows():
    import xarray as xr

    from pymc_tempering.evidence.approximations import bic, learning_coefficient_evidence
    from pymc_tempering.evidence.compare import compare_evidence

    for n, d in ((1000, 2), (10**8, 2), (1000, 3)):  # exact: max loglik = 0 at w = 0
        model = singular_model(n, d)
        res = learning_coefficient_evidence(0.5, model, n_obs=n, multiplicity=d)
        expected = -0.5 * np.log(n) + (d - 1) * np.log(np.log(n))
        assert float(res.log_marginal_likelihood) == pytest.approx(expected, abs=1e-9)
        error = float(res.log_marginal_likelihood) + pmt.exact.singular_free_energy(n, d)
        assert 0.8 < error < 2.3, (n, d, error)  # O(1), as the docstring says
    estimate = xr.Dataset({"learning_coefficient": 0.35, "mcse": 0.02}, attrs={"n_obs": 1000})
    with singular_model(1000, 2):
        res = learning_coefficient_evidence(estimate)
    assert float(res.log_marginal_likelihood) == pytest.approx(-0.35 * np.log(1000))
    assert float(res.monte_carlo_error) == pytest.approx(0.02 * np.log(1000))
    table = compare_evidence({"lambda": res})
    assert table.loc["lambda", "method"] == "learning-coefficient approximation"
    assert np.isnan(table.loc["lambda", "mcse"])
    with pytest.raises(ValueError, match="learning_coefficient_evidence"):
        compare_evidence({"lambda": estimate})
    regular = _regular_model(500, 3)  # lambda = d/2, m = 1: BIC's value
    assert float(
        learning_coefficient_evidence(1.5, regular, n_obs=500).log_marginal_likelihood
    ) == pytest.approx(float(bic(regular, n_obs=500).log_marginal_likelihood), abs=1e-8)
    with pytest.raises(ValueError, match="n_obs"):
        learning_coefficient_evidence(0.5, regular)
