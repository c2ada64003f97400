"""compare_models: the same table bit for bit on any executor and order, a store that resumes a
killed or interrupted run without recomputing, failed and unpicklable models, and per-worker
PyTensor compile directories. Executors are real: a dask.distributed LocalCluster of 2 worker
processes and a ProcessPoolExecutor of 2 spawned processes."""

import _thread
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import selection_models as sm
import xarray as xr
from helpers import exact_bits, local_client
from pymc.exceptions import ImputationWarning

from pymc_tempering import marginal_likelihood
from pymc_tempering.evidence import EvidenceWarning
from pymc_tempering.exact import lecture_log_evidence
from pymc_tempering.selection import compare_models
from pymc_tempering.selection._worker import model_seed

distributed = pytest.importorskip("distributed")

SEED = 20260
#: Everything but the timings and where files went must be identical.
VARYING = ("wall_time", "from_store", "file")


def run(models, settings=sm.SETTINGS, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        return compare_models(models, random_seed=SEED, progressbar=False, **settings, **kwargs)


def assert_same_table(table, reference):
    columns = [c for c in reference.columns if c not in VARYING]
    assert list(table.index) == list(reference.index)
    assert table[columns].equals(reference[columns]), (table[columns], reference[columns])


@pytest.fixture(scope="module", autouse=True)
def _exact_bits():
    """Tables from other processes are compared bit for bit: no fastmath, here and in every
    process the module starts (``helpers.exact_bits``)."""
    with exact_bits():
        yield


@pytest.fixture(scope="module")
def reference():
    """The sequential in-process run, no store: what every other run must reproduce."""
    return run(sm.builders())


@pytest.fixture(scope="module")
def client():
    with local_client(2, exact=True) as client:  # both registered before any model is sent
        yield client


@pytest.fixture(scope="module")
def pool():
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


def test_rows_are_marginal_likelihood_runs_with_name_seeds(reference):
    """Each row is marginal_likelihood on that model with the seed from (random_seed, name),
    bit for bit (the workers compile each model's densities as a plain run does)."""
    assert set(reference.index) == set(sm.builders()) and not reference.error.any()
    name = "b=1.0"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        direct = marginal_likelihood(
            sm.lecture_model(1.0), random_seed=model_seed(SEED, name), cores=1, **sm.SETTINGS
        )
    ti = direct.sel(estimator="thermodynamic_integration")
    assert reference.loc[name, "log_marginal_likelihood"] == float(ti.log_marginal_likelihood)
    assert reference.loc[name, "mcse"] == float(ti.mcse)
    assert reference.loc[name, "ess"] == float(ti.ess)
    for name, row in reference.iterrows():  # exact log Z: within 4 MCSE or warned
        exact = lecture_log_evidence(sm.X_OBS, b=float(name[2:]))
        assert row.warning or abs(row.log_marginal_likelihood - exact) < 4 * row.mcse, row
        assert 0 < row.min_swap_accept <= 1 and row.round_trips > 0


def test_method_ranks_by_the_estimator_named(reference):
    """method="bar": each row is the BAR estimate of marginal_likelihood on that model (same
    seed), within 4 MCSE of exact log Z or warned; the ranking estimator is computed besides TI
    and SS."""
    table = run(sm.builders(), method="bar")
    assert (table.method == "bennett_acceptance_ratio").all()
    name = "b=1.0"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        direct = marginal_likelihood(
            sm.lecture_model(1.0), random_seed=model_seed(SEED, name), cores=1,
            method=("ti", "ss", "bar"), **sm.SETTINGS,
        )  # fmt: skip
    bar = direct.sel(estimator="bennett_acceptance_ratio")
    assert table.loc[name, "log_marginal_likelihood"] == float(bar.log_marginal_likelihood)
    assert table.loc[name, "ess"] == float(bar.ess)
    for name, row in table.iterrows():
        exact = lecture_log_evidence(sm.X_OBS, b=float(name[2:]))
        assert row.warning or abs(row.log_marginal_likelihood - exact) < 4 * row.mcse, row
    assert set(table.index) == set(reference.index)


def test_seed_depends_on_name_not_order():
    assert model_seed(1, "a") == model_seed(1, "a") != model_seed(1, "b") != model_seed(2, "a")


def test_same_table_on_any_executor_and_order(reference, client):
    """Sequential (the reference), 1 Dask worker with the models in reverse order, 2 workers."""
    first_worker = sorted(client.scheduler_info()["workers"])[0]
    reversed_models = dict(reversed(list(sm.builders().items())))
    one = run(reversed_models, executor=client.get_executor(workers=[first_worker]))
    two = run(sm.builders(), executor=client.get_executor())
    for table in (one, two):
        assert_same_table(table, reference)
    assert len({w["pid"] for w in one.attrs["workers"].values()}) == 1
    # each worker process compiled in a directory of its own, and it holds compiled modules
    dirs = {w["pid"]: w["compiledir"] for t in (one, two) for w in t.attrs["workers"].values()}
    assert len(dirs) >= 2 and len(set(dirs.values())) == len(dirs), dirs
    for directory in dirs.values():
        assert "pymc_tempering-workers" in directory and any(Path(directory).iterdir())


def test_same_table_on_process_pool_with_models_not_builders(reference, pool):
    models = {name: build() for name, build in sm.builders().items()}  # pm.Model objects
    table = run(models, executor=pool)
    assert_same_table(table, reference)
    pids = {w["pid"] for w in table.attrs["workers"].values()}
    assert os.getpid() not in pids


def test_failed_models_are_rows_with_their_error(client):
    models = {
        "good": partial(sm.lecture_model, 1.0),
        "flat": sm.flat_prior_model,
        "nonfinite": sm.nonfinite_start_model,
    }
    with pytest.warns(UserWarning, match="2 of 3 models failed"):
        table = run(models, executor=client.get_executor())
    assert list(table.index) == ["good", "flat", "nonfinite"]
    assert table.loc["good", "error"] == "" and table.loc["good", "model_probability"] == 1.0
    assert "improper priors" in table.loc["flat", "error"]
    assert "non-finite log density" in table.loc["nonfinite", "error"]
    assert table.loc[["flat", "nonfinite"], "log_marginal_likelihood"].isna().all()
    assert table["rank"].isna().tolist() == [False, True, True]


def test_a_model_with_missing_data_is_refused_in_its_row():
    """NaN in one model's data: PyMC would impute it and that model, on 19 points, would rank
    against models of 20. It is refused with the reason in its row; the others run."""
    models = {"good": partial(sm.lecture_model, 1.0), "missing": sm.missing_data_model}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ImputationWarning)
        with pytest.warns(UserWarning, match=r"1 of 2 models failed.*\['missing'\]"):
            table = run(models)
    assert table.loc["good", "error"] == "" and table.loc["good", "model_probability"] == 1.0
    error = table.loc["missing", "error"]
    assert "missing values (NaN" in error and "'x': 1" in error and "Drop or fill" in error
    assert np.isnan(table.loc["missing", "log_marginal_likelihood"])


def test_unpicklable_model_names_it_and_asks_for_a_builder(pool):
    model = sm.lecture_model(1.0)
    model.lock = threading.Lock()  # e.g. a handle on an external resource
    with pytest.raises(ValueError, match=r"Model 'locked' cannot be pickled.*builds it"):
        run({"ok": partial(sm.lecture_model, 1.0), "locked": model}, executor=pool)


def store_files(store):
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in Path(store).glob("*.nc")}


RESUME_SCRIPT = """
import sys, warnings
sys.path[:0] = [{tests!r}, {root!r}]
import selection_models as sm
from pymc_tempering.selection import compare_models
warnings.simplefilter("ignore")
compare_models(sm.builders(), store={store!r}, random_seed={seed}, progressbar=False,
               **sm.SETTINGS)
"""


def test_resume_after_kill_recomputes_nothing(reference, tmp_path):
    """Kill a run (SIGKILL) once some models are stored; the rerun loads them untouched."""
    store = tmp_path / "store"
    tests = Path(__file__).parent
    code = RESUME_SCRIPT.format(tests=str(tests), root=str(tests.parent), store=str(store),
                                seed=SEED)  # fmt: skip
    process = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.time() + 120
    while len(store_files(store)) < 1 and process.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = store_files(store)
    assert 1 <= len(before) < 3, before  # killed part-way
    table = run(sm.builders(), store=store)
    assert table.from_store.sum() == len(before)  # the others were run afresh
    assert {Path(f).name for f in table.file[table.from_store]} == set(before)
    after = store_files(store)
    assert {k: after[k] for k in before} == before  # stored files neither rewritten nor touched
    assert len(after) == 3
    assert_same_table(table, reference)


def test_keyboard_interrupt_keeps_finished_models(reference, tmp_path):
    """Ctrl-C while the second model samples: the first stays stored, the second is not stored
    truncated, and the rerun finishes the table."""
    store = tmp_path / "store"

    def sampling_now():
        frame = sys._current_frames().get(threading.main_thread().ident)
        while frame is not None and frame.f_code.co_name != "_iter_sample":
            frame = frame.f_back
        return frame is not None

    def interrupt_when_one_is_stored():
        while not (store_files(store) and sampling_now()):
            time.sleep(0.002)
        _thread.interrupt_main()  # Ctrl-C inside pm.sample's loop, which swallows it per chain

    threading.Thread(target=interrupt_when_one_is_stored, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run(sm.builders(), store=store)
    before = store_files(store)
    assert 1 <= len(before) < 3
    assert not list(Path(store).glob(".*.tmp"))
    table = run(sm.builders(), store=store)
    assert table.from_store.sum() == len(before)
    assert {k: store_files(store)[k] for k in before} == before
    assert_same_table(table, reference)


def test_changed_data_or_settings_are_run_again(tmp_path):
    store = tmp_path / "store"
    first = run({"m": partial(sm.lecture_model, 1.0)}, store=store)
    again = run({"m": partial(sm.lecture_model, 1.0)}, store=store)
    assert not first.from_store["m"] and again.from_store["m"]
    assert again.loc["m", "log_marginal_likelihood"] == first.loc["m", "log_marginal_likelihood"]
    shifted = partial(sm.lecture_model, 1.0, x=sm.X_OBS + 1e-9)  # the data changed
    assert not run({"m": shifted}, store=store).from_store["m"]
    wider = partial(sm.lecture_model, 1.0 + 1e-9)  # the model changed
    assert not run({"m": wider}, store=store).from_store["m"]
    other = run({"m": partial(sm.lecture_model, 1.0)}, {**sm.SETTINGS, "draws": 201}, store=store)
    assert not other.from_store["m"]
    assert len(store_files(store)) == 4


def test_arguments_are_checked(pool):
    with pytest.raises(ValueError, match="non-empty dict"):
        compare_models([sm.lecture_model])
    with pytest.raises(ValueError, match="cores=2"):
        compare_models(sm.builders(), executor=pool, cores=2)
    with pytest.raises(ValueError, match="`return_idata` is set by compare_models"):
        compare_models(sm.builders(), return_idata=True)
    with pytest.raises(TypeError, match="concurrent.futures.Executor"):
        compare_models(sm.builders(), executor="dask")
    with pytest.raises(ValueError, match="`method` must name evidence estimators"):
        compare_models(sm.builders(), method="bridge")
    with pytest.raises(ValueError, match="not both"):
        compare_models(sm.builders(), method="ti", estimator="ss")
    with pytest.raises(ValueError, match="must name one estimator"):
        compare_models(sm.builders(), method=["ti", "ss"])
    np.testing.assert_equal(model_seed(0, ""), model_seed(0, ""))


def test_two_leg_runs_rank_by_the_legs_combination(tmp_path):
    """reference="variational" passes through to marginal_likelihood; the table ranks by the
    stored result's combined entry (log Z, MCSE and ESS), within 4 MCSE of the exact log Z or
    warned, and the diagnostics cover both legs."""
    settings = sm.SETTINGS | {"reference": "variational", "step_kwargs": {"n_rungs_variational": 4}}
    names = ["b=3.0"]  # one model: the pass-through and the ranked entry are what is tested
    table = run({n: sm.builders()[n] for n in names}, settings, store=tmp_path)
    assert not table.error.any(), table.error
    for name, row in table.iterrows():
        with xr.open_dataset(row.file, group="evidence") as stored:
            combined = stored.sel(estimator="thermodynamic_integration", leg="combined").load()
        assert row.log_marginal_likelihood == float(combined.log_marginal_likelihood)
        assert row.mcse == float(combined.mcse) and row.ess == float(combined.ess)
        exact = lecture_log_evidence(sm.X_OBS, b=float(name[2:]))
        assert row.warning or abs(row.log_marginal_likelihood - exact) < 4 * row.mcse, row
        assert row.round_trips > 0
