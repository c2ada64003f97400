"""The order in which Sphinx reads the pages: the executed ones dealt across its parallel
read's chunks (docs/decisions/154-docs-build-order.md). Used by ``docs/conf.py``; pure Python,
so that the tests run it without Sphinx."""

__all__ = ["spread_executed"]


def spread_executed(docnames: list, executed: set, sizes: list, nproc: int) -> list:
    """``docnames`` reordered for a parallel read that splits them into contiguous chunks of
    ``sizes`` (Sphinx's ``make_chunks(docnames, nproc)``) and reads ``nproc`` chunks at a time:
    the ``executed`` pages are dealt in turn to the first chunks, as many as a multiple of
    ``nproc`` (so that no round of chunks holds them all and none is left to a last round run
    alone), and the plain pages fill the rest in their order. Every name once; unchanged for
    one process or no executed page."""
    pages = [d for d in docnames if d in executed]
    if nproc < 2 or not pages or sum(sizes) != len(docnames):
        return list(docnames)
    full = len(sizes) - len(sizes) % nproc or len(sizes)
    dealt = [pages[k::full] for k in range(full)] + [[] for _ in sizes[full:]]
    plain = [d for d in docnames if d not in executed][::-1]  # popped from the end: in order
    order = []
    for mine, size in zip(dealt, sizes, strict=True):
        order += mine
        order += [plain.pop() for _ in range(size - len(mine)) if plain]
    return order  # the plain slots number at least the plain pages: none is left
