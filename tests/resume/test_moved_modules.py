"""A run saved before the package was laid out by concern (commit 3f01711, whose checkpoints name
classes by their old modules, e.g. ``pymc_tempering.adaptation``) still continues, bit for bit.

``data/pre_layout_run.nc``: ExchangeMC(n_rungs=4), 20 tuning and 30 draws, chain 1 of seed 3, on
the model below, written by 3f01711; ``data/pre_layout_run_full_x.npy``: the posterior of the
same run with 60 draws, uninterrupted, by the same commit.
"""

from pathlib import Path

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_tempering as pmt
from pymc_tempering.resume import codec

DATA = Path(__file__).parent / "data"


def _model():
    with pm.Model() as model:
        x = pm.Normal("x", 0, 3, shape=2)
        pm.Normal("y", x.sum(), 1, observed=np.array([1.0, 2.0]))
    return model


def test_a_run_saved_by_the_old_layout_continues_bit_for_bit():
    idata = xr.open_datatree(DATA / "pre_layout_run.nc")
    with _model():
        more = pmt.continue_sampling(idata, draws=30, progressbar=False)
    full = np.load(DATA / "pre_layout_run_full_x.npy")
    np.testing.assert_array_equal(more.posterior.x.values, full)


def test_every_moved_module_exists_today():
    import importlib

    for old, new in codec.MOVED_MODULES.items():
        assert old != new
        importlib.import_module(new)


@pytest.mark.parametrize("name", ["variational_mala", "auto_adaptive"])
def test_a_run_saved_before_the_engine_left_exchangemc_continues_bit_for_bit(name):
    """Checkpoints of commit 6af1ff3 name the records by ``pymc_tempering.step_methods.exchange``
    modules (tuning, explorers, variational, auto) and hold the variational leg's state: they
    continue on the engine (``data/pre_engine_*.nc``: 30 draws after 400 or 500 tuning, seed 3,
    on the model above; ``*_full_x.npy``: the same run with 60 draws, uninterrupted, by
    6af1ff3). ``variational_mala``: ExchangeMC(n_rungs=4, reference="variational",
    explorer="mala", proposal="dense"); ``auto_adaptive``: ExchangeMC(n_rungs=4,
    ladder="adaptive"), switched to MALA while tuning."""
    idata = xr.open_datatree(DATA / f"pre_engine_{name}.nc")
    with _model():
        more = pmt.continue_sampling(idata, draws=30, progressbar=False)
    full = np.load(DATA / f"pre_engine_{name}_full_x.npy")
    np.testing.assert_array_equal(more.posterior.x.values, full)
