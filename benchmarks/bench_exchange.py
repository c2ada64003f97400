"""Marginal wall time per recorded draw: ExchangeMC (32 rungs) vs pm.Metropolis, side by side.

Run: python benchmarks/bench_exchange.py [--draws N] [--repeats R]

Models: (a) a 2-D two-component Gaussian mixture (weights 0.3/0.7, modes 10 sd apart);
(b) Bayesian logistic regression, 1,000 observations, 5 coefficients. One chain each, same
draws, same process. Also reports the share of ExchangeMC's sweep time spent in the compiled
batched density call.
"""

import argparse
import time

import numpy as np
import pymc as pm

import pymc_tempering as pmt
from pymc_tempering.exact import two_mode_model as bimodal_model


def logistic_model(n=1000, k=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, k))
    w = rng.normal(size=k)
    y = rng.binomial(1, 1 / (1 + np.exp(-X @ w)))
    with pm.Model() as model:
        coef = pm.Normal("coef", 0, 1, shape=k)
        pm.Bernoulli("y", logit_p=pm.math.dot(X, coef), observed=y)
    return model


def _run(model, step, draws, tune):
    with model:
        start = time.perf_counter()
        pm.sample(
            draws=draws,
            tune=tune,
            chains=1,
            cores=1,
            step=step,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
        return time.perf_counter() - start


def time_sampler(model, make_step, draws, tune, repeats=3):
    """Marginal seconds per draw: the slope between runs of ``draws`` and ``2 * draws`` draws.

    pm.sample has fixed costs (start-point checks, DataTree conversion) that would otherwise
    be spread over the draws; the slope removes them for both samplers alike. Best of
    Median of ``repeats`` to damp noise from other processes.
    """
    with model:
        step = make_step()
    slopes = []
    for _ in range(repeats):
        short = _run(model, step, draws, tune)
        long = _run(model, step, 2 * draws, tune)
        slopes.append((long - short) / draws)
    return float(np.median(slopes)), step


def density_share(model, step, draws):
    """Share of sampling time spent inside the compiled batched density call."""
    compiled = step.density.batched
    spent = [0.0]

    def timed(x):
        start = time.perf_counter()
        out = compiled(x)
        spent[0] += time.perf_counter() - start
        return out

    step.density.batched = timed
    try:
        total = _run(model, step, draws, 0)
    finally:
        step.density.batched = compiled
    return spent[0] / total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--tune", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for label, build in [
        ("bimodal 2-D mixture", bimodal_model),
        ("logistic n=1000 k=5", logistic_model),
    ]:
        model = build()
        t_metro, _ = time_sampler(model, pm.Metropolis, args.draws, args.tune, args.repeats)
        t_pt, step = time_sampler(
            model, lambda: pmt.ExchangeMC(n_rungs=32), args.draws, args.tune, args.repeats
        )
        share = density_share(model, step, args.draws)
        rows.append((label, t_metro, t_pt, t_pt / t_metro, share))
    print(
        f"{'model':<22}{'Metropolis us/draw':>20}{'ExchangeMC(32) us/draw':>24}"
        f"{'ratio':>8}{'share in logp call':>20}"
    )
    for label, t_m, t_p, ratio, share in rows:
        print(f"{label:<22}{t_m * 1e6:>20.1f}{t_p * 1e6:>24.1f}{ratio:>8.2f}{share:>20.1%}")


if __name__ == "__main__":
    main()
