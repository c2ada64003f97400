"""The densities of a tempering run evaluated on the workers of a Dask cluster.

``ExchangeMC(placement=DaskPlacement(client))`` is the same sampler as a local one: every
explorer, reference and ladder option, its swaps, tuning and record, run in this process; only
the rows of each density evaluation travel, split over one
:class:`~pymc_tempering.distributed.evaluator.RowEvaluator` actor per worker in fixed contiguous
blocks. Each row is evaluated alone, as :class:`pymc_tempering.engine.placement.Rowwise` does,
so a seed gives the same draws with any number of workers and with ``placement=Rowwise()`` in
one process. A worker that fails, or does not answer within ``worker_timeout`` seconds, is
dropped and its rows evaluated by the others (in this process once none is left): the draws
stay those of an uninterrupted run. Why evaluations and not replicas are placed:
``docs/decisions/140-distributed-placement.md``.
"""

import os
import time
import warnings
from dataclasses import dataclass

import numpy as np

from pymc_tempering.distributed import cluster
from pymc_tempering.engine.placement import RowwisePotential

__all__ = [
    "DaskPlacement",
    "DaskPotential",
    "DistributedCostWarning",
    "WorkerLostWarning",
    "COST_CHECK_CALLS",
    "WARMUP_CALLS",
    "row_blocks",
    "with_run_attrs",
    "RUN_ATTRS",
]

#: the attrs a distributed run's posterior and sample_stats carry (:func:`with_run_attrs`)
RUN_ATTRS = ("distributed", "n_workers", "workers_lost", "n_calls", "round_ms", "worker_compute_ms")
COST_CHECK_CALLS = 20  # evaluations measured before judging whether distribution pays
WARMUP_CALLS = 5  # first evaluations left out of that measure (first calls of a function)


class DistributedCostWarning(UserWarning):
    """The run spends more time communicating than evaluating densities: run it locally."""


class WorkerLostWarning(UserWarning):
    """A worker failed or timed out and was dropped; the run goes on without it."""


_NOT_PICKLED = (
    "A DaskPlacement cannot be pickled: it holds a Dask client and actors, which do not travel "
    "to another process. pm.sample(cores>1) runs the step in subprocesses; pass cores=1 (the "
    "workers already evaluate in parallel; several chains then run one after the other), or "
    "use pmt.distributed.sample_tempered, which does."
)


def row_blocks(n_rows: int, n_evaluators: int) -> list[np.ndarray]:
    """The row indices each evaluator gets: ``n_rows`` split into ``n_evaluators`` contiguous
    blocks, in order, sizes differing by at most one (the first ones larger); empty blocks
    dropped."""
    return [b for b in np.array_split(np.arange(n_rows), n_evaluators) if b.size]


class DaskPlacement:
    """Evaluate a run's densities on the workers of ``client``.

    Parameters
    ----------
    client : dask.distributed.Client
        A running client; one evaluator actor on each of its first ``n_workers`` workers
        (sorted by address; default all).
    n_workers : int, optional
        How many workers to use.
    worker_timeout : float, optional
        Seconds an evaluation may take on a worker before the worker is treated as lost
        (alive, not answering); default None: wait as long as it takes (a worker that dies is
        dropped either way). Compiling waits without a limit.
    model : pm.Model or callable, optional
        The model the workers compile (default: the one in context when the sampler is
        built), or a zero-argument function building it (needed where the model cannot be
        pickled).
    """

    def __init__(self, client, *, n_workers=None, worker_timeout=None, model=None):
        cluster.check_n_workers(n_workers)
        if worker_timeout is not None and (
            isinstance(worker_timeout, bool)
            or not isinstance(worker_timeout, (int, float, np.integer, np.floating))
            or not worker_timeout > 0
        ):
            raise ValueError(
                f"`worker_timeout` must be a positive number of seconds or None (wait as long "
                f"as an evaluation takes), got {worker_timeout!r}."
            )
        cluster.worker_addresses(client, n_workers)  # the client's errors now, not at sampling
        self.client, self.n_workers, self.model = client, n_workers, model
        self.worker_timeout = None if worker_timeout is None else float(worker_timeout)
        self.placed: list[DaskPotential] = []

    def place(self, potential):
        """A :class:`DaskPotential` of ``potential`` (the density compiled in this process),
        its evaluators compiled with the same ``compile_kwargs`` (and the gradient where
        ``potential`` has it)."""
        shipped = cluster.shippable(self.model)
        workers = cluster.worker_addresses(self.client, self.n_workers)
        compile_kwargs = (
            dict(potential.single_graph[2]) if hasattr(potential, "single_graph") else None
        )
        gradient = getattr(potential, "batched_grad", None) is not None
        evaluators = cluster.start_evaluators(
            self.client, workers, cluster.payload(shipped), compile_kwargs, gradient
        )
        placed = DaskPotential(potential, evaluators, self.worker_timeout, self.client)
        placed.check_layout()
        self.placed.append(placed)
        return placed

    def timing(self) -> dict:
        """Every potential's evaluations so far, summed (:meth:`DaskPotential.timing`)."""
        return summed_timing([p.timing for p in self.placed])

    def close(self) -> None:
        """Free the workers of every potential placed (their actors end)."""
        for potential in self.placed:
            potential.close()

    def __reduce__(self):
        raise TypeError(_NOT_PICKLED)

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        return f"DaskPlacement(n_workers={self.n_workers}, worker_timeout={self.worker_timeout})"


@dataclass
class Timing:
    """Seconds summed over evaluations: whole round trips, and the slowest evaluator's compute
    in each (its rows' evaluation, measured on the worker)."""

    calls: int = 0
    round_s: float = 0.0
    compute_s: float = 0.0

    def add(self, round_s: float, compute_s: float) -> None:
        self.calls += 1
        self.round_s += round_s
        self.compute_s += compute_s


def summed_timing(timings) -> dict:
    """``n_calls``, ``round_ms`` and ``worker_compute_ms`` per call over ``timings``."""
    calls = sum(t.calls for t in timings)
    n = max(calls, 1)
    return {
        "n_calls": calls,
        "round_ms": 1e3 * sum(t.round_s for t in timings) / n,
        "worker_compute_ms": 1e3 * sum(t.compute_s for t in timings) / n,
    }


@dataclass
class Evaluator:
    """One worker's actor and the future that keeps it alive."""

    address: str
    actor: object
    future: object


class DaskPotential:
    """``base`` (the density compiled in this process) with ``batch`` and ``batch_grad``
    evaluated by ``evaluators`` (``(address, actor, future)``), row by row; every other
    attribute (prior draws, ``to_point``, ...) is ``base``'s."""

    def __init__(self, base, evaluators, worker_timeout=None, client=None):
        self.base = base
        self.evaluators = [Evaluator(*e) for e in evaluators]
        self.n_workers = len(self.evaluators)
        self.worker_timeout, self.client = worker_timeout, client
        self.timing = Timing()
        self._measured = Timing()  # the calls the cost check judges
        self.lost: list[str] = []  # "address (reason)" of each worker dropped
        self._gradient = getattr(base, "batched_grad", None) is not None
        self._cost_checked = self._warned_local = False
        self._pid = os.getpid()  # a forked copy (pm.sample(cores>1) on Linux) must not evaluate

    def __getattr__(self, name):
        if name == "base":  # not set yet (a copy under construction): no recursion
            raise AttributeError(name)
        return getattr(self.base, name)

    def __reduce__(self):
        raise TypeError(_NOT_PICKLED)

    def __deepcopy__(self, memo):
        return self

    def check_layout(self) -> None:
        """A ValueError where a worker's flat vector is not this process's (another model, or
        a sampler over some of the model's variables)."""
        calls = [(e, e.actor.layout()) for e in self.evaluators]
        mine = (self.base.n_params, tuple(self.base.point_map_info))
        for e, call in calls:
            n_params, info = call.result()
            if (n_params, tuple(info)) != mine:
                raise ValueError(
                    f"The model on worker {e.address} reads {n_params} parameters laid out as "
                    f"{list(info)}, but this sampler reads {mine[0]}: {list(mine[1])}. A "
                    "distributed run samples all of the model's free variables; pass the model "
                    "the sampler was built on as DaskPlacement(model=...), without `vars=`."
                )

    def batch(self, x):
        return self._evaluate("batch", x, 2)

    def batch_grad(self, x):
        return self._evaluate("batch_grad", x, 4)

    def ensure_gradient(self) -> bool:
        """Compile the batched gradient here and on every evaluator; False where the model
        has none."""
        self._check_process()
        if not self.base.ensure_gradient():
            return False
        if not self._gradient:
            calls = [(e, e.actor.ensure_gradient()) for e in list(self.evaluators)]
            for e, call in calls:
                try:
                    call.result()
                except Exception as err:  # noqa: BLE001 a dead worker raises many types
                    self._drop(e, err)
            self._gradient = True
        return True

    def close(self) -> None:
        """Free the evaluators' workers."""
        if self.client is not None and self.evaluators:
            try:
                self.client.cancel([e.future for e in self.evaluators])
            except Exception:  # noqa: BLE001,S110 a closed client has nothing to free
                pass
        self.evaluators = []

    # -- evaluation ------------------------------------------------------------------------------
    def _check_process(self) -> None:
        if os.getpid() != self._pid:
            raise TypeError(
                _NOT_PICKLED.replace("cannot be pickled", "cannot be used in a copy of its process")
            )

    def _evaluate(self, method, x, n_out):
        self._check_process()
        x = np.ascontiguousarray(x, dtype=np.float64)
        started = time.perf_counter()
        *out, compute = self._spread(method, x, n_out)
        round_s = time.perf_counter() - started
        self.timing.add(round_s, compute)
        if not self._cost_checked and self.timing.calls > WARMUP_CALLS:
            self._measured.add(round_s, compute)
            if self._measured.calls >= COST_CHECK_CALLS:
                self._cost_checked = True
                self._cost_check()
        return tuple(out)

    def _spread(self, method, x, n_out):
        """``method``'s outputs of the rows ``x`` and the slowest evaluator's compute seconds:
        one contiguous block per live evaluator; the blocks of those that fail or time out
        evaluated again by the others."""
        if not self.evaluators:
            return self._local(method, x)
        blocks = row_blocks(x.shape[0], len(self.evaluators))
        calls = []
        for e, rows in zip(list(self.evaluators), blocks, strict=False):
            try:
                calls.append((e, rows, getattr(e.actor, method)(x[rows])))
            except Exception as err:  # noqa: BLE001 a dead worker raises many types
                calls.append((e, rows, err))
        deadline = None if self.worker_timeout is None else time.monotonic() + self.worker_timeout
        parts = []
        for e, rows, call in calls:
            try:
                if isinstance(call, Exception):
                    raise call
                wait = None if deadline is None else max(deadline - time.monotonic(), 0.01)
                parts.append((rows, call.result(timeout=wait)))
            except Exception as err:  # noqa: BLE001 a dead or hung worker raises many types
                self._drop(e, err)
                parts.append((rows, None))
        parts = [(r, out if out is not None else self._spread(method, x[r], n_out))
                 for r, out in parts]  # fmt: skip
        compute = max(out[-1] for _, out in parts)
        return (*(np.concatenate([out[k] for _, out in parts]) for k in range(n_out)), compute)

    def _local(self, method, x):
        if not self._warned_local:
            self._warned_local = True
            warnings.warn(
                f"No worker of this distributed run is left (lost: {self.lost}): its densities "
                "are evaluated in this process from now on, one row at a time, so the draws "
                "stay those of the uninterrupted run, but slower. Let it finish, or interrupt "
                "it and continue the run on a working cluster with pmt.continue_sampling(idata, "
                "draws, client=new_client).",
                WorkerLostWarning,
                **_user_frame(),
            )
        started = time.perf_counter()
        out = getattr(RowwisePotential(self.base), method)(x)
        return (*out, time.perf_counter() - started)

    def _drop(self, evaluator, err) -> None:
        if evaluator not in self.evaluators:
            return
        self.evaluators.remove(evaluator)
        if isinstance(err, TimeoutError):
            reason = f"no answer within worker_timeout={self.worker_timeout} s"
        else:
            reason = f"{type(err).__name__}: {err}"
        self.lost.append(f"{evaluator.address} ({reason})")
        if self.client is not None:
            try:
                self.client.cancel([evaluator.future])
            except Exception:  # noqa: BLE001,S110 a dead worker's actor is gone already
                pass
        warnings.warn(
            f"Worker {evaluator.address} was dropped from this distributed run ({reason}); its "
            f"rows are evaluated by the {len(self.evaluators)} workers left"
            f"{'' if self.evaluators else ' (none: in this process)'}. The draws stay those of "
            "an uninterrupted run.",
            WorkerLostWarning,
            **_user_frame(),
        )

    def _cost_check(self) -> None:
        """Warn once when the round trips outweigh the workers' compute."""
        per = summed_timing([self._measured])
        overhead = per["round_ms"] - per["worker_compute_ms"]
        if overhead > per["worker_compute_ms"]:
            warnings.warn(
                f"Distribution does not pay for this model: each evaluation spends "
                f"{per['worker_compute_ms']:.2f} ms on the densities and {overhead:.2f} ms on "
                "communication. Run it locally, pm.sample(step=pmt.ExchangeMC(...)), which "
                "evaluates all rungs in one batched call; distribution pays when one row's "
                "density costs several times the round trip (docs/guide/distributed.md).",
                DistributedCostWarning,
                **_user_frame(),
            )


def _user_frame() -> dict:
    """``warnings.warn`` arguments that point the warning at the user's code: frames in
    PyMC, PyTensor, Dask and this package skipped."""
    import distributed
    import pymc
    import pytensor

    import pymc_tempering

    skip = tuple(os.path.dirname(m.__file__) for m in (pymc, pytensor, distributed, pymc_tempering))
    return {"skip_file_prefixes": skip}


def with_run_attrs(idata, placement):
    """``idata`` with :data:`RUN_ATTRS` (of ``placement``'s potentials) in its ``posterior``
    and ``sample_stats`` attrs."""
    placed = placement.placed
    attrs = {
        "distributed": 1,
        "n_workers": max((p.n_workers for p in placed), default=0),
        "workers_lost": sum(len(p.lost) for p in placed),
        **placement.timing(),
    }
    for group in ("posterior", "sample_stats"):
        if group in idata.children:
            idata[group].attrs.update(attrs)
    return idata
