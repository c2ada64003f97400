"""Story 1: exchange Monte Carlo for singular learning machines (Nagata & Watanabe 2008).

The model: H(w) = prod_j w_j^2, prior N(0, I_d), target exp(-n H(w)) phi(w), whose stochastic
complexity F(n) = -log Z is known exactly (``pymc_tempering.exact``; 1-D quadrature for d = 2, a
Mellin-Barnes integral otherwise) and asymptotically (the paper's eq. 4). We reproduce

* Figures 1-2: posterior clouds at n = 10,000 from exchange MC and from Metropolis;
* the error rate G = (F_hat - F) / F against the number of iterations K (n = 100,000, d = 2),
  against n (d = 2) and against d (n = 100,000), averaged over independent trials.

Three samplers, all on the paper's ladder (L = 32, t_1 = 0, t_l = 2^(l - 32)), K iterations of
which the first half is burn-in (tuning) and the last half is used:

* ``pmt.ExchangeMC`` through ``pm.sample`` (one chain per trial);
* the paper's Metropolis: each rung alone, a joint uniform proposal on [-D, D]^d tuned to 70%
  acceptance during burn-in, no exchanges (NumPy, a few lines below);
* ``pm.Metropolis`` on every rung without exchanges (G against K only: it is the slowest).
  PyMC's Metropolis updates one coordinate at a time with per-coordinate scales, which follows
  the axes of the cross H(w) = 0 far better than the paper's joint proposal.

F_hat is the paper's stepping-stone estimate (sec. 4.1); thermodynamic integration is printed
too. Full mode uses fewer trials than the paper's 20 for the PyMC samplers (10 for ExchangeMC,
4 for pm.Metropolis; 20 for the NumPy Metropolis) and K up to 10,000 instead of 10^5, to stay
within a few minutes on 2 cores.

Run: ``python examples/01_singular_learning.py [--quick]``.
"""

import argparse
import logging
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from demo import (  # noqa: E402  (examples/demo.py: the same model and per-rung Metropolis)
    evidence_from_loglik,
    sample_metropolis,
    singular_model,
)

import pymc_tempering as pmt  # noqa: E402
from pymc_tempering.evidence import EvidenceWarning  # noqa: E402
from pymc_tempering.exact import (  # noqa: E402
    singular_free_energy,
    singular_free_energy_asymptotic,
)

OUTPUT = Path(__file__).resolve().parent / "output"
BETAS = np.concatenate([[0.0], 2.0 ** np.arange(-30, 1)])


# --- the samplers ------------------------------------------------------------------------------
def exchange_loglik(n, d, K, trials, seed):
    """ExchangeMC, one chain per trial: rung log-likelihoods (trial, draw, rung) and w at t = 1."""
    rng = np.random.default_rng(seed)
    with singular_model(n, d):
        idata = pm.sample(
            draws=K // 2,
            tune=K - K // 2,
            chains=trials,
            cores=1,
            step=pmt.ExchangeMC(betas=BETAS),
            initvals=[{"w": rng.standard_normal(d)} for _ in range(trials)],
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    loglik = pmt.tempering_dataset(idata)["rung_loglik"].transpose("chain", "draw", "rung")
    return loglik.values.astype(float), idata.posterior["w"].values


def paper_metropolis_loglik(n, d, K, trials, seed, target=0.7):
    """The paper's Metropolis: every rung on its own, uniform proposal on [-D, D]^d.

    Vectorised over (trial, rung). D is adapted towards ``target`` acceptance (Robbins-Monro on
    log D, floored at 0.1 / sqrt(1 + n t)) in the burn-in half and frozen in the half that is
    used: the paper's D(n, t) tuned to 60-80% acceptance. Returns the rung
    log-likelihoods (trial, draw, rung) and the t = 1 rung's w.
    """
    rng = np.random.default_rng(seed)
    L = BETAS.size
    w = rng.standard_normal((trials, L, d))  # initial w from the prior
    log_d = np.full((trials, L), np.log(0.5))
    log_d_min = np.log(0.1 / np.sqrt(1.0 + n * BETAS))  # the ridge's width is ~ (n t)^(-1/2)
    burn = K - K // 2
    keep_loglik = np.empty((trials, K // 2, L))
    keep_w = np.empty((trials, K // 2, d))

    def log_target(w):
        return -0.5 * np.sum(w**2, axis=-1) - BETAS * n * np.prod(w**2, axis=-1)

    current = log_target(w)
    for k in range(K):
        proposal = w + np.exp(log_d)[..., None] * rng.uniform(-1, 1, size=w.shape)
        new = log_target(proposal)
        log_accept = np.minimum(new - current, 0.0)
        accept = np.log(rng.uniform(size=current.shape)) < log_accept
        w = np.where(accept[..., None], proposal, w)
        current = np.where(accept, new, current)
        if k < burn:
            log_d += (np.exp(log_accept) - target) / (k + 1) ** 0.6
            # far from H(w) = 0 almost nothing is accepted; without a floor D would collapse
            # to ~0 there and freeze the rung. The floor sits below every rung's stationary D.
            log_d = np.maximum(log_d, log_d_min)
        else:
            keep_loglik[:, k - burn] = -n * np.prod(w**2, axis=-1)
            keep_w[:, k - burn] = w[:, -1]
    return keep_loglik, keep_w


def free_energy_per_trial(loglik):
    """F_hat per trial: (stepping stone, TI) from loglik of shape (trial, draw, rung)."""
    rows = [evidence_from_loglik(BETAS, loglik[t : t + 1]) for t in range(loglik.shape[0])]
    return np.array([r["SS"][0] for r in rows]), np.array([r["TI"][0] for r in rows])


def error_rates(sampler, n, d, K, trials, seed):
    """G = (F_hat - F) / F of every trial, stepping stone and TI."""
    f = singular_free_energy(n, d)
    loglik = sampler(n, d, K, trials, seed)[0]
    ss, ti = free_energy_per_trial(loglik)
    return (ss - f) / f, (ti - f) / f


def pm_metropolis_loglik(n, d, K, trials, seed):
    if d != 2:
        raise ValueError("the per-rung pm.Metropolis model here is d = 2 only")
    w, loglik = sample_metropolis(n, BETAS, K // 2, K - K // 2, trials, seed)
    return loglik, w


SAMPLERS = {
    "ExchangeMC": exchange_loglik,
    "paper's Metropolis": paper_metropolis_loglik,
    "pm.Metropolis": pm_metropolis_loglik,
}
STYLE = {"ExchangeMC": "o-", "paper's Metropolis": "s--", "pm.Metropolis": "^:"}


def sweep(label, values, make_args, samplers, trials):
    """G over a grid of K, n or d for each sampler.

    Prints mean, sd and median of G over trials (stepping stone; TI's median too) and returns
    ``{sampler: (median, q25, q75)}`` of the stepping-stone G: a single trial whose rung never
    reached the ridge H(w) = 0 can make the mean of the paper's Metropolis meaningless.
    """
    out = {}
    for name in samplers:
        rows = []
        for value in values:
            n, d, K = make_args(value)
            start = time.perf_counter()
            g_ss, g_ti = error_rates(SAMPLERS[name], n, d, K, trials[name], seed=int(value) % 9973)
            rows.append(np.percentile(g_ss, [50, 25, 75]))
            print(
                f"  {name:<19}{label}={value:<7g} trials={g_ss.size:<3d} G_SS mean "
                f"{g_ss.mean():+.4f} sd {g_ss.std(ddof=1):.4f} median {np.median(g_ss):+.4f}"
                f" | G_TI median {np.median(g_ti):+.4f} [{time.perf_counter() - start:.0f} s]",
                flush=True,
            )
        out[name] = tuple(np.array(rows).T)
    return out


def plot_g(ax, x, results, xlabel, title, log_x=True):
    xx = np.log10(x) if log_x else np.asarray(x, dtype=float)
    for i, (name, (median, q25, q75)) in enumerate(results.items()):
        shift = (i - 1) * 0.03 * (np.ptp(xx) or 1.0)  # side by side, not on top of each other
        ax.errorbar(xx + shift, median, yerr=[median - q25, q75 - median], fmt=STYLE[name],
                    ms=4, capsize=3, label=name)  # fmt: skip
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_yscale("symlog", linthresh=0.02)  # the paper's Metropolis can be off by 100x at small K
    ax.set(xlabel=xlabel, ylabel="G = (F̂ − F) / F  (median, quartiles)", title=title)
    ax.legend(fontsize=8)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds, for CI")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=EvidenceWarning)  # short quick-mode runs
    args.output.mkdir(parents=True, exist_ok=True)

    if args.quick:
        k_grid, n_grid, d_grid = [1000], [1e3], [3]
        k_fixed, cloud_k, ex_trials, pm_trials, np_trials = 1000, 1000, 2, 2, 4
    else:
        k_grid, n_grid, d_grid = [1000, 3000, 10_000], [1e2, 1e3, 1e4, 1e5], [2, 3, 4, 6]
        k_fixed, cloud_k, ex_trials, pm_trials, np_trials = 4000, 10_000, 10, 4, 20
    trials = {"ExchangeMC": ex_trials, "paper's Metropolis": np_trials, "pm.Metropolis": pm_trials}

    print("Exact references (pymc_tempering.exact):")
    for n in n_grid:
        print(
            f"  n = {n:>8g}, d = 2: F = {singular_free_energy(n):.4f}  "
            f"eq. (4): {singular_free_energy_asymptotic(n):.4f}"
        )
    for d in d_grid:
        print(
            f"  n = 1e5, d = {d}: F = {singular_free_energy(1e5, d):.4f}  "
            f"eq. (4){' without its O(1/log n) term' if d != 2 else ''}: "
            f"{singular_free_energy_asymptotic(1e5, d):.4f}"
        )

    # -- Figures 1-2: clouds ---------------------------------------------------------------------
    n_cloud = 10_000
    clouds = {
        "ExchangeMC": exchange_loglik(n_cloud, 2, cloud_k, 1, 1)[1][0],
        "paper's Metropolis": paper_metropolis_loglik(n_cloud, 2, cloud_k, 1, 1)[1][0],
        "pm.Metropolis": sample_metropolis(n_cloud, BETAS, cloud_k // 2, cloud_k // 2, 1, 1)[0][0],
    }
    fig, axes = plt.subplots(1, 3, figsize=(12, 4), layout="constrained")
    for ax, (name, w) in zip(axes, clouds.items(), strict=True):
        arm = np.abs(w[:, 0]) > np.abs(w[:, 1])
        ax.plot(*w.T, ".", ms=1.5, alpha=0.4, rasterized=True)
        ax.set(xlim=(-3.2, 3.2), ylim=(-3.2, 3.2), aspect="equal", xlabel="$w_1$", ylabel="$w_2$")
        ax.set_title(
            f"{name}, n = {n_cloud:,}, K = {cloud_k:,}\n"
            f"{np.abs(np.diff(arm.astype(int))).sum()} arm switches in {arm.size} draws",
            fontsize=9,
        )
    fig.savefig(args.output / "01_clouds.png", dpi=80)
    plt.close(fig)

    # -- G against K, n and d --------------------------------------------------------------------
    print("\nG against K (n = 1e5, d = 2):")
    by_k = sweep("K", k_grid, lambda K: (1e5, 2, int(K)), list(SAMPLERS), trials)
    print(f"\nG against n (K = {k_fixed}, d = 2):")
    by_n = sweep(
        "n", n_grid, lambda n: (n, 2, k_fixed), ["ExchangeMC", "paper's Metropolis"], trials
    )
    print(f"\nG against d (n = 1e5, K = {k_fixed}):")
    by_d = sweep(
        "d", d_grid, lambda d: (1e5, int(d), k_fixed), ["ExchangeMC", "paper's Metropolis"], trials
    )

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), layout="constrained")
    plot_g(axes[0], k_grid, by_k, r"$\log_{10} K$", "n = 100,000, d = 2")
    plot_g(axes[1], n_grid, by_n, r"$\log_{10} n$", f"K = {k_fixed:,}, d = 2")
    plot_g(axes[2], d_grid, by_d, "d", f"n = 100,000, K = {k_fixed:,}", log_x=False)
    fig.savefig(args.output / "01_error_rate.png", dpi=80)
    plt.close(fig)
    print(f"\nFigures saved to {args.output / '01_clouds.png'} and")
    print(f"                 {args.output / '01_error_rate.png'}")
    return {"by_k": by_k, "by_n": by_n, "by_d": by_d, "k_grid": k_grid, "n_grid": n_grid}


def check(out, output):
    """The quick run against its references (called after ``main`` by tests/test_examples.py
    and by the gallery page; ``output`` is the ``--output`` folder)."""
    output = Path(output)
    assert (output / "01_clouds.png").is_file() and (output / "01_error_rate.png").is_file()
    for grid in ("by_k", "by_n", "by_d"):
        median = out[grid]["ExchangeMC"][0]
        assert np.all(np.abs(median) < 0.05), (grid, median)


if __name__ == "__main__":
    main()
