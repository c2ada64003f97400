"""The direct call of a compiled numba graph (step_methods/_compile/direct.py) as ExchangeMC's
batched density uses it (``TemperedDensity.batch`` / ``batch_grad``): the same bits as the
PyTensor function, also after ``pm.set_data``; PyTensor's function where the graph is not
numba's; found again after pickling, and again for a new function."""

import pickle

import numpy as np
import pymc as pm
import pytensor
import pytest

from pymc_tempering.step_methods._compile.direct import checked_call, direct_call
from pymc_tempering.step_methods._compile.tempered import compile_tempered_density

CVM = {"mode": pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run")}


def data_model():
    """Two parameters on shared data, correlated in the likelihood, a transformed scale."""
    with pm.Model() as model:
        X = pm.Data("X", np.linspace(-1.0, 2.0, 6))
        a = pm.Normal("a", 0.0, 2.0, shape=2)
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", a[0] + a[1] * X, s, observed=np.array([0.1, 0.5, 0.2, 1.4, 1.9, 2.2]))
    return model


def density_of(model, compile_kwargs=None, gradient=True):
    with model:
        return compile_tempered_density(
            model, model.value_vars, model.initial_point(), compile_kwargs, gradient=gradient
        )


@pytest.fixture(scope="module")
def density():
    """One compiled density for the tests that only read it (a compile is about 2 s)."""
    return density_of(data_model())


def rows(seed, n=7):
    return np.random.default_rng(seed).normal(size=(n, 3))


def assert_same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_array_equal(a, b, strict=True)


def test_batch_calls_the_numba_graph_directly_with_the_functions_bits(density):
    for seed in range(3):  # the first call chooses, the others use the choice
        x = rows(seed)
        assert_same(density.batch(x), density.batched(x))
        assert_same(density.batch_grad(x), density.batched_grad(x))
    assert density._batch_call[0] is density.batched
    assert density._batch_call[1] is not density.batched  # the direct call
    assert density._grad_call[1] is not density.batched_grad
    chosen = (density._batch_call, density._grad_call)
    density.batch(x), density.batch_grad(x)
    assert (density._batch_call, density._grad_call) == chosen  # chosen once, not per call
    assert density._batch_call is chosen[0] and density._grad_call is chosen[1]
    # rows of another batch size and a non-contiguous view: the same numbers
    x = rows(5, n=12)[::2]
    assert_same(density.batch(x), density.batched(np.ascontiguousarray(x)))


def test_batch_sees_new_data():
    model = data_model()
    density = density_of(model)
    x = rows(1)
    before = density.batch(x)
    with model:
        pm.set_data({"X": np.linspace(0.0, 5.0, 6)})
    after = density.batch(x)
    assert_same(after, density.batched(x))
    assert not np.array_equal(after[1], before[1])  # the likelihood moved with the data
    np.testing.assert_array_equal(after[0], before[0])  # the prior did not
    assert_same(density.batch_grad(x), density.batched_grad(x))


def test_a_graph_that_is_not_numbas_is_called_through_its_function():
    model = data_model()
    density = density_of(model, CVM)
    assert direct_call(density.batched, 2) is None
    x = rows(2)
    assert_same(density.batch(x), density.batched(x))
    assert density._batch_call == (density.batched, density.batched)


def test_checked_call_refuses_a_direct_call_that_differs(monkeypatch, density):
    """Where the direct call's numbers are not the function's (PyTensor's internals changed
    under us), the function is used: planted by a wrong output count and by a direct call
    whose log-likelihood is one step of a float off."""
    from pymc_tempering.step_methods._compile import direct

    x = rows(3)
    assert direct_call(density.batched, 3) is None  # two outputs, not three
    call, out = checked_call(density.batched, x, 2)
    assert call is not density.batched
    assert_same(out, density.batched(x))
    real = direct_call(density.batched, 2)

    def off(fn, n_outputs):
        return lambda x: (real(x)[0], np.nextafter(real(x)[1], 0.0))

    monkeypatch.setattr(direct, "direct_call", off)
    call, out = direct.checked_call(density.batched, x, 2)
    assert call is density.batched
    assert_same(out, density.batched(x))


def test_a_pickled_density_finds_its_direct_call_again(density):
    x = rows(4)
    want = density.batch(x)
    copy = pickle.loads(pickle.dumps(density))
    assert copy._batch_call == (None, None) and copy._grad_call == (None, None)
    assert_same(copy.batch(x), want)
    assert copy._batch_call[0] is copy.batched


def test_a_new_function_is_checked_again():
    """``add_batched_gradient`` and the compile cache may hand a density a new function: the
    call chosen for the old one is not kept."""
    model = data_model()
    density = density_of(model)
    x = rows(6)
    density.batch(x)
    other = density_of(data_model(), CVM)  # another model's function, not numba's
    density.batched = other.batched
    assert_same(density.batch(x), other.batched(x))
    assert density._batch_call == (other.batched, other.batched)


@pytest.mark.parametrize("explorer", ["rwm", "mala"])
def test_exchange_draws_do_not_change_with_the_direct_call(explorer):
    """ExchangeMC's draws with the direct call equal those through PyTensor's function, bit
    for bit (the walk uses ``batch``, MALA ``batch_grad``)."""
    from pymc_tempering.step_methods.exchange.sampler import ExchangeMC

    model = data_model()
    runs = []
    for direct in (True, False):
        with model:
            step = ExchangeMC(n_rungs=4, explorer=explorer)
        density = step.run.fixed.density
        if not direct:  # every call through the function: the choice made for it
            density._batch_call = (density.batched, density.batched)
            if density.batched_grad is not None:
                density._grad_call = (density.batched_grad, density.batched_grad)
        step.setup_chain(np.random.default_rng(9), tune=30, draws=20)
        point, draws = model.initial_point(), []
        for _ in range(50):
            point, _ = step.step(point)
            draws.append(np.concatenate([np.ravel(v) for v in point.values()]))
        runs.append(np.array(draws))
        if direct:
            assert density._batch_call[1] is not density.batched
        from pymc_tempering.step_methods._compile import cache

        cache.clear()  # the second run compiles its own density
    np.testing.assert_array_equal(runs[0], runs[1], strict=True)
    assert np.ptp(runs[0], axis=0).min() > 0  # every coordinate moved


def test_internals_other_than_expected_give_no_direct_call(density):
    """A function with updates (its random stream must advance) and a thunk whose first input
    cell is not the function's input are called through PyTensor, never directly."""
    from types import SimpleNamespace

    import pytensor.tensor as pt

    x = pt.matrix("x", dtype="float64")
    rng = pytensor.shared(np.random.default_rng(0))
    next_rng, noise = pt.random.normal(rng=rng, size=(2,)).owner.outputs
    with_updates = pytensor.function(
        [x], [x.sum(axis=1) + noise.sum(), x.sum(axis=1)], updates={rng: next_rng}, mode="NUMBA"
    )
    assert with_updates._has_updates
    assert direct_call(with_updates, 2) is None
    # one output and one update: a thunk of two outputs, still not a density of two
    one_output = pytensor.function(
        [x], x.sum(axis=1) + noise.sum(), updates={rng: next_rng}, mode="NUMBA"
    )
    one_output.unpack_single = False
    assert direct_call(one_output, 2) is None

    fn = density.batched
    jit, inputs, outputs = fn.vm.__defaults__

    def thunk(jit=jit, inputs=[[None], *inputs[1:]], outputs=outputs):  # noqa: B006
        raise AssertionError("never called")

    like = dict(_has_updates=False, input_storage=fn.input_storage, unpack_single=False)
    assert direct_call(SimpleNamespace(vm=fn.vm, **like), 2) is not None  # as the function
    assert direct_call(SimpleNamespace(vm=thunk, **like), 2) is None  # another first cell
