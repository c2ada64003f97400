"""Checkpoints of a step method's state, written into the sampler stats, and the resumed chain.

PyMC returns nothing of a step method but its draws and stats, and with ``cores > 1`` the step
lives in worker processes; so the state that continues a chain travels as a stat. A full
state can be large (ExchangeMC keeps a block of random numbers drawn ahead, up to 512 KB), and
a stat has one fixed length per draw, so the state goes in pieces: after tuning, each draw
carries a :data:`CHUNK_BYTES` slice of a snapshot taken at an earlier draw (the ``uint8``
stat ``sampling_state``, 1,056 bytes a draw), and the next snapshot starts when the last one is
written. A run that ends or is interrupted at draw ``t`` is continued from its latest complete
snapshot ``s``: the state is restored there and draws ``s + 1 .. t`` are run again (the chain
is deterministic given its state): at most about twice the spacing of snapshots at that point
of the run, or twice a snapshot's length in draws, whichever is larger. Snapshots are
:data:`MIN_SNAPSHOT_DRAWS` apart at first, then as far apart as the last one is from the end of
tuning, up to :data:`MAX_SNAPSHOT_DRAWS` (:func:`snapshot_due`).
"""

import dataclasses

import numpy as np
from pymc.step_methods.state import WithSamplingState
from pymc.util import get_state_from_generator

from pymc_tempering._util.fingerprint import model_graph_digests
from pymc_tempering.resume import codec
from pymc_tempering.resume.layout import CHUNK_BYTES, HEADER, ROW_BYTES, STATE_STAT
from pymc_tempering.step_methods._record import declared_shapes, record_dtypes

__all__ = ["CHUNK_BYTES", "HEADER", "STATE_STAT", "Resumable", "chain_index", "step_record"]

#: a new snapshot starts at least this many draws after the last one (decision record 043)
MIN_SNAPSHOT_DRAWS = 100
#: ... and long runs space them out up to this (decision record 043)
MAX_SNAPSHOT_DRAWS = 1000
# constructor arguments that are not saved: the model is passed again, the rng is in the
# state, the initial point does not matter once the state is restored
_NOT_SAVED = ("model", "rng", "initial_point", "blocked")


def snapshot_due(draw: int, last: int) -> bool:
    """Whether a snapshot starts at ``draw`` (counted from the end of tuning), the last one
    having started at ``last``: after ``min(max(MIN_SNAPSHOT_DRAWS, last), MAX_SNAPSHOT_DRAWS)``
    draws (at 0, 100, 200, 400, 800, 1600, 2600, 3600, ...; later if a snapshot takes longer
    to write), so that a short run is continued with little to run again and a long one pays
    little for its snapshots."""
    return draw - last >= min(max(MIN_SNAPSHOT_DRAWS, last), MAX_SNAPSHOT_DRAWS)


def _chunk_rows(at: int, payload: bytes) -> np.ndarray:
    """A snapshot as its read-only ``(n_chunks, HEADER.size + CHUNK_BYTES)`` rows, built once:
    per row the header ``(at, chunk index, n_chunks, len(payload))`` then the chunk, the last
    padded with zeros. Each draw's stat is a view of one row (PyMC keeps the reference)."""
    size = len(payload)
    n_chunks = -(-size // CHUNK_BYTES)
    heads = np.empty((n_chunks, 4), dtype="<i8")
    heads[:] = at, 0, n_chunks, size
    heads[:, 1] = np.arange(n_chunks)
    body = np.zeros(n_chunks * CHUNK_BYTES, dtype=np.uint8)
    body[:size] = np.frombuffer(payload, np.uint8)
    rows = np.empty((n_chunks, HEADER.size + CHUNK_BYTES), dtype=np.uint8)
    rows[:, : HEADER.size] = heads.view(np.uint8).reshape(n_chunks, HEADER.size)
    rows[:, HEADER.size :] = body.reshape(n_chunks, CHUNK_BYTES)
    rows.flags.writeable = False
    return rows


def _empty_chunk() -> np.ndarray:
    """The stat of a draw that carries no chunk: header ``(-1, 0, 0, 0)``, zeros after it."""
    out = np.zeros(HEADER.size + CHUNK_BYTES, dtype=np.uint8)
    out[: HEADER.size] = np.frombuffer(HEADER.pack(-1, 0, 0, 0), np.uint8)
    out.flags.writeable = False
    return out


EMPTY_CHUNK = _empty_chunk()


def chain_index(rng) -> int:
    """The chain a generator passed to ``setup_chain`` belongs to: ``pm.sample`` spawns one
    generator per chain from ``random_seed``, and the last entry of its spawn key is the
    chain's index (kept in worker processes, where PyMC sends the seed sequence's state)."""
    key = getattr(getattr(rng, "bit_generator", None), "seed_seq", None)
    key = getattr(key, "spawn_key", ())
    if not key:
        raise ValueError(
            "A resumed step must be sampled by pm.sample, which gives each chain a generator "
            "spawned from `random_seed`; this chain's generator has no spawn key."
        )
    return int(key[-1])


def step_record(step) -> dict:
    """The step's class and constructor arguments, as the DataTree keeps them: variables by
    name, arguments that cannot be saved (e.g. a step-size function) as ``"<unsaved ...>"``;
    and the digests of the model's prior, likelihood and deterministics
    (:func:`~pymc_tempering._util.fingerprint.model_graph_digests`), which a continuation checks
    its model against. Computed at the first snapshot, once per step (20-120 ms)."""
    _, kwargs = getattr(step, "_BlockedStep__newargs", ((), {}))
    # the value variables the step resolved, not PyMC's saved argument: that is [None] for
    # ``vars=None`` and random variables (``sigma``, not ``sigma_log__``) where given so
    out = {"vars": [v.name for v in step.vars]}
    for name, value in kwargs.items():
        if name in _NOT_SAVED:
            continue
        try:
            codec.encode(value)
            out[name] = value
        except TypeError:
            out[name] = f"<unsaved {type(value).__name__}>"
    cls = type(step)
    record = {"class": f"{cls.__module__}:{cls.__qualname__}", "kwargs": out}
    model = kwargs.get("model")  # PyMC's BlockedStep.__new__ puts the model in context here
    if model is not None:
        record["model"] = model_graph_digests(model)
    return record


class Resumable:
    """Mixin for step methods with a ``sampling_state``: emits the checkpoint stat and resumes
    a chain from a checkpoint (see the module docstring). Put it before PyMC's step class."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        stats = cls.__dict__.get("stats_dtypes_shapes")
        if stats is not None and STATE_STAT not in stats:
            cls.stats_dtypes_shapes = {**stats, STATE_STAT: (object, None)}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # the stats of fixed length stored as rows of one array (step_methods._record)
        fixed = {STATE_STAT: (np.uint8, ROW_BYTES), **self._array_stat_shapes()}
        self.stats_dtypes = [record_dtypes(self.stats_dtypes_shapes, fixed)]
        self.stats_dtypes_shapes = declared_shapes(self.stats_dtypes_shapes, self.stats_dtypes[0])

    def _array_stat_shapes(self) -> dict:
        """The step's own array stats of fixed length, ``name -> (dtype, length)``, beside
        :data:`STATE_STAT`: none unless the step says."""
        return {}

    _resume_records = None  # per chain: dict(state, point, replay, next_draw), or None
    _resume_pending = None  # this chain's record, until its first step
    _checkpoint = None  # (draw, rows of the snapshot (_chunk_rows), next row), or None
    _checkpoint_draw = 0  # draws since tuning ended

    @classmethod
    def resume(cls, idata, *, model=None, **kwargs):
        """A step that continues each chain of ``idata`` where it stopped (sample it with
        ``tune=0`` and as many chains). Built with the arguments ``idata`` was sampled with,
        updated by ``kwargs``. See :func:`pymc_tempering.resume.continue_sampling`."""
        from pymc_tempering.resume.run import resume_step

        return resume_step(idata, model=model, step_class=cls, **kwargs)

    def arm_resume(self, records) -> None:
        """Continue chain ``c`` from ``records[c]`` (:func:`~.run.chain_checkpoints`)."""
        self._resume_records = list(records)

    # The checkpoint in progress travels with ``sampling_state`` (as an attribute of the state
    # object, not a field: snapshots do not contain it), so a restored state repeats the
    # ``sampling_state`` stat too.
    @property
    def sampling_state(self):
        state = super().sampling_state
        hook = (getattr(self, "_checkpoint", None), getattr(self, "_checkpoint_draw", 0))
        state.__dict__["_checkpoint_hook"] = hook
        return state

    @sampling_state.setter
    def sampling_state(self, state):
        super(Resumable, type(self)).sampling_state.fset(self, state)
        hook = state.__dict__.get("_checkpoint_hook")
        if hook is not None:
            self._checkpoint, self._checkpoint_draw = hook

    def _reset_checkpoints(self) -> None:
        self._checkpoint = None
        self._checkpoint_draw = 0
        self._resume_pending = None

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        super().setup_chain(rng, tune, draws)
        self._reset_checkpoints()
        if self._resume_records is None:
            return
        if tune:
            raise ValueError(
                f"A resumed step continues a tuned chain: pass tune=0 to pm.sample (got "
                f"tune={tune}); its proposal scales, ladder and preconditioner stay as saved."
            )
        chain = chain_index(rng)
        if chain >= len(self._resume_records):
            raise ValueError(
                f"The saved run has {len(self._resume_records)} chains; pm.sample asked for "
                f"chain {chain}. Pass chains={len(self._resume_records)}."
            )
        self._resume_pending = self._resume_records[chain]

    def step(self, point):
        if self._resume_pending is not None:
            point = self._resume(point)
        point, stats = super().step(point)
        stats[0][STATE_STAT] = self._chunk(point)
        return point, stats

    def _resume(self, point):
        record, self._resume_pending = self._resume_pending, None
        self.sampling_state = record["state"]
        point = {**point, **record["point"]}
        for _ in range(record["replay"]):  # draws after the snapshot, run again
            point, _ = super().step(point)
        self._checkpoint_draw = record["next_draw"]
        return point

    def _chunk(self, point) -> np.ndarray:
        """This draw's ``sampling_state`` stat: the next row of the snapshot in progress, or
        :data:`EMPTY_CHUNK` (while tuning, and between snapshots)."""
        if getattr(self, "tune", False):
            self._checkpoint, self._checkpoint_draw = None, 0
            return EMPTY_CHUNK
        draw = self._checkpoint_draw
        self._checkpoint_draw = draw + 1
        checkpoint = self._checkpoint
        if checkpoint is None:
            checkpoint = (draw, _chunk_rows(draw, self._snapshot(point)), 0)
        elif checkpoint[2] >= len(checkpoint[1]):  # written
            if not snapshot_due(draw, checkpoint[0]):
                return EMPTY_CHUNK
            checkpoint = (draw, _chunk_rows(draw, self._snapshot(point)), 0)
        at, rows, k = checkpoint
        self._checkpoint = (at, rows, k + 1)
        return rows[k]

    def _snapshot(self, point) -> bytes:
        names = [v.name for v in self.vars]
        if not hasattr(self, "_step_record"):
            self._step_record = step_record(self)
        record = {
            "version": 1,
            "step": self._step_record,
            "state": self._state_to_encode(),
            "point": {name: np.asarray(point[name]) for name in names},
        }
        return codec.encode(record)

    def _state_to_encode(self):
        """``self.sampling_state`` without PyMC's deep copy of every field (the bulk of a
        snapshot's cost): the state is encoded at once, before anything can change it. The
        same fields and values, so the same bytes."""
        values = {}
        for field in dataclasses.fields(self._state_class):
            if field.metadata.get("tensor_name", False):
                values[field.name] = [var.name for var in self.vars]
                continue
            value = getattr(self, field.name, field.default)
            if value is dataclasses.MISSING:
                raise AttributeError(f"{type(self).__name__!r} has no attribute {field.name!r}")
            if isinstance(value, WithSamplingState):
                value = value.sampling_state
            elif isinstance(value, np.random.Generator):
                value = get_state_from_generator(value)
            values[field.name] = value
        return self._state_class(**values)
