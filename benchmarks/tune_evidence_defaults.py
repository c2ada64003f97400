"""Which ``marginal_likelihood`` settings give the most accurate log Z per CPU second.

Run: python benchmarks/tune_evidence_defaults.py PROBLEM SETTING [SETTING ...] [--seeds 8]
     python benchmarks/tune_evidence_defaults.py PROBLEM smc [--seeds 8]

PROBLEM: a key of ``bench_evidence_smc.PROBLEMS`` (``radiata``, ``two_mode_10d``). A SETTING is
``key=value`` pairs joined by commas, e.g. ``n_rungs=64,draws=800,tune=200,proposal=dense``:
keys of ``marginal_likelihood`` (n_rungs, beta_min, draws, tune, chains) or of ExchangeMC
(proposal, explorer, sweeps_per_draw: they go to ``step_kwargs``). Per seed it prints every
estimator's error against the exact log Z, its MCSE and the CPU seconds of the call
(``time.process_time()``: other jobs on the machine do not count; the call with its default
estimators, BAR computed afterwards untimed), then per estimator the rms
error, coverage (|error| < 2 MCSE) and ``rms * sqrt(cpu)`` (lower is better: the rms error at one
CPU second, if error falls as 1 / sqrt(time)) and ``mcse * sqrt(cpu)`` (the same from the
reported MCSE: far less noisy over few seeds, where the MCSE covers). ``smc``:
``pm.sample_smc`` at its defaults (``cores=1``), the same way, for the CPU budget to compare with.

Run with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``: on a busy machine BLAS threads spinning
for work inflated one process's CPU time up to 10x (256 rungs of the 10-D target: 42 s instead
of 4.5 s for the same run).
"""

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_evidence_smc as bench_smc  # noqa: E402

from pymc_tempering.evidence.methods import evidence_by_method, resolve_methods  # noqa: E402
from pymc_tempering.evidence.runner import _result, marginal_likelihood  # noqa: E402

logging.getLogger("pymc").setLevel(logging.ERROR)
STEP_KEYS = ("proposal", "explorer", "sweeps_per_draw", "target_accept")
METHODS = ("ti", "ss", "bar")


def parse_setting(text):
    """``"n_rungs=64,proposal=dense"`` -> ``({"n_rungs": 64}, {"proposal": "dense"})``."""
    call, step = {}, {}
    for pair in filter(None, text.split(",")):
        key, value = pair.split("=")
        try:
            value = int(value) if value.isdigit() else float(value)
        except ValueError:
            pass
        (step if key in STEP_KEYS else call)[key] = value
    return call, step


def run_ours(model, exact, seed, call, step):
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


def run_smc(model, exact, seed):
    start = time.process_time()
    estimate = bench_smc.smc_run(model, seed, bench_smc.SMC_DRAWS)
    cpu = time.process_time() - start
    return np.array([estimate.log_z - exact]), np.array([estimate.error_bar]), cpu, [False]


def summary(label, names, rows):
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
    """The command line shared with ``bench_beta_min.py``: a problem, settings, seeds."""
    parser = argparse.ArgumentParser()
    parser.add_argument("problem", choices=list(bench_smc.PROBLEMS))
    parser.add_argument("settings", nargs="+")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=0)
    return parser


def main():
    args = settings_parser().parse_args()
    model, exact = bench_smc.PROBLEMS[args.problem]()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    rows = {s: [] for s in args.settings}
    for seed in seeds:  # settings alternate within a seed: load hits all alike
        for setting in args.settings:
            if setting == "smc":
                row = run_smc(model, exact, seed)
            else:
                row = run_ours(model, exact, seed, *parse_setting(setting))
            rows[setting].append(row)
            print(f"{setting} seed {seed}: err {np.round(row[0], 4)} mcse {np.round(row[1], 4)} "
                  f"cpu {row[2]:.1f}", flush=True)  # fmt: skip
    for setting in args.settings:
        names = ["smc"] if setting == "smc" else list(METHODS)
        summary(f"{args.problem} [{setting}]", names, rows[setting])


if __name__ == "__main__":
    main()
