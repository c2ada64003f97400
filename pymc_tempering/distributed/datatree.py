"""The DataTree of a distributed run, built as ``pm.sample`` builds its own.

The ``beta = 1`` points go through PyMC's NDArray trace (the recorded variables computed by
:func:`pymc_tempering.step_methods._compile.trace.compile_trace_function`) and
``pm.to_inference_data``, so the posterior, observed and constant data groups, dims and coords
are pm.sample's; the stats follow :data:`pymc_tempering.trace.EXCHANGE_STATS`, so every reader
of an ExchangeMC run (``thermodynamic_integration``, ``tempering_summary``) reads this one.
"""

import numpy as np
import pymc as pm
from pymc.backends.base import MultiTrace
from pymc.backends.ndarray import NDArray
from pymc.blocking import DictToArrayBijection, RaveledVars

from pymc_tempering.step_methods._compile.trace import compile_trace_function
from pymc_tempering.trace import EXCHANGE_STATS

__all__ = ["to_datatree"]


def to_datatree(model, record, tune, sampling_time, extra_attrs=None):
    """``record`` (:class:`pymc_tempering.distributed.coordinator.RunRecord`) as a DataTree
    with ``posterior``, ``sample_stats``, ``observed_data`` (and ``constant_data``)."""
    n_draws = record.n_draws
    fn, shapes, dtypes = compile_trace_function(model)
    trace = NDArray(model=model, fn=fn, var_shapes=shapes, var_dtypes=dtypes)
    trace.setup(n_draws, 0, [{name: dtype for name, (dtype, _) in EXCHANGE_STATS.items()}])
    point_map_info = DictToArrayBijection.map(
        {v.name: model.initial_point()[v.name] for v in model.value_vars}
    ).point_map_info
    for draw, flat in enumerate(record.points):
        point = DictToArrayBijection.rmap(RaveledVars(flat, point_map_info))
        point = {v.name: point[v.name] for v in model.value_vars}  # the order fn takes
        stats = {name: _value(record.stats[name][draw], dtype) for name, (dtype, _) in
                 EXCHANGE_STATS.items()}  # fmt: skip
        trace.record(point, [stats], in_warmup=False)
    trace.close()
    idata = pm.to_inference_data(MultiTrace([trace]), model=model)
    attrs = {"sampling_time": sampling_time, "tuning_steps": tune, **(extra_attrs or {})}
    for group in ("posterior", "sample_stats"):
        idata[group].attrs.update(attrs)
    return idata


def _value(value, dtype):
    return np.asarray(value) if dtype is object else dtype(value)
