"""PyMC's NDArray trace, with array-valued sampler stats recorded into one array per stat.

PyMC keeps a stat declared ``(object, None)`` (ExchangeMC's per-rung and per-pair stats, the
resume checkpoint bytes) as an object array holding one small array per draw, and turns it
into a ``(draws, ...)`` array with ``np.vstack`` when it builds the DataTree: ~0.2 s of a
default ExchangeMC run's (256 rungs, 8 chains x 1250 draws) ~0.3 s conversion, for every
model of :func:`pymc_tempering.selection.compare_models`. :class:`ChainTrace` writes each such
value into the row of a ``(draws, *shape)`` array of the first draw's shape and dtype instead,
so that PyMC's conversion finds a numeric array and stacks nothing: the same DataTree (values,
dtypes, shapes). A value of another shape, dtype or kind than the first draw's turns the stat
back into PyMC's object array (the rows recorded so far as its elements), so that the result is
PyMC's in every case.
"""

import numpy as np
from pymc.backends.ndarray import NDArray

__all__ = ["ChainTrace"]


class ChainTrace(NDArray):
    """NDArray trace (same arguments) whose array-valued stats are stacked as they are recorded;
    every chain's copy is a ChainTrace too."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._stacked = set()  # (sampler index, stat name) kept as (draws, *shape) arrays

    def __copy__(self):  # PyMC copies the given trace for each chain
        return type(self)(
            model=self.model,
            vars=self.vars,
            fn=self.fn,
            var_shapes=self.var_shapes,
            var_dtypes=self.var_dtypes,
        )

    def setup(self, draws, chain, sampler_vars=None) -> None:
        if self._stacked:  # a second setup concatenates 1-D object arrays: give PyMC its own
            self._unstack_all()
        super().setup(draws, chain, sampler_vars)

    def record(self, point, sampler_stats=None, *, in_warmup: bool) -> None:
        if sampler_stats is not None and self._stats is not None:
            for index, (data, values) in enumerate(zip(self._stats, sampler_stats, strict=True)):
                for name, value in values.items():
                    self._prepare(index, data, name, value)
        super().record(point, sampler_stats, in_warmup=in_warmup)

    def _slice(self, idx: slice):
        sliced = super()._slice(idx)
        sliced._stacked = set(self._stacked)
        return sliced

    def _prepare(self, index, data, name, value) -> None:
        """Make ``data[name][self.draw_idx] = value`` store what PyMC's object array would."""
        column = data[name]
        if (index, name) in self._stacked:
            if not (
                type(value) is np.ndarray
                and value.shape == column.shape[1:]
                and value.dtype == column.dtype
            ):
                self._unstack(index, data, name)
        elif (
            self.draw_idx == 0
            and column.dtype == object
            and column.ndim == 1
            and type(value) is np.ndarray
            and value.ndim >= 1
            and value.dtype != object
        ):
            data[name] = np.empty((column.shape[0], *value.shape), dtype=value.dtype)
            self._stacked.add((index, name))

    def _unstack(self, index, data, name) -> None:
        """``data[name]`` as PyMC's object array: one array per recorded draw."""
        stacked = data[name]
        column = np.zeros(stacked.shape[0], dtype=object)
        for draw in range(self.draw_idx):
            column[draw] = stacked[draw].copy()
        data[name] = column
        self._stacked.discard((index, name))

    def _unstack_all(self) -> None:
        for index, name in list(self._stacked):
            self._unstack(index, self._stats[index], name)
