"""Story 3: why Langevin Monte Carlo needs its rejection step (seed note on Langevin MC).

The unadjusted Langevin algorithm (ULA), theta' = theta - h grad U(theta) + sqrt(2h) xi, targets
pi = exp(-U) only approximately, and where grad U grows faster than linearly it is unstable for
every fixed step size. With ``pymc_tempering.step_methods.langevin.ULA`` and ``MALA``:

1. Student-t with nu = 1 (Cauchy), h = 0.2: ULA runs (its gradient is bounded); its histogram
   against the exact density, and the Kolmogorov-Smirnov distance.
2. pi ~ exp(-|x|^4), h = 0.2, 15 paths from 0: every ULA path blows up within a few dozen steps
   (ULA flags the blow-up as a divergence and stays at its last finite state).
3. pi ~ exp(-|x|^(1/2)), h = 0.2, 15 paths from 1 (grad U is infinite at 0):
   grad U = sign(x) / (2 sqrt|x|) is unbounded near 0 and vanishes far out, so the paths make
   large jumps near 0 and wander far (the chain is not geometrically ergodic); we measure how far
   and compare their moments and CDF with the exact ones.
4. MALA (the same proposal plus the Metropolis-Hastings correction) samples exp(-x^4)
   correctly with h = 0.01 and K = 10,000: moments within their MCSE and a KS test.

Exact references for pi ~ exp(-|x|^a): E|x|^k = Gamma((k + 1)/a) / Gamma(1/a) and
P(|X| <= r) = P(1/a, r^a) (regularised lower incomplete gamma).

Run: ``python examples/03_langevin_rejection.py [--quick]``.
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
from scipy import stats  # noqa: E402
from scipy.special import gamma, gammainc  # noqa: E402

from pymc_tempering.step_methods.langevin import MALA, ULA  # noqa: E402

OUTPUT = Path(__file__).resolve().parent / "output"


def power_model(a):
    """pi(x) proportional to exp(-|x|^a) on the real line (a flat base, the rest a Potential)."""
    with pm.Model() as model:
        x = pm.Flat("x")
        pm.Potential("minus_U", -(abs(x) ** a))
    return model


def cauchy_model():
    with pm.Model() as model:
        pm.StudentT("x", nu=1, mu=0.0, sigma=1.0)
    return model


def power_cdf(x, a):
    """CDF of pi ~ exp(-|x|^a)."""
    x = np.asarray(x, dtype=float)
    return 0.5 + 0.5 * np.sign(x) * gammainc(1.0 / a, np.abs(x) ** a)


def power_moment(k, a):
    return gamma((k + 1.0) / a) / gamma(1.0 / a)


def run(model, sampler, step_size, draws, chains, seed, initvals=None):
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ULA warns at every first divergence: that is the point
        point = None if initvals is None else {k: np.asarray(v) for k, v in initvals[0].items()}
        step = sampler(step_size=step_size, initial_point=point)
        return pm.sample(
            draws=draws,
            tune=0 if sampler is ULA else draws // 2,
            chains=chains,
            cores=1,
            step=step,
            initvals=initvals,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )


def mcse_mean(values):
    from arviz_stats.base import array_stats

    return float(array_stats.mcse(values, chain_axis=0, draw_axis=1, method="mean"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds, for CI")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    args.output.mkdir(parents=True, exist_ok=True)
    K = 1000 if args.quick else 10_000
    paths = 15
    start = {"x": 0.0}
    results = {}

    # 1. Cauchy -----------------------------------------------------------------------------------
    idata = run(cauchy_model(), ULA, 0.2, 4 * K, 2, args.seed)
    cauchy = idata.posterior["x"].values
    ks = stats.kstest(cauchy.ravel(), stats.cauchy.cdf).statistic
    div = int(idata.sample_stats["diverging"].values.sum())
    q = np.quantile(cauchy, [0.25, 0.75])
    results["cauchy"] = {"ks": ks, "divergences": div, "quartiles": q}
    print(f"1. ULA on Student-t(nu = 1), h = 0.2, 2 chains x {4 * K} draws:")
    print(f"   divergences {div}; quartiles {q[0]:+.3f}, {q[1]:+.3f} (exact -1, +1); "
          f"KS distance to the Cauchy CDF {ks:.3f} (ULA's O(h) bias)")  # fmt: skip

    # 2. exp(-x^4): ULA blows up ------------------------------------------------------------------
    model4 = power_model(4)
    ula4 = run(model4, ULA, 0.2, K, paths, args.seed, [start] * paths)
    x4 = ula4.posterior["x"].values
    diverging = ula4.sample_stats["diverging"].values
    blown = diverging.any(axis=1)
    first = np.where(blown, diverging.argmax(axis=1), -1)
    results["quartic_ula"] = {"blown": int(blown.sum()), "first": first}
    print(f"\n2. ULA on exp(-x^4), h = 0.2, {paths} paths from 0, {K} steps each:")
    print(f"   {blown.sum()} of {paths} paths blew up; step of blow-up: "
          f"median {np.median(first[blown]):.0f}, max {first[blown].max()}")  # fmt: skip

    # 3. exp(-|x|^(1/2)): ULA drifts off ----------------------------------------------------------
    model_half = power_model(0.5)
    # the gradient is infinite at 0 itself, so these paths start at x = 1
    ula_half = run(model_half, ULA, 0.2, K, paths, args.seed, [{"x": 1.0}] * paths)
    x_half = ula_half.posterior["x"].values
    div_half = int(ula_half.sample_stats["diverging"].values.sum())
    jumps = np.abs(np.diff(x_half, axis=1))
    ks_half = stats.kstest(x_half[:, K // 2 :].ravel(), power_cdf, args=(0.5,)).statistic
    exact_abs = power_moment(1, 0.5)
    results["half_ula"] = {"ks": ks_half, "mean_abs": float(np.abs(x_half).mean())}
    print(f"\n3. ULA on exp(-|x|^(1/2)), h = 0.2, {paths} paths from 1, {K} steps each:")
    print(f"   divergences {div_half}; largest single step {jumps.max():.1f} "
          f"(the drift sign(x)/(2 sqrt|x|) is unbounded near 0)")  # fmt: skip
    print(f"   E|x| over the second half: {np.abs(x_half[:, K // 2 :]).mean():.2f} "
          f"(exact {exact_abs:.0f}); KS distance to the exact CDF {ks_half:.3f}")  # fmt: skip
    print(f"   |x| at the last step, per path: median {np.median(np.abs(x_half[:, -1])):.1f}, "
          f"max {np.abs(x_half[:, -1]).max():.1f}")  # fmt: skip

    # 4. MALA on exp(-x^4) ------------------------------------------------------------------------
    # h = 0.01 mixes slowly: 1,000 draws (quick mode's K) gave a noisy MCSE (the moments missed
    # by > 4 MCSE on 3 of 40 seeds); 4,000 are enough
    mala_draws = max(K, 4000)
    mala = run(model4, MALA, 0.01, mala_draws, 2, args.seed, [start] * 2)
    xm = mala.posterior["x"].values
    accept = (
        float(mala.sample_stats["accept"].values.mean())
        if "accept" in mala.sample_stats
        else np.nan
    )
    print(f"\n4. MALA on exp(-x^4), h = 0.01 (fixed), 2 chains x {mala_draws} draws; mean "
          f"acceptance {accept:.3f}:")  # fmt: skip
    moments = {}
    for k in (2, 4):
        est, err = float(np.mean(xm**k)), mcse_mean(xm**k)
        exact = power_moment(k, 4)
        moments[k] = (est, err, exact)
        print(f"   E[x^{k}] = {est:.4f} ± {err:.4f} (MCSE), exact {exact:.4f}: "
              f"|error| = {abs(est - exact) / err:.1f} MCSE")  # fmt: skip
    from arviz_stats.base import array_stats

    ess = float(array_stats.ess(xm, chain_axis=0, draw_axis=1))
    thin = max(1, int(round(xm.size / ess)))
    ks_test = stats.kstest(xm[:, ::thin].ravel(), power_cdf, args=(4,))
    print(f"   KS test against the exact CDF (thinned by {thin} to ~independent draws): "
          f"D = {ks_test.statistic:.3f}, p = {ks_test.pvalue:.2f}")  # fmt: skip
    results["quartic_mala"] = {"moments": moments, "ks_p": float(ks_test.pvalue)}

    # -- figure -----------------------------------------------------------------------------------
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8), layout="constrained")
    ax = axes[0]
    grid = np.linspace(-10, 10, 400)
    ax.hist(cauchy.ravel(), bins=np.linspace(-10, 10, 81), density=True, alpha=0.6, label="ULA")
    ax.plot(grid, stats.cauchy.pdf(grid), "k-", lw=1, label="Cauchy")
    ax.set(title=f"ULA, Student-t ν = 1, h = 0.2: runs\nKS distance {ks:.3f}", xlabel="x")
    ax.legend(fontsize=8)
    ax = axes[1]
    for p in range(paths):
        stop = first[p] if blown[p] else K
        ax.plot(np.arange(stop + 1), np.abs(x4[p, : stop + 1]), lw=0.8)
        if blown[p]:
            ax.plot(stop, abs(x4[p, stop]), "kx")
    ax.set(yscale="log", xscale="symlog", xlabel="step", ylabel="|x|")
    ax.set_title(f"ULA, exp(−x⁴), h = 0.2: {blown.sum()}/{paths} paths blow up (×)", fontsize=10)
    ax = axes[2]
    for p in range(paths):
        ax.plot(x_half[p], lw=0.6)
    ax.set(xlabel="step", ylabel="x")
    ax.set_title(f"ULA, exp(−|x|^½), h = 0.2: paths drift\nE|x| exact {exact_abs:.0f}", fontsize=10)
    ax = axes[3]
    grid = np.linspace(-1.6, 1.6, 300)
    norm = 2 * gamma(1.25)
    ax.hist(xm.ravel(), bins=60, density=True, alpha=0.6, label="MALA")
    ax.plot(grid, np.exp(-(grid**4)) / norm, "k-", lw=1, label="exp(−x⁴)/Z")
    ax.set(
        xlabel="x",
        title=f"MALA, exp(−x⁴), h = 0.01, K = {mala_draws:,}\nKS p = {ks_test.pvalue:.2f}",
    )
    ax.legend(fontsize=8)
    for ax in axes:
        ax.title.set_fontsize(10)
    path = args.output / "03_langevin_rejection.png"
    fig.savefig(path, dpi=70)
    plt.close(fig)
    print(f"\nFigure saved to {path}")
    return results


def check(out, output):
    """The quick run against the exact moments (called after ``main`` by
    tests/test_examples.py and by the gallery page)."""
    assert out["cauchy"]["divergences"] == 0
    assert out["quartic_ula"]["blown"] == 15  # every ULA path on exp(-x^4) blows up
    for est, err, exact in out["quartic_mala"]["moments"].values():
        assert abs(est - exact) < 4 * err, (est, err, exact)


if __name__ == "__main__":
    main()
