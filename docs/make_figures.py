"""Make the README's figures from real runs: ``python docs/make_figures.py``.

* ExchangeMC on the 2-D bimodal mixture ``pymc_tempering.exact.two_mode_model`` (32 rungs, geometric
  ladder from 2^-30 to 1): ``ti_curve.png``, ``swap_rates.png``, ``replica_trajectories.png``.
* SGLD on Welling & Teh's (2011, sec. 5.1) two-parameter mixture, batch size 1:
  ``sgld_noise.png`` (their Figure 2).

About a minute on two cores. Also prints the tempering summary.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_tempering as pmt
from pymc_tempering.diagnostics import tempering_summary  # noqa: E402
from pymc_tempering.exact import two_mode_model as bimodal_model  # noqa: E402
from pymc_tempering.plots import (  # noqa: E402
    plot_replica_trajectories,
    plot_sgld_noise,
    plot_swap_rates,
    plot_ti_curve,
)
from pymc_tempering.step_methods.sgld import SGLD  # noqa: E402

DOCS = Path(__file__).parent
DPI = 110


def welling_teh_mixture(n=100, seed=0):
    """theta1 ~ N(0, 10), theta2 ~ N(0, 1); x ~ 0.5 N(theta1, 2) + 0.5 N(theta1 + theta2, 2),
    data from theta = (0, 1); minibatches of one row (Welling & Teh 2011, sec. 5.1)."""
    rng = np.random.default_rng(seed)
    data = np.where(rng.uniform(size=n) < 0.5, 0.0, 1.0) + rng.normal(0, np.sqrt(2), size=n)
    with pm.Model() as model:
        batch = pm.Minibatch(data, batch_size=1)
        theta1 = pm.Normal("theta1", 0, np.sqrt(10))
        theta2 = pm.Normal("theta2", 0, 1)
        pm.NormalMixture(
            "x",
            w=[0.5, 0.5],
            mu=pm.math.stack([theta1, theta1 + theta2]),
            sigma=np.sqrt(2),
            observed=batch,
            total_size=n,
        )
    return model


def save(fig, name):
    path = DOCS / name
    fig.savefig(path, dpi=DPI)
    print(f"wrote {path} ({path.stat().st_size // 1024} kB)")


def main():
    with bimodal_model():
        idata = pm.sample(
            draws=2000,
            tune=1000,
            chains=4,
            cores=1,
            step=pmt.ExchangeMC(n_rungs=32),
            random_seed=11,
            progressbar=False,
        )
    summary = tempering_summary(idata)
    print(summary)
    print(summary[["accept", "mean_loglik", "mean_loglik_mcse", "ess_loglik"]].to_dataframe())
    save(plot_ti_curve(idata)[0], "ti_curve.png")
    save(plot_swap_rates(idata)[0], "swap_rates.png")
    save(plot_replica_trajectories(idata, replicas=3, draws=600)[0], "replica_trajectories.png")

    with welling_teh_mixture():
        sgld = pm.sample(
            draws=9000,
            tune=1000,
            chains=1,
            cores=1,
            step=SGLD(step_size=0.01, final_step_size=0.0001, gamma=0.55, threshold_every=50),
            random_seed=3,
            discard_tuned_samples=False,
            progressbar=False,
        )
    save(plot_sgld_noise(sgld, parameters=2)[0], "sgld_noise.png")


if __name__ == "__main__":
    main()
