"""pymc_tempering in one minute: exchange Monte Carlo on a singular model, and its evidence.

The seed paper (Nagata & Watanabe 2008) samples the posterior of a singular learning machine,
H(w) = w1^2 w2^2 with prior N(0, I_2) and n = 10,000: the target exp(-n H(w)) phi(w) is a thin
cross along both axes. This script

1. samples it with ``pmt.ExchangeMC`` (the paper's 32-rung ladder t_1 = 0, t_l = 2^(l-32)) and,
   for comparison, with ``pm.Metropolis`` run at every one of the same temperatures without
   exchanges (the paper's "conventional Metropolis");
2. estimates the stochastic complexity F(n) = -log Z from both sets of rung traces by
   thermodynamic integration (TI) and stepping stone (SS), with Monte Carlo standard errors;
3. compares them with the exact F(n) (1-D quadrature, ``pymc_tempering.exact``) and the paper's
   asymptotic eq. (4), prints a table and saves a figure (the paper's Figures 1-2 and more).

Run: ``python examples/demo.py`` (about a minute), or ``./run demo`` from a fresh checkout.
"""

import argparse
import logging
import shutil
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
import pytensor.tensor as pt  # noqa: E402

import pymc_tempering as pmt  # noqa: E402
from pymc_tempering.evidence import (  # noqa: E402
    stepping_stone,
    stepping_stone_draws,
    thermodynamic_integration,
    ti_draws,
)
from pymc_tempering.exact import (  # noqa: E402
    singular_free_energy,
    singular_free_energy_asymptotic,
    singular_mean_loglik,
)

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "examples" / "output"


def singular_model(n, d=2, betas=None):
    """The target exp(-n H(w)) phi(w), H(w) = prod_j w_j^2, phi = N(0, I_d).

    With ``betas`` it is instead ``len(betas)`` independent tempered copies, row ``l`` of ``w``
    targeting ``exp(-beta_l n H(w_l)) phi(w_l)``: the paper's Metropolis without exchange.
    PyMC's Metropolis updates a vector variable one coordinate at a time, each coordinate with
    its own tuned scale, so one ``pm.Metropolis`` runs every rung separately.
    """
    with pm.Model() as model:
        if betas is None:
            w = pm.Normal("w", 0.0, 1.0, shape=d)
            pm.Potential("loglik", -n * pt.prod(w**2))
        else:
            w = pm.Normal("w", 0.0, 1.0, shape=(len(betas), d))
            pm.Potential("loglik", -n * pt.sum(np.asarray(betas) * pt.prod(w**2, axis=1)))
    return model


def prior_initvals(name, d, chains, rng):
    """The seed paper starts every chain from a prior draw."""
    return [{name: rng.standard_normal(d)} for _ in range(chains)]


def sample_exchange(n, betas, draws, tune, chains, seed):
    model = singular_model(n)
    rng = np.random.default_rng(seed)
    with model:
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            step=pmt.ExchangeMC(betas=betas),
            initvals=prior_initvals("w", 2, chains, rng),
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    return idata


def sample_metropolis(n, betas, draws, tune, chains, seed):
    """pm.Metropolis on every rung separately; returns (w at beta = 1, loglik per rung)."""
    model = singular_model(n, betas=betas)
    rng = np.random.default_rng(seed)
    initvals = [{"w": rng.standard_normal((len(betas), 2))} for _ in range(chains)]
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # PyMC's `accept` stat overflows exp
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            step=pm.Metropolis(),
            initvals=initvals,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    w = idata.posterior["w"].values  # (chain, draw, rung, 2)
    loglik = -n * np.prod(w**2, axis=-1)  # (chain, draw, rung)
    return w[:, :, -1], loglik


def arm_mixing(w):
    """How often the chain moves between the two arms of the cross H(w) = 0.

    ``w`` has shape (chain, draw, 2). Returns the switches of the arm indicator
    1{|w1| > |w2|} per 1,000 draws and that indicator's effective sample size.
    """
    from arviz_stats.base import array_stats

    arm = (np.abs(w[..., 0]) > np.abs(w[..., 1])).astype(float)
    switches = np.abs(np.diff(arm, axis=1)).sum() / arm.size * 1000
    return float(switches), float(array_stats.ess(arm, chain_axis=0, draw_axis=1))


def evidence_from_loglik(betas, loglik):
    """-log Z by TI (corrected trapezoid) and SS from raw rung traces, with MCSEs."""
    from arviz_stats.base import array_stats

    def mcse(terms):
        return float(array_stats.mcse(terms, chain_axis=0, draw_axis=1, method="mean"))

    ti_terms = ti_draws(betas, loglik)
    log_ratio, ss_terms = stepping_stone_draws(betas, loglik)
    return {
        "TI": (-float(ti_terms.mean()), mcse(ti_terms)),
        "SS": (-float(log_ratio.sum()), mcse(ss_terms)),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="sample size n (default 10,000)")
    parser.add_argument("--draws", type=int, default=5000, help="recorded draws per chain")
    parser.add_argument("--tune", type=int, default=5000, help="tuning (burn-in) draws")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2008)
    parser.add_argument("--quick", action="store_true", help="a few seconds, for CI")
    parser.add_argument("--output", type=Path, default=OUTPUT / "demo.png")
    parser.add_argument("--docs", action="store_true", help="also copy the figure to docs/")
    args = parser.parse_args(argv)
    if args.quick:
        args.draws, args.tune = 600, 400
    logging.getLogger("pymc").setLevel(logging.ERROR)

    n = args.n
    betas = np.concatenate([[0.0], 2.0 ** np.arange(-30, 1)])  # the seed paper's ladder, L = 32
    f_exact = singular_free_energy(n)
    f_asym = singular_free_energy_asymptotic(n)

    start = time.perf_counter()
    idata = sample_exchange(n, betas, args.draws, args.tune, args.chains, args.seed)
    t_exchange = time.perf_counter() - start
    start = time.perf_counter()
    w_metropolis, loglik_metropolis = sample_metropolis(
        n, betas, args.draws, args.tune, args.chains, args.seed
    )
    t_metropolis = time.perf_counter() - start

    ti, ss = thermodynamic_integration(idata), stepping_stone(idata)
    estimates = {
        "ExchangeMC, TI": (-float(ti.log_marginal_likelihood), float(ti.mcse)),
        "ExchangeMC, SS": (-float(ss.log_marginal_likelihood), float(ss.mcse)),
    }
    for key, value in evidence_from_loglik(betas, loglik_metropolis).items():
        estimates[f"Metropolis, {key}"] = value

    print(f"Singular model H(w) = w1^2 w2^2, prior N(0, I_2), n = {n:,}")
    print(
        f"{args.chains} chains x {args.draws} draws after {args.tune} tuning draws, 32 rungs; "
        f"ExchangeMC {t_exchange:.0f} s, Metropolis on every rung {t_metropolis:.0f} s"
    )
    print()
    print(f"{'F(n) = -log Z':<24}{'value':>9}{'MCSE':>9}{'G=(F^-F)/F':>12}{'|err|/MCSE':>12}")
    print(f"{'exact (quadrature)':<24}{f_exact:>9.4f}")
    print(f"{'eq. (4), asymptotic':<24}{f_asym:>9.4f}{'':>9}{(f_asym - f_exact) / f_exact:>12.5f}")
    for label, (value, err) in estimates.items():
        g = (value - f_exact) / f_exact
        print(f"{label:<24}{value:>9.4f}{err:>9.4f}{g:>12.5f}{abs(value - f_exact) / err:>12.1f}")
    swap = pmt.tempering_dataset(idata)["swap_accept"].mean(("chain", "draw")).values
    print(f"\nExchangeMC swap acceptance per pair: min {np.nanmin(swap):.2f}, "
          f"mean {np.nanmean(swap):.2f}")  # fmt: skip

    w_exchange = idata.posterior["w"].values
    mixing = {"ExchangeMC": arm_mixing(w_exchange), "pm.Metropolis": arm_mixing(w_metropolis)}
    print("\nMixing between the two arms of H(w) = 0 at beta = 1 (the recorded chain):")
    print(f"{'':<16}{'switches/1000 draws':>21}{'ESS(arm)':>10}")
    for label, (switches, ess) in mixing.items():
        print(f"{label:<16}{switches:>21.0f}{ess:>10.0f}")

    # -- the figure ------------------------------------------------------------------------------
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.1), layout="constrained")
    lim = 3.2
    for ax, w, label in [
        (axes[0], w_metropolis, "pm.Metropolis"),
        (axes[1], w_exchange, "ExchangeMC"),
    ]:
        for chain in range(w.shape[0]):
            ax.plot(*w[chain].T, ".", ms=1.5, alpha=0.4, color=f"C{chain}", rasterized=True)
        ax.set(xlim=(-lim, lim), ylim=(-lim, lim), xlabel="$w_1$", ylabel="$w_2$", aspect="equal")
        switches, ess = mixing[label]
        ax.set_title(
            f"{label}: posterior draws (colour = chain), n = {n:,}\n"
            f"{switches:.0f} arm switches / 1000 draws, ESS(arm) = {ess:.0f}",
            fontsize=9,
        )

    ax = axes[2]
    fine = np.concatenate([[0.0], np.geomspace(betas[1], 1.0, 200)])
    ax.plot(fine[1:], -singular_mean_loglik(n, fine[1:]), "k-", lw=1, label="exact")
    rung_ex = -ti.mean_loglik.values
    rung_me = -loglik_metropolis.mean(axis=(0, 1))
    ax.plot(betas[1:], rung_me[1:], "s", ms=4, mfc="none", color="C3", label="Metropolis")
    ax.plot(betas[1:], rung_ex[1:], "o", ms=3, color="C0", label="ExchangeMC")
    ax.set(xscale="log", yscale="log", xlabel=r"inverse temperature $t$")
    ax.set_ylabel(r"$E_t[\,nH(w)\,]$  (integrand of TI)")
    lines = [f"exact F = {f_exact:.3f}"] + [
        f"{k}: {v:.3f} ± {e:.3f}" for k, (v, e) in estimates.items()
    ]
    ax.text(0.03, 0.03, "\n".join(lines), transform=ax.transAxes, fontsize=8, va="bottom",
            family="monospace", bbox={"fc": "white", "ec": "0.8"})  # fmt: skip
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(r"$F(n) = \int_0^1 E_t[nH]\,dt$ per rung", fontsize=10)

    args.output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.output, dpi=80)
    plt.close(fig)
    print(f"\nFigure saved to {args.output}")
    if args.docs:
        docs = ROOT / "docs" / "demo.png"
        docs.parent.mkdir(exist_ok=True)
        shutil.copyfile(args.output, docs)
        print(f"Copied to {docs} ({docs.stat().st_size / 1024:.0f} kB)")
    return {"evidence": estimates, "exact": f_exact, "asymptotic": f_asym, "mixing": mixing}


def check(out, output):
    """The quick run's numbers against the references it prints (tests/test_examples.py and
    the gallery page call this after ``main``; ``output`` is the ``--output`` it was given)."""
    assert Path(output).is_file()
    for label in ("ExchangeMC, TI", "ExchangeMC, SS"):
        value, mcse = out["evidence"][label]
        assert abs(value - out["exact"]) < 4 * mcse, (label, value, out["exact"], mcse)
    assert abs(out["asymptotic"] - out["exact"]) < 1e-3
    # exchanges move the recorded chain between the arms of H(w) = 0 far more often
    assert out["mixing"]["ExchangeMC"][0] > 2 * out["mixing"]["pm.Metropolis"][0]


if __name__ == "__main__":
    main()
