"""Diagnostics of a tempering run: swap rates, round trips, communication barrier, summary.

Everything here reads ExchangeMC's per-draw sampler stats through
:func:`pymc_tempering.tempering_dataset` (dims ``rung`` / ``rung_pair``, coordinate ``beta``)
and returns labelled xarray objects, one idea per module:

- :mod:`.round_trip`: round trips of the replicas (:func:`round_trips`), with the NumPy cores
  :func:`round_trip_counts` and :func:`round_trip_events` that replay ExchangeMC's compiled
  round-trip rule on a ``rung_replica`` trace;
- :mod:`.barrier`: swap rates of neighbouring rungs (:func:`swap_rates`) and the communication
  barrier (:func:`global_barrier`, with :func:`suggested_n_rungs` from
  :mod:`pymc_tempering.ladder`);
- :mod:`.summary`: all of it per rung, pair and chain in one Dataset (:func:`tempering_summary`);
- :mod:`.tempering_group`: the DataTree with a ``tempering`` group (:func:`add_tempering_group`).

Other modules of the package import from those modules, not from here.
"""

from pymc_tempering.diagnostics.barrier import global_barrier, swap_rates
from pymc_tempering.diagnostics.round_trip import round_trip_counts, round_trip_events, round_trips
from pymc_tempering.diagnostics.summary import tempering_summary
from pymc_tempering.diagnostics.tempering_group import add_tempering_group
from pymc_tempering.ladder import suggested_n_rungs

__all__ = [
    "round_trip_counts",
    "round_trip_events",
    "round_trips",
    "swap_rates",
    "suggested_n_rungs",
    "global_barrier",
    "tempering_summary",
    "add_tempering_group",
]
