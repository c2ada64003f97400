"""The compare_models workers' trace (selection/_chain_trace.py): array-valued stats recorded
into one array per stat give PyMC's own DataTree, bit for bit, dtypes and shapes included; a
stat whose values change shape or dtype falls back to PyMC's object array."""

import warnings

import numpy as np
import pymc as pm
import pytest

from pymc_tempering import marginal_likelihood
from pymc_tempering.evidence import EvidenceWarning
from pymc_tempering.selection._chain_trace import ChainTrace

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
    extra = {} if trace is None else {"trace": trace(model=model)}
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
        runs = [run(trace, adaptive) for trace in (None, ChainTrace)]
    assert_same_tree(*runs)
    rung_loglik = runs[1].sample_stats.rung_loglik
    assert rung_loglik.dtype == np.float64 and rung_loglik.ndim == 3


class Stats(pm.Metropolis):
    """Metropolis with three array stats: steady, changing shape, changing dtype."""

    stats_dtypes_shapes = {
        **pm.Metropolis.stats_dtypes_shapes,
        "steady": (object, None),
        "reshaped": (object, None),
        "retyped": (object, None),
    }

    def astep(self, q0):
        q, (stats,) = super().astep(q0)
        n = self.steps_until_tune  # varies from draw to draw
        stats = {
            **stats,
            "steady": np.array([q.data[0], float(n)]),
            "reshaped": np.arange(3 if n % 7 else 2, dtype=np.int64),
            "retyped": np.array([n, n + 1], dtype=np.int64 if n % 5 else np.float64),
        }
        return q, [stats]


def test_changing_shapes_and_dtypes_fall_back_to_pymcs_object_arrays():
    runs = []
    for trace in (None, ChainTrace):
        with pm.Model() as model:
            pm.Normal("x", 0.0, 1.0)
            extra = {} if trace is None else {"trace": trace(model=model)}
            runs.append(
                pm.sample(
                    draws=25,
                    tune=10,
                    chains=2,
                    cores=1,
                    step=Stats(),
                    random_seed=2,
                    progressbar=False,
                    compute_convergence_checks=False,
                    **extra,
                )  # fmt: skip
            )
    stats = [run.sample_stats for run in runs]
    assert stats[1]["steady"].shape == (2, 25, 2) and stats[1]["steady"].dtype == np.float64
    assert stats[1]["reshaped"].dtype == object  # rows of 2 and 3: PyMC keeps objects
    assert stats[1]["retyped"].dtype == np.float64  # int and float rows: PyMC's vstack upcasts
    assert_same_tree(*runs)
