"""Marginal wall time per recorded draw: ExchangeMC (32 rungs) vs pm.Metropolis, side by side;
and with ``--correlated``, min ESS per CPU second on correlated posteriors against NUTS.

Run: python benchmarks/bench_exchange.py [--draws N] [--repeats R]
     python benchmarks/bench_exchange.py --correlated [--models NAME ...] [--draws N]
         [--tune N] [--repeats R]
     python benchmarks/bench_exchange.py --defaults [--models NAME ...] [--draws N]
         [--tune N] [--repeats R]

Models: (a) a 2-D two-component Gaussian mixture (weights 0.3/0.7, modes 10 sd apart);
(b) Bayesian logistic regression, 1,000 observations, 5 coefficients. One chain each, same
draws, same process. Also reports the share of ExchangeMC's sweep time spent in the compiled
batched density call.

``--correlated``: the correlated posteriors of ``problems.CORRELATED`` (a regression with 8
equicorrelated predictors, an AR(2) series, a latent AR(1) state of 50 steps), each sampled by
``ExchangeMC(explorer="rwm")`` (32 rungs, diagonal proposals: the default before issue 35), by
``ExchangeMC(explorer="rwm", proposal="dense")``, by ``ExchangeMC(explorer="mala",
proposal="dense")`` and by ``pm.sample``'s NUTS, with the same draws, tuning, 2
chains (sequentially, one core) and seed. ESS is ArviZ's bulk ESS at beta = 1 (the posterior),
the minimum over all scalar parameters; "CPU s" is the CPU time of the whole call, a fresh model
each time, so step construction, compilation and tuning are included; runs are interleaved and
the median over ``--repeats`` is shown. Target (issue 17): ExchangeMC >= 0.1x NUTS in min ESS
per second on correlated posteriors; measured: README. OpenBLAS is limited to one thread (as one
core is used): on a shared machine its threads spin against each other in the small dense
linear algebra.

``--defaults`` (issue 35): ``ExchangeMC(explorer="auto")`` (the default since issue 35: the
random walk, switched to dense MALA at sweep 150 where the top rung looks Gaussian) against
dense MALA throughout, ``ExchangeMC(explorer="rwm")`` (the diagonal random walk, the default
before), NUTS and ``pm.Metropolis`` (``pm.sample``'s own choice where a model has discrete
variables), the same way, on the
problems of :data:`DEFAULTS_PROBLEMS`: every run and its min ESS, CPU s, the local move it
ended with and (two-mode target) the weight of the mode at +5 (exact 0.7) with its MCSE,
then the median per sampler and the spread. Record: docs/decisions/110-exchange-defaults.md.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from bench_per_draw import paired_slopes  # noqa: E402
from harness import load_report  # noqa: E402
from problems import (  # noqa: E402
    CORRELATED,
    ar_model,
    changepoint_model,
    correlated_regression,
    eight_schools,
    latent_ar1_model,
    logistic_regression,
    singular_model,
)

import pymc_tempering as pmt  # noqa: E402
from pymc_tempering.exact import two_mode_model as bimodal_model  # noqa: E402
from pymc_tempering.trace import LOCAL_MOVES  # noqa: E402

CORRELATED_SAMPLERS = {
    "EMC rwm diag": lambda: {"step": pmt.ExchangeMC(explorer="rwm")},
    "ExchangeMC dense": lambda: {"step": pmt.ExchangeMC(explorer="rwm", proposal="dense")},
    "EMC mala dense": lambda: {"step": pmt.ExchangeMC(explorer="mala", proposal="dense")},
    "NUTS": lambda: {},
}


DEFAULTS_SAMPLERS = {
    "EMC auto": lambda: {"step": pmt.ExchangeMC(explorer="auto")},
    # dense MALA throughout: what "auto" switches to where the posterior looks Gaussian
    "EMC mala dense": lambda: {"step": pmt.ExchangeMC(explorer="mala", proposal="dense")},
    "EMC rwm": lambda: {"step": pmt.ExchangeMC(explorer="rwm")},  # the default before
    "NUTS": lambda: {},
    "Metropolis": lambda: {"step": pm.Metropolis()},
}
DEFAULTS_PROBLEMS = {
    "corr-regression": correlated_regression,
    "ar5": ar_model,
    "latent-ar1": latent_ar1_model,
    "schools-nc": eight_schools,
    "schools-c": lambda: eight_schools(centred=True),
    "two-mode": bimodal_model,
    "singular": singular_model,
    "changepoint": changepoint_model,
}


def defaults_run(build, sampler, draws, tune, seed):
    """``(min ESS, CPU s, mode weight, its MCSE, local move)`` of one run as
    :func:`min_ess_per_cpu_second`; the mode weight (share of draws with ``x[0] > 0``) only
    for a variable ``x`` of 2 entries."""
    model = build()
    with model:
        start = time.process_time()
        kwargs = DEFAULTS_SAMPLERS[sampler]()
        idata = pm.sample(
            draws=draws, tune=tune, chains=2, cores=1, random_seed=seed, progressbar=False,
            compute_convergence_checks=False, **kwargs,
        )  # fmt: skip
        cpu = time.process_time() - start
    post = idata["posterior"].to_dataset()
    ess = az.ess(post, method="bulk")
    min_ess = min(float(ess[v].min()) for v in ess.data_vars)
    weight = mcse = np.nan
    if "x" in post and post["x"].shape[-1] == 2:
        upper = (post["x"].isel(x_dim_0=0) > 0).astype(float)
        weight = float(upper.mean())
        mcse = float(az.mcse(upper.to_dataset(name="w"), method="mean")["w"])
    move = ""
    if "explorer" in idata["sample_stats"]:  # ExchangeMC's local move, after tuning
        codes = dict.fromkeys(int(c) for c in np.ravel(idata["sample_stats"]["explorer"].values))
        move = ",".join(LOCAL_MOVES[c] for c in codes)
    return min_ess, cpu, weight, mcse, move


def defaults_table(models, draws, tune, repeats, seed=1):
    samplers = list(DEFAULTS_SAMPLERS)
    print(f"draws={draws} tune={tune} chains=2 (sequential) seed={seed}, {repeats} repeats")
    for name in models:
        runs = {s: [] for s in samplers}
        for rep in range(repeats):  # interleaved, the order rotated every repeat
            k = rep % len(samplers)
            for sampler in samplers[k:] + samplers[:k]:
                try:
                    run = defaults_run(DEFAULTS_PROBLEMS[name], sampler, draws, tune, seed + rep)
                except ValueError as err:  # e.g. dense MALA refuses discrete variables
                    print(f"  {name:<16} {sampler:<14} rep {rep}: refused ({err})", flush=True)
                    run = (np.nan, np.nan, np.nan, np.nan, "")
                runs[sampler].append(run)
                ess, cpu, weight, mcse, move = run
                extra = f" weight {weight:.3f} +- {mcse:.3f}" if np.isfinite(weight) else ""
                print(
                    f"  {name:<16} {sampler:<14} rep {rep}: min ESS {ess:7.0f} CPU {cpu:6.1f}"
                    f" ESS/s {ess / cpu:7.1f} {move}{extra}",
                    flush=True,
                )
        rates = {s: [e / c for e, c, *_ in r] for s, r in runs.items()}
        nuts = float(np.median(rates["NUTS"]))
        for sampler, rate in rates.items():
            print(
                f"{name:<16} {sampler:<14} ESS/CPU s median {np.median(rate):7.1f} "
                f"(range {min(rate):.1f}-{max(rate):.1f}) vs NUTS {np.median(rate) / nuts:5.2f}",
                flush=True,
            )


def logistic_model():
    """Bayesian logistic regression, 1,000 observations, 5 coefficients, N(0, 1) prior."""
    return logistic_regression(1000, 5, prior_sd=1.0)


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


def paired_ratio(model, make_metropolis, make_exchange, draws, tune, repeats=5):
    """Marginal seconds per draw of each sampler, the slope between runs of ``draws`` and
    ``2 * draws`` draws timed back to back (:func:`bench_per_draw.paired_slopes`), and the
    ratio taken within each repeat. Returns ``(metropolis s, exchange s, ratio, (q1, q3) of
    the ratio, exchange step)``, medians over ``repeats``."""
    with model:
        metropolis, exchange = make_metropolis(), make_exchange()
    pairs = np.array(
        [
            paired_slopes(model, exchange, metropolis, 2 * draws, short=draws, tune=tune)
            for _ in range(repeats)
        ]
    )
    ratio = pairs[:, 0] / pairs[:, 1]
    q1, q3 = np.percentile(ratio, [25, 75])
    t_exchange, t_metropolis = np.median(pairs, axis=0)
    return t_metropolis, t_exchange, float(np.median(ratio)), (q1, q3), exchange


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


def min_ess_per_cpu_second(build, sampler, draws, tune, seed):
    """``(min ESS, CPU s)`` of one run on a fresh model: construction, compilation, tuning and
    draws all counted."""
    model = build()
    with model:
        start = time.process_time()
        idata = pm.sample(
            draws=draws, tune=tune, chains=2, cores=1, random_seed=seed, progressbar=False,
            compute_convergence_checks=False, **CORRELATED_SAMPLERS[sampler](),
        )  # fmt: skip
        cpu = time.process_time() - start
    ess = az.ess(idata["posterior"], method="bulk")
    return min(float(ess[v].min()) for v in ess.data_vars), cpu


def correlated_table(models, draws, tune, repeats, seed=1):
    samplers = list(CORRELATED_SAMPLERS)
    print(f"draws={draws} tune={tune} chains=2 (sequential) seed={seed}, median of {repeats}")
    header = (
        f"{'model':<16} {'sampler':<17} {'min ESS':>8} {'CPU s':>7} {'ESS/CPU s':>10} "
        f"{'vs NUTS':>8}"
    )
    print(header)
    print("-" * len(header))
    for name in models:
        runs = {s: [] for s in samplers}
        for rep in range(repeats):  # interleaved, the order rotated every repeat
            k = rep % len(samplers)
            for sampler in samplers[k:] + samplers[:k]:
                runs[sampler].append(
                    min_ess_per_cpu_second(CORRELATED[name], sampler, draws, tune, seed)
                )
        med = {
            s: (float(np.median([e for e, _ in r])), float(np.median([c for _, c in r])))
            for s, r in runs.items()
        }
        nuts_rate = med["NUTS"][0] / med["NUTS"][1]
        for sampler, (ess, cpu) in med.items():
            print(
                f"{name:<16} {sampler:<17} {ess:>8.0f} {cpu:>7.2f} {ess / cpu:>10.1f} "
                f"{ess / cpu / nuts_rate:>8.2f}",
                flush=True,
            )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=None)
    parser.add_argument("--tune", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--correlated", action="store_true")
    parser.add_argument("--defaults", action="store_true")
    parser.add_argument("--models", nargs="+", default=None)
    args = parser.parse_args()
    if args.defaults:
        models = args.models or list(DEFAULTS_PROBLEMS)
        defaults_table(models, args.draws or 1000, args.tune or 1000, args.repeats or 2)
        return
    args.models = args.models or list(CORRELATED)
    if args.correlated:
        correlated_table(args.models, args.draws or 1000, args.tune or 1000, args.repeats or 3)
        return
    args.draws, args.tune = args.draws or 4000, args.tune or 200
    args.repeats = args.repeats or 5
    rows = []
    load_before = os.getloadavg()
    for label, build in [
        ("bimodal 2-D mixture", bimodal_model),
        ("logistic n=1000 k=5", logistic_model),
    ]:
        model = build()
        t_metro, t_pt, ratio, quartiles, step = paired_ratio(
            model,
            pm.Metropolis,
            lambda: pmt.ExchangeMC(n_rungs=32),
            args.draws,
            args.tune,
            args.repeats,
        )
        share = density_share(model, step, args.draws)
        rows.append((label, t_metro, t_pt, ratio, quartiles, share))
    print(
        f"{'model':<22}{'Metropolis us/draw':>20}{'ExchangeMC(32) us/draw':>24}"
        f"{'ratio':>8}{'quartiles':>13}{'share in logp call':>20}"
    )
    for label, t_m, t_p, ratio, (q1, q3), share in rows:
        print(
            f"{label:<22}{t_m * 1e6:>20.1f}{t_p * 1e6:>24.1f}{ratio:>8.2f}"
            f"{q1:>7.2f}-{q3:<5.2f}{share:>20.1%}"
        )
    print(load_report(load_before, os.getloadavg()))


if __name__ == "__main__":
    main()
