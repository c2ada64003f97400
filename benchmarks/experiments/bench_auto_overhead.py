"""What ``explorer="auto"``'s probe costs where it does not switch: CPU of ``"auto"`` / ``"rwm"``.

Run: python benchmarks/experiments/bench_auto_overhead.py [--pairs 8] [--models NAME ...]
     [--draws 1000] [--tune 1000]

On the targets where ``"auto"`` keeps the random walk (centred eight schools, the two-mode
target, the seed paper's singular model) its draws are ``"rwm"``'s bit for bit, so the only
difference is CPU: the top rung's probe (sweeps 50-149 of tuning) and the per-sweep
bookkeeping. Per model, one process: the model is built and both samplers run once (compiled,
warm), then ``--pairs`` pairs of ``pm.sample`` calls (2 chains x (tune + draws), one core, a
fresh ``ExchangeMC`` each call, the order within a pair alternated), timed with
``time.process_time``. Printed: each pair's ratio and whether ``"auto"`` switched (centred
eight schools does in about 1 chain of 8: not the cost measured here, so such pairs are left
out of the summary), then the median ratio, its range and interquartile range. Target
(issue 35): within 1.10x.
Record: docs/decisions/110-exchange-defaults.md.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from problems import eight_schools, singular_model  # noqa: E402

import pymc_tempering as pmt  # noqa: E402
from pymc_tempering.exact import two_mode_model  # noqa: E402
from pymc_tempering.trace import LOCAL_MOVES  # noqa: E402

MALA = LOCAL_MOVES.index("mala+dense")

MODELS = {
    "schools-c": lambda: eight_schools(centred=True),
    "two-mode": two_mode_model,
    "singular": singular_model,
}


def cpu_of(model, explorer, draws, tune, seed):
    """``(CPU s, whether a chain switched to MALA)`` of one ``pm.sample`` call."""
    with model:
        start = time.process_time()
        step = pmt.ExchangeMC(explorer=explorer)
        idata = pm.sample(
            draws=draws, tune=tune, chains=2, cores=1, step=step, random_seed=seed,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip
        cpu = time.process_time() - start
    return cpu, bool(np.any(idata.sample_stats["explorer"].values == MALA))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    for name in args.models:
        model = MODELS[name]()
        for explorer in ("auto", "rwm"):  # compile and warm up
            cpu_of(model, explorer, args.draws, args.tune, seed=0)
        ratios, switched = [], 0
        for pair in range(args.pairs):
            order = ("auto", "rwm") if pair % 2 == 0 else ("rwm", "auto")
            runs = {e: cpu_of(model, e, args.draws, args.tune, seed=1 + pair) for e in order}
            (auto_cpu, switch), (walk_cpu, _) = runs["auto"], runs["rwm"]
            switched += switch
            if not switch:
                ratios.append(auto_cpu / walk_cpu)
            print(
                f"  {name:<10} pair {pair}: auto {auto_cpu:.3f} s rwm {walk_cpu:.3f} s "
                f"ratio {auto_cpu / walk_cpu:.3f}{' (switched)' if switch else ''}",
                flush=True,
            )
        q1, q3 = np.percentile(ratios, [25, 75])
        print(
            f"{name:<10} auto / rwm CPU median {np.median(ratios):.3f} "
            f"(range {min(ratios):.3f}-{max(ratios):.3f}, IQR {q1:.3f}-{q3:.3f}, "
            f"{len(ratios)} pairs; {switched} left out: auto switched)",
            flush=True,
        )


if __name__ == "__main__":
    main()
