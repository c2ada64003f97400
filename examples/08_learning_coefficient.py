"""Singular learning theory from the ladder: WBIC, the learning coefficient and the LLC.

1. WBIC (Watanabe 2013) on the seed model H(w) = w1^2 w2^2 against the exact free energy F(n)
   and the seed paper's eq. (4), over n.
2. The learning coefficient lambda (two-temperature and fluctuation) for d = 2, 3 against its
   exact finite-n target and the asymptotic 1/2 (a regular model would give d/2).
3. The local learning coefficient of a one-hidden-layer tanh network (2 hidden units, 4
   weights) fitted to data from a 1-unit teacher, by MALA, against d/2 = 2: a singular model
   comes out below.

    python examples/08_learning_coefficient.py [--quick]

Prints a table and saves examples/output/08_learning_coefficient.png.
"""

import sys
import warnings
from functools import partial
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
import pytensor.tensor as pt  # noqa: E402

import pymc_tempering as pmt  # noqa: E402
from pymc_tempering._exact_singular import (  # noqa: E402
    exact_learning_coefficients,
    exact_wbic,
    monomial_power_moments,
)
from pymc_tempering.evidence import EvidenceWarning  # noqa: E402
from pymc_tempering.ladder import wbic_ladder  # noqa: E402
from pymc_tempering.llc import local_learning_coefficient  # noqa: E402
from pymc_tempering.slt import learning_coefficient, wbic  # noqa: E402

QUICK = "--quick" in sys.argv
DRAWS = 300 if QUICK else 2000
OUT = Path(__file__).parent / "output"


def seed_model(n, d):
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 1.0, shape=d)
        pm.Potential("loglik", -n * pt.prod(w**2))
    return model


def ladder_run(n, d, seed):
    with seed_model(n, d), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(
            step=pmt.ExchangeMC(betas=wbic_ladder(n, pmt.geometric_ladder(16))), draws=DRAWS,
            tune=DRAWS // 2, chains=2, cores=1, random_seed=seed, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
        return wbic(idata, n_obs=n), learning_coefficient(idata, n_obs=n)


def tanh_network(seed=0, n=500):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, size=n)
    y = 1.0 * np.tanh(0.8 * x) + 0.3 * rng.standard_normal(n)  # a 1-unit teacher
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 2.0, shape=2)
        b = pm.Normal("b", 0.0, 2.0, shape=2)
        pm.Normal("y", pt.tanh(x[:, None] * b[None, :]) @ a, 0.3, observed=y)
    return model


def main():
    ns = [100, 1000] if QUICK else [100, 1000, 10_000, 100_000, 1_000_000]
    rows, curves = [], {}
    for d in (2, 3):
        for i, n in enumerate(ns):
            w, lam = ladder_run(n, d, seed=10 * d + i)
            moments = partial(monomial_power_moments, n, k=(1,) * d)
            pair, fluct = exact_learning_coefficients(moments, float(lam.beta_1), float(lam.beta_2))
            rows.append((d, n, float(w.wbic), float(w.mcse), exact_wbic(moments, n),
                         pmt.exact.singular_free_energy(n, d),
                         pmt.exact.singular_free_energy_asymptotic(n, d),
                         float(lam.two_temperature), float(lam.two_temperature_mcse), pair,
                         float(lam.fluctuation), float(lam.fluctuation_mcse), fluct))  # fmt: skip
            curves[(d, n)] = lam
    print("d  n        WBIC (mcse)        exact WBIC  exact F(n)  eq.(4)   "
          "lambda 2T (mcse)  exact   lambda fl (mcse)  exact")  # fmt: skip
    for r in rows:
        print(f"{r[0]}  {r[1]:<8d} {r[2]:8.3f} ({r[3]:.3f})  {r[4]:9.3f}  {r[5]:9.3f}  "
              f"{r[6]:7.3f}  {r[7]:6.3f} ({r[8]:.3f})   {r[9]:6.3f}  {r[10]:6.3f} ({r[11]:.3f})"
              f"   {r[12]:6.3f}")  # fmt: skip

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        net = tanh_network()
        # the origin is a saddle of this network (every gradient vanishes there), where
        # find_MAP started from zeros stops; start it from a point off the symmetric set
        center = pm.find_MAP(model=net, start={"a": [1.0, 0.1], "b": [1.0, 0.1]}, progressbar=False)
        llc = local_learning_coefficient(
            net, center, sampler="mala", localization=100.0, draws=DRAWS, tune=DRAWS // 2,
            chains=4, cores=1, random_seed=1,
        )  # fmt: skip
    print(f"\nLLC of the 2-unit tanh network (d = 4, d/2 = 2): "
          f"{float(llc.local_learning_coefficient):.3f} +- {float(llc.mcse):.3f} "
          f"(per chain {np.round(llc.per_chain.values, 3).tolist()}); "
          f"warning: {llc.attrs['warning'] or 'none'}")  # fmt: skip

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), layout="constrained")
    d2 = [r for r in rows if r[0] == 2]
    n_axis = np.array([r[1] for r in d2])
    axes[0].errorbar(n_axis, [r[2] for r in d2], yerr=[2 * r[3] for r in d2], fmt="o",
                     label="WBIC (ExchangeMC, 2 MCSE)")  # fmt: skip
    axes[0].plot(n_axis, [r[4] for r in d2], "k_", ms=14, label="exact WBIC")
    axes[0].plot(n_axis, [r[5] for r in d2], "s-", mfc="none", label="exact F(n)")
    axes[0].plot(n_axis, [r[6] for r in d2], ":", label="eq. (4)")
    axes[0].set(xscale="log", xlabel="n", ylabel="free energy", title="WBIC vs F(n), d = 2")
    axes[0].legend(fontsize=8)
    for d, marker in ((2, "o"), (3, "s")):
        sub = [r for r in rows if r[0] == d]
        axes[1].errorbar([r[1] for r in sub], [r[7] for r in sub],
                         yerr=[2 * r[8] for r in sub], fmt=marker, label=f"d = {d}")  # fmt: skip
        axes[1].plot([r[1] for r in sub], [r[9] for r in sub], "k_", ms=12)
    axes[1].axhline(0.5, color="0.5", ls=":", label="lambda = 1/2")
    axes[1].set(xscale="log", xlabel="n", ylabel="two-temperature lambda",
                title="lambda_hat (bars) vs exact finite-n (dashes)")  # fmt: skip
    axes[1].legend(fontsize=8)
    pmt_plot = __import__("pymc_tempering.plots", fromlist=["plot_learning_coefficient"])
    pmt_plot.plot_learning_coefficient(curves[(2, ns[-1])], reference={"1/2": 0.5, "d/2": 1.0},
                                       ax=axes[2])  # fmt: skip
    OUT.mkdir(exist_ok=True)
    fig.savefig(OUT / "08_learning_coefficient.png", dpi=110)
    print(f"saved {OUT / '08_learning_coefficient.png'}")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        main()
