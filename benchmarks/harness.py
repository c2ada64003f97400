"""Timed runs that more than one benchmark makes: ``pm.sample_smc`` as a user runs it, and
``marginal_likelihood`` per CPU second with the command line and summary of the experiments
that set its defaults (``experiments/tune_evidence_defaults.py``, ``bench_beta_min.py``).

Run with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` on a shared machine: BLAS threads spinning
for work inflate one process's CPU time (``docs/decisions/073-evidence-tune-and-rungs.md``).
"""

import argparse
import logging
import os
import time
import warnings
from typing import NamedTuple

import numpy as np
import pymc as pm
from problems import EVIDENCE_PROBLEMS

from pymc_tempering.evidence.methods import evidence_by_method, resolve_methods
from pymc_tempering.evidence.runner import _result, marginal_likelihood

logging.getLogger("pymc").setLevel(logging.ERROR)

SMC_DRAWS = 2000  # pm.sample_smc's default
#: the estimators the experiments report, computed from one run
METHODS = ("ti", "ss", "bar")


def load_report(before, after) -> str:
    """The machine's load averages (``os.getloadavg()``) before and after a benchmark, and
    whether it was busy: a 1-minute load above 1 at either end."""
    busy = max(after[0], before[0]) > 1
    return (
        f"load average (1, 5, 15 min) before {before}, after {after} on {os.cpu_count()} "
        f"cores: {'busy' if busy else 'idle'}"
    )


class Estimate(NamedTuple):
    log_z: float
    error_bar: float
    wall: float
    warned: bool = False


def smc_run(model, seed, draws) -> Estimate:
    """``pm.sample_smc`` with its defaults but ``draws`` (``cores=1``); the mean of its chains'
    estimates, with the sd of the chains' estimates / sqrt(chains) as its error bar."""
    start = time.perf_counter()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample_smc(draws=draws, random_seed=seed, cores=1, progressbar=False)
    wall = time.perf_counter() - start
    per_chain = []
    for stages in idata.sample_stats["log_marginal_likelihood"].values:
        stages = np.asarray(stages, dtype=float)
        per_chain.append(stages[np.isfinite(stages)][-1])
    per_chain = np.asarray(per_chain)
    error_bar = per_chain.std(ddof=1) / np.sqrt(per_chain.size)
    return Estimate(float(per_chain.mean()), float(error_bar), wall)


def run_ours(model, exact, seed, call, step):
    """One ``marginal_likelihood`` call (``cores=1``, ``call`` its arguments, ``step`` its
    ``step_kwargs``): ``(errors, MCSEs, CPU s, warned)`` per estimator of :data:`METHODS`. The
    CPU time (``time.process_time()``) is the call's with its default estimators; BAR is
    computed afterwards, untimed."""
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, idata = marginal_likelihood(
            model, random_seed=seed, step_kwargs=step or None, cores=1, return_idata=True,
            **call,
        )  # fmt: skip
        cpu = time.process_time() - start  # the call with its default estimators
        result = _result(evidence_by_method(idata, resolve_methods(METHODS)))
    err = result.log_marginal_likelihood.values - exact
    warned = [bool(w) for w in result.warning.values]
    print(f"  TI discretisation error {float(result.discretisation_error[0]):.4f}", flush=True)
    return err, result.mcse.values, cpu, warned


def summary(label, names, rows):
    """Per estimator over seeds: rms error, mean error, mean MCSE, coverage of 2 MCSE, warned
    runs, CPU s, and ``rms * sqrt(cpu)`` and ``mcse * sqrt(cpu)`` (the error at one CPU
    second, if error falls as 1 / sqrt(time): lower is better)."""
    errs = np.array([r[0] for r in rows])
    mcse = np.array([r[1] for r in rows])
    cpu = np.array([r[2] for r in rows])
    warned = np.array([r[3] for r in rows])
    for i, name in enumerate(names):
        rms = np.sqrt(np.mean(errs[:, i] ** 2))
        cover = np.mean(np.abs(errs[:, i]) < 2 * mcse[:, i])
        print(
            f"SUMMARY {label} {name}: rms {rms:.4f} mean {errs[:, i].mean():+.4f} "
            f"mcse {mcse[:, i].mean():.4f} cover {cover:.2f} warned {warned[:, i].sum()} "
            f"cpu {np.median(cpu):.1f} (min {cpu.min():.1f} max {cpu.max():.1f}) "
            f"rms*sqrt(cpu) {rms * np.sqrt(np.median(cpu)):.4f} "
            f"mcse*sqrt(cpu) {np.sqrt(np.mean(mcse[:, i] ** 2) * np.median(cpu)):.4f}",
            flush=True,
        )


def settings_parser() -> argparse.ArgumentParser:
    """The experiments' command line: a problem of ``EVIDENCE_PROBLEMS``, settings, seeds."""
    parser = argparse.ArgumentParser()
    parser.add_argument("problem", choices=list(EVIDENCE_PROBLEMS))
    parser.add_argument("settings", nargs="+")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=0)
    return parser
