"""Model selection at scale: compare_models on 1 vs 2 Dask workers, per-model overhead, resume.

The models are the 2^6 = 64 Normal-Gamma regressions of examples/07_variable_selection.py
(every subset of six diabetes predictors); ``--models N`` takes N of them spread over the
subset sizes. Three measurements:

1. Speed-up: the same models on a ``LocalCluster`` of 1 worker and of 2 workers (one thread
   each), each with a fresh store; wall time of the whole ``compare_models`` call, and the two
   tables must be identical (all but wall time and file names).
2. Per-model overhead, from each model's timings in the 2-worker run: scheduling (the gap
   between a worker finishing one model and starting its next, or starting its first),
   compilation and PyMC's setup (``marginal_likelihood``'s time outside ``pm.sample``'s
   sampling loop, less the evidence computation, which is timed on a stored DataTree), storage
   (writing the netCDF file), each as a fraction of the time in the sampling loop
   (``idata.sample_stats.attrs["sampling_time"]``).
3. Resume: the 2-worker run in a child process (its own session, so that killing it kills its
   cluster too) is killed with SIGKILL once half the models are stored, then rerun here with
   the same store: how many models were loaded and not recomputed (file inodes and mtimes
   unchanged), and the table against the uninterrupted run's.

``--settings default`` (the default) uses ``marginal_likelihood``'s defaults, what a user
types; 64 models take several minutes per worker count on a 2-core machine: try ``--models 8``
first. ``--settings example`` uses example 07's 64 rungs (same draws, a quarter of the rungs);
``--settings quick`` its quick settings.

``--cpu N``: per model, CPU seconds of the main thread (``time.thread_time``) of ``run_model``
in this process, over N of one worker's share of the 64 models, split into the sampling loop,
PyMC's DataTree conversion, evidence, store and the rest (set-up and compilation): steadier than
the wall-time fractions above on a loaded machine. No cluster, no store kept.

Measured, and what it decided (compiled functions not shared between the workers' models; which
per-rung stats the store compresses): docs/decisions/074-model-selection-overhead.md.

Run: ``python benchmarks/bench_scale.py [--models 64] [--settings default|example]``, or
``python benchmarks/bench_scale.py --cpu 4`` for the CPU split (no cluster, no store kept).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from functools import partial
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
example = __import__("07_variable_selection")

SETTINGS = {"default": {}, "example": example.SETTINGS, "quick": example.QUICK_SETTINGS}
VARYING = ("wall_time", "from_store", "file")


def models(n):
    """``n`` of the 64 subsets, spread over the subset sizes."""
    x, y = example.read_diabetes()
    chosen = example.subsets(example.PREDICTORS)
    chosen = chosen[:: max(1, len(chosen) // n)][:n]
    return {example.model_name(s): partial(example.regression, example.design(x, s), y)
            for s in chosen}  # fmt: skip


def run(n_models, n_workers, store, settings, seed=13, warm_up=True):
    from dask.distributed import Client, LocalCluster

    from pymc_tempering.evidence import EvidenceWarning
    from pymc_tempering.selection import compare_models

    cluster = LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    with cluster, Client(cluster) as client, warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        todo = models(n_models)
        if warm_up:  # worker start-up and a cold compile cache are not per-model costs
            warm = {**SETTINGS[settings], "draws": 20, "tune": 20, "chains": 1}
            first = {name: todo[name] for name in list(todo)[-1:]}
            for worker in client.scheduler_info(n_workers=-1)["workers"]:
                compare_models(first, executor=client.get_executor(workers=[worker]),
                               progressbar=False, **warm)  # fmt: skip
        start = time.perf_counter()
        table = compare_models(
            todo, executor=client.get_executor(), store=store,
            random_seed=seed, progressbar=False, **SETTINGS[settings],
        )  # fmt: skip
        return table, time.perf_counter() - start


def same_table(a, b):
    columns = [c for c in a.columns if c not in VARYING]
    return a.loc[b.index, columns].equals(b[columns])


def scheduling_gaps(table):
    """Per model: the time its worker sat idle before starting it (after its previous model,
    or after the first submission)."""
    timings, workers = table.attrs["timings"], table.attrs["workers"]
    t0 = min(t["submitted_at"] for t in timings.values())
    gaps = {}
    for pid in {w["pid"] for w in workers.values()}:
        mine = sorted((n for n in timings if workers[n]["pid"] == pid),
                      key=lambda n: timings[n]["started_at"])  # fmt: skip
        previous_end = t0
        for name in mine:
            gaps[name] = timings[name]["started_at"] - previous_end
            previous_end = timings[name]["finished_at"]
    return pd.Series(gaps)


def evidence_time(path):
    """Seconds for both evidence estimates on one stored run (marginal_likelihood does this
    once inside its own timing)."""
    import xarray as xr

    from pymc_tempering.evidence.tempered import estimate_evidence

    idata = xr.open_datatree(path)
    idata.load()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimate_evidence(idata)
    return time.perf_counter() - start


def overhead(table):
    timings = pd.DataFrame(table.attrs["timings"]).T.astype(float)
    per_model = pd.DataFrame(
        {
            "sampling": timings.sampling,
            "scheduling": scheduling_gaps(table),
            "outside_loop": timings.marginal_likelihood - timings.sampling,
            "store": timings.store,
            "build": timings.build,
            "transfer": timings.received_at - timings.finished_at,
        }
    )
    evidence = evidence_time(table.file.iloc[0])
    per_model["compile_setup"] = per_model.outside_loop - evidence
    parts = ["scheduling", "compile_setup", "store"]
    per_model["overhead_fraction"] = per_model[parts].sum(axis=1) / per_model.sampling
    return per_model, evidence


def resume(args, store, reference):
    """Kill a child's run half-way (SIGKILL to its whole session), rerun here."""
    command = [sys.executable, __file__, "--child", "--models", str(args.models),
               "--settings", args.settings, "--store", str(store)]  # fmt: skip
    child = subprocess.Popen(command, start_new_session=True)
    while len(list(store.glob("*.nc"))) < args.models // 2 and child.poll() is None:
        time.sleep(0.2)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in store.glob("*.nc")}
    table, seconds = run(args.models, args.workers, store, args.settings)
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in store.glob("*.nc")}
    untouched = all(after.get(k) == v for k, v in before.items())
    print(f"\n3. Resume: killed after {len(before)} of {args.models} models were stored; the "
          f"rerun loaded {int(table.from_store.sum())} from the store and ran "
          f"{int((~table.from_store).sum())} in {seconds:.1f} s; stored files untouched: "
          f"{untouched}; table identical to the uninterrupted run's: "
          f"{same_table(table, reference)}")  # fmt: skip
    return {"killed_after": len(before), "loaded": int(table.from_store.sum()),
            "untouched": untouched, "identical": same_table(table, reference)}  # fmt: skip


def cpu_parts(n_models, settings):
    """CPU seconds (``time.thread_time``) of ``run_model`` per model in this process, split
    into the sampling loop, PyMC's DataTree conversion, evidence, store and the rest (set-up
    and compilation), over ``n_models`` of one worker's share of the 64 models after a warm-up
    model; medians over the models."""
    import pymc.sampling.mcmc as mcmc

    import pymc_tempering.evidence.runner as es
    from pymc_tempering.selection import _store
    from pymc_tempering.selection._worker import ModelTask, run_model

    parts = {}

    def timed(owner, name, label):
        function = getattr(owner, name)

        def wrapper(*args, **kwargs):
            start = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                parts[label] = parts.get(label, 0.0) + time.thread_time() - start

        setattr(owner, name, wrapper)

    timed(mcmc, "_sample_many", "loop")
    timed(mcmc, "_sample_return", "to_datatree")
    timed(es, "evidence_by_method", "evidence")
    timed(_store.ModelStore, "save", "store")
    todo = models(64)
    names = list(todo)[::2]  # one worker's share of a 2-worker run
    store, rows = tempfile.mkdtemp(prefix="bench_scale-cpu-"), []
    warnings.simplefilter("ignore")
    warm = {**SETTINGS[settings], "draws": 20, "tune": 20, "chains": 1}
    run_model(ModelTask(names[0], todo[names[0]], "warm", 1, warm, store))
    for name in names[1 : n_models + 1]:
        parts.clear()
        start = time.thread_time()
        record = run_model(ModelTask(name, todo[name], name, 1, SETTINGS[settings], store))
        assert not record["record"]["error"], record["record"]["error"]
        row = dict(parts)
        row["setup"] = time.thread_time() - start - sum(parts.values())
        rows.append(pd.Series(row, name=name))
    table = pd.DataFrame(rows)
    print(table.round(3).to_string())
    print("median", table.median().round(3).to_dict())
    return table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--settings", choices=sorted(SETTINGS), default="default")
    parser.add_argument("--store", type=Path, help="(the resume benchmark's child process)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cpu", type=int, metavar="N", help="CPU split over N models only")
    args = parser.parse_args(argv)
    if args.cpu:
        return cpu_parts(args.cpu, args.settings)
    if args.child:
        run(args.models, args.workers, args.store, args.settings, warm_up=False)
        return None
    workdir = Path(tempfile.mkdtemp(prefix="bench_scale-"))
    print(f"{args.models} models, settings {args.settings!r} {SETTINGS[args.settings]}, "
          f"{os.cpu_count()} CPUs, stores under {workdir}")  # fmt: skip
    one, t_one = run(args.models, 1, workdir / "one", args.settings)
    many, t_many = run(args.models, args.workers, workdir / "many", args.settings)
    print(f"\n1. Wall time: 1 worker {t_one:.1f} s, {args.workers} workers {t_many:.1f} s: "
          f"speed-up {t_one / t_many:.2f}x; tables identical: {same_table(many, one)}")  # fmt: skip
    per_model, evidence = overhead(many)
    with pd.option_context("display.width", 160, "display.precision", 3):
        print(f"\n2. Per-model seconds ({args.workers}-worker run; evidence computation "
              f"{evidence:.2f} s, taken out of outside_loop):")  # fmt: skip
        print(per_model.describe().loc[["mean", "50%", "min", "max"]].to_string())
    total = per_model[["scheduling", "compile_setup", "store"]].sum()
    fraction = total.sum() / per_model.sampling.sum()
    parts = ", ".join(f"{k} {v / per_model.sampling.sum():.3f}" for k, v in total.items())
    print(f"Overhead (scheduling + compilation/setup + storage) / sampling, all models: "
          f"{fraction:.3f} ({parts})")  # fmt: skip
    result = resume(args, workdir / "resume", many)
    summary = {"models": args.models, "settings": args.settings, "t_one": t_one,
               "t_many": t_many, "speedup": t_one / t_many, "overhead_fraction": fraction,
               "identical": same_table(many, one), "resume": result}  # fmt: skip
    print(json.dumps(summary, default=float))
    return summary


if __name__ == "__main__":
    main()
