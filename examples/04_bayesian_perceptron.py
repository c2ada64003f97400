"""Story 4: Bayesian learning of a perceptron by Monte Carlo (seed lecture).

The perceptron p(t = 1 | x, w) = sigmoid(w0 + w1 x1 + w2 x2) with the weight-decay prior
p(w) proportional to exp(-alpha sum_i w_i^2), alpha = 0.01 (so w_i ~ N(0, 1 / (2 alpha))),
learned from a small two-class data set. The Bayesian predictive probability

    p(t = 1 | x, D) = E_{w | D}[sigmoid(w . x)]  ~  (1/R) sum_r sigmoid(w_r . x)

is computed over the input plane from the posterior draws of three samplers,

* ``pm.Metropolis`` with the lecture's proposal N(w, sigma = 0.1) (no tuning),
* ``pm.NUTS`` (PyMC's default),
* ``pmt.ExchangeMC`` (32 rungs, the seed paper's ladder),

and compared with the plug-in predictions of the maximum a posteriori (MAP) and maximum
likelihood (ML) weights. Numbers: posterior means and sds of w per sampler, the largest
difference between the samplers' predictive maps (NUTS as the reference, with the Monte Carlo
error it can be compared with), and the log loss on 5,000 held-out points of every predictor.

Run: ``python examples/04_bayesian_perceptron.py [--quick]``.
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
import scipy.optimize  # noqa: E402
from scipy.special import expit, log_expit  # noqa: E402

import pymc_tempering as pmt  # noqa: E402

OUTPUT = Path(__file__).resolve().parent / "output"
ALPHA = 0.01


def make_data(n, rng):
    """Two Gaussian classes in the plane, centres (-1, -0.5) and (1, 0.5), unit spread."""
    t = rng.integers(0, 2, size=n)
    centres = np.where(t[:, None] == 1, [1.0, 0.5], [-1.0, -0.5])
    x = centres + rng.standard_normal((n, 2))
    return x, t


def design(x):
    return np.column_stack([np.ones(len(x)), x])


def perceptron_model(x, t):
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, np.sqrt(1.0 / (2.0 * ALPHA)), shape=3)  # exp(-alpha |w|^2)
        pm.Bernoulli("t", logit_p=pm.math.dot(design(x), w), observed=t)
    return model


def fit_point(x, t, alpha):
    """Minimise G(w) + alpha |w|^2 (alpha = 0: ML). Returns w and whether it converged."""
    X = design(x)
    sign = 2 * t - 1

    def objective(w):
        margin = sign * (X @ w)
        value = -np.sum(log_expit(margin)) + alpha * w @ w
        grad = -(X.T @ (sign * expit(-margin))) + 2 * alpha * w
        return value, grad

    opt = scipy.optimize.minimize(objective, np.zeros(3), jac=True, method="BFGS")
    return opt.x, bool(opt.success)


def predictive(w_draws, grid_x):
    """p(t = 1 | x, D) at every grid point from posterior draws (R, 3)."""
    return expit(design(grid_x) @ w_draws.T).mean(axis=1)


def log_loss(p, t):
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return float(-np.mean(t * np.log(p) + (1 - t) * np.log1p(-p)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds, for CI")
    parser.add_argument("--n", type=int, default=16, help="training points")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--seed", type=int, default=4)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    args.output.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    x, t = make_data(args.n, rng)
    x_test, t_test = make_data(5000, rng)
    draws, tune = (500, 500) if args.quick else (4000, 2000)
    metropolis_draws = 4 * draws  # sigma = 0.1 random walk: cheaper per draw, slower to mix

    model = perceptron_model(x, t)
    common = {"chains": 2, "cores": 1, "progressbar": False, "compute_convergence_checks": False}
    samples = {}
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        idata = pm.sample(
            draws=metropolis_draws, tune=tune, step=pm.Metropolis(scaling=0.1, tune=False),
            random_seed=args.seed, **common,
        )  # fmt: skip
        samples["pm.Metropolis (σ = 0.1)"] = idata
        samples["NUTS"] = pm.sample(draws=draws, tune=tune, random_seed=args.seed, **common)
        samples["ExchangeMC"] = pm.sample(
            draws=draws, tune=tune, step=pmt.ExchangeMC(), random_seed=args.seed, **common
        )

    import arviz as az

    w_map, _ = fit_point(x, t, ALPHA)
    w_ml, ml_converged = fit_point(x, t, 0.0)
    print(f"{args.n} training points, alpha = {ALPHA}; posterior of w = (w0, w1, w2):")
    print(f"{'':<26}{'mean':>26}{'sd':>26}{'min ESS':>9}")
    draws_by = {}
    for name, idata in samples.items():
        w = idata.posterior["w"].values.reshape(-1, 3)
        draws_by[name] = w
        ess = az.ess(idata, var_names=["w"])["w"].values.min()
        print(f"{name:<26}{np.array2string(w.mean(0), precision=3):>26}"
              f"{np.array2string(w.std(0), precision=3):>26}{ess:>9.0f}")  # fmt: skip
    print(f"{'MAP':<26}{np.array2string(w_map, precision=3):>26}")
    print(f"{'ML':<26}{np.array2string(w_ml, precision=3):>26}  (converged: {ml_converged})")
    if np.all((2 * t - 1) * (design(x) @ w_ml) > 0):
        print(
            "The training classes are linearly separable: the likelihood keeps rising as |w| "
            f"grows, and ML is finite (|w| = {np.linalg.norm(w_ml):.1f}) only because the "
            "optimiser stops; the prior (MAP, Bayes) is what keeps the weights finite."
        )

    lim = 3.5
    g = np.linspace(-lim, lim, 81)
    gx = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    maps = {name: predictive(w, gx) for name, w in draws_by.items()}
    maps["MAP plug-in"] = expit(design(gx) @ w_map)
    maps["ML plug-in"] = expit(design(gx) @ w_ml)

    # Monte Carlo error of NUTS's predictive map: sd of sigmoid(w.x) over draws / sqrt(ESS)
    ref = maps["NUTS"]
    nuts = draws_by["NUTS"]
    per_draw = expit(design(gx) @ nuts.T)
    mc_error = per_draw.std(axis=1) / np.sqrt(
        az.ess(samples["NUTS"], var_names=["w"])["w"].values.min()
    )
    print("\nPredictive p(t = 1 | x, D) on an 81 x 81 grid of [-3.5, 3.5]^2:")
    print(f"{'':<26}{'max |p - p_NUTS|':>18}{'held-out log loss':>19}")
    losses = {}
    for name, p in maps.items():
        if name in draws_by:
            p_test = predictive(draws_by[name], x_test)
        else:
            p_test = expit(design(x_test) @ (w_map if name.startswith("MAP") else w_ml))
        losses[name] = log_loss(p_test, t_test)
        print(f"{name:<26}{np.max(np.abs(p - ref)):>18.3f}{losses[name]:>19.4f}")
    print(f"(NUTS's own Monte Carlo error on the map: up to {mc_error.max():.3f} per point)")

    fig, axes = plt.subplots(1, 5, figsize=(17, 3.7), layout="constrained", sharey=True)
    for ax, (name, p) in zip(axes, maps.items(), strict=True):
        cs = ax.contourf(g, g, p.reshape(g.size, g.size), levels=np.linspace(0, 1, 11),
                         cmap="RdBu_r", alpha=0.8)  # fmt: skip
        ax.contour(g, g, p.reshape(g.size, g.size), levels=[0.5], colors="k", linewidths=1)
        ax.scatter(*x[t == 1].T, c="gold", marker="o", s=20, edgecolor="k")
        ax.scatter(*x[t == 0].T, c="cyan", marker="s", s=20, edgecolor="k")
        ax.set(aspect="equal", xlabel="$x_1$", title=f"{name}\nlog loss {losses[name]:.3f}")
        ax.title.set_fontsize(9)
    axes[0].set_ylabel("$x_2$")
    fig.colorbar(cs, ax=axes, shrink=0.8, label="p(t = 1 | x)")
    path = args.output / "04_bayesian_perceptron.png"
    fig.savefig(path, dpi=70)
    plt.close(fig)
    print(f"\nFigure saved to {path}")
    return {"maps": maps, "losses": losses, "mc_error": float(mc_error.max())}


def check(out, output):
    """The quick run against NUTS (called after ``main`` by tests/test_examples.py and by the
    gallery page)."""
    maps, losses = out["maps"], out["losses"]
    for name in ("ExchangeMC", "pm.Metropolis (σ = 0.1)"):
        assert np.max(np.abs(maps[name] - maps["NUTS"])) < 0.15, name
    assert losses["NUTS"] < losses["MAP plug-in"] < losses["ML plug-in"]


if __name__ == "__main__":
    main()
