"""tempering_dataset reads every form of an ExchangeMC result (the DataTree, its sample_stats
node or Dataset, its own output), explains every other input, and labels padded ladders."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from helpers import SAMPLE_KWARGS, exchange_run
from targets import lecture_data, lecture_model

import pymc_tempering as pmt
from pymc_tempering.trace import one_chain, tempering_dataset


@pytest.fixture(scope="module")
def idata():
    return exchange_run()


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


def raw_stats(betas_per_chain, n_draws=3):
    """PyMC-style sample stats with ExchangeMC's padding: each chain's ladder is padded with
    NaN (replica ids with -1) up to the longest, as ``adapt_n_rungs=True`` records them."""
    width = max(len(b) for b in betas_per_chain) + 1  # one rung no chain uses
    n_chains = len(betas_per_chain)
    betas = np.full((n_chains, n_draws, width), np.nan)
    replica = np.full((n_chains, n_draws, width), -1)
    for c, ladder in enumerate(betas_per_chain):
        betas[c, :, : len(ladder)] = ladder
        replica[c, :, : len(ladder)] = np.arange(len(ladder))
    loglik = np.where(np.isnan(betas), np.nan, -1.0 - betas)
    pairs = np.where(np.isnan(betas[..., 1:]), np.nan, 0.5)

    def var(name, values):
        return (("chain", "draw", f"{name}_dim_0"), values)

    return xr.Dataset(
        {
            "betas": var("betas", betas),
            "rung_loglik": var("rung_loglik", loglik),
            "rung_replica": var("rung_replica", replica),
            "swap_accept": var("swap_accept", pairs),
        },
        coords={"chain": np.arange(n_chains), "draw": np.arange(n_draws)},
    )


def test_padded_ladders_are_labelled_and_one_chain_drops_the_padding():
    ds = tempering_dataset(raw_stats([[0.0, 0.3, 0.6, 1.0], [0.0, 0.5, 1.0]]))
    assert ds.sizes["rung"] == 4 and ds.sizes["rung_pair"] == 3  # the unused 5th rung is gone
    assert ds["beta"].dims == ("chain", "rung")
    np.testing.assert_array_equal(ds["beta"].values[1], [0.0, 0.5, 1.0, np.nan])
    np.testing.assert_array_equal(ds["beta_lower"].values[1], [0.0, 0.5, np.nan])
    np.testing.assert_array_equal(ds["beta_upper"].values[1], [0.5, 1.0, np.nan])
    short = one_chain(ds, 1)
    assert short.sizes["rung"] == 3 and short.sizes["rung_pair"] == 2
    np.testing.assert_array_equal(short["beta"].values, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(short["rung_replica"].values[0, 0], [0, 1, 2])
    assert np.isfinite(short["rung_loglik"].values).all()
    long = one_chain(ds, 0)
    assert long.sizes["rung"] == 4 and long["beta"].dims == ("rung",)


def test_a_shared_ladder_has_one_beta_and_a_moving_one_is_refused():
    ds = tempering_dataset(raw_stats([[0.0, 0.5, 1.0], [0.0, 0.5, 1.0]]))
    assert ds["beta"].dims == ("rung",) and ds.sizes["rung"] == 3
    xr.testing.assert_identical(one_chain(ds, 1), ds.isel(chain=[1]))
    moving = raw_stats([[0.0, 0.5, 1.0]])
    moving["betas"][0, 1, 1] = 0.4
    with pytest.raises(ValueError, match="ladder changes between recorded draws"):
        tempering_dataset(moving)


# -- ExchangeMC's stat schema, declared once here ------------------------------------------------
def test_the_sampler_emits_the_schema_declared_here(idata):
    """ExchangeMC's stats are EXCHANGE_STATS (plus the resume checkpoint), and the DataTree
    has each with its declared kind: per draw, per rung or per pair."""
    from pymc_tempering.resume.checkpoint import STATE_STAT
    from pymc_tempering.step_methods.exchange.sampler import ExchangeMC
    from pymc_tempering.trace import (
        EXCHANGE_STATS,
        EXPLORER_SCORE_STAT,
        LADDER_STAT,
        PAIR_STATS,
        RUNG_STATS,
    )

    assert ExchangeMC.stats_dtypes_shapes == {**EXCHANGE_STATS, STATE_STAT: (object, None)}
    stats = idata.sample_stats
    # PyMC records `tune` as the split into warmup_sample_stats, not as a variable; an
    # explorer="auto" run (the default) declares its decision's score too
    auto = {EXPLORER_SCORE_STAT}
    assert set(stats.data_vars) == set(EXCHANGE_STATS) - {"tune"} | {STATE_STAT} | auto
    assert stats[EXPLORER_SCORE_STAT].dtype == np.float64
    for name in (LADDER_STAT, *RUNG_STATS):
        assert stats[name].sizes[f"{name}_dim_0"] == 8, name
    for name in PAIR_STATS:
        assert stats[name].sizes[f"{name}_dim_0"] == 7, name
    assert stats["evidence_ladder"].dtype == bool


def test_evidence_ladder_run_reads_the_stat(idata):
    from pymc_tempering.trace import evidence_ladder_run

    assert evidence_ladder_run(idata) is False
    stats = idata.sample_stats.to_dataset()
    flagged = stats.assign(evidence_ladder=xr.ones_like(stats["evidence_ladder"]))
    assert evidence_ladder_run(flagged) is True
    assert evidence_ladder_run(stats.drop_vars("evidence_ladder")) is None
