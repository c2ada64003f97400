"""pymc_tempering.evidence.legs: the two legs' log Z against the exact value, their
inverse-MCSE^2 combination against hand-derived numbers, and the disagreement warning on a
planted biased leg (and its silence on agreeing legs)."""

import warnings

import numpy as np
import pytest
import xarray as xr
from two_legs import exact_log_evidence, legs_of, two_leg_run

import pymc_tempering as pmt
from pymc_tempering.evidence.checks import FLAGGED_LEG_WEIGHT, LEG_DISAGREEMENT_Z
from pymc_tempering.evidence.legs import LEGS, combine_legs
from pymc_tempering.evidence.methods import evidence_by_method, resolve_methods
from pymc_tempering.trace import has_variational_leg

ESTIMATORS = resolve_methods(("ti", "ss", "bar", "mbar"))


def _table(values, mcses, ess=(500.0, 400.0), errors=(np.nan, np.nan), texts=("", "")):
    """Two estimators' results for one leg, as marginal_likelihood reports them."""
    return xr.Dataset(
        {
            "log_marginal_likelihood": ("estimator", list(values)),
            "mcse": ("estimator", list(mcses)),
            "ess": ("estimator", list(ess)),
            "discretisation_error": ("estimator", list(errors)),
            "warning": ("estimator", list(texts)),
        },
        coords={"estimator": ["thermodynamic_integration", "stepping_stone"]},
        attrs={"ladder_start": 0.0, "observed_data": "abc"},
    )


def test_the_combination_is_the_inverse_variance_mean_by_hand():
    """MCSEs 0.3 and 0.1: precisions 100/9 and 100, weights 0.1 and 0.9; the mean
    0.1 * 1.0 + 0.9 * 1.2 = 1.18 with MCSE (100/9 + 100)^-1/2 = 0.3 / sqrt(10)."""
    prior = _table([1.0, 2.0], [0.3, 0.2], ess=(500.0, 300.0), errors=(0.05, np.nan))
    variational = _table([1.2, 2.1], [0.1, 0.2], ess=(400.0, 350.0), errors=(0.01, np.nan))
    out = combine_legs(prior, variational)
    assert out["log_marginal_likelihood"].dims == ("estimator", "leg")
    assert out["leg"].values.tolist() == list(LEGS)
    ti = out.sel(estimator="thermodynamic_integration")
    np.testing.assert_allclose(ti["weight"].values, [0.1, 0.9, 1.0])
    np.testing.assert_allclose(float(ti["log_marginal_likelihood"][2]), 1.18)
    np.testing.assert_allclose(float(ti["mcse"][2]), 0.3 / np.sqrt(10))
    assert float(ti["ess"][2]) == 400.0  # the smaller of the legs'
    np.testing.assert_allclose(float(ti["discretisation_error"][2]), 0.1 * 0.05 + 0.9 * 0.01)
    ss = out.sel(estimator="stepping_stone")  # equal MCSEs: the plain mean, MCSE / sqrt(2)
    np.testing.assert_allclose(float(ss["log_marginal_likelihood"][2]), 2.05)
    np.testing.assert_allclose(float(ss["mcse"][2]), 0.2 / np.sqrt(2))
    assert np.isnan(float(ss["discretisation_error"][2]))
    # each leg as it came
    np.testing.assert_array_equal(out["mcse"].sel(leg="prior"), prior["mcse"])
    np.testing.assert_array_equal(out["log_marginal_likelihood"].sel(leg="variational"),
                                  variational["log_marginal_likelihood"])  # fmt: skip
    assert out.attrs["observed_data"] == "abc" and not out["warning"].values.any()


@pytest.mark.parametrize(("ratio", "fires"), [(2.9, False), (3.1, True)])
def test_the_disagreement_threshold_counts_both_legs_mcse(ratio, fires):
    """MCSEs 0.03 and 0.04 (difference 0.05): legs 2.9 x 0.05 apart agree, 3.1 x apart do
    not; the threshold neither ignores one leg's MCSE (3 x 0.04 = 0.12 < 0.145) nor adds them
    (3 x 0.07 = 0.21 > 0.155)."""
    gap = ratio * 0.05
    out = combine_legs(_table([0.0, 0.0], [0.03, 0.03]), _table([gap, 0.0], [0.04, 0.03]))
    text = str(out["warning"].sel(estimator="thermodynamic_integration", leg="combined").values)
    assert bool(text) is fires, text
    if fires:
        assert f"{ratio:.1f} times the MCSE of their difference" in text
        assert "thermodynamic_integration (legs combined)" in text and "trust the prior leg" in text
    assert not str(out["warning"].sel(estimator="stepping_stone", leg="combined").values)
    assert LEG_DISAGREEMENT_Z == 3.0


def test_a_leg_without_error_bar_leaves_the_other_and_says_so():
    out = combine_legs(_table([1.0, 2.0], [np.nan, 0.2]), _table([1.1, 2.0], [0.1, 0.2]))
    ti = out.sel(estimator="thermodynamic_integration")
    np.testing.assert_allclose(ti["weight"].values, [0.0, 1.0, 1.0])
    assert float(ti["log_marginal_likelihood"][2]) == 1.1 and float(ti["mcse"][2]) == 0.1
    assert "could not be checked against each other" in str(ti["warning"][2].values)
    both = combine_legs(_table([1.0, 2.0], [np.nan, 0.2]), _table([np.nan, 2.0], [0.1, 0.2]))
    assert np.isnan(float(both["log_marginal_likelihood"][0, 2]))
    assert "the prior and variational legs gave no estimate" in str(both["warning"][0, 2].values)


@pytest.mark.parametrize(("prior_mcse", "repeated"), [(0.5, False), (0.15, True)])
def test_a_flagged_leg_is_repeated_where_it_carries_weight(prior_mcse, repeated):
    """A flagged prior leg next to a clean variational one (MCSE 0.1): at MCSE 0.5 it carries
    4% of the weight (below FLAGGED_LEG_WEIGHT: whatever bias the disagreement check misses
    moves the combination by under one combined MCSE), at 0.15 it carries 31%."""
    flag = "thermodynamic_integration (prior leg): the estimate may not be trustworthy: x."
    out = combine_legs(
        _table([1.0, 2.0], [prior_mcse, 0.2], texts=(flag, "")), _table([1.0, 2.0], [0.1, 0.2])
    )
    weight = float(out["weight"].sel(estimator="thermodynamic_integration", leg="prior"))
    assert (weight > FLAGGED_LEG_WEIGHT) is repeated
    text = str(out["warning"].sel(estimator="thermodynamic_integration", leg="combined").values)
    assert (f"the prior leg carries {weight:.0%} of the weight and is flagged" in text) is repeated
    assert bool(text) is repeated


def test_one_estimators_results_combine_and_mismatches_are_refused():
    legs = legs_of(two_leg_run())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)
        ti = [pmt.evidence.thermodynamic_integration(ds) for ds in legs.values()]
        ss = pmt.evidence.stepping_stone(legs["prior"])
    out = combine_legs(*ti)
    assert out["estimator"].values.tolist() == ["thermodynamic_integration"]
    np.testing.assert_allclose(out["mcse"].values[0, :2], [float(r["mcse"]) for r in ti])
    with pytest.raises(ValueError, match="same estimators"):
        combine_legs(ss, ti[1])
    with pytest.raises(ValueError, match="lacks \\['mcse'\\]"):
        combine_legs(ti[0].drop_vars("mcse"), ti[1])


def test_both_legs_hit_the_exact_evidence_and_agree():
    """The lecture model: every estimator on each leg, and their combination, within 4 MCSE of
    the closed form; no disagreement; the variational leg is the more precise."""
    idata = two_leg_run()
    assert has_variational_leg(idata) and not has_variational_leg(legs_of(idata)["variational"])
    found = {leg: evidence_by_method(ds, ESTIMATORS) for leg, ds in legs_of(idata).items()}
    tables = [_as_table(found[leg]) for leg in ("prior", "variational")]
    out = combine_legs(*tables)
    err = out["log_marginal_likelihood"].values - exact_log_evidence()
    assert np.all(np.abs(err) < 4 * out["mcse"].values), (err, out["mcse"].values)
    assert np.all(out["mcse"].sel(leg="variational") < out["mcse"].sel(leg="prior"))
    assert not any("their difference" in str(t) for t in out["warning"].values.ravel())


def test_a_planted_biased_leg_is_caught():
    """The variational leg's rung_loglik shifted by a constant c shifts every estimator by c
    (the integral over beta in [0, 1], or each stone's log ratio's mean): at c = 5 MCSEs of
    the difference the combination warns, naming both legs' numbers; at 0 it does not."""
    legs = legs_of(two_leg_run())
    prior = _as_table(evidence_by_method(legs["prior"], ESTIMATORS))
    clean = _as_table(evidence_by_method(legs["variational"], ESTIMATORS))
    scale = float(np.hypot(prior["mcse"][0], clean["mcse"][0]))
    shifted = legs["variational"].assign(rung_loglik=legs["variational"]["rung_loglik"] + 5 * scale)
    biased = _as_table(evidence_by_method(shifted, ESTIMATORS))
    np.testing.assert_allclose(biased["log_marginal_likelihood"] - clean["log_marginal_likelihood"],
                               5 * scale, rtol=1e-6)  # fmt: skip
    texts = combine_legs(prior, biased)["warning"].sel(leg="combined").values
    assert all("so at least one leg is biased" in t for t in texts), texts
    calm = combine_legs(prior, clean)["warning"].sel(leg="combined").values
    assert not any("at least one leg is biased" in t for t in calm), calm


def _as_table(found: dict) -> xr.Dataset:
    """evidence_by_method's ``{name: (result, problems)}`` as a table over ``estimator``."""
    names = list(found)
    return xr.Dataset(
        {
            n: ("estimator", [float(found[e][0][n]) for e in names])
            for n in ("log_marginal_likelihood", "mcse", "ess")
        }
        | {"warning": ("estimator", ["; ".join(found[e][1]) for e in names])},
        coords={"estimator": names},
    )
