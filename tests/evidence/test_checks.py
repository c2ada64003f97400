"""Evidence you can trust (issue 18): each case that once gave a confident wrong number or a crash.

Exact references come from :mod:`pymc_tempering.exact`. The systematic guard over ladders and
models is tests/evidence/test_grid.py; these are the single cases, one test each.
"""

import os
import warnings

import numba
import numpy as np
import pymc as pm
import pytest
import targets
import xarray as xr
from helpers import recompiled

import pymc_tempering as pmt
from pymc_tempering import exact
from pymc_tempering.kernels import fused
from pymc_tempering.kernels.rules import log_accept_ratio

SAMPLE = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}


def _sample(model, seed=1, draws=1000, tune=1000, chains=2, **step_kwargs):
    with model:
        return pm.sample(
            step=pmt.ExchangeMC(**step_kwargs), draws=draws, tune=tune, chains=chains,
            random_seed=seed, **SAMPLE,
        )  # fmt: skip


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)
        return fn(*args, **kwargs)


# --- item 2: likelihoods that are zero on part of the prior -------------------------------------


@pytest.fixture(scope="module")
def support_run():
    y = targets.support_data()
    return y, _sample(targets.support_model(y), seed=3)


def test_prior_rung_samples_the_whole_prior_where_the_likelihood_is_zero(support_run):
    """At beta = 0 the rung is the prior: the share of its draws with loglik > -inf estimates
    P(support) = Phi(min y + 10) - Phi(max y); before the fix it was 1 (draws rejected)."""
    y, idata = support_run
    ds = pmt.tempering_dataset(idata)
    inside = np.isfinite(ds.rung_loglik.sel(rung=0).values)
    p_exact = exact.uniform_support_prior_probability(y)
    p_hat = inside.mean()
    mcse = np.sqrt(p_exact * (1 - p_exact) / inside.size)  # exact prior draws: independent
    assert abs(p_hat - p_exact) < 4 * mcse, (p_hat, p_exact)
    assert np.isfinite(ds.rung_loglik.sel(rung=slice(1, None)).values).all()


@pytest.mark.parametrize("estimator", [pmt.thermodynamic_integration, pmt.stepping_stone])
def test_support_depending_on_a_parameter_gives_the_exact_evidence(support_run, estimator):
    y, idata = support_run
    res = estimator(idata)
    err = float(res.log_marginal_likelihood) - exact.uniform_support_log_evidence(y)
    assert abs(err) < 4 * float(res.mcse), (err, float(res.mcse))
    assert float(res.mcse) > 0.01  # log P(support) is estimated, not assumed


def test_ti_adds_the_log_prior_mass_of_the_support(support_run):
    y, idata = support_run
    res = pmt.thermodynamic_integration(idata)
    log_p = np.log(exact.uniform_support_prior_probability(y))
    assert abs(float(res.log_support_fraction) - log_p) < 4 * float(res.mcse)


@pytest.mark.parametrize("explorer", ["rwm", "mala"])
def test_hard_constraint_potential_gives_the_exact_evidence(explorer):
    y = targets.constraint_data()
    idata = _sample(targets.constraint_model(y), seed=4, explorer=explorer, prior_rung=False)
    assert not np.isfinite(pmt.tempering_dataset(idata).rung_loglik.sel(rung=0)).all()
    truth = exact.constrained_log_evidence(y)
    for estimator in (pmt.thermodynamic_integration, pmt.stepping_stone):
        res = estimator(idata)
        err = float(res.log_marginal_likelihood) - truth
        assert abs(err) < 4 * float(res.mcse), (estimator.__name__, err, float(res.mcse))


@numba.njit
def _rejecting_accept_ratio(beta, logprior, loglik, prop_logprior, prop_loglik, log_q, exact):
    """The planted bug: loglik = -inf rejected at beta = 0 too."""
    if not np.isfinite(prop_loglik):
        return -np.inf
    return log_accept_ratio(beta, logprior, loglik, prop_logprior, prop_loglik, log_q, exact)


def test_the_rejecting_prior_rung_is_caught(monkeypatch):
    """The planted bug: the compiled sweep rejects loglik = -inf at beta = 0 again."""
    broken = recompiled(fused.sweep_kernel, log_accept_ratio=_rejecting_accept_ratio)
    monkeypatch.setattr(fused, "sweep_kernel", broken)
    y = targets.support_data()
    idata = _sample(targets.support_model(y), seed=3, draws=400, tune=300)
    res = _quiet(pmt.stepping_stone, idata)
    err = float(res.log_marginal_likelihood) - exact.uniform_support_log_evidence(y)
    assert abs(err) > 4 * float(res.mcse)  # log P(support) = -1.17 is lost


def test_a_support_the_prior_almost_never_reaches_warns():
    """P(support) ~ 1e-6: no prior draw lands in it, so log Z cannot be estimated; say so."""
    y = np.linspace(-5.24, 4.75, 20)
    with targets.support_model(y):
        idata = pm.sample(
            step=pmt.ExchangeMC(n_rungs=8), draws=300, tune=200, chains=2, random_seed=1,
            initvals={"ub": 4.76}, **SAMPLE,
        )  # fmt: skip
    for estimator in (pmt.thermodynamic_integration, pmt.stepping_stone):
        with pytest.warns(pmt.EvidenceWarning, match="non-zero likelihood"):
            res = estimator(idata)
        assert float(res.log_marginal_likelihood) < exact.uniform_support_log_evidence(y) + 5


# --- item 1: coarse ladders near beta = 0 --------------------------------------------------------


@pytest.fixture(scope="module")
def schools_coarse():
    return _sample(targets.schools_model(), n_rungs=8, draws=600, tune=600)


def test_ti_on_a_coarse_ladder_warns_and_says_what_to_do(schools_coarse):
    with pytest.warns(pmt.EvidenceWarning, match="evidence_ladder") as caught:
        res = pmt.thermodynamic_integration(schools_coarse)
    assert len(caught) == 1
    err = float(res.log_marginal_likelihood) - exact.eight_schools_log_evidence()
    assert abs(err) > 1.0  # a useless number (its error bar too): the warning is needed


def test_evidence_objective_keeps_the_lowest_rung():
    with targets.schools_model():
        step = pmt.ExchangeMC(
            betas=pmt.evidence_ladder(16), ladder="adaptive", ladder_objective="evidence"
        )
        idata = pm.sample(step=step, draws=300, tune=600, chains=1, random_seed=2, **SAMPLE)
    betas = pmt.tempering_dataset(idata).beta.values
    assert betas[0] == 0 and betas[1] == pmt.evidence_ladder(16)[1]
    assert not np.allclose(betas, pmt.evidence_ladder(16))  # the rest moved


# --- item 5 and 9: compare_evidence --------------------------------------------------------------


def test_compare_evidence_refuses_a_ladder_that_starts_above_zero():
    model = targets.lecture_model(targets.lecture_data())
    idata = _sample(model, betas=np.geomspace(1e-3, 1, 8), draws=300, tune=200)
    good = _sample(model, betas=pmt.evidence_ladder(16), draws=300, tune=200)
    with pytest.raises(ValueError, match="'partial'.*starts at beta = 0.001"):
        pmt.compare_evidence({"partial": idata, "full": good})
    result = _quiet(pmt.thermodynamic_integration, idata)
    with pytest.raises(ValueError, match="'partial'.*not log Z"):
        pmt.compare_evidence({"partial": result, "full": good})


@pytest.mark.filterwarnings("ignore:The models were fitted to different observed data")
def test_compare_evidence_repeats_each_warning_with_the_model_name(schools_coarse):
    lecture = _sample(targets.lecture_model(targets.lecture_data()), draws=500, tune=300)
    with pytest.warns(pmt.EvidenceWarning, match="model 'schools'") as caught:
        table = pmt.compare_evidence({"schools": schools_coarse, "lecture": lecture})
    assert not any("'lecture'" in str(w.message) for w in caught)
    assert table.loc["schools", "warning"] and not table.loc["lecture", "warning"]


def test_same_data_under_another_name_or_dtype_is_the_same_data():
    x = targets.lecture_data()
    a = pmt.laplace_evidence(targets.lecture_model(x))
    with pm.Model() as renamed:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("obs", mu, 1.0, observed=x.astype("float32"))
    b = pmt.laplace_evidence(renamed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        pmt.compare_evidence({"a": a, "b": b})
    with pytest.warns(UserWarning, match="different observed data"):
        pmt.compare_evidence({"a": a, "c": pmt.laplace_evidence(targets.lecture_model(x + 1))})


def test_compare_evidence_takes_sample_smc_results_labelled():
    x = targets.lecture_data()
    with targets.lecture_model(x):
        smc = pm.sample_smc(draws=400, chains=2, random_seed=1, progressbar=False, cores=1)
    ml = _quiet(pmt.marginal_likelihood, targets.lecture_model(x), n_rungs=32, draws=400,
                tune=300, random_seed=1)  # fmt: skip
    table = pmt.compare_evidence({"smc": smc, "exchange": ml})
    assert table.loc["smc", "method"] == "sample_smc"
    per_chain = smc.sample_stats.log_marginal_likelihood.values[:, -1].astype(float)
    assert table.loc["smc", "log_marginal_likelihood"] == pytest.approx(np.mean(per_chain))
    assert table.loc["smc", "mcse"] > 0


def test_laplace_refuses_an_improper_prior():
    with pm.Model() as model:
        mu = pm.Flat("mu")
        pm.Normal("x", mu, 1.0, observed=targets.lecture_data())
    with pytest.raises(ValueError, match=r"\['mu'\].*improper"):
        pmt.laplace_evidence(model)


def test_ti_takes_the_sample_stats_node_of_a_datatree(support_run):
    _, idata = support_run
    full = pmt.thermodynamic_integration(idata)
    node = pmt.thermodynamic_integration(idata.sample_stats)
    assert float(node.log_marginal_likelihood) == float(full.log_marginal_likelihood)


# --- item 10: saved runs -------------------------------------------------------------------------


def test_a_saved_run_gives_the_same_evidence(support_run, tmp_path):
    _, idata = support_run
    path = os.fspath(tmp_path / "run.nc")
    idata.to_netcdf(path)
    loaded = xr.open_datatree(path)
    for estimator in (pmt.thermodynamic_integration, pmt.stepping_stone):
        assert float(estimator(loaded).log_marginal_likelihood) == float(
            estimator(idata).log_marginal_likelihood
        )


# --- item 11: the adaptive ladder through the one-call helper -----------------------------------


def test_marginal_likelihood_runs_the_adaptive_ladder_it_is_given():
    x = targets.lecture_data()
    res, idata = _quiet(
        pmt.marginal_likelihood, targets.lecture_model(x), draws=500, tune=600, random_seed=2,
        step_kwargs={"ladder": "adaptive", "n_rungs": 16, "ladder_objective": "evidence"},
        return_idata=True,
    )  # fmt: skip
    ds = pmt.tempering_dataset(idata)
    assert ds.sizes["rung"] == 16 and ds.beta.dims == ("chain", "rung")  # tuned per chain
    assert not np.allclose(ds.beta.values[0], pmt.evidence_ladder(16))
    truth = exact.lecture_log_evidence(x)
    for estimator in res.estimator.values:
        row = res.sel(estimator=estimator)
        err = float(row.log_marginal_likelihood) - truth
        assert abs(err) < 4 * float(row.mcse) or str(row.warning.values), (estimator, err)


# --- item 3: minibatched models ------------------------------------------------------------------


def _minibatch_model():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 2))
    y = (X[:, 0] + rng.normal(size=500) > 0).astype("int32")
    with pm.Model() as model:
        X_mb, y_mb = pm.Minibatch(X, y, batch_size=50)
        w = pm.Normal("w", 0, 1, shape=2)
        pm.Bernoulli("y", logit_p=X_mb @ w, observed=y_mb, total_size=500)
    return model


@pytest.mark.parametrize(
    "call",
    [
        lambda m: pmt.ExchangeMC(model=m),
        lambda m: pmt.marginal_likelihood(m),
        lambda m: pmt.laplace_evidence(m),
        lambda m: pmt.bic(m),
    ],
    ids=["ExchangeMC", "marginal_likelihood", "laplace_evidence", "bic"],
)
def test_exact_samplers_and_evidence_refuse_minibatched_models(call):
    with pytest.raises(ValueError, match=r"\['y'\] use pm.Minibatch.*pmt.SGLD"):
        call(_minibatch_model())


def test_a_result_without_attrs_is_still_refused_by_its_coordinates():
    model = targets.lecture_model(targets.lecture_data())
    idata = _sample(model, betas=np.geomspace(1e-3, 1, 8), draws=300, tune=200)
    for estimator in (pmt.thermodynamic_integration, pmt.stepping_stone):
        result = _quiet(estimator, idata)
        result.attrs = {}  # saved and loaded without attrs, or from older code
        with pytest.raises(ValueError, match="starts at beta = 0.001"):
            pmt.compare_evidence({"partial": result})


def test_a_resized_ladder_never_puts_a_zero_likelihood_state_above_beta_0():
    """adapt_n_rungs re-places rungs inside [0, beta_1] when rung 0 rarely swaps: a new rung
    there must copy a beta > 0 replica, never rung 0's prior draw with loglik = -inf."""
    y = targets.support_data()
    with targets.support_model(y):
        step = pmt.ExchangeMC(betas=[0.0, 1e-3, 0.1, 1.0], prior_rung=False)
        pm.sample(step=step, draws=5, tune=5, chains=1, random_seed=1, **SAMPLE)
    step.loglik[0] = -np.inf  # rung 0 holds a prior draw outside the support
    old = step.betas
    step.betas = np.array([0.0, 1e-4, 1e-3, 1e-2, 0.1, 1.0])
    step.ladder_round = {"rejection": None, "count": None, "ll": None}
    step._resize_rungs(old)
    assert np.isfinite(step.loglik[1:]).all(), step.loglik
