"""OpenBLAS on one thread for every sweep of ExchangeMC (pymc_tempering._util.blas, its guard in
ExchangeMC.astep; docs/decisions/131-blas-threads-per-sweep.md): every sweep of both legs and
the BLAS calls inside it see one thread, and the process's thread count is back after
``pm.sample`` returns."""

import threading

import numpy as np
import pymc as pm
import pytest
from helpers import FAST, SAMPLE_KWARGS
from threadpoolctl import threadpool_limits

import pymc_tempering as pmt
from pymc_tempering._util import blas
from pymc_tempering._util.blas import one_blas_thread, openblas_threads
from pymc_tempering.engine.leg import Leg
from pymc_tempering.kernels import reference

AMBIENT = 2  # the thread count set around each run: a guard that leaks shows it


def correlated_model():
    """A regression with two strongly correlated coefficients: dense per-rung covariances and a
    dense Gaussian reference (a 2 x 2 Cholesky factor, triangular solves every sweep)."""
    rng = np.random.default_rng(7)
    t = rng.normal(size=40)
    x = np.column_stack([t, t + 0.15 * rng.normal(size=40)])
    y = x @ np.array([0.8, -0.3]) + 0.5 * rng.normal(size=40)
    with pm.Model() as model:
        coef = pm.Normal("coef", 0.0, 2.0, shape=2)
        pm.Normal("y", pm.math.dot(x, coef), 0.5, observed=y)
    return model


def _record(calls, name, fn):
    def recorded(*args, **kwargs):
        calls.append((name, tuple(openblas_threads())))
        return fn(*args, **kwargs)

    return recorded


@pytest.fixture
def calls(monkeypatch):
    """Each sweep (both legs) and each dense linear-algebra entry point a sweep uses, with the
    OpenBLAS thread counts at its call."""
    calls = []
    monkeypatch.setattr(Leg, "sweep_once", _record(calls, "sweep", Leg.sweep_once))
    st = reference.solve_triangular
    monkeypatch.setattr(reference, "solve_triangular", _record(calls, "solve_triangular", st))
    for name in ("cholesky", "eigh", "inv", "solve"):
        fn = getattr(np.linalg, name)
        monkeypatch.setattr(np.linalg, name, _record(calls, name, fn))
    return calls


def sample_two_legs(explorer, proposal, seed=4, reference="variational"):
    legs = {"reference": reference, "n_rungs_variational": 3} if reference != "prior" else {}
    with correlated_model():
        step = pmt.ExchangeMC(
            n_rungs=4,
            **legs,
            explorer=explorer,
            proposal=proposal,
            compile_kwargs=FAST,
        )
        return pm.sample(
            tune=70, draws=10, chains=1, cores=1, step=step, random_seed=seed, **SAMPLE_KWARGS
        )


@pytest.mark.parametrize(
    "explorer, proposal",
    [("rwm", "dense"), ("mala", "dense"), ("independent", None), ("auto", None)],
)
def test_every_sweep_of_both_legs_calls_blas_on_one_thread(calls, explorer, proposal):
    with threadpool_limits(limits=AMBIENT, user_api="blas"):
        ambient = openblas_threads()
        sample_two_legs(explorer, proposal)
        after = openblas_threads()
    assert ambient and all(n == AMBIENT for n in ambient), ambient
    names = [name for name, _ in calls]
    assert names.count("sweep") == 2 * 80  # both legs, every tuning and kept sweep
    assert "solve_triangular" in names and "cholesky" in names  # the variational leg's q
    many = [(name, threads) for name, threads in calls if any(n != 1 for n in threads)]
    assert not many, many[:5]
    assert after == ambient  # restored when pm.sample returned


def test_every_sweep_of_the_prior_leg_alone_calls_blas_on_one_thread(calls):
    with threadpool_limits(limits=AMBIENT, user_api="blas"):
        ambient = openblas_threads()
        sample_two_legs("rwm", "dense", reference="prior")
        after = openblas_threads()
    names = [name for name, _ in calls]
    assert names.count("sweep") == 80 and "cholesky" in names  # the window ends' factors
    many = [(name, threads) for name, threads in calls if any(n != 1 for n in threads)]
    assert not many, many[:5]
    assert after == ambient  # restored when pm.sample returned


def test_draws_do_not_depend_on_the_ambient_thread_count():
    runs = []
    for limit in (AMBIENT, 1):
        with threadpool_limits(limits=limit, user_api="blas"):
            idata = sample_two_legs("rwm", "dense", seed=9)
        runs.append(idata.posterior["coef"].values)
    np.testing.assert_array_equal(runs[0], runs[1])


def test_guard_restores_the_count_nests_and_survives_an_error():
    with threadpool_limits(limits=AMBIENT, user_api="blas"):
        ambient = openblas_threads()
        with one_blas_thread():
            assert set(openblas_threads()) == {1}
            with one_blas_thread():
                assert set(openblas_threads()) == {1}
            assert set(openblas_threads()) == {1}  # the inner exit keeps the outer's limit
        assert openblas_threads() == ambient
        with pytest.raises(RuntimeError, match="planted"), one_blas_thread():
            raise RuntimeError("planted")
        assert openblas_threads() == ambient
        assert blas._active == 0
    with threadpool_limits(limits=1, user_api="blas"), one_blas_thread():
        assert set(openblas_threads()) == {1}


def test_guards_in_two_threads_share_one_limit():
    """The pthreads pool is process-wide: the limit holds while any thread's guard is open, and
    the count comes back when the last one closes."""
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with one_blas_thread():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with one_blas_thread():
            second_in.set()
            first_out.wait(10)
            seen["after the first closed"] = openblas_threads()

    with threadpool_limits(limits=AMBIENT, user_api="blas"):
        ambient = openblas_threads()
        threads = [threading.Thread(target=f) for f in (first, second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert set(seen["after the first closed"]) == {1}
        assert openblas_threads() == ambient


def test_openblas_threads_lists_numpy_and_scipy_builds():
    from threadpoolctl import threadpool_info

    info = [i for i in threadpool_info() if i["internal_api"] == "openblas"]
    pthreads = [i for i in info if i["threading_layer"] != "openmp"]
    assert len(openblas_threads()) == len(pthreads) >= 1
    with threadpool_limits(limits=AMBIENT, user_api="blas"):
        assert openblas_threads() == [AMBIENT] * len(pthreads)
