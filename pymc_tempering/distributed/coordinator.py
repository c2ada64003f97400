"""The coordinator of a distributed tempered run: swaps, tuning and the record, no densities.

Each sweep it sends every block the betas and proposal scales of its replicas, gathers their
log-likelihoods (one float per replica), decides the deterministic even/odd swaps
(:func:`pymc_tempering.engine.swap.propose_swaps`) and re-assigns the rungs:
the betas move between replicas, the states stay on their workers (Pigeons.jl's scheme).
The point of the replica on the ``beta = 1`` rung is fetched with the next sweep's call, so
only that point travels per draw. Every ``checkpoint_every`` sweeps, and at the last, the
blocks send their states with the sweep's answer: with :class:`SweepState` they make a
snapshot from which the rest of the run is reproducible (:mod:`.checkpoint`).
"""

import copy
import time
from dataclasses import dataclass, field

import numpy as np

from pymc_tempering.kernels.rules import NONE, update_round_trips
from pymc_tempering.kernels.rwm import optimal_accept, robbins_monro_scaling
from pymc_tempering.engine.swap import propose_swaps, swap_pairs

__all__ = [
    "RunRecord",
    "SweepState",
    "Timing",
    "WorkerLost",
    "run_sweeps",
    "complete_last_draw",
    "GAIN_EXPONENT",
]

GAIN_EXPONENT = 0.6  # Robbins-Monro gain (t + 1) ** -0.6, as ExchangeMC's tuning


class WorkerLost(RuntimeError):
    """A block's worker failed mid-run; ``record`` keeps every finished draw and the latest
    complete snapshot."""

    def __init__(self, message, record):
        super().__init__(message)
        self.record = record


@dataclass
class Timing:
    """Seconds summed over sweeps: whole rounds, the slowest block's compute, the coordinator."""

    rounds: float = 0.0
    compute: float = 0.0
    coordinator: float = 0.0
    sweeps: int = 0

    def per_sweep_ms(self) -> dict:
        n = max(self.sweeps, 1)
        return {
            "round_ms": 1e3 * self.rounds / n,
            "worker_compute_ms": 1e3 * self.compute / n,
            "coordinator_ms": 1e3 * self.coordinator / n,
        }


@dataclass
class SweepState:
    """What the coordinator carries from one sweep to the next; the replicas aside, the whole
    state of a run. ``sweep``: sweeps done (tuning ones included)."""

    sweep: int
    rung_of: np.ndarray  # the rung of each replica
    log_scaling: np.ndarray  # the proposal scale of each rung
    last_end: np.ndarray  # the end of the ladder each replica last reached (round trips)
    swap_sum: float
    swap_count: int
    round_trips: int
    swap_rng: np.random.Generator

    @classmethod
    def start(cls, n_rungs, n_params, swap_rng):
        return cls(
            sweep=0,
            rung_of=np.arange(n_rungs),
            log_scaling=np.full(n_rungs, np.log(2.38 / np.sqrt(n_params))),
            last_end=np.full(n_rungs, NONE, dtype=np.int64),
            swap_sum=0,
            swap_count=0,
            round_trips=0,
            swap_rng=swap_rng,
        )


@dataclass
class RunRecord:
    """Per recorded draw: the ``beta = 1`` point and ExchangeMC's stats (raw arrays); the
    latest complete ``snapshot`` (``{"coordinator": SweepState, "replicas": dict}``)."""

    betas: np.ndarray
    points: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    timing: Timing = field(default_factory=Timing)
    snapshot: dict | None = None

    def add(self, **values):
        for name, value in values.items():
            self.stats.setdefault(name, []).append(value)

    @property
    def n_draws(self) -> int:
        return len(self.points)


def _pair_row(n_pairs, lower, values):
    row = np.full(n_pairs, np.nan)
    row[lower] = values
    return row


def run_sweeps(
    actors, blocks, betas, state, *, tune, stop, record_from, n_params, on_sweep=None,
    checkpoint_every=100,
):  # fmt: skip
    """Run sweeps ``state.sweep, ..., stop - 1`` (``state`` is updated in place); return the
    :class:`RunRecord` of the sweeps from ``record_from`` on (none of them tuning sweeps).

    ``on_sweep(sweep, timing, stats)`` is called after every sweep (the cost check, a progress
    bar). A failed block raises :class:`WorkerLost` carrying the draws finished so far.
    """
    n_rungs, n_pairs = betas.size, betas.size - 1
    target = optimal_accept(n_params)
    record = RunRecord(betas=betas.copy())
    s = state
    top = int(np.argsort(s.rung_of)[-1])  # the replica on the beta = 1 rung
    for sweep in range(s.sweep, stop):
        started = time.perf_counter()
        send = top if sweep - 1 >= record_from else -1  # the point of the previous draw
        snapshot = (sweep + 1) % checkpoint_every == 0 or sweep == stop - 1
        try:  # a lost worker fails the call or its result
            calls = [
                actor.sweep(
                    betas[s.rung_of[b]],
                    s.log_scaling[s.rung_of[b]],
                    send if send in b else -1,
                    snapshot,
                )  # fmt: skip
                for actor, b in zip(actors, blocks, strict=True)
            ]
            results = [call.result() for call in calls]
        except Exception as err:  # noqa: BLE001 a dead worker raises many types
            raise WorkerLost(
                f"A worker failed at sweep {sweep} ({type(err).__name__}: {err}).", record
            ) from err
        received = time.perf_counter()
        loglik, accept_prob, accepted = (np.empty(n_rungs), np.empty(n_rungs), np.empty(n_rungs))
        for b, (ll, prob, acc, point, _, _) in zip(blocks, results, strict=True):
            loglik[b], accept_prob[b], accepted[b] = ll, prob, acc
            if point is not None:
                record.points.append(point)
        replica_on = np.argsort(s.rung_of)  # who moved on each rung this sweep
        rung_loglik, rung_accept = loglik[replica_on], accept_prob[replica_on]
        top_accepted = float(accepted[replica_on[-1]])
        lower = swap_pairs(n_rungs, sweep, "deo", None)
        log_u = np.log(s.swap_rng.random(lower.size))
        order, swap_prob, swapped = propose_swaps(betas, rung_loglik, lower, None, log_u)
        replica_on, rung_loglik = replica_on[order], rung_loglik[order]
        s.rung_of[replica_on] = np.arange(n_rungs)
        if sweep < tune:
            gain = (sweep + 1) ** -GAIN_EXPONENT
            s.log_scaling = robbins_monro_scaling(s.log_scaling, rung_accept, target, gain)
        if sweep == tune:  # tuning over: the counters restart (ExchangeMC.stop_tuning)
            s.swap_sum = s.swap_count = s.round_trips = 0
            s.last_end[:] = NONE
        s.swap_sum, s.swap_count = s.swap_sum + swap_prob.sum(), s.swap_count + swap_prob.size
        s.round_trips += update_round_trips(replica_on.astype(np.int64), s.last_end)
        s.sweep = sweep + 1
        top = int(replica_on[-1])
        stats = {
            "tune": sweep < tune,
            "accept": rung_accept[-1],
            "accepted": top_accepted,
            "scaling": float(np.exp(s.log_scaling[-1])),
            "swap_rate": s.swap_sum / max(s.swap_count, 1),
            "round_trips": s.round_trips,
        }
        if sweep >= record_from:
            record.add(
                **stats,
                evidence_ladder=False,
                explorer=0,  # LOCAL_MOVES[0], the random walk with one scale per rung
                betas=betas.copy(),
                rung_loglik=rung_loglik.copy(),
                rung_accept=rung_accept.copy(),
                rung_scaling=np.exp(s.log_scaling),
                rung_replica=replica_on.astype(np.int64),
                swap_accept=_pair_row(n_pairs, lower, swap_prob),
                swap_accepted=_pair_row(n_pairs, lower, swapped.astype(float)),
            )
        if snapshot:
            record.snapshot = {"coordinator": copy.deepcopy(s), "replicas": _merge(blocks, results)}
        done = time.perf_counter()
        record.timing.rounds += received - started
        record.timing.compute += max(r[4] for r in results)
        record.timing.coordinator += done - received
        record.timing.sweeps += 1
        if on_sweep is not None:
            on_sweep(sweep, record.timing, stats)
    if stop - 1 >= record_from and record.snapshot is not None:
        # the last draw's point: its replica's state in the final snapshot
        record.points.append(record.snapshot["replicas"]["x"][top].copy())
    return record


def _merge(blocks, results):
    """The blocks' snapshots as one, rows in replica order."""
    n_rungs = sum(b.size for b in blocks)
    parts = [r[5] for r in results]
    merged = {"x": np.empty((n_rungs, parts[0]["x"].shape[1]))}
    merged["logprior"], merged["loglik"] = np.empty(n_rungs), np.empty(n_rungs)
    merged["rngs"] = [None] * n_rungs
    for b, part in zip(blocks, parts, strict=True):
        for name in ("x", "logprior", "loglik"):
            merged[name][b] = part[name]
        for r, rng in zip(b, part["rngs"], strict=True):
            merged["rngs"][r] = rng
    return merged


def complete_last_draw(record, record_from):
    """After a failure: the last recorded draw's point from the snapshot taken at its sweep
    where its call never came back (it would have brought it), then the stats of draws
    without a point dropped, so every kept draw is whole and the snapshot is not after it."""
    snap = record.snapshot
    n_stats = len(record.stats.get("accept", []))
    if (
        snap is not None
        and n_stats == record.n_draws + 1
        and snap["coordinator"].sweep - 1 == record_from + record.n_draws
    ):
        top = int(np.argsort(snap["coordinator"].rung_of)[-1])
        record.points.append(snap["replicas"]["x"][top].copy())
    for name, values in record.stats.items():
        record.stats[name] = values[: record.n_draws]
