"""Which ``marginal_likelihood`` settings give the most accurate log Z per CPU second, and how
they stand against ``pm.sample_smc`` at its defaults.

Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
     python benchmarks/experiments/tune_evidence_defaults.py PROBLEM SETTING [SETTING ...]
         [--seeds 8] [--first-seed 0]
     python benchmarks/experiments/tune_evidence_defaults.py PROBLEM smc [--seeds 8]

PROBLEM: a key of ``problems.EVIDENCE_PROBLEMS`` (``radiata``, ``two_mode_10d``). A SETTING is
``key=value`` pairs joined by commas, e.g. ``n_rungs=64,draws=800,tune=200,proposal=dense``:
keys of ``marginal_likelihood`` (n_rungs, beta_min, draws, tune, chains) or of ExchangeMC
(proposal, explorer, sweeps_per_draw, target_accept: they go to ``step_kwargs``); ``smc`` is
``pm.sample_smc`` at its defaults (``cores=1``). Settings alternate within each seed, so the
machine's load hits all alike. Per seed it prints every estimator's error against the exact
log Z, its MCSE and the CPU seconds of the call (``time.process_time()``: other jobs on the
machine do not count); then per estimator ``harness.summary``: rms error, coverage of 2 MCSE,
``rms * sqrt(cpu)`` and ``mcse * sqrt(cpu)`` (the error at one CPU second; the second is far less
noisy over few seeds, where the MCSE covers).

Decided: ``tune = draws / 4`` on the fixed ladder with the random walk, and 256 rungs over 64
or 128 (docs/decisions/073-evidence-tune-and-rungs.md).
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: problems, harness

import harness  # noqa: E402
from problems import EVIDENCE_PROBLEMS  # noqa: E402

STEP_KEYS = ("proposal", "explorer", "sweeps_per_draw", "target_accept")


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


def run_smc(model, exact, seed):
    """``pm.sample_smc`` at its defaults, as one row of :func:`harness.summary`."""
    start = time.process_time()
    estimate = harness.smc_run(model, seed, harness.SMC_DRAWS)
    cpu = time.process_time() - start
    return np.array([estimate.log_z - exact]), np.array([estimate.error_bar]), cpu, [False]


def main():
    args = harness.settings_parser().parse_args()
    model, exact = EVIDENCE_PROBLEMS[args.problem]()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    rows = {s: [] for s in args.settings}
    for seed in seeds:  # settings alternate within a seed: load hits all alike
        for setting in args.settings:
            if setting == "smc":
                row = run_smc(model, exact, seed)
            else:
                row = harness.run_ours(model, exact, seed, *parse_setting(setting))
            rows[setting].append(row)
            print(f"{setting} seed {seed}: err {np.round(row[0], 4)} mcse {np.round(row[1], 4)} "
                  f"cpu {row[2]:.1f}", flush=True)  # fmt: skip
    for setting in args.settings:
        names = ["smc"] if setting == "smc" else list(harness.METHODS)
        harness.summary(f"{args.problem} [{setting}]", names, rows[setting])


if __name__ == "__main__":
    main()
