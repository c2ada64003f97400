"""Where ``marginal_likelihood``'s lowest rung goes: a fixed ``beta_min`` against the rule
from the log-likelihood's spread under the prior (``beta_min="auto"``), at equal CPU time.

Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
     python benchmarks/experiments/bench_beta_min.py PROBLEM SETTING [SETTING ...] [--seeds 8]
         [--draws 1000] [--first-seed 0]

PROBLEM: a key of ``problems.EVIDENCE_PROBLEMS`` (``radiata``, ``two_mode_10d``). A SETTING is
``fixed:E`` (``beta_min = 2**E``) or ``auto:E`` (the rule with margin ``2**E``; ``auto:-10`` is
``beta_min="auto"`` itself, timed with the call; another margin shifts its power of 2, computed
untimed), optionally followed by ``:N`` (``n_rungs``, may be ``auto``; by default 256) and
``:D`` (``draws``, with ``tune = D / 4``), e.g. ``auto:-6:128:2000``. A short untimed run
compiles first. Settings alternate within each seed (A B A B ...), so the machine's load hits
all alike; ``--draws`` with ``tune = draws / 4`` unless a SETTING says. Per setting and
estimator (TI, SS, BAR) it prints ``harness.summary``: rms error against the exact log Z, mean
MCSE, coverage of 2 MCSE, CPU seconds (``time.process_time()``).

Decided, with ``bench_evidence_variance.py``: ``beta_min="auto"`` and ``n_rungs="auto"``
(docs/decisions/070-beta-min-auto.md).
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: problems, harness

import harness  # noqa: E402
from problems import EVIDENCE_PROBLEMS  # noqa: E402

from pymc_tempering.evidence.runner import auto_beta_min  # noqa: E402
from pymc_tempering.ladder import PRIOR_SPREAD_MARGIN  # noqa: E402


def beta_min_of(setting, model, seed):
    """``marginal_likelihood``'s ``beta_min`` for a SETTING (see the module docstring)."""
    kind, exponent = setting.split(":")[:2]
    exponent = int(exponent)
    if kind == "fixed":
        return 2.0**exponent
    if kind != "auto":
        raise ValueError(f"a SETTING is fixed:E or auto:E, got {setting!r}")
    if 2.0**exponent == PRIOR_SPREAD_MARGIN:
        return "auto"
    shift = exponent - int(np.log2(PRIOR_SPREAD_MARGIN))
    return auto_beta_min(model, random_seed=seed) * 2.0**shift


def extra(setting):
    """The optional third and fourth fields of a SETTING: ``n_rungs`` and ``draws``."""
    fields = setting.split(":")[2:]
    out = {}
    if len(fields) > 0:
        out["n_rungs"] = fields[0] if fields[0] == "auto" else int(fields[0])
    if len(fields) > 1:
        out["draws"] = int(fields[1])
        out["tune"] = max(out["draws"] // 4, 100)
    return out


def main():
    parser = harness.settings_parser()
    parser.add_argument("--draws", type=int, default=1000)
    args = parser.parse_args()
    model, exact = EVIDENCE_PROBLEMS[args.problem]()
    call = {"draws": args.draws, "tune": max(args.draws // 4, 100), "n_rungs": 256}
    harness.run_ours(model, exact, 0, {"draws": 20, "tune": 20, "chains": 1}, {})  # compile
    rows = {s: [] for s in args.settings}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for setting in args.settings:
            beta_min = beta_min_of(setting, model, seed)
            row = harness.run_ours(
                model, exact, seed, {**call, **extra(setting), "beta_min": beta_min}, {}
            )
            rows[setting].append(row)
            print(f"{setting} seed {seed}: err {np.round(row[0], 4)} mcse {np.round(row[1], 4)} "
                  f"cpu {row[2]:.1f}", flush=True)  # fmt: skip
    for setting in args.settings:
        label = f"{args.problem} draws={args.draws} [{setting}]"
        harness.summary(label, list(harness.METHODS), rows[setting])


if __name__ == "__main__":
    main()
