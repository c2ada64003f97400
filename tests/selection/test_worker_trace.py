"""The compare_models workers' trace (``selection._worker._chain_traces``: PyMC's NDArray with
one point function compiled per model, a new one for each chain, ``selection._chain_trace``)
gives PyMC's own DataTree, bit for bit, dtypes and
shapes included, and ExchangeMC's per-rung stats arrive as numeric arrays, not objects
(their declaration, ``step_methods._record``), on a fixed ladder and on one whose number of
rungs is tuned (padded stats)."""

import warnings

import numpy as np
import pymc as pm
import pytest

from pymc_tempering import marginal_likelihood
from pymc_tempering.evidence import EvidenceWarning
from pymc_tempering.selection._worker import _chain_traces

SETTINGS = {"n_rungs": 6, "draws": 40, "tune": 30, "chains": 2}


def regression():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(30, 2))
    with pm.Model() as model:
        tau = pm.Gamma("tau", 2.0, 2.0)
        u = pm.Normal("u", 0.0, 1.0, shape=2)
        pm.Normal("y", pm.math.dot(x, u), 1.0 / pm.math.sqrt(tau), observed=x @ [1.0, -0.5])
    return model


def assert_same_tree(a, b):
    assert set(a.groups) == set(b.groups)
    for group in a.groups:
        left, right = a[group].to_dataset(), b[group].to_dataset()
        assert set(left.variables) == set(right.variables), group
        for name in left.variables:
            x, y = left[name], right[name]
            assert x.dims == y.dims and x.dtype == y.dtype, (group, name, x.dtype, y.dtype)
            if x.dtype != object:
                np.testing.assert_array_equal(x.values, y.values, err_msg=f"{group}/{name}")
                continue
            for p, q in zip(x.values.ravel(), y.values.ravel(), strict=True):
                assert np.asarray(p).dtype == np.asarray(q).dtype, (group, name)
                np.testing.assert_array_equal(p, q, err_msg=f"{group}/{name}")


def run(trace, adaptive):
    model = regression()
    extra = {} if trace is None else _chain_traces(model, {})
    if not adaptive:
        return marginal_likelihood(
            model, random_seed=11, cores=1, return_idata=True, progressbar=False,
            **SETTINGS, **extra,
        )[1]  # fmt: skip
    from pymc_tempering import ExchangeMC

    with model:  # the number of rungs tuned: per-rung stats padded with NaN and -1
        step = ExchangeMC(n_rungs=6, ladder="adaptive", adapt_n_rungs=True)
        return pm.sample(
            draws=40, tune=60, chains=2, cores=1, step=step, random_seed=11, progressbar=False,
            compute_convergence_checks=False, **extra,
        )  # fmt: skip


@pytest.mark.parametrize("adaptive", [False, True])
def test_exchange_run_gives_pymcs_datatree(adaptive):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        runs = [run(trace, adaptive) for trace in (None, "worker")]
    assert_same_tree(*runs)
    rung_loglik = runs[1].sample_stats.rung_loglik
    assert rung_loglik.dtype == np.float64 and rung_loglik.ndim == 3
    assert runs[1].sample_stats.rung_replica.dtype == np.int64
    assert runs[1].sample_stats.sampling_state.dtype == np.uint8
