"""``n_rungs_variational`` without ``reference="variational"`` is refused by name: it sizes a
leg that a run from the prior alone does not have (options.check_reference)."""

import pymc as pm
import pytest

import pymc_tempering as pmt
from pymc_tempering.step_methods.exchange.options import check_reference, exchange_options

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
    ("reference", "n"), [("variational", 5), ("prior", None), ("variational", None), (None, 5)]
)
def test_consistent_or_unstated_arguments_pass(reference, n):
    check_reference(reference, n)
    options = exchange_options(_model(), reference=reference, n_rungs_variational=n, **OPTIONS)
    assert options.betas.size == 4


def test_exchange_mc_refuses_n_rungs_variational_without_the_variational_reference():
    with _model(), pytest.raises(ValueError, match="n_rungs_variational"):
        pmt.ExchangeMC(n_rungs=4, n_rungs_variational=5, explorer="rwm")
