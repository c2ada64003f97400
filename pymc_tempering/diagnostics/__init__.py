"""Diagnostics of a tempering run: swap rates, round trips, communication barrier, summary.

Everything here reads ExchangeMC's per-draw sampler stats through
:func:`pymc_tempering.trace.tempering_dataset` (dims ``rung`` / ``rung_pair``, coordinate ``beta``)
and returns labelled xarray objects, one idea per module:

- :mod:`.round_trip`: round trips of the replicas (:func:`round_trips`), with the NumPy cores
  :func:`round_trip_counts` and :func:`round_trip_events` that replay ExchangeMC's compiled
  round-trip rule on a ``rung_replica`` trace;
- :mod:`.barrier`: swap rates of neighbouring rungs (:func:`swap_rates`) and the communication
  barrier (:func:`global_barrier`, with :func:`suggested_n_rungs` from
  :mod:`pymc_tempering.ladder`);
- :mod:`.summary`: all of it per rung, pair and chain in one Dataset (:func:`tempering_summary`);
- :mod:`.tempering_group`: the DataTree with a ``tempering`` group (:func:`add_tempering_group`);
- :mod:`.sgld`: SGLD's sampling threshold and step-size weighted means;
- :func:`local_moves` (from :mod:`pymc_tempering.trace`): the local move of every draw by
  name, from the int8 stat ``explorer``.

Other modules of the package import from those modules, not from here.
"""

from pymc_tempering._util.lazy import lazy_namespace

_NAMES = {
    "tempering_summary": "diagnostics.summary:tempering_summary",
    "swap_rates": "diagnostics.barrier:swap_rates",
    "global_barrier": "diagnostics.barrier:global_barrier",
    "round_trips": "diagnostics.round_trip:round_trips",
    "round_trip_counts": "diagnostics.round_trip:round_trip_counts",
    "round_trip_events": "diagnostics.round_trip:round_trip_events",
    "add_tempering_group": "diagnostics.tempering_group:add_tempering_group",
    "tempering_dataset": "trace:tempering_dataset",
    "local_moves": "trace:local_moves",
    "suggested_n_rungs": "ladder:suggested_n_rungs",
    "sampling_threshold_crossing": "diagnostics.sgld:sampling_threshold_crossing",
    "step_size_weighted_mean": "diagnostics.sgld:step_size_weighted_mean",
}

__getattr__, __dir__, __all__ = lazy_namespace(__name__, _NAMES)
