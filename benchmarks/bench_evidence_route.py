"""``marginal_likelihood(model)``'s route (``reference="auto"``, issue 41) against the routes a
user would pick instead, side by side in one process, CPU seconds of the whole call
(compilation, the pilot and every estimator included), ``cores=1`` for all.

Run: OPENBLAS_NUM_THREADS=1 python benchmarks/bench_evidence_route.py
         [--problems reg2000 reg20000 logistic] [--seeds 20] [--nuts-seeds 3]
     python benchmarks/bench_evidence_route.py --overhead [--problems egg_box two_mode_10d ...]

1. Concentrating posteriors (default): per problem and seed, ``pmt.marginal_likelihood(model)``
   with its defaults, and on the first ``--nuts-seeds`` seeds ``pm.sample()`` (NUTS, its
   defaults) followed by ``pmt.bridge_sampling``. The problems: linear regressions with known
   noise (``problems.large_regression(n, sufficient=False)``: rows observed one by one, exact
   log Z) of 2,000 and 20,000 rows, and a logistic regression (2,000 rows, 5 coefficients,
   N(0, 2.5^2) priors) against an importance-sampling reference (a t5 fitted at the mode,
   400,000 draws; its own MCSE printed). Per problem: the route taken, coverage of 1.96 MCSE
   over seeds (exact cases), mean CPU s, mean MCSE^2 and CPU x MCSE^2 against NUTS + bridge.
2. ``--overhead``: targets where the pilot keeps the prior route (multimodal, singular, discrete
   take none): CPU of the defaults against ``reference="prior"`` (the same run: equal numbers,
   checked), per seed.
3. ``--published``: the published problems of issue 41 (egg box, Gaussian shells in 2, 5 and
   10 dimensions, a regression of 100 rows, the 10-D two-mode target), 8 seeds: the defaults,
   ``reference="prior"`` and ``pm.sample_smc()``, accuracy at equal CPU (rms error x
   sqrt(CPU s)).

Prints the load average before and after, and says whether the machine was busy.
"""

import argparse
import logging
import os
import time
import warnings

import numpy as np
import problems
import pymc as pm
from scipy import optimize, special, stats

import pymc_tempering as pmt
from pymc_tempering.evidence.route import PILOT

logging.getLogger("pymc").setLevel(logging.ERROR)
QUIET = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}


def logistic_data(n=2000, k=5, seed=0):
    """The data of ``problems.logistic_regression(n, k, 2.5, seed)`` (same generator)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, k))
    w = rng.normal(size=k)
    y = rng.binomial(1, 1 / (1 + np.exp(-X @ w))).astype("int32")
    return X, y


def logistic_reference(n=2000, k=5, prior_sd=2.5, draws=400_000, seed=1):
    """log Z of the logistic regression by importance sampling from a t5 fitted at the mode
    (scale: the inverse Hessian), with the MCSE of the log of the weights' mean."""
    X, y = logistic_data(n, k)

    def neg_log_post(w):
        eta = X @ w
        return -(y @ eta - np.logaddexp(0, eta).sum()) + 0.5 * w @ w / prior_sd**2

    mode = optimize.minimize(neg_log_post, np.zeros(k), method="BFGS").x
    p = special.expit(X @ mode)
    hess = X.T @ (X * (p * (1 - p))[:, None]) + np.eye(k) / prior_sd**2
    chol = np.linalg.cholesky(np.linalg.inv(hess))
    rng = np.random.default_rng(seed)
    logw = []
    for _ in range(draws // 20_000):
        z = rng.standard_t(5, size=(20_000, k))
        w = mode + z @ chol.T
        eta = w @ X.T
        loglik = (eta * y).sum(1) - np.logaddexp(0, eta).sum(1)
        logprior = stats.norm(0, prior_sd).logpdf(w).sum(1)
        logq = stats.t(5).logpdf(z).sum(1) - np.log(np.diag(chol)).sum()
        logw.append(loglik + logprior - logq)
    logw = np.concatenate(logw)
    log_z = special.logsumexp(logw) - np.log(logw.size)
    ratio = np.exp(logw - logw.max())
    mcse = ratio.std(ddof=1) / np.sqrt(ratio.size) / ratio.mean()
    return float(log_z), float(mcse)


def concentrating(name):
    """``(model, log Z, its MCSE)``: exact for the regressions (MCSE 0)."""
    if name.startswith("reg"):
        model, log_z = problems.large_regression(int(name[3:]), sufficient=False)
        return model, log_z, 0.0
    if name == "logistic":
        log_z, mcse = logistic_reference()
        return problems.logistic_regression(2000, 5, 2.5), log_z, mcse
    raise ValueError(f"unknown problem {name!r}")


def ours(model, seed):
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pmt.marginal_likelihood(model, random_seed=seed, **QUIET)
    cpu = time.process_time() - start
    row = res.sel(estimator="thermodynamic_integration")
    if "leg" in row.dims:
        row = row.sel(leg="combined")
    bridge = (
        float(res.log_marginal_likelihood.sel(estimator="bridge_sampling"))
        if "bridge_sampling" in res.estimator
        else np.nan
    )
    return {
        "log_z": float(row.log_marginal_likelihood), "mcse": float(row.mcse), "cpu": cpu,
        "route": res.attrs["route"], "warned": bool(str(row.warning.values)),
        "barriers": (res.attrs["pilot_barrier_prior"], res.attrs["pilot_barrier_variational"]),
        "bridge": bridge,
    }  # fmt: skip


def nuts_bridge(model, seed):
    start = time.process_time()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample(random_seed=seed, **QUIET)
        res = pmt.bridge_sampling(idata, model)
    cpu = time.process_time() - start
    return {"log_z": float(res.log_marginal_likelihood), "mcse": float(res.mcse), "cpu": cpu}


def run_concentrating(names, seeds, nuts_seeds):
    for name in names:
        model, truth, truth_mcse = concentrating(name)
        print(f"\n== {name}: reference log Z {truth:.4f} +- {truth_mcse:.4f}", flush=True)
        rows, base = [], []
        for seed in range(seeds):
            r = ours(model, seed)
            rows.append(r)
            z = (r["log_z"] - truth) / np.hypot(r["mcse"], truth_mcse)
            print(
                f"  seed {seed:2d} defaults: route {r['route']:11s} barriers "
                f"{r['barriers'][0]:.2f}/{r['barriers'][1]:.2f}  error {r['log_z'] - truth:+.4f} "
                f"+- {r['mcse']:.4f} (z {z:+.2f}){' WARNED' if r['warned'] else ''}  "
                f"bridge {r['bridge'] - truth:+.4f}  CPU {r['cpu']:.1f} s",
                flush=True,
            )
            if seed < nuts_seeds:
                b = nuts_bridge(model, seed)
                base.append(b)
                print(
                    f"  seed {seed:2d} NUTS + bridge: error {b['log_z'] - truth:+.4f} +- "
                    f"{b['mcse']:.4f}  CPU {b['cpu']:.1f} s",
                    flush=True,
                )
        _summarise(name, rows, base, truth, truth_mcse)


def _summarise(name, rows, base, truth, truth_mcse):
    err = np.array([r["log_z"] - truth for r in rows])
    mcse = np.array([r["mcse"] for r in rows])
    cpu = np.array([r["cpu"] for r in rows])
    covered = np.abs(err) < 1.96 * np.hypot(mcse, truth_mcse)
    routes = sorted({r["route"] for r in rows})
    eff = cpu.mean() * np.mean(mcse**2)
    line = (
        f"{name}: routes {routes}; coverage(1.96 MCSE) {covered.mean():.2f} over {len(rows)} "
        f"seeds; rms error {np.sqrt(np.mean(err**2)):.4f}, mean MCSE {mcse.mean():.4f}; "
        f"CPU {cpu.mean():.1f} s; CPU x MCSE^2 {eff:.2e}"
    )
    if base:
        b_mcse = np.array([b["mcse"] for b in base])
        b_cpu = np.array([b["cpu"] for b in base])
        b_eff = b_cpu.mean() * np.mean(b_mcse**2)
        line += (
            f"; NUTS + bridge ({len(base)} seeds) CPU {b_cpu.mean():.1f} s, mean MCSE "
            f"{b_mcse.mean():.4f}, CPU x MCSE^2 {b_eff:.2e}: defaults / NUTS+bridge "
            f"{eff / b_eff:.2f}x"
        )
    print("SUMMARY " + line, flush=True)


OVERHEAD = {
    "egg_box": problems.egg_box,
    "two_mode_10d": problems.two_mode_10d,
    "singular": problems.singular,
}


def run_overhead(names, seeds):
    """Per seed, on fresh models: the defaults and ``reference="prior"`` (their numbers must be
    equal: the same run), and the pilot's own CPU, timed again on the prior run's model (its
    density compiled: the compilation is the prior route's, which the pilot only does first).
    The overhead is the pilot's CPU over the prior route's whole call."""
    from pymc_tempering.evidence import runner

    for name in names:
        _, truth = OVERHEAD[name]()
        ratios = []
        for seed in range(seeds):
            cost, values = {}, {}
            for reference in ("auto", "prior"):
                model, _ = OVERHEAD[name]()  # a fresh model: each call compiles as a user's
                start = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = pmt.marginal_likelihood(model, reference=reference, random_seed=seed,
                                                  **QUIET)  # fmt: skip
                cost[reference] = time.process_time() - start
                values[reference] = (res.log_marginal_likelihood.values, res.attrs["route"])
            step_kwargs = runner._default_explorer(model, {}, "geometric")
            step_kwargs["explorer"] = PILOT.explorer
            start = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                runner._pilot(model, step_kwargs, seed)
            pilot = time.process_time() - start
            same = np.array_equal(values["prior"][0], values["auto"][0])
            ratios.append(1 + pilot / cost["prior"])
            print(
                f"  {name} seed {seed}: route {values['auto'][1]}, same numbers {same}, CPU "
                f"prior {cost['prior']:.2f} s, auto {cost['auto']:.2f} s, pilot {pilot:.2f} s "
                f"({ratios[-1]:.3f}x), error {values['auto'][0][0] - truth:+.4f}",
                flush=True,
            )
        print(f"SUMMARY {name}: (prior route + pilot) / prior route CPU {np.mean(ratios):.3f}x "
              f"(seeds: {', '.join(f'{r:.3f}' for r in ratios)})", flush=True)  # fmt: skip


PUBLISHED = {
    "egg_box": problems.egg_box,
    "shells2": lambda: problems.gaussian_shells(2),
    "shells5": lambda: problems.gaussian_shells(5),
    "shells10": lambda: problems.gaussian_shells(10),
    "regression100": lambda: problems.large_regression(100, sufficient=False),
    "two_mode_10d": problems.two_mode_10d,
}


def _timed(fn, *args, **kwargs):
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*args, **kwargs)
    return out, time.process_time() - start


def run_published(names, seeds):
    """Per problem and seed, on fresh models, each as a user calls it (``cores=1``): the
    defaults, ``reference="prior"`` (the defaults before this change) and ``pm.sample_smc()``
    (its mean over chains). Accuracy at equal CPU: ``rms error x sqrt(mean CPU)``, the error at
    one CPU second if error falls as 1 / sqrt(time); ratios > 1 favour the defaults."""
    for name in names:
        _, truth = PUBLISHED[name]()
        errors, cpu, routes = (
            {"auto": [], "prior": [], "smc": []},
            {"auto": [], "prior": [], "smc": []},
            [],
        )
        for seed in range(seeds):
            for arm in ("auto", "prior"):
                model, _ = PUBLISHED[name]()
                res, t = _timed(
                    pmt.marginal_likelihood, model, reference=arm, random_seed=seed, **QUIET
                )
                errors[arm].append(float(res.log_marginal_likelihood[0]) - truth)
                cpu[arm].append(t)
                if arm == "auto":
                    routes.append(res.attrs["route"])
            model, _ = PUBLISHED[name]()
            with model:
                idata, t = _timed(pm.sample_smc, random_seed=seed, cores=1, progressbar=False)
            per_chain = [np.asarray(v, dtype=float) for v in
                         idata.sample_stats["log_marginal_likelihood"].values]  # fmt: skip
            last = [c[np.isfinite(c)][-1] for c in per_chain]
            errors["smc"].append(float(np.mean(last)) - truth)
            cpu["smc"].append(t)
            print(f"  {name} seed {seed}: route {routes[-1]}; errors auto "
                  f"{errors['auto'][-1]:+.4f} prior {errors['prior'][-1]:+.4f} smc "
                  f"{errors['smc'][-1]:+.4f}; CPU "
                  f"{cpu['auto'][-1]:.1f} / {cpu['prior'][-1]:.1f} / {cpu['smc'][-1]:.1f} s",
                  flush=True)  # fmt: skip
        acc = {a: np.sqrt(np.mean(np.square(errors[a]))) * np.sqrt(np.mean(cpu[a])) for a in errors}
        print(f"SUMMARY {name}: routes {sorted(set(routes))}; rms error x sqrt(CPU s): defaults "
              f"{acc['auto']:.4f}, reference='prior' {acc['prior']:.4f}, pm.sample_smc "
              f"{acc['smc']:.4f}; accuracy at equal CPU, defaults / prior "
              f"{acc['prior'] / acc['auto']:.2f}x, defaults / SMC {acc['smc'] / acc['auto']:.2f}x "
              f"({seeds} seeds)", flush=True)  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", nargs="+", default=None)
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--nuts-seeds", type=int, default=3)
    parser.add_argument("--overhead", action="store_true")
    parser.add_argument("--published", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()
    print(f"load average before: {load_before}, cores: {os.cpu_count()}", flush=True)
    if args.overhead:
        run_overhead(args.problems or list(OVERHEAD), args.seeds or 3)
    elif args.published:
        run_published(args.problems or list(PUBLISHED), args.seeds or 8)
    else:
        run_concentrating(
            args.problems or ["reg2000", "reg20000", "logistic"], args.seeds or 20, args.nuts_seeds
        )
    load_after = os.getloadavg()
    busy = max(load_before[0], load_after[0]) > 1
    print(f"load average after: {load_after}; the machine was {'busy' if busy else 'idle'}")


if __name__ == "__main__":
    main()
