"""marginal_likelihood's ladders: the fixed geometric default, and ``ladder="adaptive"``.

``ladder="adaptive"`` is ExchangeMC's ``ladder="adaptive", ladder_objective="evidence"`` from
``evidence_ladder(n_rungs, beta_min)``, per chain; the estimators pool the chains' estimates
and count draws and ESS over all chains (not chain by chain). Small settings here; the
measurements are ``benchmarks/bench_evidence.py --smc-only`` and
``benchmarks/bench_coverage.py --routes adaptive``.
"""

import re
import warnings

import numpy as np
import pymc as pm
import pytest
import targets
import xarray as xr

import pymc_tempering as pmt
from pymc_tempering.evidence.checks import EVIDENCE_LADDER_CAVEAT
from pymc_tempering.evidence.legs import combine_legs
from pymc_tempering.evidence.runner import _evidence_step_kwargs, marginal_likelihood
from pymc_tempering.exact import two_mode_log_evidence, two_mode_model

QUIET = {"cores": 1, "progressbar": False}
SMALL = {"n_rungs": 24, "beta_min": 1e-4, "draws": 400, "tune": 400, "chains": 4}
ADAPTIVE = SMALL | {"ladder": "adaptive"}


def _run(model, seed, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pmt.EvidenceWarning)
        result, idata = marginal_likelihood(
            model, random_seed=seed, return_idata=True, **(ADAPTIVE | kwargs), **QUIET
        )
    texts = [str(w.message) for w in caught if issubclass(w.category, pmt.EvidenceWarning)]
    return result, idata, texts


def _other_problems(texts):
    """The warnings' texts without the caveat that every adaptive-ladder result carries."""
    return [t.replace("; " + EVIDENCE_LADDER_CAVEAT, "").replace(EVIDENCE_LADDER_CAVEAT, "")
            for t in texts]  # fmt: skip


def _clean(texts):
    """No problem but the adaptive ladder's caveat."""
    return all(t.endswith("the estimate may not be trustworthy: .") for t in _other_problems(texts))


def _ladders(idata):
    """The recorded ladder of every chain, ``(chain, rung)``."""
    return idata.sample_stats["betas"].values[:, -1]


def test_step_kwargs_choose_the_ladder():
    start = pmt.evidence_ladder(16, 1e-4)
    kwargs = _evidence_step_kwargs(None, 16, 1e-4, ladder="adaptive")
    assert kwargs["ladder"] == "adaptive" and kwargs["ladder_objective"] == "evidence"
    np.testing.assert_array_equal(kwargs["betas"], start)
    fixed = _evidence_step_kwargs(None, 16, 1e-4)  # the default: the fixed geometric ladder
    assert set(fixed) == {"betas"}
    np.testing.assert_array_equal(fixed["betas"], start)
    # the user's own choices in step_kwargs win over `ladder`
    assert _evidence_step_kwargs({"betas": [0, 0.5, 1]}, 16, 1e-4) == {"betas": [0, 0.5, 1]}
    swap = _evidence_step_kwargs({"ladder": "adaptive", "n_rungs": 8}, 16, 1e-4)
    assert "ladder_objective" not in swap and swap["betas"].size == 8
    with pytest.raises(ValueError, match=r"`ladder` must be one of \['geometric', 'adaptive'\]"):
        _evidence_step_kwargs(None, 16, 1e-4, ladder="power")


@pytest.mark.parametrize("seed", [3, 11])
def test_adaptive_tunes_each_chains_ladder_and_hits_the_exact_evidence(seed):
    """Lecture model: every chain re-placed its rungs above beta_min (kept, as the evidence
    objective does), TI and SS within 4 MCSE of the closed form, no warning."""
    x = targets.lecture_data()
    result, idata, texts = _run(targets.lecture_model(x), seed)
    ladders = _ladders(idata)
    start = pmt.evidence_ladder(SMALL["n_rungs"], SMALL["beta_min"])
    assert not np.allclose(ladders, start)  # tuned away from the geometric start
    assert not np.allclose(ladders[0], ladders[1])  # each chain its own
    np.testing.assert_array_equal(ladders[:, :2], np.tile(start[:2], (ladders.shape[0], 1)))
    err = result.log_marginal_likelihood.values - targets.lecture_log_evidence(x)
    assert np.all(np.abs(err) < 4 * result.mcse.values), (err, result.mcse.values)
    # no problem found; each estimator carries the adaptive ladder's measured caveat, once
    assert len(texts) == 2 and _clean(texts)
    assert all(w.count(EVIDENCE_LADDER_CAVEAT) == 1 for w in result.warning.values)


def test_adaptive_on_the_two_mode_target():
    """Two well-separated modes (weights 0.3 / 0.7): within 4 MCSE of the exact log Z."""
    result, _, texts = _run(two_mode_model(), 5, n_rungs=32, draws=600, tune=600)
    err = result.log_marginal_likelihood.values - two_mode_log_evidence()
    assert np.all(np.abs(err) < 4 * result.mcse.values), (err, result.mcse.values)
    assert _clean(texts)


def test_the_default_keeps_the_fixed_geometric_ladder():
    x = targets.lecture_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)
        res, idata = marginal_likelihood(
            targets.lecture_model(x), random_seed=1, return_idata=True,
            **(SMALL | {"draws": 100, "tune": 100}), **QUIET,
        )  # fmt: skip
    start = pmt.evidence_ladder(SMALL["n_rungs"], SMALL["beta_min"])
    np.testing.assert_array_equal(idata.sample_stats["betas"].values[0, 0], start)
    assert not any(EVIDENCE_LADDER_CAVEAT in w for w in res.warning.values)


def test_per_chain_ladders_count_draws_over_all_chains():
    """Chains with their own ladders are checked pooled: 4 x 150 draws pass the 400-draw
    minimum that each chain alone misses; 2 x 100 are refused once, not chain by chain."""
    model = targets.lecture_model(targets.lecture_data())
    result, _, _ = _run(model, 2, draws=150, tune=300, method=("ti", "ss", "bar"))
    assert not any("draws per rung" in w for w in _other_problems(result.warning.values))
    result, _, texts = _run(model, 2, chains=2, draws=100, tune=300, method=("ti", "bar"))
    for text in result.warning.values:
        assert text.count("only 200 draws per rung") == 1 and "chain 0: only" not in text
    assert len(texts) == 2


@pytest.mark.parametrize("objective", ["evidence", "swap"])
def test_a_hand_built_evidence_ladder_run_carries_the_caveat(objective, tmp_path):
    """The run records the ladder's purpose (its ``evidence_ladder`` stat): a hand-built
    ``ExchangeMC(ladder="adaptive", ladder_objective="evidence")`` gets the caveat from TI, SS,
    BAR and MBAR, once each, also read back from a file; the swap objective does not."""
    x = targets.lecture_data()
    with targets.lecture_model(x):
        step = pmt.ExchangeMC(n_rungs=8, ladder="adaptive", ladder_objective=objective)
        idata = pm.sample(draws=60, tune=60, chains=2, step=step, random_seed=4, **QUIET)
    path = tmp_path / "run.nc"
    idata.to_netcdf(path)
    for data in (idata, xr.open_datatree(path)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pmt.EvidenceWarning)
            results = [pmt.thermodynamic_integration(data), pmt.stepping_stone(data),
                       pmt.bar(data), pmt.mbar(data)]  # fmt: skip
        counts = [r.attrs["warning"].count(EVIDENCE_LADDER_CAVEAT) for r in results]
        assert counts == [int(objective == "evidence")] * 4, counts


def test_the_step_record_is_read_from_the_first_chunks_only():
    """``saved_step`` decodes the record at the head of the first snapshot: a run of 3 draws
    (its snapshot far from complete) is enough; a DataTree without the stat gives None."""
    from pymc_tempering.resume import codec
    from pymc_tempering.resume.run import saved_step

    payload = codec.encode({"version": 1, "step": {"kwargs": {"a": "b" * 50}}, "x": np.ones(9)})
    cut = payload.index(b"b" * 50) + 50  # just after the step record
    assert codec.decode_key(payload[:cut], "step") == {"kwargs": {"a": "b" * 50}}
    assert codec.decode_key(payload[: cut - 1], "step") is None  # cut inside it
    with pytest.raises(KeyError):
        codec.decode_key(payload, "missing")
    with targets.lecture_model(targets.lecture_data()):
        step = pmt.ExchangeMC(n_rungs=4, ladder="adaptive", ladder_objective="evidence")
        idata = pm.sample(draws=3, tune=20, chains=1, step=step, random_seed=1, **QUIET)
    record = saved_step(idata)
    assert record["class"].endswith(":ExchangeMC")
    assert record["kwargs"]["ladder_objective"] == "evidence"
    assert saved_step(idata["sample_stats"].to_dataset().drop_vars("sampling_state")) is None


def test_the_default_tuning_follows_the_explorer():
    """``tune=None`` is ``TUNE_PER_DRAW_FITTED`` of the default draws with the independence
    explorer (500 of 1000: its proposals are fitted in the first half of tuning and the
    second half mixes with them; ``benchmarks/bench_burn_in.py``), ``TUNE_PER_DRAW`` with the
    random walk on the fixed ladder (250: there tuning only sets proposal scales;
    ``benchmarks/tune_evidence_defaults.py`` measured the same MCSE per draw as ``tune =
    draws``, 30% cheaper) and 1000 on an adaptive ladder, which tuning places. A run at the
    default ``tune`` with 400 draws: 500 tuning sweeps recorded, TI and SS within 4 MCSE of
    the closed form, no warning."""
    import inspect

    from pymc_tempering.evidence.runner import (
        ADAPTIVE_LADDER_TUNE,
        TUNE_PER_DRAW,
        TUNE_PER_DRAW_FITTED,
        _default_explorer,
        default_tune,
    )

    defaults = {k: p.default for k, p in inspect.signature(marginal_likelihood).parameters.items()}
    assert defaults["tune"] is None
    x = targets.lecture_data()
    model = targets.lecture_model(x)
    fitted = _evidence_step_kwargs(_default_explorer(model, None, "geometric"), 256, 2.0**-30)
    assert default_tune(fitted) == TUNE_PER_DRAW_FITTED * defaults["draws"] == 500
    walk = _evidence_step_kwargs({"explorer": "rwm"}, 256, 2.0**-30, "geometric")
    assert default_tune(walk) == TUNE_PER_DRAW * defaults["draws"] == 250
    # an adaptive ladder is placed by tuning: it keeps the tuning it was measured with, by
    # either spelling
    for kwargs in [(None, "adaptive"), ({"ladder": "adaptive"}, "geometric")]:
        adaptive = _evidence_step_kwargs(kwargs[0], 256, 2.0**-30, kwargs[1])
        assert default_tune(adaptive) == ADAPTIVE_LADDER_TUNE == 1000
    assert (defaults["n_rungs"], defaults["chains"], defaults["ladder"]) == ("auto", 8, "geometric")
    assert defaults["beta_min"] == "auto"  # tests/evidence/test_beta_min.py
    small = {k: v for k, v in SMALL.items() if k != "tune"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pmt.EvidenceWarning)
        result, idata = marginal_likelihood(model, random_seed=6, return_idata=True, **small,
                                            **QUIET)  # fmt: skip
    assert idata.sample_stats.attrs["tuning_steps"] == 500
    err = result.log_marginal_likelihood.values - targets.lecture_log_evidence(x)
    assert np.all(np.abs(err) < 4 * result.mcse.values), (err, result.mcse.values)
    assert not [w for w in caught if issubclass(w.category, pmt.EvidenceWarning)]


def test_the_default_explorer_is_independent_where_it_was_measured(monkeypatch):
    """``explorer="independent"`` by default on the fixed ladder for continuous models of at
    most INDEPENDENT_MAX_PARAMS parameters; the user's explorer is kept; an adaptive ladder,
    discrete variables or a larger model get the random walk, ``"rwm"`` (ExchangeMC's default
    when the evidence defaults were measured; its ``"auto"`` is not). A default run passes it
    on."""
    from pymc_tempering.evidence import runner as evidence_sampling
    from pymc_tempering.evidence.runner import INDEPENDENT_MAX_PARAMS, _default_explorer

    model = targets.lecture_model(targets.lecture_data())
    assert _default_explorer(model, None, "geometric") == {"explorer": "independent"}
    assert _default_explorer(model, {"explorer": "rwm"}, "geometric") == {"explorer": "rwm"}
    assert _default_explorer(model, None, "adaptive") == {"explorer": "rwm"}
    assert _default_explorer(model, {"ladder": "adaptive"}, "geometric")["explorer"] == "rwm"
    with pm.Model() as discrete:
        k = pm.Poisson("k", 3.0)
        pm.Normal("y", k, 1.0, observed=[2.0])
    assert _default_explorer(discrete, None, "geometric") == {"explorer": "rwm"}
    for size, chosen in [(INDEPENDENT_MAX_PARAMS, True), (INDEPENDENT_MAX_PARAMS + 1, False)]:
        with pm.Model() as wide:
            mu = pm.Normal("mu", 0.0, 1.0, shape=size)
            pm.Normal("y", mu.sum(), 1.0, observed=[0.5])
        explorer = _default_explorer(wide, None, "geometric")["explorer"]
        assert explorer == ("independent" if chosen else "rwm")

    seen = []

    class Spy(evidence_sampling.ExchangeMC):
        def __init__(self, *args, **kwargs):
            seen.append(kwargs.get("explorer"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(evidence_sampling, "ExchangeMC", Spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)
        marginal_likelihood(model, random_seed=1, **(SMALL | {"draws": 50, "tune": 60}), **QUIET)
    assert seen == ["independent"]


# --- errors that name the argument or the data, and the fix (issue 33) -------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"chains": 0}, r"`chains` must be a whole number >= 1.*got 0; e.g. chains=8"),
        ({"draws": -10}, r"`draws` must be a whole number >= 1.*got -10"),
        ({"draws": 0}, r"`draws` must be a whole number >= 1.*got 0"),
        ({"draws": 2.5}, r"`draws` must be a whole number >= 1.*got 2.5"),
        ({"draws": True}, r"`draws` must be a whole number"),
        ({"tune": -1}, r"`tune` must be a whole number >= 0"),
    ],
)
def test_bad_counts_name_the_argument(kwargs, match):
    """Refused before anything is compiled or sampled (PyMC's own messages, or a
    ZeroDivisionError for chains=0, came from deep inside)."""
    model = targets.lecture_model(targets.lecture_data())
    with pytest.raises(ValueError, match=match):
        marginal_likelihood(model, **kwargs)


def test_no_model_another_object_or_an_empty_model_name_the_fix():
    with pytest.raises(TypeError, match=r"`model` must be a pm.Model, got str 'foo'"):
        marginal_likelihood("foo")
    with pytest.raises(TypeError, match=r"no model on the context stack.*`model=`"):
        marginal_likelihood()
    with pytest.raises(ValueError, match="the model has no free variables"):
        marginal_likelihood(pm.Model())


def test_infinite_observed_data_are_named_not_the_starting_point():
    """inf in the data makes every log-likelihood -inf: the message names the observed
    variable and says to fix the data; it does not suggest `initvals=`, which cannot help."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("x", mu, 1.0, observed=np.r_[targets.lecture_data(), np.inf, -np.inf])
    with pytest.raises(ValueError, match=r"non-finite.*'x': 2.*Remove or fix") as raised:
        marginal_likelihood(model)
    assert "initval" not in str(raised.value)


# --- reference="variational": evidence from both legs (issue 32) --------------------------------

TWO_LEGS = SMALL | {"n_rungs": 10, "draws": 300, "tune": 300, "method": ("ti", "ss", "bar")}


@pytest.fixture(scope="module")
def two_leg_result():
    x = targets.lecture_data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pmt.EvidenceWarning)
        result, idata = marginal_likelihood(
            targets.lecture_model(x), reference="variational", random_seed=4, return_idata=True,
            step_kwargs={"n_rungs_variational": 4}, **TWO_LEGS, **QUIET,
        )  # fmt: skip
    texts = [str(w.message) for w in caught if issubclass(w.category, pmt.EvidenceWarning)]
    return result, idata, texts, targets.lecture_log_evidence(x)


def test_both_legs_and_their_combination_hit_the_exact_evidence(two_leg_result):
    """The lecture model: each estimator on each leg and combined within 4 MCSE of the closed
    form; the combined entry is combine_legs of the legs; no leg disagreement."""
    result, idata, texts, exact = two_leg_result
    assert result["log_marginal_likelihood"].dims == ("estimator", "leg")
    assert result["leg"].values.tolist() == ["prior", "variational", "combined"]
    err = result["log_marginal_likelihood"].values - exact
    assert np.all(np.abs(err) < 4 * result["mcse"].values), (err, result["mcse"].values)
    legs = [result.sel(leg=leg).drop_vars(["leg", "weight"]) for leg in ("prior", "variational")]
    xr.testing.assert_identical(combine_legs(*legs), result.drop_attrs(deep=False)
                                .assign_attrs(legs[0].attrs))  # fmt: skip
    assert not any("their difference" in t for t in texts), texts
    # every warning names its leg (or the combination); the prior leg is read as before
    assert all(re.search(r"\((prior leg|variational leg|legs combined)\)", t) for t in texts)
    assert idata.sample_stats["variational_betas"].values[0, 0].size == 4
    assert result.attrs["reference"] == "variational" and result.attrs["n_rungs"] == 10


def test_compare_evidence_ranks_the_combined_estimate(two_leg_result):
    """A two-leg result and its DataTree rank by the legs' combination."""
    result, idata, _, _ = two_leg_result
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)
        table = pmt.compare_evidence({"result": result, "run": idata})
    combined = result.sel(estimator="thermodynamic_integration", leg="combined")
    for name in ("result", "run"):
        assert table.loc[name, "log_marginal_likelihood"] == float(combined.log_marginal_likelihood)
        assert table.loc[name, "mcse"] == float(combined.mcse)
    assert table["log_bayes_factor"].abs().max() == 0.0


def test_discrete_models_and_bad_references_are_refused_by_name():
    with pm.Model() as model:
        k = pm.Poisson("k", 3.0)
        pm.Normal("x", k, 1.0, observed=targets.lecture_data())
    with pytest.raises(ValueError, match=r"\['k'\] are discrete.*reference='prior'"):
        marginal_likelihood(model, reference="variational", draws=10, tune=10, chains=1,
                            n_rungs=4, beta_min=0.01, **QUIET)  # fmt: skip
    lecture = targets.lecture_model(targets.lecture_data())
    with pytest.raises(ValueError, match=r"`reference` must be 'auto'.*'prior'.*or 'variational'"):
        marginal_likelihood(lecture, reference="gaussian")
    with pytest.raises(ValueError, match=r"disagree; give it once"):
        marginal_likelihood(lecture, reference="variational", step_kwargs={"reference": "prior"})
