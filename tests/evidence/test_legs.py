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


def test_an_exact_leg_takes_all_the_weight():
    """A leg with MCSE 0 is an exact value: it takes all the weight, the combination is that
    value with MCSE 0, and ESS and discretisation error are those of the legs used (the unused
    leg's ESS is the smaller and its error the larger, so mixing them in shows)."""
    prior = _table([1.0, 2.0], [0.0, 0.2], ess=(500.0, 30.0), errors=(0.02, 0.7))
    variational = _table([1.25, 2.1], [0.1, 0.0], ess=(40.0, 300.0), errors=(0.3, 0.01))
    out = combine_legs(prior, variational)
    for name, weights, value, ess, error in (
        ("thermodynamic_integration", [1.0, 0.0, 1.0], 1.0, 500.0, 0.02),
        ("stepping_stone", [0.0, 1.0, 1.0], 2.1, 300.0, 0.01),
    ):
        row = out.sel(estimator=name)
        np.testing.assert_array_equal(row["weight"].values, weights)
        assert float(row["log_marginal_likelihood"][2]) == value
        assert float(row["mcse"][2]) == 0.0
        assert float(row["ess"][2]) == ess, name
        assert float(row["discretisation_error"][2]) == pytest.approx(error, rel=1e-12), name
        # 0.25 and 0.1 apart against MCSEs of their difference 0.1 and 0.2: agreeing, and an
        # exact leg is not a leg without an error bar
        assert not str(row["warning"][2].values), str(row["warning"][2].values)


def test_two_exact_legs_share_the_weight_and_must_agree():
    """Both MCSEs 0: equal weights; equal values agree, different ones are named (without a
    RuntimeWarning from the MCSE 0 of their difference)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        agree = combine_legs(_table([1.0, 2.0], [0.0, 0.0]), _table([1.0, 2.5], [0.0, 0.0]))
    np.testing.assert_array_equal(agree["weight"].values, [[0.5, 0.5, 1.0]] * 2)
    np.testing.assert_array_equal(agree["log_marginal_likelihood"].values[:, 2], [1.0, 2.25])
    np.testing.assert_array_equal(agree["mcse"].values[:, 2], [0.0, 0.0])
    texts = agree["warning"].sel(leg="combined").values
    assert not texts[0] and "0.5 apart, though both are exact (MCSE 0)" in texts[1], texts


@pytest.mark.parametrize(
    ("value", "mcse"),
    [(1.0, np.nan), (1.0, np.inf), (1.0, -0.1), (np.nan, 0.3), (np.inf, 0.3), (np.nan, 0.0)],
)
def test_a_leg_without_a_usable_estimate_gets_no_weight(value, mcse):
    """NaN, infinite or negative MCSE, or a non-finite estimate: the prior leg gets weight 0,
    and the combination is the variational leg's value, MCSE, ESS (not the smaller ESS of the
    unused leg) and discretisation error (NaN: not the unused leg's)."""
    prior = _table([value, 2.0], [mcse, 0.2], ess=(20.0, 300.0), errors=(0.5, np.nan))
    variational = _table([1.1, 2.0], [0.1, 0.2], ess=(400.0, 300.0), errors=(np.nan, np.nan))
    ti = combine_legs(prior, variational).sel(estimator="thermodynamic_integration")
    np.testing.assert_array_equal(ti["weight"].values, [0.0, 1.0, 1.0])
    assert float(ti["log_marginal_likelihood"][2]) == 1.1 and float(ti["mcse"][2]) == 0.1
    assert float(ti["ess"][2]) == 400.0
    assert np.isnan(float(ti["discretisation_error"][2]))
    text = str(ti["warning"][2].values)
    assert "the prior leg gave no estimate with a finite error bar" in text, text
    assert "the combination is the variational leg alone" in text and "apart" not in text, text


def test_the_unused_legs_discretisation_error_is_left_out():
    """The used leg has a discretisation error (0.01), the unused one a larger one (0.5)."""
    prior = _table([1.0, 2.0], [np.nan, 0.2], errors=(0.5, np.nan))
    variational = _table([1.1, 2.0], [0.1, 0.2], errors=(0.01, np.nan))
    ti = combine_legs(prior, variational).sel(estimator="thermodynamic_integration")
    assert float(ti["discretisation_error"][2]) == 0.01


def test_the_ladder_start_is_the_later_legs():
    """A leg whose ladder starts above 0 estimates log Z(1) - log Z(start), so the combination
    carries the larger start (which the caller's check reports), whichever leg it is."""
    for starts in ((0.0, 0.02), (0.02, 0.0)):
        prior, variational = _table([1.0, 2.0], [0.1, 0.2]), _table([1.0, 2.0], [0.1, 0.2])
        prior.attrs["ladder_start"], variational.attrs["ladder_start"] = starts
        assert combine_legs(prior, variational).attrs["ladder_start"] == 0.02
    del prior.attrs["ladder_start"]
    assert combine_legs(prior, variational).attrs["ladder_start"] == 0.0


def test_the_disagreement_threshold_at_its_edge():
    """MCSEs 0.375 and 0.5 (binary fractions: the MCSE of their difference is 0.625 exactly):
    legs 3 x 0.625 = 1.875 apart agree, one ulp further they disagree."""
    for gap, fires in ((1.875, False), (np.nextafter(1.875, 2.0), True)):
        out = combine_legs(_table([0.0, 0.0], [0.375, 0.1]), _table([gap, 0.0], [0.5, 0.1]))
        text = str(out["warning"].sel(estimator="thermodynamic_integration", leg="combined").values)
        assert ("3.0 times the MCSE of their difference (more than 3)" in text) is fires, text


@pytest.mark.parametrize(("weight", "repeated"), [(0.09, False), (0.11, True)])
def test_the_flagged_leg_weight_at_its_edge(weight, repeated):
    """A flagged prior leg carrying 9% or 11% of the weight (MCSE 0.1 on the other leg):
    FLAGGED_LEG_WEIGHT is 0.1. The other estimator's flag (stepping stone's prior leg, half the
    weight) is its own: it is repeated on its row, never on thermodynamic integration's."""
    flag = "thermodynamic_integration (prior leg): the estimate may not be trustworthy: x."
    other = "stepping_stone (prior leg): the estimate may not be trustworthy: y."
    prior_mcse = 0.1 * np.sqrt(1 / weight - 1)
    out = combine_legs(
        _table([1.0, 2.0], [prior_mcse, 0.2], texts=(flag, other)), _table([1.0, 2.0], [0.1, 0.2])
    )
    ss = str(out["warning"].sel(estimator="stepping_stone", leg="combined").values)
    assert "the prior leg carries 50% of the weight and is flagged (stepping_stone" in ss, ss
    ti = out.sel(estimator="thermodynamic_integration")
    assert float(ti["weight"].sel(leg="prior")) == pytest.approx(weight, rel=1e-12)
    text = str(ti["warning"].sel(leg="combined").values)
    assert (
        f"the prior leg carries {weight:.0%} of the weight and is flagged (" in text
    ) is repeated
    assert bool(text) is repeated, text


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
