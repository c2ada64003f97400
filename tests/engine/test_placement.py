"""The placements of a run's log potential (:mod:`pymc_tempering.engine.placement`): Rowwise
evaluates one row per call and agrees with the batched call row by row (to rounding: a BLAS
product blocks a batch differently from one row), empty and one-row batches, the four outputs
of ``batch_grad``, the gradient flag passed through; ExchangeMC with ``placement=Rowwise()``
draws what the default draws, and anything without ``place`` is refused with the fix."""

import numpy as np
import pymc as pm
import pytest
from pymc.blocking import DictToArrayBijection

from pymc_tempering.engine.placement import Batched, Placement, Rowwise, RowwisePotential
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC

RNG = np.random.default_rng(3)
X = RNG.normal(size=(40, 6))
Y = X @ np.linspace(-1.3, 0.7, 6) + RNG.normal(size=40)


def regression():
    """y ~ N(X w, 1), w ~ N(0, 2^2 I_6): the likelihood is a matrix product (BLAS)."""
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 2.0, shape=6)
        pm.Normal("y", X @ w, 1.0, observed=Y)
    return model


class Spy:
    """A log potential that records the number of rows of each call and passes it on."""

    def __init__(self, base):
        self.base, self.rows = base, []

    def __getattr__(self, name):
        return getattr(self.base, name)

    def batch(self, x):
        self.rows.append(x.shape[0])
        return self.base.batch(x)

    def batch_grad(self, x):
        self.rows.append(x.shape[0])
        return self.base.batch_grad(x)


@pytest.fixture(scope="module")
def step():
    with regression():
        return ExchangeMC(explorer="mala", n_rungs=4, placement=Rowwise())


def _points(n, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 6)) * 1.7 + 0.31


def test_rowwise_calls_the_base_potential_one_row_at_a_time(step):
    potential = step.density
    assert isinstance(potential, RowwisePotential)
    spy = Spy(potential.base)
    potential.base = spy
    try:
        potential.batch(_points(5))
        potential.batch_grad(_points(3))
    finally:
        potential.base = spy.base
    assert spy.rows == [1] * 8


def test_a_rowwise_run_evaluates_one_row_per_call(step):
    """Every call a ExchangeMC run makes (start, sweeps, gradients while tuning) reaches the
    compiled potential one row at a time."""
    potential = step.run.fixed.density
    spy = Spy(potential.base)
    potential.base = spy
    try:
        step.setup_chain(np.random.default_rng(0), tune=5, draws=0)
        point = DictToArrayBijection.map({"w": np.zeros(6)})
        for _ in range(3):
            step.astep(point)
    finally:
        potential.base = spy.base
    assert len(spy.rows) >= 4 * 3
    assert set(spy.rows) == {1}


@pytest.mark.parametrize("n", [1, 2, 7])
def test_rowwise_equals_the_batched_call_row_by_row(step, n):
    """Each output row as the batched call's, to 1e-12 relative (a different BLAS blocking);
    the rows in order: a row evaluated at another row's point is off by tens of nats."""
    x = _points(n, seed=n)
    base = step.density.base
    batched, rowwise = base.batch_grad(x), step.density.batch_grad(x)
    assert len(rowwise) == 4
    for want, got in zip(batched, rowwise, strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for want, got in zip(base.batch(x), step.density.batch(x), strict=True):
        assert got.shape == (n,)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # and the exact values of each row, evaluated alone
    for i in range(n):
        alone = base.batch(x[i : i + 1])
        assert step.density.batch(x)[1][i] == alone[1][0]


def test_an_empty_batch_gives_empty_outputs(step):
    x = np.empty((0, 6))
    out = step.density.batch(x)
    assert len(out) == 2 and all(o.shape == (0,) for o in out)
    grad = step.density.batch_grad(x)
    assert len(grad) == 4
    assert grad[0].shape == (0,) and grad[2].shape[0] == 0


class _NoGradient:
    n_params = 1

    def ensure_gradient(self):
        return False

    def batch(self, x):
        return x[:, 0] * 0.0, -0.5 * x[:, 0] ** 2


def test_rowwise_passes_the_gradient_flag_and_attributes_through():
    potential = Rowwise().place(_NoGradient())
    assert potential.ensure_gradient() is False
    assert potential.n_params == 1
    logprior, loglik = potential.batch(np.array([[1.0], [3.0]]))
    np.testing.assert_array_equal(loglik, [-0.5, -4.5])


def test_the_default_placement_is_the_batched_potential_itself():
    base = _NoGradient()
    assert Batched().place(base) is base
    assert isinstance(Batched(), Placement) and isinstance(Rowwise(), Placement)
    with regression():
        step = ExchangeMC(explorer="rwm", n_rungs=4)
    assert isinstance(step.placement, Batched)
    assert not isinstance(step.density, RowwisePotential)


def test_placement_object_without_place_is_refused_with_the_fix():
    with regression(), pytest.raises(TypeError, match=r"`placement` must be .*place\(potential\)"):
        ExchangeMC(n_rungs=4, placement=object())


@pytest.mark.parametrize("explorer", ["rwm", "mala"])
def test_rowwise_draws_agree_with_the_default(explorer):
    """300 draws (150 tuning) of the 4-rung run: every draw of the default placement to 1e-9
    with the same seed. The two differ only in rounding (1e-15 relative); a bug in the rows
    or their order changes the chain at its first sweep."""
    draws = []
    for placement in (None, Rowwise()):
        with regression():
            step = ExchangeMC(explorer=explorer, n_rungs=4, placement=placement)
        step.setup_chain(np.random.default_rng(7), tune=150, draws=150)
        point = DictToArrayBijection.map({"w": np.zeros(6)})
        out = []
        for i in range(300):
            if i == 150:
                step.stop_tuning()
            point, _ = step.astep(point)
            out.append(point.data.copy())
        draws.append(np.array(out))
    assert np.abs(draws[0] - draws[1]).max() < 1e-9
    assert np.ptp(draws[0][150:], axis=0).min() > 0.1  # the chain moves
