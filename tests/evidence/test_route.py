"""``marginal_likelihood(reference="auto")``: the route a pilot chooses, and what each route
returns (pymc_tempering.evidence.route, the routes in pymc_tempering.evidence.runner;
docs/decisions/150-evidence-route.md).

Exact references: a conjugate regression with correlated predictors (closed-form log Z: the
variational route must hit it with every row, bridge sampling included), the egg box (a
multimodal target: the prior route, bit for bit the run of ``reference="prior"``), a discrete
model (the prior route without a pilot). Measurements: ``benchmarks/bench_evidence_route.py``.
"""

import math
import warnings

import numpy as np
import pymc as pm
import pytest
import targets

import pymc_tempering as pmt
from pymc_tempering.evidence import runner
from pymc_tempering.evidence.checks import LEG_DISAGREEMENT_Z, cross_check_problems
from pymc_tempering.evidence.route import (
    PILOT,
    ROUTE_PRIOR_RUNGS,
    ROUTE_VARIATIONAL_RUNGS,
    VARIATIONAL_BARRIER_RATIO,
    VARIATIONAL_MAX_BARRIER,
    choose_route,
    fixed_route,
    pilot_seed,
    tagged_seed,
)
from pymc_tempering.exact import egg_box_log_evidence, egg_box_model

QUIET = {"cores": 1, "progressbar": False}


# --- the rule, on numbers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prior", "q", "route"),
    [
        (10.0, 0.13, "variational"),  # a concentrating regression (decision 130's table)
        (4.0, VARIATIONAL_MAX_BARRIER, "variational"),  # both limits met, the first exactly
        (4.0, 1.01, "prior"),  # q's barrier above the limit, though a quarter of the prior's
        (2.0, 0.5, "variational"),  # the ratio exactly met
        (1.9, 0.5, "prior"),  # small, but not a quarter of the prior's barrier
        (2.9, 2.8, "prior"),  # the egg box: q shortens nothing
        (6.3, 1.6, "prior"),  # two modes: shorter, not short
        (math.nan, 0.1, "prior"),
        (math.inf, 0.1, "prior"),  # not a measurement, though q's path is short
        (4.0, math.inf, "prior"),
    ],
)
def test_the_variational_route_needs_a_short_path_and_a_fraction_of_the_priors(prior, q, route):
    assert VARIATIONAL_BARRIER_RATIO == 0.25 and VARIATIONAL_MAX_BARRIER == 1.0
    chosen = choose_route(prior, q)
    assert chosen.name == route
    if math.isfinite(prior) and math.isfinite(q):
        assert f"{q:.2f} from the fitted Gaussian q, {prior:.2f} from the prior" in chosen.reason


def test_routes_fixed_without_a_pilot_say_why():
    assert fixed_route(False, "geometric", {}) is None
    assert fixed_route(False, "geometric", {"explorer": "rwm"}) is None
    assert "discrete" in fixed_route(True, "geometric", {}).reason
    assert "ladder='adaptive'" in fixed_route(False, "adaptive", {}).reason
    named = fixed_route(False, "geometric", {}, ["n_rungs", "beta_min"])
    assert "n_rungs, beta_min given" in named.reason
    for key in ("betas", "n_rungs", "ladder", "reference"):
        route = fixed_route(False, "geometric", {key: None})
        assert route.name == "prior" and f"({key})" in route.reason


def test_the_pilot_seed_is_the_seeds_own_and_apart_from_it():
    assert pilot_seed(None) is None
    assert pilot_seed(3) == pilot_seed(3) == pilot_seed([3])
    assert len({pilot_seed(3), pilot_seed(4), pilot_seed([3, 4]), 3}) == 4
    assert pilot_seed(np.int64(3)) == pilot_seed(3)
    # a derived stream is not the seed's own, which PyMC draws its chains' seeds from
    own = np.random.default_rng(3).random(4)
    assert not np.any(np.isin(np.random.default_rng(tagged_seed(3, 7)).random(4), own))
    generator = np.random.default_rng(1)  # PyMC takes one: the pilot draws afresh, leaving it
    state = generator.bit_generator.state
    assert pilot_seed(generator) is None and generator.bit_generator.state == state


def test_a_generator_as_the_seed_runs_both_routes():
    """``random_seed=np.random.default_rng(...)``, which pm.sample accepts, is no int to derive
    the pilot's seed from: the pilot draws afresh (it raised a TypeError)."""
    model = targets.lecture_model(targets.lecture_data())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = pmt.marginal_likelihood(
            model, draws=100, chains=2, random_seed=np.random.default_rng(1), **QUIET
        )
    assert result.attrs["route"] == "variational"
    assert np.all(np.isfinite(result.log_marginal_likelihood.values))


def test_a_cross_check_flags_disagreement_beyond_its_z_only():
    assert LEG_DISAGREEMENT_Z == 3.0
    scale = math.hypot(0.03, 0.04)  # 0.05
    assert cross_check_problems(1.0, 0.03, "bridge", 1.0 + 2.9 * scale, 0.04) == []
    (text,) = cross_check_problems(1.0, 0.03, "bridge", 1.0 - 3.1 * scale, 0.04)
    assert "3.1 MCSEs" in text and "reference='prior'" in text
    (text,) = cross_check_problems(1.0, 0.03, "bridge", 1.0 + 3.1 * scale, 0.04)  # either side
    assert "3.1 MCSEs" in text
    (text,) = cross_check_problems(1.0, 0.03, "bridge", math.nan, math.nan)
    assert "could not be checked" in text
    (text,) = cross_check_problems(1.0, math.nan, "bridge", 2.0, 0.04)  # no error bar of ours
    assert "could not be checked" in text


# --- the routes, end to end ---------------------------------------------------------------------


def _correlated_regression(n=400, seed=11):
    """Three coefficients, two predictors with correlation 0.95: a dense posterior."""
    rng = np.random.default_rng(seed)
    t = rng.normal(size=n)
    X = np.column_stack([np.ones(n), t, t + 0.3 * rng.normal(size=n)])
    y = X @ np.array([0.5, 1.0, -0.7]) + 0.7 * rng.normal(size=n)
    return targets.regression_model(X, y), targets.regression_log_evidence(X, y)


@pytest.fixture(scope="module")
def regression_run():
    model, truth = _correlated_regression()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pmt.EvidenceWarning)
        result, idata = pmt.marginal_likelihood(
            model, draws=400, chains=4, random_seed=5, return_idata=True, **QUIET
        )
    texts = [str(w.message) for w in caught if issubclass(w.category, pmt.EvidenceWarning)]
    return result, idata, truth, texts


def test_a_concentrating_posterior_takes_the_variational_route_and_hits_the_exact_evidence(
    regression_run,
):
    result, idata, truth, texts = regression_run
    assert result.attrs["reference"] == "auto" and result.attrs["route"] == "variational"
    q, prior = result.attrs["pilot_barrier_variational"], result.attrs["pilot_barrier_prior"]
    assert q <= VARIATIONAL_MAX_BARRIER and q <= VARIATIONAL_BARRIER_RATIO * prior
    assert f"{q:.2f} from the fitted Gaussian q" in result.attrs["route_reason"]
    assert list(result.estimator.values) == [
        "thermodynamic_integration",
        "stepping_stone",
        "bridge_sampling",
    ]
    err = result.log_marginal_likelihood.values - truth
    assert np.all(np.abs(err) < 4 * result.mcse.values), (err, result.mcse.values)
    assert np.all(result.mcse.values < 0.02)  # the short path's precision, not the prior's
    assert not any(result.warning.values) and texts == []
    # the run is the route's: a short prior leg joined to the variational leg, 400 draws x 4
    assert idata.posterior.sizes["chain"] == 4 and idata.posterior.sizes["draw"] == 400
    for leg, n_rungs in (("prior", ROUTE_PRIOR_RUNGS), ("variational", ROUTE_VARIATIONAL_RUNGS)):
        assert pmt.tempering_dataset(idata, leg=leg)["beta"].size == n_rungs


def test_the_route_and_its_reason_reach_compare_evidence(regression_run):
    result = regression_run[0]
    table = pmt.compare_evidence({"regression": result})
    assert table.loc["regression", "route"] == "variational"
    assert table.loc["regression", "log_marginal_likelihood"] == float(
        result.log_marginal_likelihood.sel(estimator="thermodynamic_integration")
    )


def test_compare_evidence_shows_a_route_only_for_marginal_likelihoods_results(regression_run):
    result, idata = regression_run[0], regression_run[1]
    lecture = targets.lecture_model(targets.lecture_data())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, one_leg = pmt.marginal_likelihood(
            lecture, n_rungs=8, draws=50, tune=50, chains=2, random_seed=1, return_idata=True,
            **QUIET,
        )  # fmt: skip
        table = pmt.compare_evidence({"routed": result, "two legs": idata, "one leg": one_leg})
    assert table.loc["routed", "route"] == "variational"
    assert table.loc["routed", "warning"] == ""  # the result's own: no problem
    for run in ("two legs", "one leg"):  # ExchangeMC DataTrees: no route taken
        assert table.loc[run, "route"] == ""
        assert table.loc[run, "method"] == "thermodynamic_integration"


def test_bridge_sampling_that_disagrees_flags_every_row(monkeypatch):
    """A bridge estimate moved by 1 (its MCSE is about 0.01): the variational leg's rows and the
    bridge row carry the disagreement, and the user is warned."""
    real = runner.bridge_sampling

    def shifted(*args, **kwargs):
        res = real(*args, **kwargs)
        return res.assign(log_marginal_likelihood=res["log_marginal_likelihood"] + 1.0)

    monkeypatch.setattr(runner, "bridge_sampling", shifted)
    model = targets.lecture_model(targets.lecture_data())
    with pytest.warns(pmt.EvidenceWarning, match="MCSEs of the difference"):
        result = pmt.marginal_likelihood(model, draws=300, chains=4, random_seed=2, **QUIET)
    assert result.attrs["route"] == "variational"
    for text in result.warning.values:
        assert "reference='prior'" in text and "MCSEs of the difference" in text


def test_a_multimodal_posterior_takes_the_prior_route_bit_for_bit():
    """The egg box's q barely shortens the path: the pilot keeps the prior route, whose run is
    exactly ``reference="prior"``'s with the same seed (the pilot is seeded apart)."""
    small = {"draws": 150, "tune": 150, "chains": 2, "random_seed": 9, "method": ("ti", "ss")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)
        auto = pmt.marginal_likelihood(egg_box_model(), **small, **QUIET)
        prior = pmt.marginal_likelihood(egg_box_model(), reference="prior", **small, **QUIET)
    assert auto.attrs["route"] == "prior", auto.attrs["route_reason"]
    assert auto.attrs["pilot_barrier_variational"] > VARIATIONAL_MAX_BARRIER
    assert prior.attrs["route"] == "prior" and math.isnan(prior.attrs["pilot_barrier_prior"])
    assert "reference='prior'" in prior.attrs["route_reason"]
    for name in ("log_marginal_likelihood", "mcse"):
        np.testing.assert_array_equal(auto[name].values, prior[name].values)
    assert auto.attrs["n_rungs"] == prior.attrs["n_rungs"]
    err = auto.log_marginal_likelihood.values - egg_box_log_evidence()
    assert np.all(np.abs(err) < 4 * auto.mcse.values), (err, auto.mcse.values)


def test_fixed_routes_run_no_pilot(monkeypatch):
    def no_pilot(*args, **kwargs):
        raise AssertionError("a pilot ran")

    monkeypatch.setattr(runner, "_pilot", no_pilot)
    with pm.Model() as discrete:
        k = pm.Poisson("k", 3.0)
        pm.Normal("x", k, 1.0, observed=targets.lecture_data())
    lecture = targets.lecture_model(targets.lecture_data())
    small = {"draws": 20, "tune": 20, "chains": 1}
    cases = [
        (discrete, {}, "discrete variables"),
        (lecture, {"n_rungs": 8}, "n_rungs given"),
        (lecture, {"beta_min": 1e-3}, "beta_min given"),
        (lecture, {"step_kwargs": {"betas": [0.0, 0.5, 1.0]}}, "(betas)"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model, kwargs, reason in cases:
            result = pmt.marginal_likelihood(model, **small, **kwargs, **QUIET)
            assert result.attrs["route"] == "prior" and reason in result.attrs["route_reason"]
            assert math.isnan(result.attrs["pilot_barrier_variational"])
        both = pmt.marginal_likelihood(lecture, reference="variational", **small, **QUIET)
        asked = pmt.marginal_likelihood(
            lecture, step_kwargs={"reference": "variational"}, **small, **QUIET
        )
    for result in (both, asked):
        assert result.attrs["route"] == "both" and list(result.leg.values)[-1] == "combined"


def test_the_pilot_is_the_documented_one_and_leaves_pymcs_logger_as_it_was(monkeypatch):
    calls = []
    real = pm.sample

    def recorded(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner.pm, "sample", recorded)
    import logging

    logger = logging.getLogger("pymc")
    monkeypatch.setattr(logger, "level", logging.INFO)  # the user's level, restored after
    before = logger.level
    model = targets.lecture_model(targets.lecture_data())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = pmt.marginal_likelihood(model, draws=50, tune=60, chains=2, random_seed=1,
                                         **QUIET)  # fmt: skip
    assert logger.level == before
    pilot, run = calls
    assert (pilot["draws"], pilot["tune"], pilot["chains"], pilot["cores"]) == (
        PILOT.draws,
        PILOT.tune,
        PILOT.chains,
        1,
    )
    assert pilot["random_seed"] == pilot_seed(1) and run["random_seed"] == 1
    step = pilot["step"]
    assert step.run.variational is not None
    assert step.run.fixed.explorer.name == PILOT.explorer == "rwm"  # no gradient to compile
    assert result.attrs["route"] == "variational"
    assert (run["draws"], run["tune"], run["chains"]) == (50, 60, 2)  # the caller's


def test_the_pilot_fits_q_well_enough_on_a_sharply_concentrated_posterior():
    """Issue 41's regression (5,000 rows, 5 coefficients): the posterior sd is about 1 / 70 of
    the prior's, and q needs its third fit (sweep 350 of the pilot's 450) to get there: with
    the first two alone q's barrier read about 2 and the pilot kept the prior route."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5000, 5))
    y = X @ rng.normal(size=5) + rng.normal(size=5000)
    with pm.Model() as model:
        coef = pm.Normal("coef", 0.0, 1.0, shape=5)
        pm.Normal("y", pm.math.dot(X, coef), 1.0, observed=y)
    step_kwargs = runner._default_explorer(model, {}, "geometric") | {"explorer": PILOT.explorer}
    prior, q = runner._pilot(model, step_kwargs, random_seed=3)
    assert q < 0.6 < 3.0 < prior, (prior, q)
    assert choose_route(prior, q).name == "variational"
