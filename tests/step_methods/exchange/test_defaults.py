"""``ExchangeMC(explorer="auto")`` (opt-in; the default stays the random walk, decision 110):
which models get dense MALA and which the random walk, the choice recorded in the stat
``explorer`` and in ``tempering_summary``, and a correlated Gaussian sampled to its exact
moments within 4 MCSE with the ESS that only the dense move reaches
(docs/decisions/110-exchange-defaults.md)."""

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from helpers import SAMPLE_KWARGS, gaussian_tempered_law, z_score
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

import pymc_tempering as pmt
from pymc_tempering.step_methods.exchange.options import AUTO_MALA_MAX_PARAMS, choose_explorer
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


class NoGradient(Op):
    """The identity, with no gradient (PyTensor's default ``grad`` is not implemented)."""

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = np.asarray(inputs[0])


@pytest.mark.parametrize(
    "n_continuous, discrete, has_gradient, expected",
    [
        (1, False, True, ("mala", "dense")),
        (AUTO_MALA_MAX_PARAMS, False, True, ("mala", "dense")),
        (AUTO_MALA_MAX_PARAMS + 1, False, True, ("rwm", "diag")),
        (5, True, True, ("rwm", "diag")),  # discrete variables: the walk, as before
        (5, False, False, ("rwm", "diag")),  # no gradient
        (0, True, True, ("rwm", "diag")),  # discrete only
    ],
)
def test_the_auto_rule(n_continuous, discrete, has_gradient, expected):
    chosen = choose_explorer(
        "auto",
        None,
        n_continuous=n_continuous,
        discrete=discrete,
        has_gradient=lambda: has_gradient,
    )
    assert chosen == expected


def test_an_explicit_choice_is_kept_and_the_walk_stays_diagonal():
    never = lambda: pytest.fail("the gradient was looked for")  # noqa: E731
    for explorer in ("rwm", "mala", "independent"):
        kw = {"n_continuous": 3, "discrete": False, "has_gradient": never}
        assert choose_explorer(explorer, None, **kw) == (explorer, "diag")
        assert choose_explorer(explorer, "dense", **kw) == (explorer, "dense")
    # a proposal given with "auto" applies to the explorer chosen
    assert choose_explorer(
        "auto", "diag", n_continuous=3, discrete=False, has_gradient=lambda: True
    ) == ("mala", "diag")


@pytest.mark.parametrize(
    "build, expected",
    [
        (correlated_gaussian, "mala+dense"),
        (lambda: normal_means(AUTO_MALA_MAX_PARAMS), "mala+dense"),
        (lambda: normal_means(AUTO_MALA_MAX_PARAMS + 1), "rwm+diag"),
        (lambda: normal_means(3, discrete=True), "rwm+diag"),
    ],
)
def test_which_models_get_which_explorer(build, expected):
    with build():
        assert ExchangeMC(n_rungs=4, explorer="auto").local_move == expected


def test_a_model_without_gradients_gets_the_random_walk():
    with pm.Model():
        x = pm.Normal("x", 0, 1, shape=2)
        pm.Potential("lik", -0.5 * pt.sum(NoGradient()(x) ** 2))
        step = ExchangeMC(n_rungs=4, explorer="auto")
    assert step.local_move == "rwm+diag"


def test_the_choice_is_recorded_on_every_draw_and_in_the_summary():
    with normal_means(2):
        idata = pm.sample(
            draws=20,
            tune=20,
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


@pytest.mark.parametrize("seed", [3])
def test_auto_samples_a_correlated_gaussian_to_its_exact_moments(seed):
    """Means and variances of the beta = 1 rung within 4 MCSE of the exact ones, and a min
    bulk ESS of at least 400 from 2 x 1,000 draws (the diagonal walk, the default, reached
    under 20)."""
    mean, cov, _ = gaussian_tempered_law(1.0, Y, S0, S_LIK)
    with correlated_gaussian():
        idata = pm.sample(
            draws=1000,
            tune=1000,
            chains=2,
            cores=1,
            step=ExchangeMC(explorer="auto"),
            random_seed=seed,
            **SAMPLE_KWARGS,
        )
    theta = idata.posterior["theta"].values  # (chain, draw, D)
    z_mean = [z_score(theta[..., i], mean[i]) for i in range(D)]
    z_var = [z_score((theta[..., i] - mean[i]) ** 2, cov[i, i]) for i in range(D)]
    assert max(np.abs(z_mean)) < 4 and max(np.abs(z_var)) < 4, (z_mean, z_var)
    assert float(az.ess(idata, method="bulk")["theta"].min()) >= 400


def test_the_default_is_the_diagonal_random_walk():
    """What ``ExchangeMC()`` runs as typed: the auto rule was measured slower per CPU second on
    singular and multimodal targets (decision 110), so it is opt-in."""
    with correlated_gaussian():
        assert ExchangeMC(n_rungs=4).local_move == "rwm+diag"
