"""What runs one model, in this process or in a worker process of any executor.

:func:`run_model` builds the model (unpickling it, or calling the user's builder), runs
:func:`pymc_tempering.marginal_likelihood` with ``cores=1`` and the model's own seed, reads the
tempering diagnostics, writes the model to the store as soon as it has finished, and returns a
small record (the evidence Dataset, diagnostics and timings; never the DataTree, which stays in
the store). An exception becomes the record's ``error``; KeyboardInterrupt is not caught.

In a worker process PyTensor compiles into a directory of its own (:func:`use_own_compiledir`),
so workers do not queue on PyTensor's compile lock, and the directory is kept between runs so
that a second run finds its modules compiled.

A model's set-up is kept cheap for runs of many models: PyMC's per-chain traces share one
compiled point function (:mod:`._chain_trace`; ExchangeMC's array stats are recorded into one
array per stat by their declaration, :mod:`pymc_tempering.step_methods._record`: no stacking
when the DataTree is built), and PyTensor keeps no creation stack on new variables while the
model's graphs are built. Each model compiles its own functions: sharing them between models
of one structure changed the last bits of the table with the number of workers
(``docs/decisions/042-no-compiled-sharing-between-models.md``).
"""

import hashlib
import inspect
import logging
import os
import platform
import signal
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["ModelTask", "model_seed", "run_model", "use_own_compiledir"]

_SLOT_LOCK = None  # the open lock file of this process's compile directory slot


def model_seed(random_seed: int, name: str) -> int:
    """A 64-bit seed from the run's ``random_seed`` and the model's ``name``, never from order."""
    words = np.frombuffer(hashlib.sha256(name.encode()).digest(), dtype=np.uint32)
    state = np.random.SeedSequence([int(random_seed), *map(int, words)]).generate_state(2)
    return int(state[0]) << 32 | int(state[1])


@dataclass(frozen=True)
class ModelTask:
    """One model to run. ``model`` is a pm.Model, a zero-argument builder, or either one
    cloudpickled (bytes) for an executor that ships work to other processes."""

    name: str
    model: object
    key: str
    seed: int
    settings: dict
    store: str | None = None
    own_compiledir: bool = False
    submitted_at: float = field(default=0.0, compare=False)


def _lock_slot(directory: Path):
    """Take the first free ``worker-<i>`` slot under ``directory`` (an exclusive file lock held
    for the life of the process), so the same slots, and their compiled modules, are reused by
    the next run with as many workers."""
    import fcntl

    directory.mkdir(parents=True, exist_ok=True)
    for slot in range(4096):
        handle = open(directory / f"worker-{slot}.lock", "w")  # noqa: SIM115 (held open)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return handle, slot
    raise RuntimeError(f"No free compile-directory slot under {directory}.")


def use_own_compiledir() -> str:
    """Point PyTensor at a compile directory of this process's own, if it has not compiled yet.

    The directory is ``<base_compiledir>/pymc_tempering-workers/<host>/worker-<i>/...`` with the
    first slot ``i`` no other live process holds. Left alone: a process that already chose its
    compile directory (PyTensor fixes it at the first compile), or one whose user set
    ``compiledir`` in ``PYTENSOR_FLAGS``. Returns the directory in use.
    """
    global _SLOT_LOCK
    import pytensor

    flags = os.environ.get("PYTENSOR_FLAGS", "") + os.environ.get("PYTENSORFLAGS", "")
    if _SLOT_LOCK is None and "compiledir" not in flags:
        root = Path(pytensor.config.base_compiledir) / "pymc_tempering-workers" / platform.node()
        try:
            handle, slot = _lock_slot(root)
        except ImportError:  # no fcntl (Windows): a directory per process, not reused
            handle, slot = None, f"pid{os.getpid()}"
        version = f"py{platform.python_version()}-pytensor{pytensor.__version__}"
        try:
            pytensor.config.compiledir = root / f"worker-{slot}" / version
            _SLOT_LOCK = handle or True
        except Exception:  # noqa: BLE001 PyTensor raises a bare Exception once it is fixed
            if handle is not None:
                handle.close()
            _SLOT_LOCK = False
    return str(pytensor.config.compiledir)


def _build(model):
    """The pm.Model of a task (unpickled, or built by the user's builder); a ValueError for a
    model whose data PyMC imputed (see :func:`_refuse_imputed`)."""
    import cloudpickle
    import pymc as pm

    if isinstance(model, bytes):
        model = cloudpickle.loads(model)
    if not isinstance(model, pm.Model):
        model = model()
        if not isinstance(model, pm.Model):
            raise TypeError(f"The builder returned {type(model).__name__}, not a pm.Model.")
    _refuse_imputed(model)
    return model


def _refuse_imputed(model) -> None:
    """Refuse a model whose observed data held NaN: PyMC imputes them as parameters, so its
    evidence is that of fewer observations than the other models' (not comparable)."""
    from pymc_tempering.step_methods._compile.checks import imputed_observations

    imputed = imputed_observations(model)
    if imputed:
        counts = ", ".join(f"{name!r}: {n}" for name, n in imputed.items())
        raise ValueError(
            f"the observed data hold missing values (NaN; count per observed variable: "
            f"{counts}), which PyMC imputes as parameters, so this model's evidence covers "
            "fewer observations than the others' and cannot be compared with them. Drop or "
            "fill the missing rows in this model's data (the same rows in every model)."
        )


def _diagnostics(idata) -> dict:
    """The lowest swap rate and the round trips, over both legs of a two-leg run."""
    from pymc_tempering.diagnostics.barrier import swap_rates
    from pymc_tempering.diagnostics.round_trip import round_trips
    from pymc_tempering.trace import has_variational_leg, tempering_dataset

    legs = ["prior", "variational"] if has_variational_leg(idata) else ["prior"]
    runs = [tempering_dataset(idata, leg=leg) for leg in legs]
    return {
        "min_swap_accept": min(float(swap_rates(ds).swap_accept.min()) for ds in runs),
        "round_trips": sum(int(round_trips(ds).round_trips.sum()) for ds in runs),
    }


def _chain_traces(model, settings) -> dict:
    """``pm.sample``'s ``trace`` argument: PyMC's NDArray traces whose point function (the
    recorded variables from the value variables) is compiled once per model, not once per
    chain as PyMC does; the same recorded values. Empty where the settings choose the
    recorded variables or the backend themselves."""
    if "trace" in settings or "var_names" in settings:
        return {}
    from pymc_tempering.selection._chain_trace import ChainTrace
    from pymc_tempering.step_methods._compile.trace import compile_trace_function

    fn, shapes, dtypes = compile_trace_function(model)
    return {"trace": ChainTrace(model=model, fn=fn, var_shapes=shapes, var_dtypes=dtypes)}


@contextmanager
def _quick_graphs():
    """A model's set-up without a creation stack kept on each new PyTensor variable
    (``traceback__limit=0``: about 20% of building a model's graphs; PyTensor's messages then
    lack the "Backtrace when the node is created" lines)."""
    import pytensor

    with pytensor.config.change_flags(traceback__limit=0):
        yield


class _Interrupted(BaseException):
    """Ctrl-C, as an exception that PyMC's ``except KeyboardInterrupt`` does not stop."""


@contextmanager
def _interrupts_seen():
    """Turn Ctrl-C (SIGINT) inside into :class:`_Interrupted`: ``pm.sample`` swallows a
    KeyboardInterrupt in a chain and goes on with the next chains, which would leave a truncated
    run looking finished and the user waiting. Only the main thread can catch signals; a Dask
    worker's thread records nothing, and no SIGINT reaches it either."""
    seen = []
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return

    def handler(signum, frame):
        seen.append(signum)
        raise _Interrupted

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def _check_complete(idata, settings):
    """Raise KeyboardInterrupt when the run has fewer chains or draws than asked for."""
    from pymc_tempering.evidence.runner import marginal_likelihood

    defaults = inspect.signature(marginal_likelihood).parameters
    for dim, arg in (("chain", "chains"), ("draw", "draws")):
        wanted = settings.get(arg, defaults[arg].default)
        if idata.posterior.sizes[dim] != wanted:
            raise KeyboardInterrupt(f"sampling stopped early ({dim}: not {wanted})")


def _sample(task: ModelTask, model):
    """``marginal_likelihood`` on ``model``, quietly: PyMC's log and our warnings (the result
    keeps their text; ``compare_evidence`` repeats it with the model's name). An interrupted
    run raises KeyboardInterrupt and is never returned as finished."""
    from pymc_tempering.evidence.checks import EvidenceWarning
    from pymc_tempering.evidence.runner import marginal_likelihood

    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), _interrupts_seen() as interrupts, _quick_graphs():
            warnings.simplefilter("ignore", EvidenceWarning)
            result, idata = marginal_likelihood(
                model,
                random_seed=task.seed,
                return_idata=True,
                progressbar=False,
                **{"cores": 1, **_chain_traces(model, task.settings), **task.settings},
            )
    except _Interrupted:
        raise KeyboardInterrupt(f"model {task.name!r} was interrupted while sampling") from None
    finally:
        logger.setLevel(level)
    if interrupts:
        raise KeyboardInterrupt(f"model {task.name!r} was interrupted while sampling")
    _check_complete(idata, task.settings)
    return result, idata


def run_model(task: ModelTask) -> dict:
    """Run one model; the record that :func:`compare_models` tabulates (see module docstring)."""
    started = time.time()
    compiledir = use_own_compiledir() if task.own_compiledir else ""
    record = {"model_name": task.name, "key": task.key, "seed": str(task.seed), "error": ""}
    record |= {"min_swap_accept": np.nan, "round_trips": -1, "file": "", "from_store": False}
    timings = {"submitted_at": task.submitted_at, "started_at": started}
    result = None
    try:
        model = _build(task.model)
        timings["build"] = time.time() - started
        t0 = time.time()
        result, idata = _sample(task, model)
        timings["marginal_likelihood"] = time.time() - t0
        timings["sampling"] = float(idata.sample_stats.attrs["sampling_time"])
        record |= _diagnostics(idata)
    except Exception as err:  # noqa: BLE001 a failed model is a row of the table, not a crash
        record["error"] = f"{type(err).__name__}: {err}"
    record["wall_time"] = time.time() - started
    if result is not None and task.store is not None:
        from pymc_tempering.selection._store import ModelStore

        t0 = time.time()
        stored = record | {"timings": dict(timings)}
        record["file"] = str(ModelStore(task.store).save(idata, result, stored))
        timings["store"] = time.time() - t0
    timings["finished_at"] = time.time()
    record["timings"] = timings
    record["compiledir"], record["pid"], record["host"] = compiledir, os.getpid(), platform.node()
    return {"result": result, "record": record}
