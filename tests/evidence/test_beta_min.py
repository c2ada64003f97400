"""``beta_min="auto"``: the lowest positive rung from the log-likelihood's spread under the prior
(:func:`pymc_tempering.ladder.prior_spread_beta_min`, :func:`marginal_likelihood`).

The rule must leave the estimators unbiased: the quadrature on the ladder it builds is checked
against exact ``E_beta[loglik]`` and ``Var_beta[loglik]`` (lecture, egg box, change point), and
sampled runs against exact log Z. The measurements behind the default are
``benchmarks/bench_beta_min.py``.
"""

import warnings

import numpy as np
import pytest
import targets

import pymc_tempering as pmt
from pymc_tempering import exact
from pymc_tempering.evidence.core.tempered import ti_quadrature
from pymc_tempering.evidence.runner import auto_beta_min, marginal_likelihood
from pymc_tempering.ladder import (
    PRIOR_SPREAD_MARGIN,
    evidence_ladder,
    evidence_n_rungs,
    prior_spread_beta_min,
)

QUIET = {"cores": 1, "progressbar": False}
X_LECTURE = targets.lecture_data()


def _lecture_moments(betas):
    return targets.lecture_power_moments(X_LECTURE, 1.0, betas)


EXACT_MOMENTS = {  # name -> (E_beta and Var_beta of loglik, exact log Z)
    "lecture": (_lecture_moments, exact.lecture_log_evidence(X_LECTURE)),
    "egg box": (  # a coarser grid than the default 512: 0.3 s instead of 10 s, log Z to 1e-8
        lambda betas: exact.egg_box_power_moments(betas, n_grid=128),
        exact.egg_box_log_evidence(n_grid=128),
    ),
    "change point": (exact.change_point_power_moments, exact.change_point_log_evidence()),
}


def test_the_rule_is_the_margin_over_the_spread_rounded_down_to_a_power_of_2():
    values = np.array([-700.0, -200.0, -1200.0, -np.inf])  # -inf: a draw the data rule out
    assert prior_spread_beta_min(values) == 2.0**-19  # sd 500: 2**-10 / 500 = 2**-18.97
    assert prior_spread_beta_min(values, margin=2.0**-6) == 2.0**-15
    assert prior_spread_beta_min([3.0, 3.0]) == 2.0**-10  # no spread: the upper bound
    assert prior_spread_beta_min([-1e30, 0.0]) == 2.0**-50  # clipped below
    assert prior_spread_beta_min([-np.inf, -1.0]) == 2.0**-50  # one finite value: unknown
    with pytest.raises(ValueError, match="prior_loglik"):
        prior_spread_beta_min([np.nan, 1.0])


def test_auto_rungs_keep_the_old_default_s_rungs_per_octave():
    assert evidence_n_rungs(2.0**-30) == 256  # the fixed default before "auto"
    assert evidence_n_rungs(2.0**-16) == 137  # 255 / 30 per octave, 16 octaves, and beta = 0
    assert evidence_n_rungs(0.9) == 3
    with pytest.raises(ValueError, match="beta_min"):
        evidence_n_rungs(0.0)


@pytest.mark.parametrize("name", list(EXACT_MOMENTS))
def test_the_rule_s_ladder_has_no_quadrature_bias(name):
    """With exact moments, the rule's ladder (beta_min from the exact sd_0, the old default's
    rungs per octave) integrates to log Z within 1e-5 (corrected trapezoid), as the fixed
    256 rungs from 2**-30 do; a beta_min near 1 / sd_0 is off by 1e-3 to 1e-2, so the test can
    fail."""
    moments, truth = EXACT_MOMENTS[name]
    sd0 = np.sqrt(moments(np.array([0.0, 0.5]))[1][0])
    rule = prior_spread_beta_min(sd0 * np.array([-1.0, 1.0]) / np.sqrt(2.0))  # ddof=1: sd = sd0
    assert 2.0**-20 < rule < 2.0**-12, rule
    errors = {}
    for beta_min, n_rungs in ((rule, evidence_n_rungs(rule)), (2.0**-30, 256)):
        betas = evidence_ladder(n_rungs, beta_min)
        errors[beta_min] = abs(ti_quadrature(betas, *moments(betas))[1] - truth)
    assert errors[rule] < 1e-5, errors
    assert errors[rule] <= 1.1 * errors[2.0**-30], errors


def test_auto_reads_the_spread_of_prior_draws():
    """Lecture model: the sd of loglik under the prior is exact; 512 prior draws put beta_min
    within 1.5 powers of 2 of margin / sd_0 (rounding down costs up to one, the sd's sampling
    error a few percent), the same for the same seed."""
    sd0 = np.sqrt(_lecture_moments(np.array([0.0, 0.5]))[1][0])
    model = targets.lecture_model(X_LECTURE)
    for seed in (1, 2, 3):
        beta_min = auto_beta_min(model, random_seed=seed)
        assert abs(np.log2(beta_min) - np.log2(PRIOR_SPREAD_MARGIN / sd0)) < 1.5, beta_min
        assert auto_beta_min(model, random_seed=seed) == beta_min


def _run(model, seed, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)
        small = {"draws": 500, "tune": 125, "chains": 4}
        return marginal_likelihood(
            model, random_seed=seed, return_idata=True, **(small | kwargs), **QUIET
        )


@pytest.mark.parametrize(
    ("build", "truth"),
    [
        (lambda: targets.lecture_model(X_LECTURE), exact.lecture_log_evidence(X_LECTURE)),
        (
            lambda: targets.support_model(targets.support_data()),
            exact.uniform_support_log_evidence(targets.support_data()),
        ),
    ],
    ids=["lecture", "zero likelihood on part of the prior"],
)
def test_the_default_hits_the_exact_evidence_and_records_its_ladder(build, truth):
    """``beta_min="auto"`` and ``n_rungs="auto"`` are the defaults; the run's ladder is
    ``evidence_ladder(evidence_n_rungs(b), b)`` with ``b`` from the prior draws, recorded."""
    import inspect

    defaults = inspect.signature(marginal_likelihood).parameters
    assert defaults["beta_min"].default == defaults["n_rungs"].default == "auto"
    model = build()
    result, idata = _run(model, seed=4, reference="prior")  # the prior route's ladder
    beta_min, n_rungs = result.attrs["beta_min"], result.attrs["n_rungs"]
    assert beta_min == auto_beta_min(model, random_seed=4)
    assert n_rungs == evidence_n_rungs(beta_min)
    betas = idata.sample_stats["betas"].values[0, -1]
    np.testing.assert_array_equal(betas, evidence_ladder(n_rungs, beta_min))
    err = result.log_marginal_likelihood.values - truth
    assert np.all(np.abs(err) < 4 * result.mcse.values), (err, result.mcse.values)
    assert not any(result.warning.values), result.warning.values


def test_auto_is_not_used_where_step_kwargs_choose_the_ladder():
    model = targets.lecture_model(X_LECTURE)
    result, idata = _run(model, seed=1, beta_min="auto", step_kwargs={"betas": [0, 0.1, 1]})
    assert "beta_min" not in result.attrs
    np.testing.assert_array_equal(idata.sample_stats["betas"].values[0, -1], [0, 0.1, 1])


def test_a_wrong_beta_min_or_n_rungs_says_what_to_pass():
    model = targets.lecture_model(X_LECTURE)
    with pytest.raises(ValueError, match="`beta_min` must be a number in \\(0, 1\\) or 'auto'"):
        marginal_likelihood(model, beta_min="prior")
    with pytest.raises(ValueError, match="`n_rungs` must be an integer >= 3 or 'auto'"):
        marginal_likelihood(model, n_rungs="many")
