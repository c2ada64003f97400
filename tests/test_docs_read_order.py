"""The docs build's read order (docs/_ext/read_order.py, decision 154): the executed pages
dealt across the parallel read's chunks, every page read once."""

import importlib.util
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "docs" / "_ext" / "read_order.py"
_spec = importlib.util.spec_from_file_location("read_order", PATH)
read_order = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(read_order)
spread = read_order.spread_executed

NAMES = [f"page{i:03d}" for i in range(217)]
EXECUTED = set(NAMES[100:123])  # 23 pages sorted next to each other, as the site's are
SIZES = [32] * 6 + [25]  # Sphinx's make_chunks(217 names, 2)


def _chunks(order, sizes):
    out, start = [], 0
    for size in sizes:
        out.append(order[start : start + size])
        start += size
    return out


def _executed_per_chunk(order, sizes, executed=EXECUTED):
    return [sum(d in executed for d in chunk) for chunk in _chunks(order, sizes)]


def test_each_page_is_read_once_and_the_plain_pages_keep_their_order():
    order = spread(NAMES, EXECUTED, SIZES, 2)
    assert sorted(order) == NAMES and len(order) == len(NAMES)
    plain = [d for d in order if d not in EXECUTED]
    assert plain == [d for d in NAMES if d not in EXECUTED]


def test_executed_pages_are_dealt_to_the_first_chunks_a_multiple_of_nproc():
    order = spread(NAMES, EXECUTED, SIZES, 2)
    # 7 chunks, 2 read at a time: the first 6 hold them (4, 4, 4, 4, 4, 3), the 7th none
    assert _executed_per_chunk(order, SIZES) == [4, 4, 4, 4, 4, 3, 0]
    # dealt in turn: chunk k holds the executed pages k, k + 6, k + 12, ... in their order
    pages = sorted(EXECUTED)
    first = [d for d in _chunks(order, SIZES)[1] if d in EXECUTED]
    assert first == pages[1::6]


def test_the_executed_pages_are_dealt_in_the_order_given():
    names = NAMES[::-1]  # Sphinx sorts them, and a handler before this one may reorder them
    order = spread(names, EXECUTED, SIZES, 2)
    assert [d for d in _chunks(order, SIZES)[0] if d in EXECUTED] == sorted(EXECUTED)[::-1][::6]


def test_three_processes_and_an_even_number_of_chunks():
    sizes = [30] * 7 + [7]  # 8 chunks for 3 processes: the first 6 take them
    order = spread(NAMES, EXECUTED, sizes, 3)
    assert sorted(order) == NAMES
    assert _executed_per_chunk(order, sizes) == [4, 4, 4, 4, 4, 3, 0, 0]
    sizes = [56, 56, 56, 49]  # 4 chunks for 2 processes: all four
    assert _executed_per_chunk(spread(NAMES, EXECUTED, sizes, 2), sizes) == [6, 6, 6, 5]


def test_fewer_chunks_than_processes_uses_them_all():
    sizes = [217]
    order = spread(NAMES, EXECUTED, sizes, 2)
    assert order[:23] == sorted(EXECUTED) and sorted(order) == NAMES


def test_more_executed_pages_than_a_chunk_holds_still_reads_each_page_once():
    executed = set(NAMES[:150])
    order = spread(NAMES, executed, SIZES, 2)
    assert sorted(order) == NAMES
    assert _executed_per_chunk(order, SIZES, executed) == [25] * 6 + [0]
    assert [d for d in order if d not in executed] == NAMES[150:]


@pytest.mark.parametrize("nproc", [0, 1])
def test_a_serial_read_keeps_the_order(nproc):
    assert spread(NAMES, EXECUTED, SIZES, nproc) == NAMES


def test_no_executed_page_or_sizes_that_do_not_cover_the_names_keep_the_order():
    assert spread(NAMES, set(), SIZES, 2) == NAMES
    assert spread(NAMES, EXECUTED, [32] * 6, 2) == NAMES


def test_sphinx_chunks_contiguous_runs_of_the_names():
    """What the order relies on: Sphinx's make_chunks cuts the list into contiguous runs."""
    parallel = pytest.importorskip("sphinx.util.parallel", reason="the docs extra installs it")
    chunks = parallel.make_chunks(NAMES, 2)
    assert [d for chunk in chunks for d in chunk] == NAMES
    assert [len(c) for c in chunks] == SIZES
