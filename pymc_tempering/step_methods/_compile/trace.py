"""The point function of PyMC's NDArray trace (the recorded variables from the value variables),
compiled once per model so that every chain's trace shares it (PyMC compiles one per chain):
the many-model workers (:mod:`pymc_tempering.selection._worker`) pass such a trace to
``pm.sample``."""

import numpy as np
import pytensor

__all__ = ["compile_trace_function"]


def compile_trace_function(model):
    """The function NDArray compiles (``model.unobserved_value_vars`` of the value variables,
    positional), compiled for this model alone; the recorded shapes and dtypes."""
    inputs, outputs = list(model.value_vars), list(model.unobserved_value_vars)
    fn = model.compile_fn(
        outs=[pytensor.Out(v, borrow=True) for v in outputs],
        inputs=[pytensor.In(v, borrow=True) for v in inputs],
        point_fn=False,
        on_unused_input="ignore",
        trust_input=True,
    )
    point = model.initial_point()
    recorded = fn(*(point[v.name] for v in inputs))
    shapes = {v.name: np.shape(x) for v, x in zip(outputs, recorded, strict=True)}
    dtypes = {v.name: np.asarray(x).dtype for v, x in zip(outputs, recorded, strict=True)}
    return fn, shapes, dtypes
