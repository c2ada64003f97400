"""PyMC's step from a point to a point for a step method that samples every free variable:
the flat vector and back without PyMC's general bookkeeping."""

import numpy as np
from pymc.blocking import DictToArrayBijection, RaveledVars

__all__ = ["FlatPointStep", "in_model_order", "same_state"]


def in_model_order(vars, model) -> list:
    """``vars`` (value variables of ``model``, in any order, repeats dropped) in the model's
    order: the order of PyMC's point, so of the flat state that :class:`FlatPointStep` and
    PyMC's ``DictToArrayBijection.map`` build from it. A step compiles its density on
    ``vars`` in this order, or ``vars=[b, a]`` would read ``a``'s value as ``b``'s."""
    chosen = set(vars)
    return [v for v in model.value_vars if v in chosen]


class FlatPointStep:
    """Mixin for an ``ArrayStepShared`` subclass (put it after ``Resumable``, before PyMC's
    class): when the step samples all of the model's free variables (no ``shared``), ``step``
    flattens the point and maps the new state back in the layout learnt at the first call,
    as ``DictToArrayBijection.map`` / ``rmap`` do, the same values in the same order, at
    about a third of their cost (2-3 us of a MALA draw that costs 30-50 us). The returned
    arrays are views of the state, which the samplers never change in place.

    The move itself is :meth:`_array_step` on the flat vector: ``astep`` by default; a
    subclass that works on plain arrays overrides it and skips ``RaveledVars`` both ways
    (ExchangeMC; ``benchmarks/bench_per_draw.py``). A point of one variable, the common case,
    is checked by its name, shape and dtype alone."""

    _flat_layout = None  # ((name, shape, dtype) in the point's order, point_map_info)
    _flat_one = None  # (name, shape, dtype) where the layout is of one variable

    def step(self, point):
        if self.shared:  # other step methods sample some variables: PyMC's general path
            return super().step(point)
        one = self._flat_one
        if one is not None and len(point) == 1:
            ((name, value),) = point.items()
            if (
                name == one[0]
                and np.shape(value) == one[1]
                and getattr(value, "dtype", None) == one[2]
            ):
                x, stats = self._array_step(value.ravel())
                return {name: x.reshape(one[1]).astype(one[2], copy=False)}, stats
        layout = self._flat_layout
        key = [(name, np.shape(value), np.asarray(value).dtype) for name, value in point.items()]
        if layout is None or layout[0] != key:  # first call, or other variables, shapes, dtypes
            q = DictToArrayBijection.map(point)
            self._flat_layout = layout = (key, q.point_map_info)
            self._flat_one = None  # the short path's where the point has one variable
            if len(key) == 1:
                ((name, shape, _, dtype),) = q.point_map_info
                self._flat_one = (name, shape, dtype)
            x = q.data
        else:  # several variables (one is the short path's)
            x = np.concatenate([v.ravel() for v in point.values()])
        data, stats = self._array_step(x)
        out, start = {}, 0
        for name, shape, size, dtype in layout[1]:
            out[name] = data[start : start + size].reshape(shape).astype(dtype, copy=False)
            start += size
        return out, stats

    def _array_step(self, x):
        """``(new flat state, stats)`` from the flat state ``x``: ``astep``'s, by default."""
        apoint, stats = self.astep(RaveledVars(x, self._flat_layout[1]))
        return apoint.data, stats


def same_state(x, cached) -> bool:
    """Whether the flat vector ``x`` PyMC hands back is the state ``cached`` a step returned:
    a view of it (what :class:`FlatPointStep` passes on), else equal entry by entry."""
    if x is cached:
        return True
    if x.base is cached and x.shape == cached.shape and x.strides == cached.strides:
        return True
    return bool((x == cached).all())
