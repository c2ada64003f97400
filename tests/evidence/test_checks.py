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
from pymc_tempering.evidence import checks
from pymc_tempering.evidence.core.tempered import khat_threshold
from pymc_tempering.kernels import fused
from pymc_tempering.kernels.rules import log_accept_ratio
from pymc_tempering.trace import evidence_ladder_run

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


# --- each threshold of evidence/checks.py, just below and just above (issue 33.4) ---------------


def _flagged(problems, text):
    return any(text in p for p in problems)


def _swap_ds(rate, n_draws=1000):
    swap = np.full((2, n_draws // 2, 3), rate)
    return xr.Dataset({"swap_accept": (("chain", "draw", "rung_pair"), swap)})


_EPS = 1.01  # just above a threshold; 1 / _EPS just below
# the thresholds the docstrings promise, written out: a constant changed in checks.py fails here
MIN_DRAWS, MIN_ESS, MIN_SWAP_RATE, MIN_SUPPORT_DRAWS, MAX_TERMS_KHAT = 400, 100, 0.01, 100, 0.5


def test_draw_and_ess_counts_flag_just_below_their_thresholds():
    ess = np.full(4, 1e4)
    assert _flagged(checks.count_problems(MIN_DRAWS - 1, ess, 1e4), "draws per rung")
    assert not checks.count_problems(MIN_DRAWS, ess, 1e4)
    low = ess.copy()
    low[2] = MIN_ESS / _EPS
    assert _flagged(checks.count_problems(1000, low, 1e4), "ESS below")
    low[2] = MIN_ESS
    assert not checks.count_problems(1000, low, 1e4)
    assert _flagged(checks.count_problems(1000, ess, MIN_ESS / _EPS), "estimate's ESS")
    assert not checks.count_problems(1000, ess, MIN_ESS)


def test_swap_rate_flags_just_below_its_threshold():
    betas, ess, support = np.array([0.0, 0.1, 0.5, 1.0]), np.full(4, 1e4), np.ones(4)
    for rate, flagged in (
        (MIN_SWAP_RATE / _EPS, True),
        (MIN_SWAP_RATE * _EPS, False),
    ):
        found = checks.sampling_problems(_swap_ds(rate), betas, ess, 1e4, support)
        assert _flagged(found, "swap with rate below") is flagged, rate


def test_support_draws_flag_just_below_their_threshold():
    betas, ess = np.array([0.0, 0.1, 1.0]), np.full(3, 1e4)
    n_draws = 1000
    for inside, flagged in (
        (MIN_SUPPORT_DRAWS - 1, True),
        (MIN_SUPPORT_DRAWS, False),
    ):
        support = np.array([inside / n_draws, 1.0, 1.0])
        found = checks.sampling_problems(_swap_ds(0.5, n_draws), betas, ess, 1e4, support)
        assert _flagged(found, "non-zero likelihood") is flagged, inside


def test_quadrature_error_flags_just_above_the_mcse():
    betas, mean = np.array([0.0, 0.5, 1.0]), np.array([-3.0, -2.0, -1.0])  # bracket [-2.5, -1.5]
    mcse = 0.01
    assert _flagged(checks.quadrature_problems(betas, mean, -2.0, mcse * _EPS, mcse), "quadrature")
    assert not checks.quadrature_problems(betas, mean, -2.0, mcse / _EPS, mcse)
    assert _flagged(checks.pooled_quadrature_problems(mcse * _EPS, mcse), "pooled")
    assert not checks.pooled_quadrature_problems(mcse / _EPS, mcse)
    # the monotone bracket, 4 MCSE wide on each side
    outside, inside = 4 * mcse * _EPS, 4 * mcse / _EPS
    cases = ((-1.5 + outside, True), (-1.5 + inside, False), (-2.5 - outside, True),
             (-2.5 - inside, False))  # fmt: skip
    for corrected, flagged in cases:
        found = checks.quadrature_problems(betas, mean, corrected, 0.0, mcse)
        assert _flagged(found, "leaves the bracket") is flagged, corrected


def test_rung_tails_flag_just_above_khat_and_influence_thresholds():
    mcse, k = 0.01, MAX_TERMS_KHAT
    for khat, influence, flagged in (
        (k * _EPS, 0.1 * mcse * _EPS, True),
        (k / _EPS, 0.1 * mcse * _EPS, False),
        (k * _EPS, 0.1 * mcse / _EPS, False),
    ):
        found = checks.tail_problems(1000, mcse, np.array([khat]), np.array([influence]))
        assert _flagged(found, "heavy-tailed loglik") is flagged, (khat, influence)


def test_stone_tails_flag_just_above_the_khat_threshold_and_the_mcse():
    n_draws, mcse = 2000, 0.01
    limit = min(1 - 1 / np.log10(n_draws), 0.7)  # Vehtari et al. (2024)
    assert khat_threshold(n_draws) == limit
    for khat, flagged in ((limit * _EPS, True), (limit / _EPS, False)):
        found = checks.tail_problems(n_draws, mcse, stone_khat=np.array([khat]))
        assert _flagged(found, "heavy-tailed importance") is flagged, khat
    # tied weights (khat NaN): a few draws moving the log ratio by more than the MCSE
    for concentration, flagged in ((mcse * _EPS, True), (mcse / _EPS, False)):
        found = checks.tail_problems(
            n_draws, mcse, stone_khat=np.array([np.nan]),
            stone_concentration=np.array([concentration]),
        )  # fmt: skip
        assert _flagged(found, "largest importance weights") is flagged, concentration
    found = checks.tail_problems(  # a fitted tail below the threshold decides alone
        n_draws, mcse, stone_khat=np.array([0.2]), stone_concentration=np.array([10 * mcse])
    )
    assert not found


def test_disagreement_flags_beyond_four_mcse_of_the_difference_and_the_mcse():
    diff_mcse, mcse = 0.01, 0.02
    for gap, flagged in ((4 * diff_mcse * _EPS, True), (4 * diff_mcse / _EPS, False)):
        found = checks.agreement_problems(0.0, mcse / 10, gap, "stepping_stone", diff_mcse)
        assert _flagged(found, "on the same draws") is flagged, gap
    for gap, flagged in ((mcse * _EPS, True), (mcse / _EPS, False)):  # gap beyond the MCSE too
        found = checks.agreement_problems(0.0, mcse, gap, "stepping_stone", diff_mcse / 10)
        assert _flagged(found, "on the same draws") is flagged, gap


def test_the_evidence_ladder_caveat_comes_from_the_stat():
    """Any draw with ``evidence_ladder`` True brings the caveat; all False, or no such stat
    (older traces, other step methods), none. Read from a DataTree or its sample stats."""
    draws = np.zeros((2, 5), dtype=bool)
    stats = xr.Dataset({"evidence_ladder": (("chain", "draw"), draws)})
    assert checks.ladder_problems(evidence_ladder_run(stats)) == []
    assert checks.ladder_problems(evidence_ladder_run(stats.drop_vars("evidence_ladder"))) == []
    draws[1, 3] = True
    stats = xr.Dataset({"evidence_ladder": (("chain", "draw"), draws)})
    tree = xr.DataTree.from_dict({"sample_stats": stats})
    for data in (stats, tree, tree["sample_stats"]):
        assert checks.ladder_problems(evidence_ladder_run(data)) == [checks.EVIDENCE_LADDER_CAVEAT]


def test_every_reader_adds_the_caveat_once_from_the_stat(support_run):
    """TI, SS, BAR and MBAR read the stat, not the sampler's arguments: a run given the stat by
    hand gets the caveat once in each warning; the same run without it, none."""
    _, idata = support_run
    stats = idata["sample_stats"].to_dataset()
    flag = xr.DataArray(np.ones((stats.sizes["chain"], stats.sizes["draw"]), dtype=bool),
                        dims=("chain", "draw"))  # fmt: skip
    marked = idata.copy()
    marked["sample_stats"] = xr.DataTree(stats.assign(evidence_ladder=flag))
    for estimator in (pmt.thermodynamic_integration, pmt.stepping_stone, pmt.bar, pmt.mbar):
        assert checks.EVIDENCE_LADDER_CAVEAT not in _quiet(estimator, idata).attrs["warning"]
        warning = _quiet(estimator, marked).attrs["warning"]
        assert warning.count(checks.EVIDENCE_LADDER_CAVEAT) == 1, estimator.__name__


# --- the two legs' checks (leg_problems), at their edges (issue 39) --------------------------

LEGS = ("prior", "variational")
FLAG = "thermodynamic_integration (prior leg): the estimate may not be trustworthy: x."
# the constants the guide states, written out: a changed constant in checks.py fails here
LEG_DISAGREEMENT_Z, FLAGGED_LEG_WEIGHT = 3.0, 0.1


def test_legs_disagree_just_beyond_three_mcse_of_their_difference():
    """MCSEs 0.375 and 0.5 (binary fractions: the MCSE of the difference is 0.625 exactly, so
    3 of them are 1.875 exactly): at the edge the legs agree, one ulp beyond they do not."""
    assert checks.LEG_DISAGREEMENT_Z == LEG_DISAGREEMENT_Z
    mcses, weights = (0.375, 0.5), (0.36, 0.64)
    edge = LEG_DISAGREEMENT_Z * 0.625
    assert checks.leg_problems(LEGS, (0.0, edge), mcses, weights, ("", "")) == []
    assert checks.leg_problems(LEGS, (edge, 0.0), mcses, weights, ("", "")) == []
    (found,) = checks.leg_problems(LEGS, (0.0, np.nextafter(edge, 2.0)), mcses, weights, ("", ""))
    assert "the prior leg gives 0.0000 +- 0.38 and the variational leg 1.8750 +- 0.5" in found
    assert "3.0 times the MCSE of their difference (more than 3)" in found, found
    assert "own warning" not in found  # neither leg is flagged


def test_a_flagged_leg_is_repeated_just_above_its_weight_limit():
    assert checks.FLAGGED_LEG_WEIGHT == FLAGGED_LEG_WEIGHT
    values, mcses = (1.0, 1.0), (0.3, 0.1)
    for weight, repeated in ((FLAGGED_LEG_WEIGHT, False), (np.nextafter(0.1, 1.0), True)):
        found = checks.leg_problems(LEGS, values, mcses, (weight, 1 - weight), (FLAG, ""))
        assert _flagged(found, "the prior leg carries 10% of the weight and is flagged") is repeated
        assert len(found) == repeated, found
    # the weight read is the flagged leg's own, not the other's
    assert checks.leg_problems(LEGS, values, mcses, (0.05, 0.95), ("", FLAG)) != []
    assert checks.leg_problems(LEGS, values, mcses, (0.95, 0.05), ("", FLAG)) == []


def test_a_disagreement_names_the_flagged_leg():
    found = checks.leg_problems(LEGS, (0.0, 1.0), (0.1, 0.1), (0.5, 0.5), ("", FLAG))
    assert found[0].endswith("(the variational leg's own warning names a cause)"), found
    assert "the variational leg carries 50% of the weight and is flagged" in found[1]
    assert len(found) == 2


@pytest.mark.parametrize(
    ("value", "mcse"), [(np.nan, 0.1), (np.inf, 0.1), (1.0, np.nan), (1.0, np.inf), (1.0, -0.1)]
)
def test_a_leg_without_an_error_bar_is_named_and_not_compared(value, mcse):
    """No estimate, or no finite non-negative MCSE: named, with the leg the combination keeps;
    no disagreement is computed from it."""
    (found,) = checks.leg_problems(LEGS, (value, 1.0), (mcse, 0.1), (0.0, 1.0), ("", ""))
    assert found.startswith("the prior leg gave no estimate with a finite error bar"), found
    assert "the combination is the variational leg alone" in found and "apart" not in found
    (found,) = checks.leg_problems(LEGS, (1.0, value), (0.1, mcse), (1.0, 0.0), ("", ""))
    assert found.startswith("the variational leg gave no estimate") and "prior leg alone" in found


def test_an_exact_leg_has_an_error_bar():
    """MCSE 0 (an exact value) is an error bar: the legs are compared against the other's MCSE
    alone (2.5 of it apart: agreeing; 3.5: not)."""
    assert checks.leg_problems(LEGS, (1.0, 1.25), (0.0, 0.1), (1.0, 0.0), ("", "")) == []
    (found,) = checks.leg_problems(LEGS, (1.0, 1.35), (0.0, 0.1), (1.0, 0.0), ("", ""))
    assert "3.5 times the MCSE of their difference" in found


def test_two_exact_legs_that_differ_say_so_without_a_runtime_warning():
    """Both MCSEs 0 and different values: no MCSE of the difference to divide by."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        (found,) = checks.leg_problems(LEGS, (1.0, 1.5), (0.0, 0.0), (0.5, 0.5), ("", ""))
        assert checks.leg_problems(LEGS, (1.0, 1.0), (0.0, 0.0), (0.5, 0.5), ("", "")) == []
    assert "0.5 apart, though both are exact (MCSE 0)" in found and "inf" not in found, found
