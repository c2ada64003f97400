"""tempering_dataset reads every form of an ExchangeMC result (the DataTree, its sample_stats
node or Dataset, its own output) and explains every other input."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from conftest import SAMPLE_KWARGS
from targets import lecture_data, lecture_model

import pymc_tempering as pmt
from pymc_tempering._trace import tempering_dataset


@pytest.fixture(scope="module")
def idata():
    with lecture_model(lecture_data()):
        return pm.sample(
            draws=400,
            tune=300,
            chains=2,
            cores=1,
            step=pmt.ExchangeMC(n_rungs=8),
            random_seed=7,
            **SAMPLE_KWARGS,
        )


def test_every_form_of_the_result_gives_the_same_dataset(idata):
    expected = tempering_dataset(idata)
    assert expected["rung_loglik"].dims == ("chain", "draw", "rung")
    assert expected["swap_accept"].dims == ("chain", "draw", "rung_pair")
    tree = pmt.add_tempering_group(idata)
    forms = {
        "sample_stats node": idata.sample_stats,  # an xarray.DataTree in ArviZ 1.x
        "sample_stats Dataset": idata.sample_stats.to_dataset(),
        "own output": expected,
        "tree with a tempering group": tree,
        "its tempering node": tree["tempering"],
        "its relabelled sample_stats": tree.sample_stats.to_dataset(),
    }
    assert isinstance(forms["sample_stats node"], xr.DataTree)
    for name, data in forms.items():
        got = tempering_dataset(data)
        assert set(got.data_vars) == set(expected.data_vars), name
        xr.testing.assert_equal(got.reset_coords(drop=False), expected.reset_coords(drop=False))


def test_evidence_and_diagnostics_take_the_sample_stats_node(idata):
    """Issue 18: thermodynamic_integration(idata.sample_stats) was refused."""
    node = idata.sample_stats
    full = pmt.thermodynamic_integration(idata)
    ti = pmt.thermodynamic_integration(node)
    assert float(ti.log_marginal_likelihood) == float(full.log_marginal_likelihood)
    xr.testing.assert_allclose(pmt.tempering_summary(node), pmt.tempering_summary(idata))


@pytest.mark.filterwarnings("ignore:`return_inferencedata=False` is deprecated:FutureWarning")
def test_a_multitrace_is_told_how_to_convert():
    with lecture_model(lecture_data()) as model:
        trace = pm.sample(
            draws=20,
            tune=10,
            chains=1,
            step=pmt.ExchangeMC(n_rungs=3),
            random_seed=1,
            return_inferencedata=False,
            **SAMPLE_KWARGS,
        )
    assert isinstance(trace, pm.backends.base.MultiTrace)
    for function in (tempering_dataset, pmt.tempering_summary, pmt.thermodynamic_integration):
        with pytest.raises(ValueError, match=r"MultiTrace.*pm\.to_inference_data\(trace\)") as err:
            function(trace)
        assert "return_inferencedata=True" in str(err.value)
    # and the advice works
    converted = pm.to_inference_data(trace, model=model)
    assert tempering_dataset(converted).sizes["rung"] == 3


@pytest.mark.parametrize(
    "data, kind",
    [
        (np.zeros((2, 10, 3)), "numpy.ndarray"),
        ({"sample_stats": None}, "builtins.dict"),
        (xr.DataArray(np.zeros(3)), "xarray.core.dataarray.DataArray"),
    ],
    ids=["ndarray", "dict", "DataArray"],
)
def test_other_inputs_are_named_in_the_error(data, kind):
    with pytest.raises(TypeError, match=rf"ExchangeMC.*got {kind}\."):
        tempering_dataset(data)


def test_trees_without_tempering_traces_are_explained(idata):
    with pytest.raises(
        ValueError, match=r"without a `sample_stats` group \(its groups: \['posterior'\]"
    ):
        tempering_dataset(xr.DataTree.from_dict({"posterior": idata.posterior.to_dataset()}))
    with pytest.raises(ValueError, match="No tempering traces.*ExchangeMC"):
        tempering_dataset(idata.posterior)  # a node, but not the sample stats
