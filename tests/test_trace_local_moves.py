"""trace.local_moves: the int8 stat ``explorer`` read as names, and the docs that promise
names say where to read them."""

import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from helpers import exchange_run

import pymc_tempering as pmt
from pymc_tempering.trace import EXCHANGE_STATS, EXPLORER_STAT, LOCAL_MOVES, explorer_run

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _stats(codes):
    codes = np.asarray(codes, dtype=np.int8)
    return xr.Dataset(
        {EXPLORER_STAT: (("chain", "draw"), codes)},
        coords={"chain": [0, 1], "draw": np.arange(codes.shape[1])},
    )


def test_codes_are_read_as_the_names_of_local_moves():
    codes = [[0, 0, 3], [5, 2, 1]]
    names = pmt.diagnostics.local_moves(_stats(codes))
    assert names.dims == ("chain", "draw") and names.name == EXPLORER_STAT
    assert names.values.tolist() == [
        ["rwm+diag", "rwm+diag", "mala+dense"],
        ["independent+dense", "mala+diag", "rwm+dense"],
    ]
    assert names["draw"].values.tolist() == [0, 1, 2]


def test_an_exchange_run_stores_codes_and_they_read_as_its_move():
    idata = exchange_run()
    stat = idata["sample_stats"][EXPLORER_STAT]
    assert stat.dtype == np.int8 == EXCHANGE_STATS[EXPLORER_STAT][0]  # codes, not strings
    names = pmt.diagnostics.local_moves(idata)
    assert names.shape == stat.shape
    assert set(np.unique(names.values)) == set(explorer_run(idata).split(", "))
    assert set(np.unique(names.values)) <= set(LOCAL_MOVES)


@pytest.mark.parametrize("codes", [[[0, 6]], [[-1, 0]]])
def test_a_code_outside_local_moves_is_refused(codes):
    stats = _stats(np.repeat(codes, 2, axis=0))
    with pytest.raises(ValueError, match="outside LOCAL_MOVES"):
        pmt.diagnostics.local_moves(stats)


def test_stats_without_the_explorer_stat_are_refused_by_name():
    with pytest.raises(ValueError, match="No `explorer` stat"):
        pmt.diagnostics.local_moves(xr.Dataset({"accept": (("chain", "draw"), [[0.5]])}))


def test_every_page_that_names_the_stat_says_it_holds_codes_and_where_names_are():
    """A page that writes ``stat `explorer``` next to move names promises strings unless it
    says how the names are read (docs and stats agree)."""
    pages = [p for p in DOCS.rglob("*.md") if "_build" not in p.parts]
    found = 0
    for page in pages:
        text = page.read_text()
        for match in re.finditer(r"stat `explorer`", text):
            found += 1
            paragraph = text[match.start() : text.find("\n\n", match.start())]
            assert "local_moves" in paragraph and "code" in paragraph, (page.name, paragraph)
    assert found >= 2  # the guide and decision 110
