"""The model store's file format: a stored run reads back identical to what was sampled (values,
dtypes, attributes), whichever compression this HDF5 offers, and a read-back run can be
continued and gives the same evidence as the one in memory."""

import warnings

import netCDF4
import numpy as np
import pymc as pm
import pytest
import selection_models as sm
import xarray as xr

from pymc_tempering import marginal_likelihood
from pymc_tempering.evidence import EvidenceWarning
from pymc_tempering.evidence.tempered import estimate_evidence
from pymc_tempering.resume import continue_sampling
from pymc_tempering.selection import _store
from pymc_tempering.selection._store import ModelStore, numeric_encoding

SETTINGS = {"n_rungs": 8, "draws": 60, "tune": 60, "chains": 2}


@pytest.fixture(scope="module")
def sampled():
    model = sm.lecture_model(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        result, idata = marginal_likelihood(
            model, random_seed=7, return_idata=True, progressbar=False, cores=1, **SETTINGS
        )
    return model, result, idata


def record(name="m"):
    return {"model_name": name, "key": "k" * 64, "seed": "1", "wall_time": 1.5,
            "min_swap_accept": 0.3, "round_trips": 4, "timings": {"store": 0.1}}  # fmt: skip


def save_and_read(tmp_path, idata, result):
    store = ModelStore(tmp_path)
    path = store.save(idata, result, record())
    return path, xr.open_datatree(path).load()


def filters(path, group, var):
    with netCDF4.Dataset(path) as root:
        node = root if group == "/" else root[group.strip("/")]
        return node[var].filters()


@pytest.mark.parametrize("encoding", ["default", "fallback"])
def test_stored_run_reads_back_identical(sampled, tmp_path, monkeypatch, encoding):
    """Every group and variable, with its dtype and attributes, comes back as sampled; the
    per-rung stats are compressed (Zstandard where this HDF5 has it, else zlib)."""
    _, result, idata = sampled
    if encoding == "fallback":
        monkeypatch.setattr(_store, "numeric_encoding", lambda: dict(_store.FALLBACK_ENCODING))
    path, back = save_and_read(tmp_path, idata, result)
    assert all(np.array_equal(back.attrs[k], v) for k, v in idata.attrs.items())
    for node in idata.subtree:
        if node.path != "/":  # the root also gets the run's record (below)
            assert back[node.path].to_dataset().identical(node.to_dataset()), node.path
        for var, values in node.dataset.data_vars.items():
            assert back[node.path][var].dtype == values.dtype, (node.path, var)
    assert back["evidence"].to_dataset().identical(result)
    used = filters(path, "/sample_stats", "rung_loglik")
    if encoding == "fallback" or "zstd" not in numeric_encoding().get("compression", ""):
        assert used["zlib"] and not used["zstd"]
    else:
        assert used["zstd"] and not used["zlib"]
    # incompressible stats are written as they are (still read back identical, above)
    for var in _store.UNCOMPRESSED_VARIABLES:
        used = filters(path, "/sample_stats", var)
        assert not (used["zlib"] or used["zstd"] or used["shuffle"]), var
    # what a rerun reads is not compressed, so it never needs a filter plugin
    evidence_var = next(iter(result.data_vars))
    used = filters(path, "/evidence", evidence_var)
    assert not (used["zlib"] or used["zstd"] or used["shuffle"])
    loaded, attrs = ModelStore(tmp_path).load("m", "k" * 64)
    assert loaded.identical(result) and attrs["round_trips"] == 4


def test_zstd_is_available_with_the_declared_netcdf4():
    """The netCDF4 wheels ship the Zstandard filter: the store should not silently fall back."""
    assert numeric_encoding() == _store.NUMERIC_ENCODING


def test_read_back_run_gives_same_evidence_and_continues(sampled, tmp_path):
    """The estimators and continue_sampling work on the file as on the run in memory."""
    model, result, idata = sampled
    _, back = save_and_read(tmp_path, idata, result)
    back = xr.DataTree.from_dict({p: n.to_dataset() for p, n in back.subtree_with_keys
                                  if p != "evidence"})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct, again = estimate_evidence(idata), estimate_evidence(back)
        for field in ("ti", "ss"):
            xr.testing.assert_identical(getattr(direct, field), getattr(again, field))
        assert (direct.ti_problems, direct.ss_problems) == (again.ti_problems, again.ss_problems)
        longer = continue_sampling(idata, 20, model=model, progressbar=False)
        longer_back = continue_sampling(back, 20, model=model, progressbar=False)
    np.testing.assert_array_equal(longer.posterior.mu.values, longer_back.posterior.mu.values)
    assert longer.posterior.sizes["draw"] == SETTINGS["draws"] + 20


def test_key_changes_with_the_seed_and_with_pm_data_values():
    """A rerun with another random_seed, or after pm.set_data, must not be served the stored
    result: its key differs. The same model, name, settings and seed give the same key."""
    from pymc_tempering.selection._store import model_key, settings_digest

    def model_with_data():
        with pm.Model() as model:
            data = pm.Data("data", sm.X_OBS)
            mu = pm.Normal("mu", 0.0, 1.0)
            pm.Normal("x", mu, 1.0, observed=data)
        return model

    digest = settings_digest(SETTINGS)
    model = model_with_data()
    key = model_key(model, "m", digest, 1)
    assert model_key(model_with_data(), "m", digest, 1) == key
    assert model_key(model, "m", digest, 2) != key  # another seed
    assert model_key(model, "m", digest, None) != key
    with model:
        pm.set_data({"data": sm.X_OBS + 1.0})  # the same graph, other data values
    assert model_key(model, "m", digest, 1) != key
