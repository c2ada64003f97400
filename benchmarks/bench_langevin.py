"""Min ESS per second: MALA (adapted preconditioner) vs PyMC's NUTS vs pm.Metropolis, side by side.

Run: python benchmarks/bench_langevin.py [--draws N] [--tune N] [--chains C] [--seed S]

Models: (a) a 100-d Gaussian with standard deviations spread geometrically over two orders of
magnitude (0.1 to 10); (b) Bayesian logistic regression, 500 observations, 10 coefficients.
"MALA k=4" is MALA with ``steps_per_draw=4`` (four transitions per recorded draw, spreading
PyMC's per-draw loop cost). Every sampler runs in this process with the same draws, tuning,
chains (sequentially, one core) and seed. ESS is ArviZ's bulk ESS, the minimum over all
scalar parameters. The time is the CPU time from the first draw to the last (tuning plus
draws, compilation excluded; the machine is shared, so CPU time is steadier than wall time),
shown next to PyMC's wall-clock ``sampling_time`` and the wall time of the whole ``pm.sample``
call. Targets (issue 4): MALA >= 0.5x NUTS and >= 10x Metropolis in min ESS/s.
"""

import argparse
import time

import arviz as az
import numpy as np
import pymc as pm

from pymc_tempering.step_methods.langevin import MALA


def gaussian_model(dim=100):
    with pm.Model() as model:
        pm.Normal("x", 0.0, np.geomspace(0.1, 10.0, dim), shape=dim)
    return model


def logistic_model(n=500, k=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, k))
    w = rng.normal(size=k)
    y = rng.binomial(1, 1 / (1 + np.exp(-X @ w))).astype("int32")
    with pm.Model() as model:
        coef = pm.Normal("coef", 0, 2, shape=k)
        pm.Bernoulli("y", logit_p=pm.math.dot(X, coef), observed=y)
    return model


SAMPLERS = {
    "MALA": lambda: {"step": MALA()},
    "MALA k=4": lambda: {"step": MALA(steps_per_draw=4)},
    "NUTS": lambda: {"nuts_sampler": "pymc"},
    "Metropolis": lambda: {"step": pm.Metropolis()},
}


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


def run(model, sampler, draws, tune, chains, seed):
    clock = CpuClock()
    with model:
        wall = time.perf_counter()
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            callback=clock,
            **SAMPLERS[sampler](),
        )
        wall = time.perf_counter() - wall
    ess = az.ess(idata, method="bulk")
    min_ess = min(float(ess[v].min()) for v in ess.data_vars)
    stats = idata["sample_stats"]
    accept_name = "acceptance_rate" if "acceptance_rate" in stats else "accept"
    accept = float(np.minimum(stats[accept_name], 1.0).mean()) if accept_name in stats else np.nan
    return {
        "min_ess": min_ess,
        "cpu": clock.seconds,
        "sampling_wall": float(stats.attrs["sampling_time"]),
        "wall": wall,
        "ess_per_s": min_ess / clock.seconds,
        "accept": accept,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    models = {
        "gaussian-100d (sd 0.1..10)": gaussian_model(),
        "logistic (n=500, k=10)": logistic_model(),
    }
    header = (
        f"{'model':<28} {'sampler':<11} {'min ESS':>8} {'cpu s':>7} {'sample s':>9} "
        f"{'wall s':>7} {'minESS/cpu s':>13} {'accept':>7}"
    )
    print(f"draws={args.draws} tune={args.tune} chains={args.chains} (sequential) seed={args.seed}")
    print(header)
    print("-" * len(header))
    ratios = []
    for model_name, model in models.items():
        res = {}
        for sampler in SAMPLERS:
            res[sampler] = r = run(model, sampler, args.draws, args.tune, args.chains, args.seed)
            print(
                f"{model_name:<28} {sampler:<11} {r['min_ess']:>8.0f} {r['cpu']:>7.2f} "
                f"{r['sampling_wall']:>9.2f} {r['wall']:>7.2f} {r['ess_per_s']:>13.1f} "
                f"{r['accept']:>7.3f}",
                flush=True,
            )
        for mala in ("MALA", "MALA k=4"):
            rate = res[mala]["ess_per_s"]
            ratios.append(
                (
                    model_name,
                    mala,
                    rate / res["NUTS"]["ess_per_s"],
                    rate / res["Metropolis"]["ess_per_s"],
                )
            )
    print()
    print(
        f"{'model':<28} {'sampler':<11} {'vs NUTS':>8} {'(>= 0.5)':>9} "
        f"{'vs Metropolis':>14} {'(>= 10)':>9}"
    )
    for model_name, mala, vs_nuts, vs_metropolis in ratios:
        print(
            f"{model_name:<28} {mala:<11} {vs_nuts:>8.2f} "
            f"{'met' if vs_nuts >= 0.5 else 'MISSED':>9} {vs_metropolis:>14.1f} "
            f"{'met' if vs_metropolis >= 10 else 'MISSED':>9}"
        )


if __name__ == "__main__":
    main()
