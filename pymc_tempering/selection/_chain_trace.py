"""PyMC's NDArray trace for the compare_models workers, given once to ``pm.sample``.

``pm.sample(trace=...)`` copies the trace it is given for each chain (``copy.copy``), and a
copy of PyMC's ``NDArray`` shares its dict of arrays with the original, so that with more than
one chain the chains write into each other's draws. :class:`ChainTrace` copies into a new,
empty trace with the same point function instead. Array-valued stats need nothing here: the
step methods declare them as rows of one array (:mod:`pymc_tempering.step_methods._record`).
"""

from pymc.backends.ndarray import NDArray

__all__ = ["ChainTrace"]


class ChainTrace(NDArray):
    """NDArray trace (same arguments) whose copy for each chain is a new, empty one."""

    def __copy__(self):
        return type(self)(
            model=self.model,
            vars=self.vars,
            fn=self.fn,
            var_shapes=self.var_shapes,
            var_dtypes=self.var_dtypes,
        )
