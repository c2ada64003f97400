"""``ExchangeMC()``'s default ``explorer="auto"`` (decision 110): which models may switch from
the walk to dense MALA while tuning, and the choice recorded in the stat ``explorer`` and in
``tempering_summary``. The switch itself: ``test_auto_switch.py``."""

import numpy as np
import pymc as pm
import pytest
from helpers import SAMPLE_KWARGS

import pymc_tempering as pmt
from pymc_tempering.step_methods.exchange.options import (
    AUTO_MALA_MAX_PARAMS,
    auto_eligible,
    choose_explorer,
)
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC
from pymc_tempering.trace import LOCAL_MOVES

# a correlated Gaussian posterior: theta ~ N(0, 10^2 I_6), rows of Y ~ N(theta, S_LIK), S_LIK
# equicorrelated with rho = 0.98 (posterior correlations near 0.98)
D = 6
S0 = 100.0 * np.eye(D)
S_LIK = 0.98 + 0.02 * np.eye(D)
Y = np.random.default_rng(1).multivariate_normal(np.linspace(-1, 1, D), S_LIK, size=2)


def correlated_gaussian():
    with pm.Model() as model:
        theta = pm.MvNormal("theta", np.zeros(D), cov=S0)
        pm.MvNormal("y", theta, cov=S_LIK, observed=Y)
    return model


def normal_means(d, discrete=False):
    """``d`` independent normal means (one observation each), plus a Poisson count if
    ``discrete``."""
    with pm.Model() as model:
        x = pm.Normal("x", 0, 1, shape=d)
        shift = pm.Poisson("k", 2.0) if discrete else 0.0
        pm.Normal("y", x + shift, 1, observed=np.zeros(d))
    return model


@pytest.mark.parametrize(
    "n_continuous, discrete, expected",
    [
        (1, False, True),
        (AUTO_MALA_MAX_PARAMS, False, True),
        (AUTO_MALA_MAX_PARAMS + 1, False, False),
        (5, True, False),  # discrete variables: the walk, as before
        (0, True, False),  # discrete only
    ],
)
def test_which_models_may_switch(n_continuous, discrete, expected):
    assert auto_eligible(n_continuous, discrete) is expected
    assert auto_eligible(n_continuous, discrete, "diag") is False  # a proposal chosen: the walk


def test_the_default_is_auto_and_marginal_likelihood_keeps_the_walk():
    """``ExchangeMC()`` is ``explorer="auto"``; ``marginal_likelihood``'s evidence runs pass
    ``"rwm"`` where they used to take ExchangeMC's default (measured with the walk)."""
    from pymc_tempering.evidence.runner import _default_explorer

    with correlated_gaussian() as model:
        assert ExchangeMC(n_rungs=4).auto
        for ladder, expected in (("geometric", "independent"), ("adaptive", "rwm")):
            assert _default_explorer(model, None, ladder)["explorer"] == expected
        assert _default_explorer(model, {"explorer": "auto"}, "adaptive")["explorer"] == "auto"
    with normal_means(AUTO_MALA_MAX_PARAMS) as model:  # above the independence limit
        assert _default_explorer(model, None, "geometric")["explorer"] == "rwm"
    with normal_means(3, discrete=True) as model:
        assert _default_explorer(model, None, "geometric")["explorer"] == "rwm"


def test_auto_starts_as_the_walk_and_an_explicit_choice_is_kept():
    assert choose_explorer("auto", None) == ("rwm", "diag")
    for explorer in ("rwm", "mala", "independent"):
        assert choose_explorer(explorer, None) == (explorer, "diag")
        assert choose_explorer(explorer, "dense") == (explorer, "dense")


@pytest.mark.parametrize(
    "build, expected",
    [
        (correlated_gaussian, True),
        (lambda: normal_means(AUTO_MALA_MAX_PARAMS), True),
        (lambda: normal_means(AUTO_MALA_MAX_PARAMS + 1), False),
        (lambda: normal_means(3, discrete=True), False),
    ],
)
def test_which_models_get_the_probe(build, expected):
    """Only models that may switch, and only chains whose tuning leaves room to."""
    with build():
        step = ExchangeMC(n_rungs=4, explorer="auto")
    assert step.local_move == "rwm+diag" and step.auto is expected
    for tune, room in ((1000, True), (400, False)):
        step.setup_chain(np.random.default_rng(0), tune=tune, draws=10)
        assert (getattr(step.scales, "probe", None) is not None) is (expected and room)


def test_the_choice_is_recorded_on_every_draw_and_in_the_summary():
    with correlated_gaussian():
        idata = pm.sample(
            draws=20,
            tune=450,
            chains=2,
            cores=1,
            step=ExchangeMC(n_rungs=4, explorer="auto"),
            random_seed=1,
            **SAMPLE_KWARGS,
        )
    codes = set(np.ravel(idata.sample_stats["explorer"].values))
    assert {LOCAL_MOVES[int(code)] for code in codes} == {"mala+dense"}
    assert pmt.tempering_summary(idata).attrs["explorer"] == "mala+dense"
    assert pmt.tempering_summary(idata.sample_stats).attrs["explorer"] == "mala+dense"


def test_the_default_is_the_diagonal_random_walk():
    """What ``ExchangeMC()`` runs as typed: the auto rule was measured slower per CPU second on
    singular and multimodal targets (decision 110), so it is opt-in."""
    with correlated_gaussian():
        assert ExchangeMC(n_rungs=4).local_move == "rwm+diag"
