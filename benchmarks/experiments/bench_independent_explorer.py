"""The independence explorer (``ExchangeMC(explorer="independent")``) against the random walk
inside ``marginal_likelihood``, at equal CPU time, on ``problems.EVIDENCE_PROBLEMS``.

Run (one core, quiet BLAS):
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python \\
        benchmarks/experiments/bench_independent_explorer.py equal --problem radiata --cpu 5 \\
        --seeds 8 [--first-seed 0]
    ... bench_independent_explorer.py diagnose --problem two_mode_10d --draws 800 [--seed 1]

``diagnose``: one run per explorer (8 chains); per rung (a selection) the independence moves'
acceptance (last chain), the random walk's, and the loglik's integrated autocorrelation time
(draws / bulk ESS over the 8 chains, ArviZ). ``equal``: a pilot per explorer gives CPU seconds
= overhead + per_draw * draws (two draw counts); then per seed, alternating explorers, the
draws that fill ``--cpu`` CPU seconds (tune = draws / 4, at least 100); rms error of TI, mean
MCSE, coverage of 2 MCSE, mean CPU seconds. Both explorers run on the ladder of the session
that measured it (256 rungs from ``beta_min = 2**-30``, 8 chains), written out so that the step
is at hand; ``"default"`` is the random walk, ExchangeMC's own default.

Decided: ``marginal_likelihood`` uses the independence explorer on continuous models of at most
20 parameters (docs/decisions/071-independence-explorer.md).
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: problems

from problems import EVIDENCE_PROBLEMS as PROBLEMS  # noqa: E402

from pymc_tempering.engine.explorers import Independent  # noqa: E402
from pymc_tempering.evidence.methods import evidence_by_method, resolve_methods  # noqa: E402
from pymc_tempering.evidence.runner import _evidence_step_kwargs  # noqa: E402
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC  # noqa: E402

EXPLORER_KWARGS = {"default": {}, "independent": {"explorer": "independent"}}
N_RUNGS, BETA_MIN, CHAINS = 256, 2.0**-30, 8


def run(model, explorer, draws, seed):
    """``marginal_likelihood``'s run with its defaults of this session's start (256 rungs,
    beta_min 2**-30, 8 chains, tune = draws / 4), written out so that the step is at hand.
    Returns ``(TI result, step, idata, CPU seconds)``."""
    kwargs = _evidence_step_kwargs(dict(EXPLORER_KWARGS[explorer]), N_RUNGS, BETA_MIN)
    start = time.process_time()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step = ExchangeMC(**kwargs)
        idata = pm.sample(draws=draws, tune=max(draws // 4, 100), chains=CHAINS, step=step,
                          random_seed=seed, cores=1, progressbar=False,
                          compute_convergence_checks=False)  # fmt: skip
        ((result, _),) = evidence_by_method(idata, resolve_methods("ti")).values()
    return result, step, idata, time.process_time() - start


def loglik_iat(idata):
    """Per rung, draws / bulk ESS of the rung's loglik over all chains."""
    loglik = idata.sample_stats["rung_loglik"].values  # (chain, draw, rung)
    n = loglik.shape[0] * loglik.shape[1]
    ess = np.array([az.ess(loglik[:, :, r]) if np.all(np.isfinite(loglik[:, :, r])) else np.nan
                    for r in range(loglik.shape[2])])  # fmt: skip
    return n / ess


def diagnose(model, exact, draws, seed):
    rows = {}
    for explorer in EXPLORER_KWARGS:
        result, step, idata, cpu = run(model, explorer, draws, seed)
        err = float(result.log_marginal_likelihood) - exact
        print(f"{explorer}: cpu {cpu:.1f} s, TI error {err:+.4f}, MCSE {float(result.mcse):.4f}")
        accept = idata.sample_stats["rung_accept"].values  # (chain, draw, rung)
        rw, imh = accept.mean(axis=(0, 1)), np.full(accept.shape[2], np.nan)
        if explorer == "independent":  # the independence moves' sweeps, and the walk's
            tune = max(draws // 4, 100)
            even = Independent.independence_sweep(tune + np.arange(accept.shape[1]))
            rw, imh = accept[:, ~even].mean(axis=(0, 1)), accept[:, even].mean(axis=(0, 1))
        rows[explorer] = (loglik_iat(idata), rw, imh)
    betas = step.betas
    head = f"{'rung':>5}{'beta':>10}{'IAT rwm':>9}{'IAT ind':>9}{'acc rwm':>9}"
    print(head + f"{'ind: rwm':>9}{'IMH':>9}")
    for r in np.unique(np.r_[np.arange(1, betas.size, 16), betas.size - 8 + np.arange(8)]):
        iat_rw, iat_ind = rows["default"][0][r], rows["independent"][0][r]
        print(f"{r:>5}{betas[r]:>10.2e}{iat_rw:>9.1f}{iat_ind:>9.1f}{rows['default'][1][r]:>9.2f}"
              f"{rows['independent'][1][r]:>9.2f}{rows['independent'][2][r]:>9.2f}")  # fmt: skip


def equal_cpu(model, exact, cpu, seeds):
    cost = {}
    for explorer in EXPLORER_KWARGS:
        run(model, explorer, 100, 90)  # compile
        t = {d: run(model, explorer, d, 91)[3] for d in (100, 500)}
        per_draw = (t[500] - t[100]) / 400
        cost[explorer] = (t[100] - 100 * per_draw, per_draw)
        print(f"{explorer}: overhead {cost[explorer][0]:.2f} s, {1e3 * per_draw:.2f} ms/draw")
    out = {e: [] for e in EXPLORER_KWARGS}
    for seed in seeds:
        for explorer in EXPLORER_KWARGS:
            overhead, per_draw = cost[explorer]
            draws = max(int((cpu - overhead) / per_draw), 100)
            result, _, _, used = run(model, explorer, draws, seed)
            err = float(result.log_marginal_likelihood) - exact
            out[explorer].append((err, float(result.mcse), used, draws))
            print(
                f"  seed {seed} {explorer:<12} draws {draws:>5} cpu {used:5.1f} "
                f"err {err:+.4f} mcse {float(result.mcse):.4f}",
                flush=True,
            )
    print(f"{'explorer':<12}{'rms err':>9}{'mean err':>9}{'MCSE':>8}{'cover':>7}{'cpu s':>7}")
    for explorer, rows in out.items():
        err, mcse, used, _ = np.array(rows).T
        print(
            f"{explorer:<12}{np.sqrt(np.mean(err**2)):>9.4f}{err.mean():>+9.4f}"
            f"{mcse.mean():>8.4f}{np.mean(np.abs(err) < 2 * mcse):>7.2f}{used.mean():>7.1f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("diagnose", "equal"))
    parser.add_argument("--problem", choices=tuple(PROBLEMS), default="two_mode_10d")
    parser.add_argument("--draws", type=int, default=800)
    parser.add_argument("--cpu", type=float, default=5.0)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=0)
    args = parser.parse_args()
    model, exact = PROBLEMS[args.problem]()
    if args.mode == "diagnose":
        diagnose(model, exact, args.draws, args.seed)
    else:
        equal_cpu(model, exact, args.cpu, range(args.first_seed, args.first_seed + args.seeds))
