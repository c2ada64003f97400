"""Min ESS per second: MALA vs PyMC's NUTS vs pm.Metropolis, side by side, as a user runs them.

Run: python benchmarks/bench_langevin.py [--models NAME ...] [--samplers NAME ...]
     [--draws N] [--tune N] [--chains C] [--seed S] [--clock wall|cpu]

Models: anisotropic Gaussians of 10 and 100 dimensions (standard deviations 0.1 to 10,
geometric), a logistic regression (500 observations, 10 coefficients), and correlated
posteriors: a linear regression with 8 equicorrelated predictors (rho = 0.95) plus intercept and
noise scale, an AR(2) series (constant, two lags, noise scale) and a latent AR(1) state of 50
steps (rho = 0.95) observed with noise. Samplers: ``MALA()`` as a user types it (a dense
preconditioner up to 100 parameters, transitions per draw chosen from the tuned step size), the
diagonal preconditioner with the same choice of transitions (``MALA(preconditioner="diag")``)
and with one transition per draw (the defaults before issue 17), ``pm.sample``'s NUTS and
``pm.Metropolis``. Every sampler runs in this process with the same draws, tuning, chains
(sequentially, one core) and seed.

ESS is ArviZ's bulk ESS, the minimum over all scalar parameters. "wall s" / "cpu s" are the
wall and CPU time of the whole call, step construction, compilation and tuning included (what a
user waits for); "ESS/s" divides by the one chosen by ``--clock`` (default wall), and the ratios
to NUTS and Metropolis use it. "us/draw" is the CPU time per recorded draw from the first draw
to the last (tuning included, compilation excluded). Before the timed runs each sampler samples
a small unrelated model once, so that costs paid once per process (imports, PyTensor's and
numba's own set-up) fall on no one; ``bench_startup.py`` measures them. Targets (issue 17):
``MALA()`` >= 0.5x NUTS and >= 10x Metropolis in min ESS/s on the Gaussians and the logistic
regression, >= 0.3x NUTS on the correlated posteriors. The machine may be shared: rerun on a
quiet one before quoting numbers (``--clock cpu`` is steadier on a shared one).
"""

import argparse
import time

import arviz as az
import numpy as np
import pymc as pm
from problems import CORRELATED, logistic_regression

from pymc_tempering.step_methods.langevin import MALA


def gaussian_model(dim=100):
    """Independent normals with standard deviations 0.1 ... 10 (geometric)."""
    with pm.Model() as model:
        pm.Normal("x", 0.0, np.geomspace(0.1, 10.0, dim), shape=dim)
    return model


MODELS = {
    "gaussian-10d": lambda: gaussian_model(10),
    "gaussian-100d": lambda: gaussian_model(100),
    "logistic": lambda: logistic_regression(500, 10, prior_sd=2.0),
    **CORRELATED,
}
SAMPLERS = {
    "MALA()": lambda: {"step": MALA()},
    "diag auto": lambda: {"step": MALA(preconditioner="diag")},
    "diag k=1": lambda: {"step": MALA(preconditioner="diag", steps_per_draw=1)},
    "NUTS": lambda: {},
    "Metropolis": lambda: {"step": pm.Metropolis()},
}
REFERENCES = ("NUTS", "Metropolis")


class CpuClock:
    """``pm.sample`` callback: CPU seconds from the first draw to the last (compilation and
    set-up excluded). The machine is shared, so CPU time is steadier than wall time."""

    def __init__(self):
        self.first = self.last = None

    def __call__(self, trace, draw):
        now = time.process_time()
        if self.first is None:
            self.first = now
        self.last = now

    @property
    def seconds(self):
        return self.last - self.first


def warm_up(sampler, seed):
    """Sample a small unrelated model once: per-process set-up is then paid by no timed run."""
    with pm.Model():
        pm.Normal("w", 0.0, 1.0, shape=2)
        pm.sample(draws=20, tune=20, chains=1, random_seed=seed, progressbar=False,
                  compute_convergence_checks=False, **SAMPLERS[sampler]())  # fmt: skip


def run(model, sampler, draws, tune, chains, seed):
    clock = CpuClock()
    with model:
        wall, cpu = time.perf_counter(), time.process_time()
        step = SAMPLERS[sampler]()  # step construction (compilation) is part of the time
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            callback=clock,
            **step,
        )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    ess = az.ess(idata, method="bulk")
    min_ess = min(float(ess[v].min()) for v in ess.data_vars)
    stats = idata["sample_stats"]
    accept_name = "acceptance_rate" if "acceptance_rate" in stats else "accept"
    accept = float(np.minimum(stats[accept_name], 1.0).mean()) if accept_name in stats else np.nan
    n_draws = chains * (draws + tune)
    return {
        "min_ess": min_ess,
        "us_per_draw": 1e6 * clock.seconds / n_draws,
        "wall": wall,
        "cpu": cpu,
        "accept": accept,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=list(SAMPLERS))
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    samplers = list(dict.fromkeys([*args.samplers, *REFERENCES]))
    print(
        f"draws={args.draws} tune={args.tune} chains={args.chains} (sequential) "
        f"seed={args.seed} ESS/s and ratios by {args.clock} time"
    )
    for sampler in samplers:
        warm_up(sampler, args.seed)
    header = (
        f"{'model':<16} {'sampler':<11} {'min ESS':>8} {'wall s':>7} {'cpu s':>7} {'ESS/s':>8} "
        f"{'us/draw':>8} {'accept':>7} {'vs NUTS':>8} {'vs Metrop.':>10}"
    )
    print(header)
    print("-" * len(header))
    for model_name in args.models:
        model = MODELS[model_name]()
        res = {}
        for sampler in samplers[::-1]:  # the references first, so each row has its ratios
            res[sampler] = run(model, sampler, args.draws, args.tune, args.chains, args.seed)
            res[sampler]["ess_per_s"] = res[sampler]["min_ess"] / res[sampler][args.clock]
        for sampler in samplers:
            r = res[sampler]
            print(
                f"{model_name:<16} {sampler:<11} {r['min_ess']:>8.0f} {r['wall']:>7.2f} "
                f"{r['cpu']:>7.2f} {r['ess_per_s']:>8.1f} {r['us_per_draw']:>8.0f} "
                f"{r['accept']:>7.3f} {r['ess_per_s'] / res['NUTS']['ess_per_s']:>8.2f} "
                f"{r['ess_per_s'] / res['Metropolis']['ess_per_s']:>10.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
