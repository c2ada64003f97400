"""How the step methods declare their stats to PyMC's trace (:mod:`pymc_tempering.step_methods.
_record`): the stats of fixed length as subarray dtypes, the DataTree the same to the last bit
and dtype as PyMC's own ``(object, None)`` path gives, and every draw's array stat as long as
its declaration, through a resized ladder and on both legs."""

import numpy as np
import pymc as pm
import pytest
import targets

import pymc_tempering as pmt
from pymc_tempering.resume.layout import ROW_BYTES, STATE_STAT
from pymc_tempering.step_methods._record import declared_shapes, record_dtypes
from pymc_tempering.trace import LADDER_STAT, PAIR_STATS, RUNG_STATS, VARIATIONAL_PREFIX

DECLARED = {"accept": (np.float64, []), "betas": (object, None), "rungs": (object, None)}


def test_fixed_lengths_become_subarray_dtypes_and_the_rest_stay_as_declared():
    out = record_dtypes(DECLARED, {"betas": (np.float64, 5), "rungs": (np.int64, 4)})
    assert out["accept"] is np.float64
    assert out["betas"] == np.dtype((np.float64, (5,)))
    assert out["rungs"] == np.dtype((np.int64, (4,)))
    assert np.zeros(3, out["rungs"]).shape == (3, 4)  # what PyMC's NDArray trace allocates
    assert record_dtypes(DECLARED, {})["betas"] is object
    # length 0 stays an object: NumPy's np.zeros(3, (float, (0,))) has shape (3,), not (3, 0)
    assert record_dtypes(DECLARED, {"betas": (np.float64, 0)})["betas"] is object


def test_fixed_lengths_are_declared_as_shapes_for_zarr_and_mcbackend():
    fixed = {"betas": (np.float64, 5), "rungs": (np.int64, 0)}
    out = declared_shapes(DECLARED, record_dtypes(DECLARED, fixed))
    assert out["betas"] == (np.dtype(np.float64), [5])
    assert out["rungs"] == (object, None) and out["accept"] == (np.float64, [])
    assert DECLARED["betas"] == (object, None)  # the class's declaration is left alone


@pytest.mark.parametrize(
    "fixed, match",
    [
        ({"nope": (np.float64, 3)}, "'nope'.*declare it"),
        ({"accept": (np.float64, 3)}, "'accept'.*declare it"),
        ({"betas": (np.float64, -1)}, "'betas'.*>= 0"),
    ],
)
def test_a_fixed_length_for_a_stat_not_declared_as_an_array_is_refused(fixed, match):
    with pytest.raises(ValueError, match=match):
        record_dtypes(DECLARED, fixed)


def _two_mode():
    return pmt.exact.two_mode_model(means=[[-4.0, 0.0], [4.0, 0.0]], prior_sd=10.0)


STEPS = {
    "exchange": (_two_mode, lambda: pmt.ExchangeMC(n_rungs=5, explorer="rwm")),
    # the ladder resized while tuning: the per-rung stats padded to max_rungs
    "adapt_n_rungs": (
        _two_mode,
        lambda: pmt.ExchangeMC(n_rungs=12, ladder="adaptive", adapt_n_rungs=True),
    ),
    "variational": (
        _two_mode,
        lambda: pmt.ExchangeMC(n_rungs=4, reference="variational", n_rungs_variational=3),
    ),
    "mala": (lambda: targets.lecture_model(targets.lecture_data(n=20), b=10.0), pmt.MALA),
}


def _sample(model, step, draws=40, tune=70):
    with model:
        return pm.sample(
            draws=draws, tune=tune, chains=2, cores=1, step=step, random_seed=5,
            progressbar=False, compute_convergence_checks=False, discard_tuned_samples=False,
        )  # fmt: skip


@pytest.mark.parametrize("name", list(STEPS))
def test_the_datatree_is_the_one_pymcs_object_stats_give(name):
    """Sampled twice with one seed, once with the step's own ``stats_dtypes`` and once with
    PyMC's default from ``stats_dtypes_shapes`` (an object per draw, stacked at the end):
    every stat and draw the same, with the same dims and dtype."""
    make_model, make_step = STEPS[name]
    with make_model() as model:
        step = make_step()
    assert step.stats_dtypes[0][STATE_STAT] == np.dtype((np.uint8, (ROW_BYTES,)))
    ours = _sample(model, step)
    # PyMC's default for an array stat: an object per draw, stacked when the run is read
    objects = {
        n: object if shape else dtype for n, (dtype, shape) in step.stats_dtypes_shapes.items()
    }
    step.stats_dtypes = [objects]
    pymcs = _sample(model, step)
    for group in ("sample_stats", "warmup_sample_stats", "posterior"):
        a, b = ours[group].to_dataset(), pymcs[group].to_dataset()
        assert set(a.data_vars) == set(b.data_vars)
        for var in a.data_vars:
            assert a[var].dims == b[var].dims, var
            assert a[var].dtype == b[var].dtype, var
            np.testing.assert_array_equal(a[var].values, b[var].values, err_msg=var)


def _lengths(step):
    return {
        name: length
        for name, dtype in step.stats_dtypes[0].items()
        if (length := np.dtype(dtype).shape)
    }


@pytest.mark.parametrize("name", ["exchange", "adapt_n_rungs", "variational"])
def test_every_draws_array_stats_are_as_long_as_declared(name):
    """Step by step through tuning (where ``adapt_n_rungs`` resizes the ladder) and after:
    each array stat has the declared length and dtype kind; both legs' stats are declared."""
    make_model, make_step = STEPS[name]
    with make_model() as model:
        step = make_step()
    lengths = _lengths(step)
    names = {LADDER_STAT, *RUNG_STATS, *PAIR_STATS}
    if name == "variational":
        names |= {VARIATIONAL_PREFIX + n for n in names}
    assert set(lengths) == names | {STATE_STAT}
    n_rungs = step.run.fixed.options.max_rungs
    assert lengths["betas"] == (n_rungs,) and lengths["swap_accept"] == (n_rungs - 1,)
    step.setup_chain(np.random.default_rng(1), tune=150, draws=20)
    point, sizes = model.initial_point(), set()
    for i in range(170):
        if i == 150:
            step.stop_tuning()
        point, (stats,) = step.step(point)
        sizes.add(step.betas.size)
        for stat, length in lengths.items():
            value = np.asarray(stats[stat])
            assert value.shape == length, (i, stat)
            assert value.dtype.kind == step.stats_dtypes[0][stat].base.kind, (i, stat)
    if name == "adapt_n_rungs":
        assert len(sizes) > 1 and max(sizes) < n_rungs, sizes  # resized, and padded


@pytest.mark.parametrize("name", list(STEPS))
def test_the_declared_shapes_are_the_emitted_ones(name):
    """What PyMC's ZarrTrace and mcbackend allocate from (``stats_dtypes_shapes``, read through
    PyMC's ``get_stats_dtypes_shapes_from_steps``) is each fixed-length stat's element dtype and
    length, as the NDArray trace stores them; the other stats as the class declares them."""
    from pymc.step_methods.compound import get_stats_dtypes_shapes_from_steps

    make_model, make_step = STEPS[name]
    with make_model() as model:
        step = make_step()
    shapes = get_stats_dtypes_shapes_from_steps([step])
    lengths = _lengths(step)
    for stat, (dtype, shape) in step.stats_dtypes_shapes.items():
        if stat in lengths:
            assert shape == list(lengths[stat]), stat
            assert np.dtype(dtype) == step.stats_dtypes[0][stat].base, stat
        else:
            assert (dtype, shape) == type(step).stats_dtypes_shapes.get(stat, (dtype, shape))
        assert shapes[f"sampler_0__{stat}"] == (dtype, shape)
    idata = _sample(model, step, draws=10, tune=10)
    for stat, length in lengths.items():
        assert idata.sample_stats[stat].shape[2:] == length, stat


def _zarr_trace(monkeypatch):
    """PyMC's ZarrTrace where this environment can record with it (zarr 2's API), with
    numcodecs' pickled objects allowed for this test (PyMC's own ``_sampling_state`` group
    needs them); skips without zarr 2 (zarr is no dependency of ours)."""
    zarr = pytest.importorskip("zarr", reason="ZarrTrace needs zarr")
    if not zarr.__version__.startswith("2."):
        pytest.skip(f"PyMC's ZarrTrace needs zarr 2's API, found zarr {zarr.__version__}")
    import numcodecs.pickles
    from pymc.backends.zarr import ZarrTrace

    monkeypatch.setattr(numcodecs.pickles, "ALLOW_UNSAFE_PICKLE_DECODE", True, raising=False)
    return ZarrTrace()


@pytest.mark.parametrize("name", ["exchange", "variational", "mala"])
def test_zarr_trace_records_what_the_default_trace_records(name, monkeypatch):
    """Each stat and draw that PyMC's ZarrTrace writes equals the default trace's, bit for bit
    (read from the store: PyMC 6's conversion of a ZarrTrace to a DataTree fails here for
    every sampler, pm.Metropolis too, on xarray's zarr 3 API)."""
    trace = _zarr_trace(monkeypatch)
    make_model, make_step = STEPS[name]
    model = make_model()
    kw = dict(draws=30, tune=20, chains=2, cores=1, random_seed=5, progressbar=False,
              compute_convergence_checks=False)  # fmt: skip
    with model:
        idata = pm.sample(step=make_step(), **kw)
        pm.sample(step=make_step(), trace=trace, return_inferencedata=False, **kw)
    stats = trace.root["sample_stats"]
    for stat in idata.sample_stats.data_vars:
        stored = {"lp": "model_logp"}.get(stat, stat)  # PyMC's DataTree renames that one
        want, got = idata.sample_stats[stat].values, stats[f"sampler_0__{stored}"][:]
        assert got.shape == want.shape and got.dtype == want.dtype, stat
        np.testing.assert_array_equal(got, want, err_msg=stat)
    for var in idata.posterior.data_vars:
        np.testing.assert_array_equal(trace.root["posterior"][var][:], idata.posterior[var])
