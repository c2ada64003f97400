"""pymc_tempering.diagnostics.tempering_group: the DataTree gains a ``tempering`` group and
relabelled sample stats; the input is untouched, the result idempotent, ArviZ still reads it."""

import arviz as az
import numpy as np
import pytest
import xarray as xr
from helpers import N_RUNGS, exchange_run, padded_run

from pymc_tempering.diagnostics.summary import tempering_summary
from pymc_tempering.diagnostics.tempering_group import add_tempering_group
from pymc_tempering.trace import tempering_dataset


def test_tempering_group_reads_naturally():
    exchange_idata = exchange_run()
    before = set(exchange_idata.children)
    dt = add_tempering_group(exchange_idata)
    assert set(exchange_idata.children) == before  # input untouched
    group = dt["tempering"]
    top = group["rung_loglik"].sel(rung=N_RUNGS - 1)
    np.testing.assert_array_equal(top, exchange_idata.sample_stats["rung_loglik"][..., -1])
    assert float(group["beta"].sel(rung=N_RUNGS - 1)) == 1.0
    stats = dt.sample_stats
    assert not [d for d in stats.dims if str(d).endswith("_dim_0")]
    assert stats["swap_accept"].dims == ("chain", "draw", "rung_pair")
    np.testing.assert_array_equal(stats["rung_loglik"].sel(rung=0), group["rung_loglik"][..., 0])
    np.testing.assert_array_equal(stats["accept"], exchange_idata.sample_stats["accept"])
    again = add_tempering_group(dt)  # idempotent
    xr.testing.assert_identical(again["sample_stats"].to_dataset(), stats.to_dataset())
    xr.testing.assert_identical(again["tempering"].to_dataset(), group.to_dataset())
    # everything downstream still works on the augmented tree
    assert az.summary(dt).loc["mu", "r_hat"] < 1.05
    xr.testing.assert_allclose(tempering_summary(dt), tempering_summary(exchange_idata))
    with pytest.raises(TypeError):
        add_tempering_group(exchange_idata.sample_stats.to_dataset())


def test_tempering_group_of_chains_with_different_numbers_of_rungs():
    """adapt_n_rungs=True, chains on 6 and 5 rungs: PyMC's 64 padded columns are relabelled to
    the 6 rungs some chain used, and the summary reads the tree as it reads the run."""
    idata = padded_run()
    ds = tempering_dataset(idata)
    tree = add_tempering_group(idata)
    assert tree.sample_stats.sizes["rung"] == 6 and tree.sample_stats.sizes["rung_pair"] == 5
    np.testing.assert_array_equal(tree.sample_stats["rung_loglik"], ds["rung_loglik"])
    xr.testing.assert_allclose(tempering_summary(tree), tempering_summary(idata))
