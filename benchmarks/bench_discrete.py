"""Discrete models at equal wall time: ExchangeMC vs pm.Metropolis vs pm.sample's default step.

Run: ``python benchmarks/bench_discrete.py [--quick] [--budget 60] [--seed 1]`` (about
``2 models x 3 samplers x (budget + pilot)``: 7-8 minutes with the default 60 s budget;
``--quick``, a smoke run of about a minute). One process, one seed; every run uses
``chains=2, cores=1`` (chains one after the other), the progress bar and PyMC's convergence
checks off (reporting, the same for all), and the samplers' defaults otherwise:

- ``ExchangeMC``: ``pm.sample(step=pmt.ExchangeMC())`` (32 rungs; Gibbs for the indicators,
  integer Metropolis for the 112-value switchpoint, random walk for the continuous block);
- ``pm.Metropolis``: ``pm.sample(step=pm.Metropolis())`` (one step over all free variables);
- ``pm.sample default``: ``pm.sample()`` with PyMC's own assignment, NUTS for the continuous
  variables and Metropolis / BinaryGibbsMetropolis for the discrete ones.

Models (exact references in :mod:`pymc_tempering.exact`): (a) the coal-mining change point
(``change_point_model()``: 112-year DiscreteUniform switchpoint, two Gamma(1, 1) rates), exact
P(switchpoint = year) by summing over years with the rates integrated out; (b) variable
selection (``variable_selection_model(*variable_selection_data()[:2])``: 8 predictors, two
pairs correlated 0.97, Bernoulli(1/2) indicators, N(0, 5^2) slabs), exact inclusion
probabilities (PIPs) by enumerating the 2^8 subsets.

Equal wall time: a pilot run (``--pilot`` draws and as many tuning steps, run twice, the
second measured) gives each sampler's fixed cost (model compilation, start-up, conversion) and
its cost per draw (pm.sample's own ``sampling_time`` / (chains x (tune + draws))); the main run
then gets ``tune`` = PyMC's default 1000 and as many draws as fill ``--budget`` seconds. Wall
time runs from the step's construction (ExchangeMC compiles there) to the DataTree,
compilation included; the pilot has warmed PyTensor's compilation cache, as a user's second
run would be. On a loaded machine the main runs miss the budget both ways; ESS/s is per
measured second, so the ratios stay fair, but rerun on a quiet machine for reported numbers.

Reported per model and sampler: wall time, cost per draw, draws; ESS (ArviZ's mean ESS, split
chains) and ESS/s of the switchpoint and rates, or the minimum over the indicators; the error
of the probabilities against the exact ones, as max |estimate - exact| and as max |error| /
MCSE. Where that exceeds 4 the sampler has not mixed in the budget, and below 100 effective
draws the ESS and MCSE estimates themselves are unreliable: the ``trust`` column says so.
Ratios are ExchangeMC's ESS/s over each other sampler's. Target (issue 14): ExchangeMC >= 5x
the ESS/s of PyMC's default on the variable selection.
The table goes to ``benchmarks/output/bench_discrete.{csv,md}`` (git-ignored).
"""

import argparse
import logging
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm

import pymc_tempering as pmt
from pymc_tempering.evidence.core.mcse import mean_mcse
from pymc_tempering.exact import change_point, variable_selection

OUTPUT = Path(__file__).resolve().parent / "output"
CHAINS = 2
TUNE = 1000  # PyMC's default
SAMPLERS = {
    "ExchangeMC": lambda: pmt.ExchangeMC(),
    "pm.Metropolis": lambda: pm.Metropolis(),
    "pm.sample default": lambda: None,
}
UNTRUSTED = 4.0  # |error| / MCSE above this: the MCSE (and the ESS) are not to be trusted
MIN_ESS = 100  # fewer effective draws: ESS and MCSE estimates are unreliable


def timed_sample(model, make_step, draws, tune, seed):
    """Sample ``model``; the wall time from the step's construction to the DataTree, and the
    cost per draw from pm.sample's own ``sampling_time``."""
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyMC's r-hat / ESS advice: the table reports them
        start = time.perf_counter()
        idata = pm.sample(
            draws, tune=tune, chains=CHAINS, cores=1, step=make_step(), random_seed=seed,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip
        wall = time.perf_counter() - start
    per_draw = idata.sample_stats.attrs["sampling_time"] / (CHAINS * (tune + draws))
    return idata, wall, per_draw


def trust(z, ess_value):
    """Whether the row's MCSE can be believed: not if the error exceeds ``UNTRUSTED`` MCSEs (the
    sampler has not mixed), nor with fewer than ``MIN_ESS`` effective draws (Vehtari et al.
    2021: the ESS and MCSE estimates themselves are then unreliable)."""
    if not z < UNTRUSTED:
        return "NOT MIXED"
    return "ok" if ess_value >= MIN_ESS else f"ESS < {MIN_ESS}: MCSE unreliable"


def budget_draws(build, make_step, budget, tune, pilot, seed):
    """Draws that fill ``budget`` seconds after ``tune`` tuning steps, from a pilot run.

    The pilot runs twice and the second is measured: the first fills PyTensor's compilation
    cache, and pm.Metropolis compiles inside its first draws, which would count as sampling
    time (20x its cost per draw) in a cold pilot."""
    for _ in range(2):
        _, wall, per_draw = timed_sample(build(), make_step, pilot, pilot, seed)
    fixed = max(wall - per_draw * CHAINS * 2 * pilot, 0.0)
    draws = int((budget - fixed) / (CHAINS * per_draw)) - tune
    return max(draws, pilot)


def probability_errors(indicators, exact):
    """Max |mean - exact| over the columns of ``indicators`` (chain, draw, j), and the max of
    |error| / MCSE over the columns with exact probability above 1% (inf where such a column
    never changed, so that its MCSE is 0 or undefined)."""
    indicators = np.asarray(indicators, dtype=float)
    error = np.abs(indicators.mean(axis=(0, 1)) - exact)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mcse = mean_mcse(indicators).mcse
        z = np.where(np.isfinite(mcse) & (mcse > 0), error / mcse, np.inf)
    return float(error.max()), float(z[exact > 0.01].max())


def ess(values):
    """ArviZ's mean ESS of each column of ``values`` (chain, draw, ...); NaN if constant."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.atleast_1d(mean_mcse(np.asarray(values, dtype=float)).ess)


def change_point_metrics(idata):
    exact = change_point.change_point_posterior()
    post = idata.posterior
    switchpoint = post.switchpoint.values[..., None] == exact.switchpoint
    max_error, max_z = probability_errors(switchpoint, exact.probability)
    return {
        "ESS switchpoint": float(ess(post.switchpoint.values)[0]),
        "ESS early_rate": float(ess(post.early_rate.values)[0]),
        "ESS late_rate": float(ess(post.late_rate.values)[0]),
        "max |P(year) error|": max_error,
        "max |error|/MCSE": max_z,
    }


def variable_selection_metrics(idata, data):
    exact = variable_selection.variable_selection_posterior(data.X, data.y)
    gamma = idata.posterior.gamma.values
    max_error, max_z = probability_errors(gamma, exact.inclusion_probability)
    # an indicator that never changed has no ESS (NaN): count it as 0, it has not mixed
    return {
        "min ESS gamma": float(np.nan_to_num(ess(gamma), nan=0.0).min()),
        "max |PIP error|": max_error,
        "max |error|/MCSE": max_z,
    }


def models():
    data = variable_selection.variable_selection_data()
    return {
        "change point": (change_point.change_point_model, change_point_metrics, "ESS switchpoint"),
        "variable selection": (
            lambda: variable_selection.variable_selection_model(data.X, data.y),
            lambda idata: variable_selection_metrics(idata, data),
            "min ESS gamma",
        ),
    }


def run(budget, tune, pilot, seed):
    rows = []
    for model_name, (build, metrics, key) in models().items():
        for name, make_step in SAMPLERS.items():
            draws = budget_draws(build, make_step, budget, tune, pilot, seed)
            idata, wall, per_draw = timed_sample(build(), make_step, draws, tune, seed)
            row = {"model": model_name, "sampler": name, "wall s": wall,
                   "ms/draw": 1e3 * per_draw, "draws": draws, **metrics(idata)}  # fmt: skip
            row["ESS/s"] = row[key] / wall
            row["trust"] = trust(row["max |error|/MCSE"], row[key])
            rows.append(row)
            print(f"  {model_name}, {name}: {draws} draws in {wall:.1f} s", flush=True)
    table = pd.DataFrame(rows).set_index(["model", "sampler"])
    for model_name in table.index.unique("model"):
        exchange = table.loc[(model_name, "ExchangeMC"), "ESS/s"]
        for name in SAMPLERS:
            with np.errstate(divide="ignore"):  # inf: the other sampler had no effective draw
                ratio = np.float64(exchange) / table.loc[(model_name, name), "ESS/s"]
            table.loc[(model_name, name), "ExchangeMC ESS/s ratio"] = ratio
    return table


def markdown(table):
    """The table as GitHub markdown (no extra dependency)."""
    flat = table.reset_index()
    cells = [[_cell(v) for v in row] for row in flat.itertuples(index=False)]
    header = [name.replace("|", "\\|") for name in flat.columns]  # "|" inside a cell
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells]) + "\n"


def _cell(value):
    if isinstance(value, float | np.floating):
        return "" if np.isnan(value) else f"{value:.3g}" if abs(value) < 1e3 else f"{value:.0f}"
    return str(value)


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per sampler run")
    parser.add_argument("--pilot", type=int, default=200, help="pilot draws (and tune)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="smoke run: 8 s, tune 200")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    budget, tune, pilot = (8.0, 200, 50) if args.quick else (args.budget, TUNE, args.pilot)
    print(f"Equal wall time: {budget:.0f} s per run, tune {tune}, chains {CHAINS}, cores 1, "
          f"seed {args.seed}")  # fmt: skip
    table = run(budget, tune, pilot, args.seed)
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        for model_name in table.index.unique("model"):
            print(f"\n{model_name}:")
            print(table.loc[model_name].dropna(axis=1, how="all").round(3).to_string())
    target = table.loc[("variable selection", "pm.sample default"), "ExchangeMC ESS/s ratio"]
    print(f"\nVariable selection, min ESS/s of the indicators, ExchangeMC / pm.sample default: "
          f"{target:.1f}x (target >= 5x)")  # fmt: skip
    untrusted = table[table.trust != "ok"].index.tolist()
    if untrusted:
        print(f"Not to be trusted (|error| > {UNTRUSTED:.0f} MCSE: not mixed; or ESS < "
              f"{MIN_ESS}: ESS and MCSE estimates unreliable, so is the ESS/s ratio): "
              f"{untrusted}")  # fmt: skip
    args.output.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.output / "bench_discrete.csv")
    (args.output / "bench_discrete.md").write_text(markdown(table))
    print(f"Table written to {args.output / 'bench_discrete.md'} and .csv")
    return table


if __name__ == "__main__":
    main()
