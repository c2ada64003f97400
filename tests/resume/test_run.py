"""Continuing runs (issue 17): n + m draws equal one run of n + m draws, bit for bit, for every
sampler, with cores 1 and 2; through a netCDF file; after a real SIGINT."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from helpers import assert_same_run, exact_bits

import pymc_tempering as pmt
from pymc_tempering.resume import chain_checkpoints, continue_sampling
from pymc_tempering.resume.codec import decode, encode
from pymc_tempering.resume.run import saved_step

QUIET = dict(progressbar=False, compute_convergence_checks=False)
STEPS = {
    "exchange": lambda: pmt.ExchangeMC(n_rungs=6),
    "mala": lambda: pmt.MALA(),
    "ula": lambda: pmt.ULA(step_size=0.02),
    "sgld": lambda: pmt.SGLD(step_size=0.01, schedule="constant"),
}


def small_model():
    with pm.Model() as model:
        x = pm.Normal("x", 0, 1, shape=2)
        s = pm.HalfNormal("s", 1)
        pm.Normal("y", x.sum(), s, observed=np.array([0.3, -0.2, 0.5]))
    return model


def test_codec_keeps_every_bit():
    rng = np.random.default_rng(3)
    rng.normal(size=5)
    state = {
        "floats": np.array([np.nan, -0.0, 1e-308, np.inf]),
        "f32": np.float32(1.5),
        "ints": np.arange(-3, 3, dtype=np.int32).reshape(2, 3),
        "big": 2**130 + 7,
        "mixed": [None, True, "deo", (1, 2.5)],
        "rng": rng,
    }
    back = decode(encode(state))
    np.testing.assert_array_equal(back["floats"].view(np.uint64), state["floats"].view(np.uint64))
    assert back["f32"].dtype == np.float32 and back["ints"].dtype == np.int32
    assert back["big"] == state["big"] and back["mixed"] == state["mixed"]
    assert back["rng"].normal() == rng.normal()
    with pytest.raises(TypeError, match="state\\['bad'\\]"):
        encode({"bad": lambda: 0})


@pytest.mark.parametrize(
    "sampler, cores",
    [("exchange", 1), ("exchange", 2), ("mala", 1), ("ula", 1), ("sgld", 1),
     *[pytest.param(s, 2, marks=pytest.mark.slow) for s in ("mala", "ula", "sgld")]],
)  # fmt: skip
def test_continued_run_equals_one_long_run(sampler, cores):
    kw = dict(tune=50, chains=2, cores=cores, random_seed=1, **QUIET)
    with small_model():
        full = pm.sample(120, step=STEPS[sampler](), **kw)
        half = pm.sample(60, step=STEPS[sampler](), **kw)
        joined = continue_sampling(half, 60, cores=cores, random_seed=99, **QUIET)
    assert_same_run(full, joined)
    # the first half is kept as it was, and the continuation did not re-tune
    np.testing.assert_array_equal(joined.posterior["x"].values[:, :60], half.posterior["x"].values)
    if sampler == "exchange":  # evidence reads the whole joined run, as it reads one long run
        for estimate in (pmt.thermodynamic_integration, pmt.stepping_stone):
            xr.testing.assert_identical(estimate(joined), estimate(full))


def _scale_model():
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", 0.0, sigma, observed=np.array([0.3, -0.2, 0.9]))
    return model


@pytest.mark.parametrize("cls", [pmt.ExchangeMC, pmt.MALA], ids=lambda c: c.__name__)
@pytest.mark.parametrize("given", ["None", "random variable"])
def test_vars_given_as_none_or_as_a_random_variable_continue(cls, given):
    """``vars=None`` written out, or a transformed variable given by its random variable
    (``sigma``, whose value variable is ``sigma_log__``): the checkpoint names the value
    variables the step samples, and the run continues as one long run."""
    kw = dict(tune=20, chains=1, random_seed=1, **QUIET)
    with _scale_model() as model:
        vars = None if given == "None" else [model["sigma"]]
        step = lambda: cls(vars=vars, **({"n_rungs": 4} if cls is pmt.ExchangeMC else {}))  # noqa: E731
        full = pm.sample(40, step=step(), **kw)
        half = pm.sample(20, step=step(), **kw)
        joined = continue_sampling(half, 20, random_seed=5, **QUIET)
    assert_same_run(full, joined)
    assert saved_step(half)["kwargs"]["vars"] == ["sigma_log__"]


def test_continue_from_a_netcdf_file_with_the_step_from_the_classmethod(tmp_path):
    kw = dict(tune=50, chains=2, cores=1, random_seed=4, **QUIET)
    with small_model() as model:
        full = pm.sample(100, step=pmt.ExchangeMC(n_rungs=5, explorer="mala"), **kw)
        first = pm.sample(70, step=pmt.ExchangeMC(n_rungs=5, explorer="mala"), **kw)
    first.to_netcdf(tmp_path / "run.nc")
    saved = xr.open_datatree(tmp_path / "run.nc")
    joined = continue_sampling(saved, 30, model=small_model(), **QUIET)
    assert_same_run(full, joined)
    with model:  # the classmethod + pm.sample, as a PyMC user would write it
        step = pmt.ExchangeMC.resume(saved)
        more = pm.sample(30, tune=0, step=step, chains=2, cores=1, **QUIET)
    np.testing.assert_array_equal(more.posterior["x"].values, full.posterior["x"].values[:, 70:])
    with model, pytest.raises(ValueError, match="tune=0"):
        pm.sample(5, tune=5, step=pmt.ExchangeMC.resume(saved), chains=2, cores=1, **QUIET)


def test_continuing_with_other_observed_data_is_refused():
    """The saved state (densities, gradients, tuning) belongs to the data sampled: continuing
    on a model with other observed data would mix two posteriors, so it is refused."""
    with small_model():
        idata = pm.sample(60, tune=30, step=pmt.MALA(), chains=1, random_seed=2, **QUIET)
    with pm.Model() as changed:  # the same variables, other data
        x = pm.Normal("x", 0, 1, shape=2)
        s = pm.HalfNormal("s", 1)
        pm.Normal("y", x.sum(), s, observed=np.array([9.0, 9.5, 10.0]))
    with pytest.raises(ValueError, match="observed data differ"):
        continue_sampling(idata, 10, model=changed, **QUIET)


def changed_model(prior_sd=1, likelihood="normal"):
    """``small_model`` with the prior scale of x or the likelihood's family changed (written
    as there: a constant 1.0 for 1 has another dtype, which the digest counts as a change)."""
    with pm.Model() as model:
        x = pm.Normal("x", 0, prior_sd, shape=2)
        s = pm.HalfNormal("s", 1)
        y = np.array([0.3, -0.2, 0.5])
        if likelihood == "normal":
            pm.Normal("y", x.sum(), s, observed=y)
        else:
            pm.StudentT("y", nu=3, mu=x.sum(), sigma=s, observed=y)
    return model


def test_continuing_with_another_prior_or_likelihood_is_refused():
    """Same data, another posterior: the digests of the model's graphs saved with the
    checkpoints tell the model sampled from a changed one, and name the part that changed; a
    model rebuilt unchanged continues."""
    with small_model():
        idata = pm.sample(60, tune=30, step=pmt.MALA(), chains=1, random_seed=2, **QUIET)
    with pytest.raises(ValueError, match=r"in its prior .*N\(0, 10\).*afresh"):
        continue_sampling(idata, 10, model=changed_model(prior_sd=10), **QUIET)
    with pytest.raises(ValueError, match=r"in its likelihood"):
        continue_sampling(idata, 10, model=changed_model(likelihood="student"), **QUIET)
    joined = continue_sampling(idata, 10, model=changed_model(), **QUIET)  # rebuilt, unchanged
    assert joined.posterior.sizes["draw"] == 70


def test_a_run_without_checkpoints_is_refused_by_name():
    with small_model():
        idata = pm.sample(20, tune=10, step=pm.Metropolis(), chains=1, random_seed=1, **QUIET)
        with pytest.raises(ValueError, match="no `sampling_state` stat"):
            continue_sampling(idata, 10)


INTERRUPTED = """
import os, signal, sys
import numpy as np, pymc as pm
from helpers import assert_same_run

import pymc_tempering as pmt
sys.path.insert(0, {tests!r})
from test_run import small_model
# Python's own Ctrl-C handler, whatever was inherited: a shell's background job starts with
# SIGINT ignored, and the signal below would then be dropped
signal.signal(signal.SIGINT, signal.default_int_handler)
def stop(trace, draw):  # a real SIGINT to this process after 150 post-tuning draws
    if not draw.tuning and draw.draw_idx == 150 + 30 and draw.chain == 0:
        os.kill(os.getpid(), signal.SIGINT)
with small_model():
    idata = pm.sample(5000, tune=30, step=pmt.ExchangeMC(n_rungs=6), chains={cores}, cores={cores},
                      random_seed=7, callback=stop, progressbar=False,
                      compute_convergence_checks=False)
idata.to_netcdf({path!r})
"""


def _chains_by_first_draw(partial, full):
    """For each chain of ``partial``, the chain of ``full`` whose first draw it has."""
    name = next(iter(partial.data_vars))
    first = full[name].isel(draw=0).values.reshape(full.sizes["chain"], -1)
    kept = [
        int(np.flatnonzero((first == row).all(axis=1))[0])
        for row in partial[name].isel(draw=0).values.reshape(partial.sizes["chain"], -1)
    ]
    return np.array(kept)


@pytest.mark.parametrize("cores", [1, 2])
def test_an_interrupted_run_is_kept_and_continues_as_one_long_run(tmp_path, cores):
    with exact_bits():  # compared bit for bit with a run in this process
        _interrupted_run_continues(tmp_path, cores)


def _interrupted_run_continues(tmp_path, cores):
    path = str(tmp_path / "interrupted.nc")
    code = INTERRUPTED.format(tests=os.path.dirname(__file__), cores=cores, path=path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True, env=env,
                   timeout=120, capture_output=True)  # fmt: skip
    partial = xr.open_datatree(path)
    n = partial.posterior.sizes["draw"]
    # stopped by the signal, draws so far kept; with cores=2 the other chain may lag behind
    # chain 0's 150 draws on a busy machine, and PyMC cuts both chains to the shorter one
    assert 0 < n < 5000
    assert all(c["replay"] >= 0 for c in chain_checkpoints(partial))
    joined = continue_sampling(partial, 40, model=small_model(), cores=cores, **QUIET)
    with small_model():
        # one chain with cores=1: PyMC samples chains in turn and would run a second one in full
        full = pm.sample(n + 40, tune=30, step=pmt.ExchangeMC(n_rungs=6), chains=cores,
                         cores=cores, random_seed=7, **QUIET)  # fmt: skip
    if partial.posterior.sizes["chain"] < cores:
        # PyMC keeps only the longest chains of an interrupted multiprocess run (the other
        # chain had fewer draws when the signal came) and numbers them from 0; each kept chain
        # continues its own stream, so find it in the long run by its first draw
        kept = _chains_by_first_draw(partial.posterior, full.posterior)
        full = xr.DataTree.from_dict(
            {g: full[g].to_dataset().isel(chain=kept) for g in ("posterior", "sample_stats")}
        )
    assert_same_run(full, joined)


def test_bad_draws_and_a_missing_model_name_the_fix():
    """continue_sampling(draws=-5) and a DataTree continued outside a model context without
    `model=` (e.g. read back from a file) say which argument to pass, before sampling."""
    with small_model():
        idata = pm.sample(20, tune=10, step=pmt.MALA(), chains=1, random_seed=1, **QUIET)
    for draws in (-5, 0, 2.5):
        with pytest.raises(ValueError, match=r"`draws`.*whole number >= 1"):
            continue_sampling(idata, draws, model=small_model())
    with pytest.raises(TypeError, match=r"no model on the context stack.*`model=`"):
        continue_sampling(idata, 10)
    with pytest.raises(TypeError, match="`model` must be a pm.Model"):
        continue_sampling(idata, 10, model="small_model")
