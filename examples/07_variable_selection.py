"""Story 7: Bayesian variable selection over all 2^k subsets, every model's evidence on Dask.

The diabetes data of Efron, Hastie, Johnstone & Tibshirani (2004): disease progression y of 442
patients one year after baseline, against baseline variables. We compare every subset of
k = 6 of them (age, sex, bmi, bp, s3 = HDL, s5 = log triglycerides): 2^6 = 64 linear
regressions, each with an intercept, under the conjugate Normal-Gamma prior on the standardised
data, y = X_S theta + e, e ~ N(0, 1/tau), theta | tau ~ N(0, (tau I)^-1), tau ~ Gamma(2, rate 1),
so that every model's log Z is known in closed form (``pymc_tempering.exact``).

``compare_models`` runs ExchangeMC and thermodynamic integration on all 64 models through a
Dask ``LocalCluster`` (the same call takes a dask-jobqueue or remote scheduler's client), keeps
each finished model in a store (rerun the script: nothing is recomputed), and returns the
evidence table. We print the top models by estimated log Z against exact, check every model
within 4 MCSE, turn the evidence into posterior inclusion probabilities with MCSEs propagated
from every log Z (delta method) and check them against exact enumeration, and put the ranking
by ``arviz.compare`` (PSIS-LOO on the beta = 1 rung's draws) beside it.

The data file is ``examples/data/diabetes.csv`` (source in its header).

Run: ``python examples/07_variable_selection.py [--quick] [--workers 2]``. ``--quick``: the 2^3
subsets of bmi, bp and s5 with short runs (about a minute on 2 cores).
"""

import argparse
import itertools
import logging
import time
import warnings
from functools import partial
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import arviz as az  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pymc as pm  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
import xarray as xr  # noqa: E402

from pymc_tempering.evidence import EvidenceWarning  # noqa: E402
from pymc_tempering.exact import normal_gamma_log_evidence  # noqa: E402
from pymc_tempering.selection import compare_models  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "diabetes.csv"
OUTPUT = ROOT / "examples" / "output"
PREDICTORS = ("age", "sex", "bmi", "bp", "s3", "s5")
QUICK_PREDICTORS = ("bmi", "bp", "s5")
PRIOR = {"precision": 1.0, "shape": 2.0, "rate": 1.0}  # theta | tau ~ N(0, 1/tau), tau ~ G(2, 1)
SETTINGS = {"n_rungs": 64, "draws": 1000, "tune": 1000, "chains": 8}
QUICK_SETTINGS = {"n_rungs": 48, "draws": 400, "tune": 300, "chains": 8}
LOO_DRAWS = 1000  # posterior draws per model for PSIS-LOO (thinned)


def read_diabetes(path=DATA):
    """Standardised predictors (DataFrame) and response (array)."""
    data = pd.read_csv(path, comment="#")
    y = data.pop("y").to_numpy(float)
    x = (data - data.mean()) / data.std(ddof=0)
    return x, (y - y.mean()) / y.std(ddof=0)


def design(x, subset):
    """The intercept and the predictors in ``subset``."""
    return np.column_stack([np.ones(len(x)), *(x[name].to_numpy() for name in subset)])


def regression(X, y, prior=PRIOR):
    """The Normal-Gamma regression, non-centred: theta = u / sqrt(tau * q0), u ~ N(0, I)."""
    with pm.Model() as model:
        tau = pm.Gamma("tau", alpha=prior["shape"], beta=prior["rate"])
        u = pm.Normal("u", 0.0, 1.0, shape=X.shape[1])
        theta = u / pt.sqrt(tau * prior["precision"])
        pm.Normal("y", pt.dot(X, theta), 1.0 / pt.sqrt(tau), observed=y)
    return model


def exact_log_evidence(X, y, prior=PRIOR):
    k = X.shape[1]
    return normal_gamma_log_evidence(
        y, X, np.zeros(k), prior["precision"] * np.eye(k), prior["shape"], prior["rate"]
    )


def model_name(subset):
    return "+".join(subset) if subset else "(intercept)"


def subsets(predictors):
    return [s for r in range(len(predictors) + 1) for s in itertools.combinations(predictors, r)]


def inclusion_probabilities(table, predictors, exact):
    """Posterior inclusion probabilities under a uniform prior over models, estimated and exact.

    The MCSE is the delta method over every model's log Z MCSE (independent runs):
    d PIP_j / d log Z_m = p_m (1[j in m] - PIP_j). Errors and gradients are summed over the
    models without ``j`` (``1 - PIP``), which keeps them accurate to the last digit when PIP is
    within 1e-14 of 1 (summing the models with ``j`` would leave only rounding error there).
    """
    names = list(table.index)
    p = table.model_probability.to_numpy(float)
    mcse = table.mcse.to_numpy(float)
    log_z = np.array([exact[n] for n in names])
    p_exact = np.exp(log_z - log_z.max())
    p_exact /= p_exact.sum()
    rows = {}
    for j in predictors:
        without = np.array([j not in n.split("+") for n in names], dtype=float)
        q, q_exact = without @ p, without @ p_exact  # 1 - PIP
        grad = p * (q - without)  # = p_m (1[j in m] - PIP_j)
        rows[j] = {
            "estimate": 1.0 - q,
            "mcse": float(np.sqrt(np.sum(grad**2 * mcse**2))),
            "exact": 1.0 - q_exact,
            "error": q_exact - q,
        }
    pips = pd.DataFrame(rows).T
    pips["|error| / mcse"] = pips.pop("error").abs() / pips.mcse
    return pips


def loo_comparison(table, models, y, draws=LOO_DRAWS):
    """``arviz.compare`` on each model's stored beta = 1 draws, thinned to ``draws``."""
    idatas = {}
    for name in table.index:
        tree = xr.open_datatree(table.loc[name, "file"])
        posterior = tree["posterior"].to_dataset()
        total = posterior.sizes["chain"] * posterior.sizes["draw"]
        thin = max(1, total // draws)
        small = xr.DataTree.from_dict({"posterior": posterior.isel(draw=slice(None, None, thin))})
        small["observed_data"] = xr.Dataset({"y": ("y_dim_0", y)})
        idatas[name] = pm.compute_log_likelihood(small, model=models[name](), progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return az.compare(idatas, round_to="none")


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2^3 models, short runs, for CI")
    parser.add_argument("--workers", type=int, default=2, help="Dask LocalCluster workers")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--store", type=Path, help="default: <output>/07_store")
    parser.add_argument("--seed", type=int, default=2004)
    return parser.parse_args(argv)


def run(args, models):
    from dask.distributed import Client, LocalCluster

    settings = QUICK_SETTINGS if args.quick else SETTINGS
    cluster = LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    with cluster, Client(cluster) as client, warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)  # counted from the table below
        return compare_models(
            models,
            executor=client.get_executor(),
            store=args.store or args.output / "07_store",
            random_seed=args.seed,
            progressbar=not args.quick,
            **settings,
        )


def main(argv=None):
    args = parse(argv)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    args.output.mkdir(parents=True, exist_ok=True)
    x, y = read_diabetes(args.data)
    predictors = QUICK_PREDICTORS if args.quick else PREDICTORS
    designs = {model_name(s): design(x, s) for s in subsets(predictors)}
    models = {name: partial(regression, X, y) for name, X in designs.items()}
    exact = {name: exact_log_evidence(X, y) for name, X in designs.items()}
    print(f"Diabetes data (Efron et al. 2004), n = {len(y)}; {len(models)} models: every subset "
          f"of {', '.join(predictors)}, intercept always in")  # fmt: skip
    start = time.perf_counter()
    table = run(args, models)
    table["exact"] = [exact[n] for n in table.index]
    table["|error| / mcse"] = (table.log_marginal_likelihood - table.exact).abs() / table.mcse
    failed, warned = table.error.astype(bool).sum(), table.warning.astype(bool).sum()
    within = int((table["|error| / mcse"] < 4).sum())
    print(
        f"{within} of {len(table)} models within 4 MCSE of the exact log Z; {warned} warned, "
        f"{failed} failed, {int(table.from_store.sum())} loaded from the store; "
        f"{time.perf_counter() - start:.0f} s"
    )
    show = ["log_marginal_likelihood", "mcse", "exact", "|error| / mcse", "model_probability",
            "min_swap_accept", "round_trips", "wall_time"]  # fmt: skip
    with pd.option_context("display.width", 200, "display.precision", 3):
        print("\nTop 10 models by estimated log Z (TI):")
        print(table[show].head(10).to_string())
        pips = inclusion_probabilities(table, predictors, exact)
        print("\nPosterior inclusion probabilities (uniform prior over models):")
        print(pips.to_string())
        loo = loo_comparison(table, models, y)
        exact_rank = table.exact.rank(ascending=False).astype(int) - 1
        ranks = pd.DataFrame(
            {"log Z rank": table["rank"], "exact rank": exact_rank, "LOO rank": loo["rank"]}
        ).reindex(table.index)
        ranks["elpd_loo"] = loo.elpd.map("{:.2f}".format)
        print("\nRanking by evidence and by arviz.compare (PSIS-LOO), top 10 by log Z:")
        print(ranks.head(10).to_string())
    path = args.output / "07_variable_selection.png"
    plot(table, pips, path)
    print(f"\nFigure saved to {path}")
    return {"table": table, "pips": pips, "loo": loo, "ranks": ranks}


def plot(table, pips, path):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    ax = axes[0]
    order = np.argsort(table.exact.to_numpy())
    z = (table.log_marginal_likelihood - table.exact).to_numpy()[order]
    ax.errorbar(np.arange(len(z)), z, yerr=2 * table.mcse.to_numpy()[order], fmt="o", ms=3)
    ax.axhline(0, color="k", lw=1)
    ax.set(xlabel="model, by exact log Z", ylabel="estimated - exact log Z (±2 MCSE)")
    ax.set_title(f"{len(table)} models: TI against the closed form", fontsize=10)
    ax = axes[1]
    pos = np.arange(len(pips))
    ax.bar(pos, pips.exact, color="0.8", label="exact enumeration")
    ax.errorbar(pos, pips.estimate, yerr=2 * pips.mcse, fmt="o", color="C3", label="TI (±2 MCSE)")
    ax.set_xticks(pos, pips.index)
    ax.set(ylabel="posterior inclusion probability", ylim=(0, 1.05))
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def check(out, output):
    """Every log Z and inclusion probability of the run within 4 MCSE of exact enumeration
    (called after ``main`` by tests/selection/test_runner.py and by the gallery page)."""
    table, pips = out["table"], out["pips"]
    assert not table.error.any(), table.error
    assert (table["|error| / mcse"] < 4).all(), table
    assert (pips["|error| / mcse"] < 4).all(), pips
    assert (Path(output) / "07_variable_selection.png").is_file()
    assert list(out["ranks"]["LOO rank"].index) == list(table.index)


if __name__ == "__main__":
    main()
