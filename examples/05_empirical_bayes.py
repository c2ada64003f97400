"""Story 5: empirical Bayes, choosing a prior by its marginal likelihood (seed lecture).

The lecture's exercise: q(x | mu) = N(mu, 1), prior mu ~ N(0, b^2), n = 20 points from
N(0.5, 1). Part 1 picks the prior scale b from a grid on [0.01, 3] by maximising log Z(b)
(type II maximum likelihood), with log Z from

* thermodynamic integration over ``pmt.ExchangeMC`` rungs, with its MCSE;
* the exact value: marginally x ~ N(0, I + b^2 1 1^T) (``pymc_tempering.exact``);
* the Laplace approximation (``laplace_evidence``; exact here, the posterior being Gaussian);
* BIC (``bic``), which does not depend on b at all and so cannot choose it.

Part 2 is the exercise proper: over many simulated data sets, for several true means and sample
sizes, choose b by the exact log Z (equal to the Laplace value for this model), estimate mu by
MAP with that b, mu_MAP = sum x / (n + b^-2), and compare its mean squared error with maximum
likelihood (mu_ML = mean x).

Run: ``python examples/05_empirical_bayes.py [--quick]``.
"""

import argparse
import logging
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_tempering as pmt  # noqa: E402
from pymc_tempering import (  # noqa: E402
    EvidenceWarning,
    bic,
    evidence_ladder,
    laplace_evidence,
    thermodynamic_integration,
)
from pymc_tempering.exact import lecture_log_evidence  # noqa: E402

OUTPUT = Path(__file__).resolve().parent / "output"


def lecture_model(x, b):
    """x_i ~ N(mu, 1), mu ~ N(0, b^2).

    ``b`` is a plain float: ExchangeMC cannot yet compile models holding shared variables
    (``pm.Data``, dims), so each b gets its own model.
    """
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, float(b))
        pm.Normal("x", mu, 1.0, observed=x)
    return model


def evidence_over_grid(x, grid, draws, tune, n_rungs, seed):
    """TI (with MCSE), Laplace and BIC at every b of the grid."""
    rows = []
    for i, b in enumerate(grid):
        with lecture_model(x, b), warnings.catch_warnings():
            warnings.simplefilter("ignore", EvidenceWarning)
            idata = pm.sample(
                draws=draws,
                tune=tune,
                chains=2,
                cores=1,
                step=pmt.ExchangeMC(betas=evidence_ladder(n_rungs, beta_min=1e-6)),
                random_seed=seed + i,
                progressbar=False,
                compute_convergence_checks=False,
            )
            ti = thermodynamic_integration(idata)
            rows.append(
                {
                    "b": b,
                    "exact": lecture_log_evidence(x, b),
                    "TI": float(ti.log_marginal_likelihood),
                    "TI mcse": float(ti.mcse),
                    "Laplace": float(laplace_evidence().log_marginal_likelihood),
                    "BIC": float(bic().log_marginal_likelihood),
                }
            )
    return rows


def map_vs_ml(true_means, sizes, n_sets, grid, rng):
    """MSE of the empirical-Bayes MAP and of ML for every (true mean, n), over ``n_sets`` sets."""
    out = {}
    for n in sizes:
        for mu in true_means:
            x = rng.normal(mu, 1.0, size=(n_sets, n))
            log_z = np.array([lecture_log_evidence(row, grid) for row in x])  # (set, b)
            b_hat = grid[np.argmax(log_z, axis=1)]
            mu_map = x.sum(axis=1) / (n + b_hat**-2.0)
            mu_ml = x.mean(axis=1)
            mse_map, mse_ml = np.mean((mu_map - mu) ** 2), np.mean((mu_ml - mu) ** 2)
            se = np.std((mu_map - mu) ** 2 - (mu_ml - mu) ** 2, ddof=1) / np.sqrt(n_sets)
            out[(n, mu)] = {
                "mse_map": mse_map,
                "mse_ml": mse_ml,
                "diff_se": se,
                "median_b": float(np.median(b_hat)),
            }
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds, for CI")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    args.output.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)

    x = rng.normal(0.5, 1.0, size=20)
    if args.quick:
        ti_grid, draws, tune, n_rungs, n_sets = np.array([0.05, 0.5, 3.0]), 600, 300, 32, 500
    else:
        ti_grid, draws, tune, n_rungs, n_sets = np.geomspace(0.01, 3, 12), 3000, 1000, 64, 4000
    fine = np.geomspace(0.01, 3.0, 300)

    print(f"Part 1: n = {x.size} points from N(0.5, 1), mean {x.mean():.3f}; choose b by log Z(b)")
    rows = evidence_over_grid(x, ti_grid, draws, tune, n_rungs, args.seed)
    print(f"{'b':>7}{'exact':>11}{'TI':>11}{'MCSE':>8}{'|err|/MCSE':>12}{'Laplace':>11}{'BIC':>11}")
    for r in rows:
        z = abs(r["TI"] - r["exact"]) / r["TI mcse"]
        print(
            f"{r['b']:>7.3f}{r['exact']:>11.4f}{r['TI']:>11.4f}{r['TI mcse']:>8.4f}{z:>12.1f}"
            f"{r['Laplace']:>11.4f}{r['BIC']:>11.4f}"
        )
    exact_fine = lecture_log_evidence(x, fine)
    b_exact = fine[np.argmax(exact_fine)]
    b_ti = rows[int(np.argmax([r["TI"] for r in rows]))]["b"]
    b_grid_exact = rows[int(np.argmax([r["exact"] for r in rows]))]["b"]
    print(
        f"argmax_b log Z: exact (fine grid) b = {b_exact:.3f}; on the TI grid: TI picks "
        f"b = {b_ti:.3f}, exact picks b = {b_grid_exact:.3f}; BIC is flat in b"
    )

    sizes = [5, 20] if args.quick else [5, 20, 100]
    true_means = [0.0, 0.5, 2.0] if args.quick else [0.0, 0.25, 0.5, 1.0, 2.0]
    print(f"\nPart 2: MSE over {n_sets} data sets per cell; b chosen from the fine grid")
    print(f"{'n':>5}{'true mu':>9}{'median b':>10}{'MSE MAP':>10}{'MSE ML':>10}{'ratio':>8}")
    results = map_vs_ml(true_means, sizes, n_sets, fine, rng)
    for (n, mu), r in results.items():
        print(
            f"{n:>5}{mu:>9.2f}{r['median_b']:>10.3f}{r['mse_map']:>10.4f}{r['mse_ml']:>10.4f}"
            f"{r['mse_map'] / r['mse_ml']:>8.2f}"
        )

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    ax = axes[0]
    ax.plot(fine, exact_fine, "k-", lw=1, label="exact")
    ax.errorbar([r["b"] for r in rows], [r["TI"] for r in rows],
                yerr=[2 * r["TI mcse"] for r in rows], fmt="o", ms=4, capsize=3,
                label="TI (ExchangeMC) ±2 MCSE")  # fmt: skip
    ax.plot([r["b"] for r in rows], [r["Laplace"] for r in rows], "x", ms=7, label="Laplace")
    ax.plot([r["b"] for r in rows], [r["BIC"] for r in rows], "--", label="BIC (−BIC/2)")
    ax.axvline(b_exact, color="0.6", ls=":", label=f"argmax b = {b_exact:.2f}")
    ax.set(xscale="log", xlabel="prior scale b", ylabel="log Z(b)")
    ax.set_title(f"Marginal likelihood of the prior scale, n = {x.size}", fontsize=10)
    ax.legend(fontsize=8)
    ax = axes[1]
    for i, n in enumerate(sizes):
        ratio = [results[(n, mu)]["mse_map"] / results[(n, mu)]["mse_ml"] for mu in true_means]
        ax.plot(true_means, ratio, "o-", color=f"C{i}", label=f"n = {n}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set(xlabel="true mean", ylabel="MSE(empirical-Bayes MAP) / MSE(ML)")
    ax.set_title(f"MAP with the chosen b vs maximum likelihood, {n_sets} sets", fontsize=10)
    ax.legend(fontsize=8)
    path = args.output / "05_empirical_bayes.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    print(f"\nFigure saved to {path}")
    return {"rows": rows, "results": results, "b_exact": b_exact}


def check(out, output):
    """The quick run against the exact evidence (called after ``main`` by
    tests/test_examples.py and by the gallery page)."""
    for row in out["rows"]:
        assert abs(row["TI"] - row["exact"]) < 4 * row["TI mcse"], row
        assert abs(row["Laplace"] - row["exact"]) < 1e-5, row  # Gaussian: exact
    assert len({round(row["BIC"], 9) for row in out["rows"]}) == 1  # BIC ignores b


if __name__ == "__main__":
    main()
