"""From ExchangeMC's arguments to the engine's run (:mod:`pymc_tempering.step_methods.exchange.
build`): the placement applied, the explorer chosen (``"auto"`` only where asked for and
eligible; the variational leg its own, on its own density), each leg's options resolved (the
local move's name, the continuous dimension that sets the target, the user's target kept for
``"auto"``, jitter where the prior cannot be sampled, no gradient tuning with discrete
variables, the variational leg's ladder and ``max_rungs``)."""

import numpy as np
import pymc as pm
import pytest
import targets
from pymc.blocking import DictToArrayBijection

from pymc_tempering.engine.auto import WalkThenMALA
from pymc_tempering.engine.discrete import Mixed
from pymc_tempering.engine.placement import Rowwise, RowwisePotential
from pymc_tempering.engine.variational import VariationalDensity
from pymc_tempering.kernels.rwm import optimal_accept
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC
from pymc_tempering.trace import LOCAL_MOVES


def _continuous():
    return targets.lecture_model(targets.lecture_data(n=10))


def _mixed():
    """One continuous parameter beside a discrete vector of 3: d = 1 for the target."""
    with pm.Model() as model:
        k = pm.Poisson("k", 2.0, shape=3)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu + k.sum(), 1.0, observed=[4.1, 5.3])
    return model


def test_the_placement_is_applied_to_the_compiled_potential():
    with _continuous():
        step = ExchangeMC(explorer="rwm", n_rungs=4, placement=Rowwise())
    assert isinstance(step.density, RowwisePotential)
    assert step.run.fixed.explorer.density is step.density


@pytest.mark.parametrize(
    "explorer, proposal, name", [("rwm", "dense", "rwm+dense"), ("rwm", None, "rwm+diag"),
                                 ("mala", "dense", "mala+dense")]
)  # fmt: skip
def test_the_local_moves_name_and_code(explorer, proposal, name):
    with _continuous():
        step = ExchangeMC(explorer=explorer, proposal=proposal, n_rungs=4)
    assert step.local_move == name
    assert step.run.fixed.options.local_move_code == LOCAL_MOVES.index(name)
    assert step.run.fixed.options.dense is (name.endswith("dense"))


@pytest.mark.parametrize("explorer", ["auto", "rwm"])
def test_auto_only_where_asked_for(explorer):
    with _continuous():
        step = ExchangeMC(explorer=explorer, n_rungs=4)
    fixed = step.run.fixed
    assert fixed.auto is (explorer == "auto") is fixed.options.auto
    assert isinstance(fixed.explorer, WalkThenMALA) is (explorer == "auto")


def test_the_target_counts_the_continuous_parameters_only():
    """Four flat parameters, three of them discrete: the walk's target is d = 1's (0.44), not
    d = 4's (0.30); discrete moves wrap the walk, and no gradient tuning with discrete."""
    with _mixed():
        step = ExchangeMC(explorer="rwm", proposal="dense", n_rungs=4)
    fixed = step.run.fixed
    assert step.density.n_params == 4
    assert fixed.target_accept == pytest.approx(optimal_accept(1))
    assert isinstance(fixed.explorer, Mixed)
    assert fixed.options.dense and not fixed.options.grad_tuning
    assert fixed.scales.grad_moments is None
    with _continuous():
        dense = ExchangeMC(explorer="rwm", proposal="dense", n_rungs=4)
    assert dense.run.fixed.options.grad_tuning


def test_the_users_target_is_kept_for_auto():
    with _continuous():
        step = ExchangeMC(n_rungs=4, target_accept=0.3)
        default = ExchangeMC(n_rungs=4)
    assert step.run.fixed.options.user_target_accept == 0.3
    assert default.run.fixed.options.user_target_accept is None
    explorer = step.run.fixed.explorer
    target = explorer.target_accept(step.run.fixed.target_accept, 0.3)
    assert target == 0.3


def test_replicas_start_jittered_where_the_prior_cannot_be_sampled():
    with pm.Model():
        mu = pm.Flat("mu")
        pm.Normal("y", mu, 1.0, observed=[0.2, 0.4])
        step = ExchangeMC(explorer="rwm", betas=np.array([0.1, 0.5, 1.0]))
    assert not step.density.can_sample_prior()
    assert step.run.fixed.options.init == "jitter"
    with _continuous():
        assert ExchangeMC(explorer="rwm", n_rungs=4).run.fixed.options.init == "prior"


@pytest.mark.parametrize("explorer", ["rwm", "mala"])
def test_the_variational_leg_has_its_own_explorer_density_and_ladder(explorer):
    with _continuous():
        step = ExchangeMC(
            explorer=explorer, n_rungs=6, reference="variational", n_rungs_variational=3
        )
    fixed, leg = step.run.fixed, step.run.variational
    assert isinstance(leg.density, VariationalDensity)
    assert leg.explorer is not fixed.explorer
    assert type(leg.explorer) is type(fixed.explorer)
    assert leg.explorer.density is leg.density
    assert leg.betas.size == leg.options.max_rungs == 3 and fixed.betas.size == 6
    assert leg.options.prior_rung and leg.options.init == "prior"


def test_the_variational_legs_max_rungs_grow_with_adapt_n_rungs():
    with _continuous():
        step = ExchangeMC(
            n_rungs=5, ladder="adaptive", adapt_n_rungs=True, reference="variational",
            n_rungs_variational=40, explorer="rwm",
        )  # fmt: skip
    assert step.run.variational.options.max_rungs == 80
    with _continuous():
        small = ExchangeMC(
            n_rungs=5, ladder="adaptive", adapt_n_rungs=True, reference="variational",
            explorer="rwm",
        )  # fmt: skip
    assert small.run.variational.options.max_rungs == 64


def test_the_variational_leg_draws_exactly_from_q_without_the_fixed_legs_prior_rung():
    """``prior_rung=False`` is the fixed leg's: the variational leg's beta = 0 rung is q,
    drawn exactly whatever the fixed leg does (one draw of q's block per sweep)."""
    with _continuous():
        step = ExchangeMC(explorer="rwm", n_rungs=4, reference="variational", prior_rung=False)
    fixed, leg = step.run.fixed, step.run.variational
    assert not fixed.prior_rung and not fixed.options.prior_rung
    assert leg.prior_rung and leg.options.prior_rung
    step.setup_chain(np.random.default_rng(1), tune=10, draws=0)
    point = DictToArrayBijection.map({"mu": np.array(0.3)})
    for _ in range(3):
        step.astep(point)
    assert fixed.prior_draws.draws.shape[0] == 0
    assert leg.prior_draws.pos == 3
