"""The systematic guard of issue 18: never a confident wrong log Z.

Every evidence entry point (``marginal_likelihood``, ``thermodynamic_integration``,
``stepping_stone``, ``compare_evidence``) on a grid of ladders (built-in, coarse, fine,
adaptive with each objective, adapt_n_rungs) and models (conjugate, hierarchical with a
heavy-tailed prior, a support that depends on a parameter, a hard constraint), against exact
log Z: each estimate is within 4 of its reported MCSE of the truth, or an EvidenceWarning says
it is not to be trusted. The grid holds cases that are wrong (coarse ladders on eight schools,
TI on adaptive swap ladders): without the warnings it fails.
"""

import warnings

import numpy as np
import pytest
import targets

import pymc_tempering as pmt
from pymc_tempering import exact

SAMPLE = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}
LADDERS = {
    "geometric 32 (default)": {"n_rungs": 32},
    "geometric 8 (coarse)": {"n_rungs": 8},
    "evidence_ladder(5) (coarse)": {"betas": pmt.evidence_ladder(5)},
    "evidence_ladder(64) (fine)": {"betas": pmt.evidence_ladder(64)},
    "adaptive, swap": {"ladder": "adaptive", "n_rungs": 16},
    "adaptive, evidence": {"ladder": "adaptive", "n_rungs": 16, "ladder_objective": "evidence"},
    "adapt_n_rungs": {"ladder": "adaptive", "adapt_n_rungs": True},
}


def _models():
    x, y_support, y_constraint = (
        targets.lecture_data(), targets.support_data(), targets.constraint_data()
    )  # fmt: skip
    return {
        "conjugate": (lambda: targets.lecture_model(x), exact.lecture_log_evidence(x)),
        "eight schools": (targets.schools_model, exact.eight_schools_log_evidence()),
        "parameter support": (
            lambda: targets.support_model(y_support),
            exact.uniform_support_log_evidence(y_support),
        ),
        "hard constraint": (
            lambda: targets.constraint_model(y_constraint),
            exact.constrained_log_evidence(y_constraint),
        ),
    }


def _judge(estimate, mcse, truth, warned):
    """'ok' (within 4 MCSE), 'warned' (outside, with a warning) or 'CONFIDENT WRONG'."""
    if np.isfinite(estimate) and abs(estimate - truth) < 4 * mcse:
        return "ok"
    return "warned" if warned else "CONFIDENT WRONG"


def _with_warnings(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, [str(w.message) for w in caught if issubclass(w.category, pmt.EvidenceWarning)]


def _entry_points(build, step_kwargs, seed):
    """Every entry point's (name, estimate, mcse, warned) on one sampled run."""
    (res, idata), ml_warnings = _with_warnings(
        pmt.marginal_likelihood, build(), draws=600, tune=600, chains=2, random_seed=seed,
        step_kwargs=step_kwargs, return_idata=True, **SAMPLE,
    )  # fmt: skip
    rows = []
    for estimator in res.estimator.values:
        row = res.sel(estimator=estimator)
        warned = bool(str(row.warning.values))
        rows.append((f"marginal_likelihood/{estimator}", *_values(row), warned))
    for fn in (pmt.thermodynamic_integration, pmt.stepping_stone):
        out, caught = _with_warnings(fn, idata)
        rows.append((fn.__name__, *_values(out), bool(caught)))
    for estimator in ("thermodynamic_integration", "stepping_stone"):
        table, caught = _with_warnings(pmt.compare_evidence, {"m": idata}, estimator=estimator)
        row = table.loc["m"]
        rows.append((f"compare_evidence/{estimator}", row.log_marginal_likelihood, row.mcse,
                     bool(caught) and bool(row.warning)))  # fmt: skip
    assert len(ml_warnings) == sum(bool(str(w)) for w in res.warning.values)
    return rows


def _values(res):
    return float(res.log_marginal_likelihood), float(res.mcse)


@pytest.mark.slow
@pytest.mark.parametrize("model_name", list(_models()))
def test_never_a_confident_wrong_number(model_name):
    build, truth = _models()[model_name]
    verdicts = {}
    for seed, (ladder, step_kwargs) in enumerate(LADDERS.items(), start=1):
        for name, estimate, mcse, warned in _entry_points(build, step_kwargs, seed):
            verdicts[ladder, name] = (_judge(estimate, mcse, truth, warned), estimate, mcse)
    wrong = {key: value for key, value in verdicts.items() if value[0] == "CONFIDENT WRONG"}
    assert not wrong, (truth, wrong)
    if model_name == "eight schools":  # the grid tests something: useless answers exist here
        useless = [
            key for key, (verdict, estimate, mcse) in verdicts.items()
            if not np.isfinite(estimate) or abs(estimate - truth) > min(4 * mcse, 1.0)
        ]  # fmt: skip
        assert len(useless) >= 4, verdicts
