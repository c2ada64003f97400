"""Story 2: stochastic gradient Langevin dynamics (Welling & Teh 2011).

1. The paper's sec. 5.1 tied-means mixture: theta1 ~ N(0, 10), theta2 ~ N(0, 1),
   x_i ~ 0.5 N(theta1, 2) + 0.5 N(theta1 + theta2, 2), 100 points from theta = (0, 1), whose
   posterior lies along a ridge joining (0, 1) and (1, -1) (the labels swap), two separate
   modes for some data sets, one long ridge for others (as for this seed). SGLD with
   minibatches of one point and step sizes from 0.01 down to 0.0001 (gamma = 0.55), against
   a grid reference of the posterior (exact up to the grid): mode probabilities, means and
   sds, step-size weighted (the paper's eq. 11).
2. The two-phase noise plot (the paper's Figure 2): injected noise variance against the
   stochastic-gradient noise variance, and the sampling threshold alpha of eq. (10).
3. Logistic regression on real data with a Laplace prior of scale 1 and minibatches of 10 (the
   paper's sec. 5.2 set-up): will the S&P 500 close the month up, given the same month's returns
   of IBM, Apple, Microsoft, Xerox and Adobe? (Monthly closes 1990-2022 from Yahoo Finance,
   shipped with matplotlib as ``sample_data/Stocks.csv``.) Trained on the first 300 months,
   held-out accuracy on the rest, SGLD against NUTS. The paper's a9a data (32,561 rows) is not
   shipped with any package installed here.

Full mode runs 4 chains x 100,000 SGLD steps on the mixture (1,000 sweeps each, a tenth of the
paper's 10,000 sweeps); the chains together estimate the mode probabilities, with a
between-chain standard error.

Run: ``python examples/02_sgld.py [--quick]``.
"""

import argparse
import logging
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pymc as pm  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from scipy.special import expit, logsumexp  # noqa: E402

from pymc_tempering.diagnostics.sgld import (  # noqa: E402
    sampling_threshold_crossing,
    step_size_weighted_mean,
)
from pymc_tempering.plots import plot_sgld_noise  # noqa: E402
from pymc_tempering.step_methods.sgld import SGLD  # noqa: E402

OUTPUT = Path(__file__).resolve().parent / "output"
STOCKS = Path(matplotlib.get_data_path()) / "sample_data" / "Stocks.csv"
SD_X = np.sqrt(2.0)


# --- 1. the tied-means mixture -------------------------------------------------------------------
def mixture_data(rng, n=100):
    centre = np.where(rng.uniform(size=n) < 0.5, 0.0, 1.0)  # theta = (0, 1)
    return centre + SD_X * rng.standard_normal(n)


def mixture_model(x, batch_size):
    with pm.Model() as model:
        theta1 = pm.Normal("theta1", 0.0, np.sqrt(10.0))
        theta2 = pm.Normal("theta2", 0.0, 1.0)
        x_mb = pm.Minibatch(x, batch_size=batch_size)
        pm.NormalMixture(
            "x",
            w=np.array([0.5, 0.5]),
            mu=pt.stack([theta1, theta1 + theta2]),
            sigma=SD_X,
            observed=x_mb,
            total_size=len(x),
        )
    return model


def mixture_grid(x, t1, t2):
    """Unnormalised log posterior on the grid t1 x t2 (rows theta1, columns theta2)."""
    a, b = np.meshgrid(t1, t2, indexing="ij")
    log_prior = -0.5 * a**2 / 10.0 - 0.5 * b**2
    comp = -0.5 * ((x[:, None, None] - a) / SD_X) ** 2
    comp2 = -0.5 * ((x[:, None, None] - a - b) / SD_X) ** 2
    log_lik = np.logaddexp(comp, comp2).sum(axis=0)
    log_post = log_prior + log_lik
    return log_post - logsumexp(log_post)


def grid_summary(log_post, t1, t2):
    p = np.exp(log_post)
    a, b = np.meshgrid(t1, t2, indexing="ij")
    mean1, mean2 = (p * a).sum(), (p * b).sum()
    return {
        "P(theta2 > 0)": float(p[b > 0].sum()),
        "E[theta1]": float(mean1),
        "E[theta2]": float(mean2),
        "sd(theta1)": float(np.sqrt((p * (a - mean1) ** 2).sum())),
        "sd(theta2)": float(np.sqrt((p * (b - mean2) ** 2).sum())),
    }


def burn_in_end(idata, threshold=0.1):
    """Per chain, the first draw after the sampling threshold (eq. 10) is crossed.

    A short run (``--quick``) may end before any chain crosses it; then the second half of
    every chain is used instead, and the printout says so.
    """
    start = sampling_threshold_crossing(idata, threshold=threshold)
    if (start.values < 0).all():
        n_draws = idata.posterior.sizes["draw"]
        print(f"   (no chain crossed alpha < {threshold} in {n_draws} steps: averaging the "
              "second half of each chain instead)")  # fmt: skip
        start = start.copy(data=np.full(start.shape, n_draws // 2))
    return start


def sgld_summary(idata, start):
    """Step-size weighted (eq. 11) summaries of SGLD draws from ``start`` (per chain) on."""
    mean = step_size_weighted_mean(idata, ["theta1", "theta2"], start=start)
    eps = idata.sample_stats["step_size"].values
    keep = np.zeros(eps.shape, dtype=bool)
    for chain, first in enumerate(np.asarray(start)):
        if first >= 0:
            keep[chain, first:] = True
    weights = eps[keep]
    t1 = idata.posterior["theta1"].values[keep]
    t2 = idata.posterior["theta2"].values[keep]
    m1, m2 = float(mean["theta1"]), float(mean["theta2"])
    return {
        "P(theta2 > 0)": float(np.average(t2 > 0, weights=weights)),
        "E[theta1]": m1,
        "E[theta2]": m2,
        "sd(theta1)": float(np.sqrt(np.average((t1 - m1) ** 2, weights=weights))),
        "sd(theta2)": float(np.sqrt(np.average((t2 - m2) ** 2, weights=weights))),
    }


# --- 3. logistic regression on the stocks -------------------------------------------------------
def stock_data(path=STOCKS, n_train=300):
    table = pd.read_csv(path, comment="#")
    names = ["IBM", "AAPL", "MSFT", "XRX", "ADBE", "^GSPC"]
    prices = table[names].to_numpy(dtype=float)
    prices = prices[np.all(np.isfinite(prices), axis=1)]
    returns = np.diff(np.log(prices), axis=0)
    returns = returns[np.any(returns != 0, axis=1)]  # repeated last rows: no change
    X, y = returns[:, :-1], (returns[:, -1] > 0).astype(int)
    X = (X - X[:n_train].mean(0)) / X[:n_train].std(0)
    X = np.column_stack([np.ones(len(X)), X])
    return (X[:n_train], y[:n_train]), (X[n_train:], y[n_train:]), names[:-1]


def logistic_model(X, y, batch_size=None):
    with pm.Model() as model:
        w = pm.Laplace("w", 0.0, 1.0, shape=X.shape[1])
        if batch_size is None:
            pm.Bernoulli("y", logit_p=pt.dot(X, w), observed=y)
        else:
            X_mb, y_mb = pm.Minibatch(X, y.astype(float), batch_size=batch_size)
            pm.Bernoulli("y", logit_p=pt.dot(X_mb, w), observed=y_mb, total_size=len(y))
    return model


def accuracy(w_draws, X, y, weights=None):
    """Held-out accuracy of the posterior-mean predictive probability (weighted draws)."""
    p = expit(X @ w_draws.T)
    p = np.average(p, axis=1, weights=weights)
    return float(np.mean((p > 0.5) == y))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds, for CI")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--seed", type=int, default=2011)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    args.output.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    steps, lr_steps, chains = (2_000, 1_000, 2) if args.quick else (100_000, 20_000, 4)
    nuts_draws = 300 if args.quick else 1000
    common = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}

    # 1 + 2: the mixture -------------------------------------------------------------------------
    x = mixture_data(rng)
    with mixture_model(x, batch_size=1):
        idata = pm.sample(
            draws=steps, tune=0, chains=chains, step=SGLD(), random_seed=args.seed, **common
        )
    t1, t2 = np.linspace(-3, 4, 351), np.linspace(-4, 4, 401)
    log_post = mixture_grid(x, t1, t2)
    reference = grid_summary(log_post, t1, t2)
    start = burn_in_end(idata)
    kept = [int(s) for s in start.values]
    sgld = sgld_summary(idata, start=start)
    per_chain = [
        sgld_summary(idata.isel(chain=[c]), start=start.isel(chain=[c]))["P(theta2 > 0)"]
        for c in range(chains)
        if kept[c] >= 0
    ]
    mode_se = np.std(per_chain, ddof=1) / np.sqrt(len(per_chain)) if len(per_chain) > 1 else np.nan
    eps = idata.sample_stats["step_size"].values[0]
    print(f"1. Tied-means mixture, N = {x.size}, SGLD batch 1, {steps:,} steps x {chains} chains, "
          f"step size {eps[0]:.4f} -> {eps[-1]:.6f} (gamma 0.55)")  # fmt: skip
    print(f"   burn-in ends at draw {kept} per chain (sampling threshold alpha < 0.1, eq. 10; "
          "-1: not crossed)")  # fmt: skip
    print(f"   {'':<16}{'grid (exact)':>14}{'SGLD (eq. 11)':>15}{'difference':>12}")
    for key in reference:
        print(f"   {key:<16}{reference[key]:>14.3f}{sgld[key]:>15.3f}"
              f"{sgld[key] - reference[key]:>+12.3f}")  # fmt: skip
    print(f"   P(theta2 > 0) per chain: {np.round(per_chain, 3).tolist()}; pooled "
          f"{sgld['P(theta2 > 0)']:.3f} ± {mode_se:.3f} (between-chain se), grid "
          f"{reference['P(theta2 > 0)']:.3f}")  # fmt: skip

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), layout="constrained", sharey=True)
    p = np.exp(log_post).T
    for ax, title in zip(
        axes,
        ["grid posterior (exact)", "SGLD draws (all chains, after the threshold)"],
        strict=True,
    ):
        ax.contour(t1, t2, p, levels=8, colors="k", linewidths=0.7)
        ax.set(xlabel=r"$\theta_1$", title=title, xlim=(-1.5, 2.5), ylim=(-3, 3))
    axes[0].contourf(t1, t2, p, levels=8, cmap="Blues")
    after = np.arange(steps)[None, :] >= np.where(start.values >= 0, start.values, steps)[:, None]
    a = idata.posterior["theta1"].values[after]
    b = idata.posterior["theta2"].values[after]
    axes[1].plot(a[::5], b[::5], ".", ms=1, alpha=0.3, color="C3", rasterized=True)
    axes[0].set_ylabel(r"$\theta_2$")
    fig.savefig(args.output / "02_sgld_mixture.png", dpi=80)
    plt.close(fig)
    fig, _ = plot_sgld_noise(idata, parameters=[0, 1])
    fig.savefig(args.output / "02_sgld_noise.png", dpi=70)
    plt.close(fig)

    # 3: logistic regression -----------------------------------------------------------------------
    (X, y), (X_test, y_test), names = stock_data()
    with logistic_model(X, y, batch_size=10):
        sg = pm.sample(draws=lr_steps, tune=0, chains=2, step=SGLD(), random_seed=args.seed,
                       **common)  # fmt: skip
    with logistic_model(X, y):
        nuts = pm.sample(
            draws=nuts_draws, tune=nuts_draws, chains=2, random_seed=args.seed, **common
        )
    start = burn_in_end(sg)
    w_sgld = step_size_weighted_mean(sg, ["w"], start=start)["w"].values
    w_nuts = nuts.posterior["w"].mean(("chain", "draw")).values
    sd_nuts = nuts.posterior["w"].std(("chain", "draw")).values
    draws_sg = sg.posterior["w"].values
    keep = np.zeros(draws_sg.shape[:2], dtype=bool)
    for c, s in enumerate(start.values):
        if s >= 0:
            keep[c, s:] = True
    weights = sg.sample_stats["step_size"].values[keep]
    acc_sgld = accuracy(draws_sg[keep], X_test, y_test, weights)
    acc_nuts = accuracy(nuts.posterior["w"].values.reshape(-1, X.shape[1]), X_test, y_test)
    base = max(y_test.mean(), 1 - y_test.mean())
    print(f"\n3. Logistic regression, S&P 500 up-month from 5 stocks' returns: "
          f"{len(y)} training months, {len(y_test)} held out; Laplace(0, 1) prior")  # fmt: skip
    print(f"   SGLD batch 10, {lr_steps:,} steps x 2 chains; NUTS 2 x {nuts_draws:,} draws")
    print(f"   {'coefficient':<12}{'NUTS mean':>11}{'NUTS sd':>9}{'SGLD mean':>11}{'diff/sd':>9}")
    for i, name in enumerate(["intercept", *names]):
        print(f"   {name:<12}{w_nuts[i]:>11.3f}{sd_nuts[i]:>9.3f}{w_sgld[i]:>11.3f}"
              f"{(w_sgld[i] - w_nuts[i]) / sd_nuts[i]:>+9.2f}")  # fmt: skip
    print(
        f"   held-out accuracy: SGLD {acc_sgld:.3f}, NUTS {acc_nuts:.3f} "
        f"(majority class {base:.3f}; ±{np.sqrt(base * (1 - base) / len(y_test)):.3f} binomial se)"
    )
    print(f"\nFigures saved to {args.output / '02_sgld_mixture.png'} and "
          f"{args.output / '02_sgld_noise.png'}")  # fmt: skip
    return {
        "mixture": {"grid": reference, "sgld": sgld, "mode_se": mode_se},
        "logistic": {"acc_sgld": acc_sgld, "acc_nuts": acc_nuts, "z": (w_sgld - w_nuts) / sd_nuts},
    }


def check(out, output):
    """The quick run against NUTS (called after ``main`` by tests/test_examples.py and by the
    gallery page; ``output`` is the ``--output`` folder)."""
    assert (Path(output) / "02_sgld_noise.png").is_file()
    lr = out["logistic"]
    assert abs(lr["acc_sgld"] - lr["acc_nuts"]) < 0.1
    assert np.all(np.abs(lr["z"]) < 3), lr["z"]  # SGLD means within 3 posterior sds of NUTS


if __name__ == "__main__":
    main()
