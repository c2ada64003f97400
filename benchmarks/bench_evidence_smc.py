"""Section 4 of ``bench_evidence.py``: log Z at equal wall time, ``marginal_likelihood`` against
``pm.sample_smc``, each as a user runs it.

Run: python benchmarks/bench_evidence.py --smc-only [--smc-seeds 5] [--budgets 1 5]
     [--problems two_mode_10d radiata]

Per problem, a timed pilot of ``marginal_likelihood`` (its defaults, two draw counts) gives its
overhead (compilation, the default estimator's fixed cost) and its cost per draw. Then per
budget and seed: ``pm.sample_smc(draws=2000 * budget)`` with its other defaults (2 chains),
timed from the call to the result; then ``marginal_likelihood`` with its defaults but
``draws = d`` and ``tune`` in the defaults' ratio to the 1000 draws (500 with the
independence explorer, the default on these problems; 250 with ``--smc-explorer rwm``; at
least 100), ``d``
filling SMC's wall time of that seed (at least 100), timed the same way. Both run with
``cores=1`` in this process, one after the other, so the machine's load hits both. Our
estimators come from the same run: a method's wall time is the run's (sampling and the default
estimator) with the default estimator's time replaced by that method's. MBAR is opt-in
(``--smc-mbar``): on 256 rungs its exact passes cost ~30 s per run of 8 x 1000 draws, several
times SMC's whole budget. Run with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` on a shared
machine: spinning BLAS threads inflated a run's CPU time up to 10x
(``benchmarks/tune_evidence_defaults.py``).

SMC's error bar: the sd of its chains' estimates / sqrt(chains) (2 chains: a rough one).
"""

import logging
import time
import warnings
from typing import NamedTuple

import numpy as np
import pymc as pm
import targets

from pymc_tempering import evidence as ev
from pymc_tempering.evidence.methods import evidence_by_method, resolve_methods
from pymc_tempering.evidence.runner import (
    DEFAULT_METHODS,
    _default_explorer,
    _evidence_step_kwargs,
    default_tune,
)
from pymc_tempering.exact import two_mode_log_evidence, two_mode_model

logging.getLogger("pymc").setLevel(logging.ERROR)

METHODS = ("bar", "ti", "ss")
SMC_DRAWS = 2000  # pm.sample_smc's default
PILOT_DRAWS = (100, 600)
#: marginal_likelihood's arguments besides draws and tune (--smc-ladder adaptive: its ladder)
OURS = {}


def _tune(model, draws):
    """``marginal_likelihood``'s default ratio of ``tune`` to its default 1000 draws, for the
    explorer and ladder it would use on ``model`` (:func:`default_tune`), times ``draws``
    (at least 100: two tuning windows)."""
    ladder = OURS.get("ladder", "geometric")
    kwargs = _default_explorer(model, OURS.get("step_kwargs"), ladder)
    ratio = default_tune(_evidence_step_kwargs(kwargs, 256, 2.0**-30, ladder)) / 1000
    return max(int(round(ratio * draws)), 100)


def _two_mode_10d():
    """Modes at -m and +m, m from 3 to 5 per axis: 25 sds apart, weights 0.3 / 0.7."""
    half = np.linspace(3.0, 5.0, 10)
    means = (-half, half)
    return two_mode_model(means=means), two_mode_log_evidence(means=means)


def _radiata():
    """Radiata pine, density x, Normal-Gamma prior, non-centred (3 parameters)."""
    data = targets.radiata_pine_data()
    return (
        targets.radiata_model(data["y"], data["x"]),
        targets.radiata_log_evidence(data["y"], data["x"]),
    )


PROBLEMS = {"two_mode_10d": _two_mode_10d, "radiata": _radiata}


class Estimate(NamedTuple):
    log_z: float
    error_bar: float
    wall: float
    warned: bool = False


def smc_run(model, seed, draws) -> Estimate:
    """``pm.sample_smc`` with its defaults but ``draws``; the mean of its chains' estimates."""
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


def _timed_estimate(idata, method):
    start = time.perf_counter()
    ((result, problems),) = evidence_by_method(idata, resolve_methods(method)).values()
    return result, problems, time.perf_counter() - start


def ours_run(model, seed, draws, methods=METHODS) -> tuple[dict[str, Estimate], float]:
    """``marginal_likelihood`` with its defaults but ``draws`` (``tune`` in proportion): every
    method's estimate from one run, each with the run's wall time, its own estimator's time in
    place of the default's; and the call's wall time."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, idata = ev.marginal_likelihood(
            model,
            draws=draws,
            tune=_tune(model, draws),
            random_seed=seed,
            cores=1,
            return_idata=True,
            **OURS,
        )
        wall = time.perf_counter() - start
        default_cost = sum(_timed_estimate(idata, m)[2] for m in DEFAULT_METHODS)
        out = {}
        for method in methods:
            result, problems, cost = _timed_estimate(idata, method)
            out[method] = Estimate(
                float(result.log_marginal_likelihood), float(result.mcse),
                wall - default_cost + cost, bool(problems),
            )  # fmt: skip
    return out, wall


def pilot(model) -> tuple[float, float]:
    """``(overhead, seconds per draw)`` of a default ``marginal_likelihood`` call with
    ``tune`` in the defaults' ratio to ``draws``, from two timed runs (the smaller twice,
    keeping its faster time: the first compiles)."""
    small, large = PILOT_DRAWS
    walls = {}
    for draws, seeds in ((small, (90, 91)), (large, (92,))):
        times = []
        for seed in seeds:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ev.marginal_likelihood(
                    model, draws=draws, tune=_tune(model, draws), random_seed=seed, cores=1, **OURS
                )
            times.append(time.perf_counter() - start)
        walls[draws] = min(times)
    per_draw = max((walls[large] - walls[small]) / (large - small), 1e-6)
    return max(walls[small] - small * per_draw, 0.0), per_draw


def _row(label, estimates, exact):
    err = np.array([e.log_z - exact for e in estimates])
    bars = np.array([e.error_bar for e in estimates])
    covered = np.mean(np.abs(err) < 2 * bars)
    wall = np.mean([e.wall for e in estimates])
    warned = sum(e.warned for e in estimates)
    return (
        f"{label:<26}{np.sqrt(np.mean(err**2)):>9.4f}{np.mean(err):>+9.4f}{np.mean(bars):>9.4f}"
        f"{covered:>7.2f}{wall:>8.1f}{warned:>8d}"
    )


def _cell(model, exact, budget, seeds, cost, methods):
    """One budget: per seed SMC, then ours with the draws that fill SMC's wall time by the
    cost model last measured (the pilot's, rescaled by each run's wall time over its
    prediction: load changes)."""
    smc, ours, draws = [], {m: [] for m in methods}, []
    overhead, per_draw = cost
    for seed in seeds:
        smc.append(smc_run(model, seed, SMC_DRAWS * budget))
        draws.append(max(int((smc[-1].wall - overhead) / per_draw), 100))
        estimates, wall = ours_run(model, seed, draws[-1], methods)
        for method, estimate in estimates.items():
            ours[method].append(estimate)
        load = wall / (overhead + per_draw * draws[-1])  # the machine's load stretches both
        overhead, per_draw = overhead * load, per_draw * load
    rows = [_row(f"pm.sample_smc {SMC_DRAWS * budget} draws", smc, exact)]
    rows += [_row(f"ours {m.upper()}", ours[m], exact) for m in methods]
    return rows, draws


def equal_time(problems, budgets, n_seeds, mbar=False):
    """Section 4: print one table per problem (rows: budget x sampler/estimator)."""
    print("\n## 4. Equal wall time: marginal_likelihood vs pm.sample_smc (cores=1 each)\n")
    seeds = list(range(n_seeds))
    methods = (("mbar",) if mbar else ()) + METHODS
    for name in problems:
        model, exact = PROBLEMS[name]()
        cost = pilot(model)
        print(
            f"{name}: exact log Z {exact:.4f}; our pilot: overhead {cost[0]:.1f} s, "
            f"{1e3 * cost[1]:.2f} ms per draw; {n_seeds} seeds per cell"
        )
        header = f"{'budget / method':<26}{'rms err':>9}{'mean err':>9}{'err bar':>9}{'cover':>7}"
        print(header + f"{'wall s':>8}{'warned':>8}")
        for budget in budgets:
            rows, draws = _cell(model, exact, budget, seeds, cost, methods)
            tune = _tune(model, 1000) / 1000
            print(f"-- SMC x{budget}; our draws per chain {min(draws)}-{max(draws)}, "
                  f"tune {tune:g} of the draws")  # fmt: skip
            print("\n".join(rows))
        print()
    budgets_arg = " ".join(str(b) for b in budgets)
    print(
        "rerun: PYTHONPATH=. python benchmarks/bench_evidence.py --smc-only "
        f"--smc-seeds {n_seeds} --budgets {budgets_arg} --problems {' '.join(problems)}"
        + (" --smc-mbar" if mbar else "")
        + f" --smc-ladder {OURS.get('ladder', 'geometric')}"
        + "".join(f" --smc-explorer {v}" for v in OURS.get("step_kwargs", {}).values())
    )
    print("err bar: ours the reported MCSE; SMC the sd of its 2 chains' estimates / sqrt(2).")
    print("cover: share of seeds with |error| < 2 err bars; warned: runs with an EvidenceWarning.")
