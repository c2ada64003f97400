"""The DataTree of a distributed run, built as ``pm.sample`` builds its own.

The ``beta = 1`` points go through PyMC's NDArray trace (the recorded variables computed by
:func:`pymc_tempering.step_methods._compile.trace.compile_trace_function`) and
``pm.to_inference_data``, so the posterior, observed and constant data groups, dims and coords
are pm.sample's; the stats follow :data:`pymc_tempering.trace.EXCHANGE_STATS`, so every reader
of an ExchangeMC run (``thermodynamic_integration``, ``tempering_summary``) reads this one.
"""

import numpy as np
import pymc as pm
import xarray as xr
from pymc.backends.base import MultiTrace
from pymc.backends.ndarray import NDArray
from pymc.blocking import DictToArrayBijection, RaveledVars

from pymc_tempering.distributed.checkpoint import GROUP
from pymc_tempering.step_methods._compile.trace import compile_trace_function
from pymc_tempering.trace import EXCHANGE_STATS

__all__ = ["to_datatree", "join_draws", "DRAW_GROUPS"]

DRAW_GROUPS = ("posterior", "sample_stats")  # the groups with chain and draw dims


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
    for group in DRAW_GROUPS:
        if group in idata.children:  # none without draws (a run that failed in tuning)
            idata[group].attrs.update(attrs)
    return idata


def _value(value, dtype):
    return np.asarray(value) if dtype is object else dtype(value)


def join_draws(first, second):
    """``first``'s draws followed by ``second``'s (a continuation of it), with ``second``'s
    checkpoint; the other groups from ``first`` where it has them. ``sampling_time`` adds up;
    the other attrs are ``second``'s (the latest cluster's timing)."""
    groups = {}
    for name in dict.fromkeys([*first.children, *second.children]):
        if name not in DRAW_GROUPS:
            newest = name == GROUP or name not in first.children
            groups[name] = (second if newest else first)[name].to_dataset()
            continue
        parts = [t[name].to_dataset() for t in (first, second) if name in t.children]
        if len(parts) == 1:
            groups[name] = parts[0]
            continue
        ds, more = parts
        more = more.assign_coords(draw=more["draw"].values + ds.sizes["draw"])
        joined = xr.concat([ds, more], dim="draw", data_vars="minimal", coords="minimal",
                           compat="override", join="override")  # fmt: skip
        time = float(ds.attrs.get("sampling_time", 0.0)) + float(more.attrs["sampling_time"])
        joined.attrs = {**ds.attrs, **more.attrs, "sampling_time": time}
        joined.attrs["tuning_steps"] = ds.attrs.get("tuning_steps", more.attrs["tuning_steps"])
        groups[name] = joined
    return xr.DataTree.from_dict(groups)
