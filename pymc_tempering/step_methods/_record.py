"""How a step method declares its sampler stats to PyMC's default trace.

A step declares each stat twice: ``stats_dtypes_shapes`` (name -> dtype and shape, read by
PyMC's ``ZarrTrace`` and mcbackend) and ``stats_dtypes`` (name -> dtype,
read by PyMC's default ``NDArray`` trace, which stores each stat of a chain as
``np.zeros(draws, dtype)``). An array stat declared ``(object, None)`` is then one array
object per draw, which PyMC stacks (``np.vstack``) when the run is read
(``BaseTrace.get_sampler_stats``). Where the stat has the same length ``n`` on every draw, the
NumPy subarray dtype ``(dtype, (n,))`` makes the same ``np.zeros`` a ``(draws, n)`` array
whose rows PyMC writes in place, and reads as it is: the same values, dims and DataTree, with
no object per draw and no stacking (tests/step_methods/test_record.py; the per-draw cost is in
``benchmarks/bench_per_draw.py``). The same lengths go into the step object's
``stats_dtypes_shapes`` (:func:`declared_shapes`), from which ``ZarrTrace`` and mcbackend
allocate (docs/decisions/153-per-draw-path.md).
"""

import numpy as np

__all__ = ["declared_shapes", "record_dtypes"]


def record_dtypes(stats_dtypes_shapes: dict, fixed: dict) -> dict:
    """PyMC's ``stats_dtypes`` entry for ``stats_dtypes_shapes``, each stat named in ``fixed``
    (``name -> (element dtype, length)``, the length the step emits on every draw) as the
    subarray dtype ``(element dtype, (length,))``; the others, and those of length 0, as
    declared.

    Raises ``ValueError`` for a name in ``fixed`` that is not declared as an array stat
    ``(object, None)``: a stat of fixed length must be one the step already emits as an array.
    """
    out = {name: dtype for name, (dtype, _) in stats_dtypes_shapes.items()}
    for name, (element, length) in fixed.items():
        declared = stats_dtypes_shapes.get(name)
        if declared is None or np.dtype(declared[0]) != np.dtype(object):
            raise ValueError(
                f"Stat {name!r} is given a fixed length but is declared {declared!r} in "
                "stats_dtypes_shapes; declare it (object, None), as PyMC's array stats are."
            )
        if int(length) < 0:
            raise ValueError(f"Stat {name!r}: a length must be >= 0, got {length}.")
        if int(length) > 0:  # NumPy allocates a (draws,) array for a (dtype, (0,)) subarray
            out[name] = np.dtype((element, (int(length),)))
    return out


def declared_shapes(stats_dtypes_shapes: dict, stats_dtypes: dict) -> dict:
    """``stats_dtypes_shapes`` with each stat that :func:`record_dtypes` made a subarray dtype
    (``stats_dtypes``, its result) declared ``(element dtype, [length])``: what PyMC's
    ``ZarrTrace`` and mcbackend allocate from, one ``(chains, draws, length)`` array.
    ``(object, None)`` gives them an array of objects, and ``ZarrTrace`` then fails at its
    first write of a stacked ``(draws, length)`` buffer."""
    out = dict(stats_dtypes_shapes)
    for name, dtype in stats_dtypes.items():
        if np.dtype(dtype).shape:
            out[name] = (np.dtype(dtype).base, list(np.dtype(dtype).shape))
    return out
