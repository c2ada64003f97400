"""The coordinator of a distributed tempered run: swaps, tuning and the record, no densities.

Each sweep it sends every block the betas and proposal scales of its replicas, gathers their
log-likelihoods (one float per replica), decides the deterministic even/odd swaps
(:func:`pymc_tempering.step_methods.exchange.swap.propose_swaps`) and re-assigns the rungs:
the betas move between replicas, the states stay on their workers (Pigeons.jl's scheme).
The point of the replica on the ``beta = 1`` rung is fetched with the next sweep's call, so
only that point travels per draw.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from pymc_tempering.kernels.rules import NONE, update_round_trips
from pymc_tempering.kernels.rwm import optimal_accept, robbins_monro_scaling
from pymc_tempering.step_methods.exchange.swap import propose_swaps, swap_pairs

__all__ = ["RunRecord", "Timing", "WorkerLost", "run_sweeps", "GAIN_EXPONENT"]

GAIN_EXPONENT = 0.6  # Robbins-Monro gain (t + 1) ** -0.6, as ExchangeMC's tuning


class WorkerLost(RuntimeError):
    """A block's worker failed mid-run; ``record`` keeps every finished draw."""

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
class RunRecord:
    """Per recorded draw: the ``beta = 1`` point and ExchangeMC's stats (raw arrays)."""

    betas: np.ndarray
    points: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    timing: Timing = field(default_factory=Timing)

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


def run_sweeps(actors, blocks, betas, tune, draws, swap_rng, n_params, on_sweep=None):
    """Run ``tune + draws`` sweeps; return the :class:`RunRecord` of the ``draws`` after tuning.

    ``on_sweep(sweep, timing)`` is called after every sweep (the cost check, a progress bar).
    A failed block raises :class:`WorkerLost` carrying the draws finished so far.
    """
    n_rungs, n_pairs = betas.size, betas.size - 1
    rung_of = np.arange(n_rungs)  # the rung of each replica
    log_scaling = np.full(n_rungs, np.log(2.38 / np.sqrt(n_params)))  # per rung
    target = optimal_accept(n_params)
    last_end = np.full(n_rungs, NONE, dtype=np.int64)
    record = RunRecord(betas=betas.copy())
    swap_sum = swap_count = round_trips = 0
    top = -1  # the replica whose point the next call sends back
    for sweep in range(tune + draws):
        started = time.perf_counter()
        calls = [
            actor.sweep(betas[rung_of[b]], log_scaling[rung_of[b]], top if top in b else -1)
            for actor, b in zip(actors, blocks, strict=True)
        ]
        try:
            results = [call.result() for call in calls]
        except Exception as err:  # noqa: BLE001 a dead worker raises many types
            raise WorkerLost(
                f"A worker failed at sweep {sweep} ({type(err).__name__}: {err}); the "
                f"{record.n_draws} draws finished before it are kept in this error's `record`.",
                record,
            ) from err
        received = time.perf_counter()
        loglik, accept_prob, accepted = (np.empty(n_rungs), np.empty(n_rungs), np.empty(n_rungs))
        for b, (ll, prob, acc, point, _) in zip(blocks, results, strict=True):
            loglik[b], accept_prob[b], accepted[b] = ll, prob, acc
            if point is not None and sweep > tune:  # the top point of the previous draw
                record.points.append(point)
        replica_on = np.argsort(rung_of)  # who moved on each rung this sweep
        rung_loglik, rung_accept = loglik[replica_on], accept_prob[replica_on]
        top_accepted = float(accepted[replica_on[-1]])
        lower = swap_pairs(n_rungs, sweep, "deo", None)
        log_u = np.log(swap_rng.random(lower.size))
        order, swap_prob, swapped = propose_swaps(betas, rung_loglik, lower, None, log_u)
        replica_on, rung_loglik = replica_on[order], rung_loglik[order]
        rung_of[replica_on] = np.arange(n_rungs)
        if sweep < tune:
            gain = (sweep + 1) ** -GAIN_EXPONENT
            log_scaling = robbins_monro_scaling(log_scaling, rung_accept, target, gain)
        if sweep == tune:  # tuning over: the counters restart (ExchangeMC.stop_tuning)
            swap_sum = swap_count = round_trips = 0
            last_end[:] = NONE
        swap_sum, swap_count = swap_sum + swap_prob.sum(), swap_count + swap_prob.size
        round_trips += update_round_trips(replica_on.astype(np.int64), last_end)
        top = int(replica_on[-1])
        if sweep >= tune:
            record.add(
                tune=False,
                accept=rung_accept[-1],
                accepted=top_accepted,
                scaling=float(np.exp(log_scaling[-1])),
                swap_rate=swap_sum / max(swap_count, 1),
                round_trips=round_trips,
                evidence_ladder=False,
                explorer=0,  # LOCAL_MOVES[0], the random walk with one scale per rung
                betas=betas.copy(),
                rung_loglik=rung_loglik.copy(),
                rung_accept=rung_accept.copy(),
                rung_scaling=np.exp(log_scaling),
                rung_replica=replica_on.astype(np.int64),
                swap_accept=_pair_row(n_pairs, lower, swap_prob),
                swap_accepted=_pair_row(n_pairs, lower, swapped.astype(float)),
            )
        done = time.perf_counter()
        record.timing.rounds += received - started
        record.timing.compute += max(r[4] for r in results)
        record.timing.coordinator += done - received
        record.timing.sweeps += 1
        if on_sweep is not None:
            on_sweep(sweep, record.timing)
    if draws:
        owner = next(k for k, b in enumerate(blocks) if top in b)
        record.points.append(actors[owner].point(top).result())
    return record
