"""Tempering that tunes itself, measured side by side in one run (issue 8).

Run: python benchmarks/bench_ladder.py [--quick] (``--quick``: one seed, fewer rungs and draws)

1. Round trips per 1,000 sweeps after tuning, at the same number of rungs: the seed paper's
   geometric ladder vs the adaptive ladder (swap objective), each with and without the exact
   prior rung, on the 2-D bimodal mixture and on the seed paper's singular model
   (d = 2, n = 100,000). Also the spread of the pair rejection rates after tuning, and the rate
   DEO theory predicts from them, 1000 / (2 + 2 sum r / (1 - r)) (Syed et al. 2021), which
   bounds what re-placing the rungs can gain at a fixed number of rungs.
2. Evidence error at equal wall time on a conjugate linear regression whose parameters differ in
   magnitude by ~100x (intercept near 3,000, slope near 200; known noise, so log Z is exact):
   geometric vs adaptive (swap) vs adaptive (evidence objective), |error| and MCSE.
3. Round trips per 1,000 sweeps with and without the exact prior rung, at the same ladder, on a
   model whose prior a random walk explores slowly: 10 group means with an exchangeable
   MvNormal prior (unit variance, correlation 0.98; theta_j = m + e_j with m integrated out),
   5 unit-noise observations per group. The prior's variance along its long axis is ~500x that
   across it; the likelihood cuts that ratio to ~11 at beta = 1, so the (diagonally scaled)
   random walk at beta = 0 is by far the slowest rung; while its replica sits far out along the
   axis, swaps with rung 1 are rejected for long stretches. An exact prior draw every sweep
   removes the stall.
   (On the models of table 1 the swap barrier sets the rate instead.)
4. Adaptive / geometric round trips against the number of rungs (one seed each), with both
   ladders' DEO theory rates: where the geometric ladder 2^(l-L) is already close to the
   equal-rejection ladder, no re-placement can double the rate.
"""

import argparse
import time

import numpy as np
import pymc as pm
from problems import singular_model
from scipy import stats

import pymc_tempering as pmt
from pymc_tempering.evidence import stepping_stone, thermodynamic_integration
from pymc_tempering.exact import two_mode_model as bimodal_model


def exchangeable_model(d=10, rho=0.98, n=5, seed=0):
    """theta ~ MvNormal(0, (1 - rho) I + rho 11'), y_ij ~ N(theta_j, 1), i = 1..n."""
    rng = np.random.default_rng(seed)
    y = 1.0 + rng.normal(0.0, 1.0, size=(n, d))
    cov = (1 - rho) * np.eye(d) + rho * np.ones((d, d))
    with pm.Model() as model:
        theta = pm.MvNormal("theta", np.zeros(d), cov=cov)
        pm.Normal("y", theta, 1.0, observed=y)
    return model


def regression(seed=0, n=42):
    """y = alpha + beta (x - mean x) + e, e ~ N(0, 300^2) known; (alpha, beta) ~ N(m0, S0)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(20, 35, size=n)
    xc = x - x.mean()
    y = 3000 + 200 * xc + rng.normal(0, 300, size=n)
    m0, s0, sigma = np.array([3000.0, 185.0]), np.array([1000.0, 100.0]), 300.0
    with pm.Model() as model:
        coef = pm.Normal("coef", m0, s0, shape=2)
        pm.Normal("y", coef[0] + coef[1] * xc, sigma, observed=y)
    X = np.column_stack([np.ones(n), xc])
    cov = sigma**2 * np.eye(n) + X @ np.diag(s0**2) @ X.T
    exact = stats.multivariate_normal(X @ m0, cov).logpdf(y)
    return model, float(exact)


def run(model, draws, tune, seed, **step_kwargs):
    with model:
        step = pmt.ExchangeMC(**step_kwargs)
        start = time.perf_counter()
        idata = pm.sample(
            draws=draws, tune=tune, chains=1, random_seed=seed, step=step,
            progressbar=False, compute_convergence_checks=False,
        )  # fmt: skip
        seconds = time.perf_counter() - start
    return idata, step, seconds


def round_trip_table(draws, tune, seeds, n_rungs):
    print(f"\n1. Round trips per 1,000 sweeps after tuning ({n_rungs} rungs, {draws} draws, "
          f"{tune} tuning draws, mean over seeds {list(seeds)})")  # fmt: skip
    header = (
        f"{'model':<26}{'ladder':<12}{'prior rung':>11}{'trips/1000':>12}{'rej. spread':>13}"
        f"{'DEO theory':>12}"
    )
    print(header)
    targets = [("bimodal 2-D mixture", bimodal_model), ("singular d=2 n=1e5", singular_model)]
    for label, build in targets:
        rates = {}
        for ladder in ("geometric", "adaptive"):
            for prior_rung in (False, True):
                trips, spreads, theory = [], [], []
                for seed in seeds:
                    idata, step, _ = run(build(), draws, tune, seed, n_rungs=n_rungs,
                                         ladder=ladder, prior_rung=prior_rung)  # fmt: skip
                    trips.append(idata.sample_stats.round_trips.values[0, -1] / draws * 1000)
                    ds = pmt.diagnostics.tempering_dataset(idata)
                    rejection = 1 - ds.swap_accept.mean(("chain", "draw")).values
                    spreads.append(np.ptp(rejection))
                    # 1000 / (2 + 2 sum r/(1-r)): the rate with perfectly mixing rungs
                    theory.append(
                        float(pmt.diagnostics.global_barrier(idata).predicted_round_trip_rate)
                    )
                rates[ladder, prior_rung] = np.mean(trips)
                print(f"{label:<26}{ladder:<12}{str(prior_rung):>11}{np.mean(trips):>12.1f}"
                      f"{np.mean(spreads):>13.3f}{np.mean(theory):>12.1f}")  # fmt: skip
        for prior_rung in (False, True):
            ratio = rates["adaptive", prior_rung] / max(rates["geometric", prior_rung], 1e-9)
            print(f"{'':<26}adaptive / geometric (prior rung {prior_rung}): {ratio:.2f}x")
        trips, sizes = [], []
        for seed in seeds:
            idata, step, _ = run(build(), draws, tune, seed, n_rungs=n_rungs,
                                       ladder="adaptive", adapt_n_rungs=True)  # fmt: skip
            trips.append(idata.sample_stats.round_trips.values[0, -1] / draws * 1000)
            sizes.append(step.betas.size)
        print(f"{label:<26}{'adaptive, adapt_n_rungs':<24}{np.mean(trips):>11.1f}"
              f"   (settled on {sizes} rungs)")  # fmt: skip
        if "barrier" in dir(step):
            print(f"{'':<26}barrier Lambda = {step.barrier:.2f}, suggested rungs "
                  f"{step.n_rungs_suggested}")  # fmt: skip


def evidence_table(draws, tune, seeds, n_rungs):
    model, exact = regression()
    print(
        f"\n2. Evidence on a regression with intercept ~3000, slope ~200 (exact log Z = "
        f"{exact:.4f}); {n_rungs} rungs, {draws} draws, {tune} tuning, seeds {list(seeds)}"
    )
    print(f"{'ladder':<22}{'estimator':<18}{'mean |error|':>13}{'mean MCSE':>11}"
          f"{'max |err|/MCSE':>16}{'seconds':>9}")  # fmt: skip
    configs = [
        ("geometric", {"ladder": "geometric"}),
        ("adaptive (swap)", {"ladder": "adaptive"}),
        ("adaptive (evidence)", {"ladder": "adaptive", "ladder_objective": "evidence"}),
    ]
    for label, kwargs in configs:
        errs = {"TI": [], "SS": []}
        mcses = {"TI": [], "SS": []}
        secs = []
        for seed in seeds:
            idata, _, seconds = run(model, draws, tune, seed, n_rungs=n_rungs, **kwargs)
            secs.append(seconds)
            for name, fn in (("TI", thermodynamic_integration), ("SS", stepping_stone)):
                res = fn(idata)
                errs[name].append(float(res.log_marginal_likelihood) - exact)
                mcses[name].append(float(res.mcse))
        for name in ("TI", "SS"):
            e, m = np.abs(errs[name]), np.array(mcses[name])
            print(f"{label:<22}{name:<18}{e.mean():>13.4f}{m.mean():>11.4f}"
                  f"{(e / m).max():>16.2f}{np.mean(secs):>9.1f}")  # fmt: skip


def prior_rung_table(draws, tune, seeds, n_rungs, ladders):
    print(
        f"\n3. Exact prior rung vs random walk at beta = 0 on the exchangeable prior (d = 10, "
        f"rho = 0.98); {n_rungs} rungs, {draws} draws, {tune} tuning, seeds {list(seeds)}"
    )
    print(f"{'ladder':<12}{'prior rung':>11}{'trips/1000':>12}{'s.e.':>7}{'DEO theory':>12}"
          f"   per seed")  # fmt: skip
    for ladder in ladders:
        means = {}
        for prior_rung in (False, True):
            trips, theory = [], []
            for seed in seeds:
                idata, _, _ = run(exchangeable_model(), draws, tune, seed, n_rungs=n_rungs,
                                  ladder=ladder, prior_rung=prior_rung)  # fmt: skip
                trips.append(idata.sample_stats.round_trips.values[0, -1] / draws * 1000)
                theory.append(
                    float(pmt.diagnostics.global_barrier(idata).predicted_round_trip_rate)
                )
            trips = np.array(trips)
            se = trips.std(ddof=1) / np.sqrt(trips.size) if trips.size > 1 else np.nan
            means[prior_rung] = trips.mean()
            per_seed = " ".join(f"{t:.1f}" for t in trips)
            print(f"{ladder:<12}{str(prior_rung):>11}{trips.mean():>12.1f}{se:>7.1f}"
                  f"{np.mean(theory):>12.1f}   {per_seed}")  # fmt: skip
        ratio = means[True] / max(means[False], 1e-9)
        print(f"{'':<12}prior rung / random walk ({ladder}): {ratio:.2f}x")


def rungs_table(draws, tune, seed, counts):
    print(f"\n4. Round trips per 1,000 sweeps against the number of rungs ({draws} draws, {tune} "
          f"tuning, seed {seed}); in brackets the DEO theory rate")  # fmt: skip
    print(f"{'model':<26}{'rungs':>6}{'geometric':>18}{'adaptive':>18}{'ratio':>8}")
    targets = [("bimodal 2-D mixture", bimodal_model), ("singular d=2 n=1e5", singular_model)]
    for label, build in targets:
        for n_rungs in counts:
            cells = []
            for ladder in ("geometric", "adaptive"):
                idata, _, _ = run(build(), draws, tune, seed, n_rungs=n_rungs, ladder=ladder)
                trips = idata.sample_stats.round_trips.values[0, -1] / draws * 1000
                theory = float(pmt.diagnostics.global_barrier(idata).predicted_round_trip_rate)
                cells.append((trips, theory))
            (g, g_th), (a, a_th) = cells
            print(f"{label:<26}{n_rungs:>6}{g:>10.1f} ({g_th:5.1f}){a:>10.1f} ({a_th:5.1f})"
                  f"{a / max(g, 1e-9):>8.2f}")  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        round_trip_table(draws=500, tune=1000, seeds=(1,), n_rungs=16)
        evidence_table(draws=500, tune=1000, seeds=(1,), n_rungs=16)
        prior_rung_table(draws=2000, tune=1000, seeds=(1, 2, 3), n_rungs=8, ladders=("geometric",))
        rungs_table(draws=500, tune=1000, seed=1, counts=(8,))
    else:
        round_trip_table(draws=4000, tune=4000, seeds=(1, 2, 3), n_rungs=32)
        evidence_table(draws=4000, tune=3000, seeds=(1, 2, 3, 4, 5), n_rungs=32)
        prior_rung_table(draws=4000, tune=2000, seeds=(1, 2, 3, 4, 5), n_rungs=8,
                         ladders=("geometric", "adaptive"))  # fmt: skip
        rungs_table(draws=4000, tune=4000, seed=1, counts=(6, 8, 12, 16, 24, 32, 48))


if __name__ == "__main__":
    main()
