"""``n_rungs_variational`` without ``reference="variational"`` is refused by name: it sizes a
leg that a run from the prior alone does not have (options.check_reference); ``reference``
resolved from the model and the ladder (options.resolve_reference)."""

import numpy as np
import pymc as pm
import pytest

import pymc_tempering as pmt
from pymc_tempering.step_methods.exchange.options import (
    REFERENCE_ONLY,
    check_reference,
    exchange_options,
    resolve_reference,
)

OPTIONS = {
    "betas": None,
    "n_rungs": 4,
    "ladder": "geometric",
    "ladder_objective": "swap",
    "adapt_n_rungs": False,
    "swap_scheme": "deo",
    "sweeps_per_draw": 1,
    "init": "prior",
    "explorer": "rwm",
}


def _model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=[0.3, -0.2, 1.1])
    return model


@pytest.mark.parametrize("n", [5, 2])
def test_n_rungs_variational_with_the_prior_reference_is_refused_naming_both(n):
    with pytest.raises(ValueError) as error:
        exchange_options(_model(), reference="prior", n_rungs_variational=n, **OPTIONS)
    text = str(error.value)
    assert f"`n_rungs_variational={n}`" in text
    assert "reference='prior'" in text  # the argument given
    assert "Pass reference='variational'" in text  # the fixes
    assert "drop `n_rungs_variational`" in text


@pytest.mark.parametrize(
    ("reference", "n"), [("variational", 5), ("prior", None), ("variational", None), (None, None)]
)
def test_consistent_or_unstated_arguments_pass(reference, n):
    check_reference(reference, n)
    options = exchange_options(_model(), reference=reference, n_rungs_variational=n, **OPTIONS)
    assert options.betas.size == 4
    assert options.reference == (reference or "prior")


def _flat_model():
    with pm.Model() as model:
        mu = pm.Flat("mu")
        pm.Normal("y", mu, 1.0, observed=[0.3, -0.2, 1.1])
    return model


@pytest.mark.parametrize(
    ("proper", "reference", "start", "resolved"),
    [
        (True, None, 0.0, "prior"),
        (True, "prior", 0.0, "prior"),
        (True, "variational", 0.0, "variational"),
        (False, None, 0.0, REFERENCE_ONLY),
        (False, "variational", 0.0, REFERENCE_ONLY),
        (False, None, 0.1, "prior"),  # a ladder above beta = 0 needs no proper prior
        (True, None, 0.1, "prior"),
    ],
)
def test_the_reference_is_resolved_from_the_model_and_the_ladder(
    proper, reference, start, resolved
):
    model = _model() if proper else _flat_model()
    betas = np.array([start, 0.5, 1.0])
    assert resolve_reference(reference, model, betas) == resolved


def test_the_prior_reference_of_an_improper_model_and_unknown_references_are_refused():
    with pytest.raises(ValueError, match=r"reference='prior'.*\['mu'\].*Leave `reference` out"):
        resolve_reference("prior", _flat_model(), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="`reference` must be one of"):
        resolve_reference("gaussian", _model(), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="`reference` must be one of"):
        exchange_options(_model(), reference="gaussian", **OPTIONS)


def test_n_rungs_variational_sizes_the_one_ladder_of_an_improper_model():
    """Unstated ``reference``: refused with ``n_rungs_variational`` on a proper model (the
    prior's run has no variational leg), the size of the reference's ladder on a flat one."""
    with pytest.raises(ValueError, match="n_rungs_variational"):
        exchange_options(_model(), reference=None, n_rungs_variational=5, **OPTIONS)
    check_reference(None, 5)  # unresolved: nothing to check it against (its docstring)
    options = exchange_options(_flat_model(), reference=None, n_rungs_variational=5, **OPTIONS)
    assert options.reference == REFERENCE_ONLY


def test_exchange_mc_refuses_n_rungs_variational_without_the_variational_reference():
    with _model(), pytest.raises(ValueError, match="n_rungs_variational"):
        pmt.ExchangeMC(n_rungs=4, n_rungs_variational=5, explorer="rwm")
