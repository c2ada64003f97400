"""SGLD side by side: cost per step against N, and time to accurate posterior means vs NUTS.

Run: ``python benchmarks/bench_sgld.py`` (about 5 minutes on 2 cores). One process, one seed.

1. Wall time per SGLD step (pm.sample's own sampling time / draws, compilation excluded) on a
   logistic regression with 5 coefficients and batch 100, at N = 1,000 and N = 1,000,000;
   three alternating rounds of 4000 steps, best round kept (the machine is shared).
   Target: ratio <= 1.5 (the cost follows the batch, not the data set).
2. Time until the running posterior means of all coefficients stay within 0.1 posterior sd of
   the reference, for a logistic regression with N = 1,000,000: NUTS on the full data, plain
   SGLD (batch 100, default schedule 1/N down to 0.01/N, from the initial point) and SGLD-CV
   (batch 100, constant step 2/N, anchored at and started from pm.find_MAP's mode, whose cost
   is counted). Reference: the Laplace approximation by Newton's method on the full data; at this
   N the posterior mean and mode differ by O(1/sqrt(N)) = 0.001 sd. Target: SGLD >= 5x faster.
   Clocks run from the start of sampling (tuning included) and use pm.sample's per-draw
   callback; SGLD means are step-size weighted (Welling & Teh eq. 11). NUTS starts at
   pm.find_MAP's mode (its cost charged to NUTS as to SGLD-CV), plans 300 tuning steps and 300
   draws, and is stopped after 150 s; if it has not got there by then, the speed-up printed
   is a lower bound.
"""

import argparse
import time

import numpy as np
import pymc as pm
import pytensor

from pymc_tempering.diagnostics.sgld import step_size_weighted_mean
from pymc_tempering.step_methods.sgld import SGLD

FAST = {"mode": pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run")}
TRUE_BETA = np.array([0.5, -1.0, 0.25, 0.0, 1.5])
QUIET = {"progressbar": False, "compute_convergence_checks": False}
N_NUTS = 300  # tuning steps and draws: a NUTS draw costs several full-data gradients, ~0.1 s each
NUTS_BUDGET = 150  # seconds; NUTS stops there (the speed-up is then a lower bound)


def logistic_data(n_rows, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, TRUE_BETA.size))
    p = 1 / (1 + np.exp(-X @ TRUE_BETA))
    return X, (rng.uniform(size=n_rows) < p).astype("int32")


def logistic_model(X, y, batch_size=None):
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=X.shape[1])
        if batch_size is None:
            pm.Bernoulli("y", logit_p=X @ beta, observed=y)
        else:
            X_mb, y_mb = pm.Minibatch(X, y, batch_size=batch_size)
            pm.Bernoulli("y", logit_p=X_mb @ beta, observed=y_mb, total_size=len(y))
    return model


def laplace(X, y):
    """Posterior mode and sd (inverse Hessian) by Newton's method, N(0, 1) prior."""
    beta = np.zeros(X.shape[1])
    for _ in range(30):
        p = 1 / (1 + np.exp(-X @ beta))
        hess = X.T @ (X * (p * (1 - p))[:, None]) + np.eye(X.shape[1])
        step = np.linalg.solve(hess, X.T @ (y - p) - beta)
        beta += step
        if np.max(np.abs(step)) < 1e-12:
            break
    return beta, np.sqrt(np.diag(np.linalg.inv(hess)))


class Clock:
    """pm.sample callback recording the wall time and state of every draw (tuning included);
    it stops the run (KeyboardInterrupt, which pm.sample allows) after ``budget`` seconds."""

    def __init__(self, budget=np.inf):
        self.times, self.betas, self.budget = [], [], budget

    def __call__(self, trace, draw):
        self.times.append(time.perf_counter())
        self.betas.append(np.array(draw.point["beta"]))
        if len(self.times) > 1 and self.elapsed()[-1] > self.budget:
            raise KeyboardInterrupt

    def elapsed(self):
        t = np.array(self.times)
        first = t[0] - (t[1] - t[0])  # the first draw's start, estimated by the second's length
        return t - first


def time_to_accuracy(draws, weights, elapsed, ref_mean, ref_sd, offset=0):
    """Seconds until the running (weighted) mean stays within 0.1 sd to the end of the run."""
    w = np.asarray(weights, dtype=float)[:, None]
    running = np.cumsum(draws * w, axis=0) / np.cumsum(w, axis=0)
    ok = np.all(np.abs(running - ref_mean) < 0.1 * ref_sd, axis=1)
    err = np.max(np.abs(running[-1] - ref_mean) / ref_sd)
    if not ok[-1]:
        return np.inf, err, elapsed[-1]
    bad = np.flatnonzero(~ok)
    first_good = 0 if bad.size == 0 else bad[-1] + 1
    return elapsed[offset + first_good], err, elapsed[-1]


def per_step_cost(rounds=3, draws=4000):
    print("== 1. wall time per SGLD step, batch 100, 5 coefficients ==")
    steps = {}
    for n_rows in (1_000, 1_000_000):
        X, y = logistic_data(n_rows)
        model = logistic_model(X, y, batch_size=100)
        with model:
            steps[n_rows] = (model, SGLD(compile_kwargs=FAST))
            pm.sample(draws=200, tune=0, chains=1, step=steps[n_rows][1], **QUIET)  # warm-up
    # alternate the two sizes so that load from other processes hits both alike; keep the best
    cost = {n_rows: [] for n_rows in steps}
    for r in range(rounds):
        for n_rows, (model, step) in steps.items():
            with model:
                idata = pm.sample(draws=draws, tune=0, chains=1, step=step, random_seed=r, **QUIET)
            cost[n_rows].append(idata.sample_stats.attrs["sampling_time"] / draws)
    for n_rows, times in cost.items():
        shown = ", ".join(f"{1e6 * t:.0f}" for t in times)
        print(f"N = {n_rows:>9,}: best {1e6 * min(times):6.1f} us per step  (rounds: {shown} us)")
    ratio = min(cost[1_000_000]) / min(cost[1_000])
    print(
        f"ratio N=1e6 / N=1e3: {ratio:.2f}  (target <= 1.5: {'met' if ratio <= 1.5 else 'MISSED'})"
    )


def time_to_means():
    n_rows = 1_000_000
    print(f"\n== 2. time to posterior means within 0.1 sd, logistic regression, N = {n_rows:,} ==")
    X, y = logistic_data(n_rows, seed=1)
    t = time.perf_counter()
    ref_mean, ref_sd = laplace(X, y)
    print(
        f"reference (Laplace, Newton): {time.perf_counter() - t:.1f} s; sd = {np.round(ref_sd, 5)}"
    )
    results = {}

    full = logistic_model(X, y)
    t = time.perf_counter()
    with full:
        mode = pm.find_MAP(
            progressbar=False, compile_kwargs=FAST, return_inferencedata=False, jitter=False
        )
    t_map = time.perf_counter() - t
    print(f"pm.find_MAP on the full data: {t_map:.1f} s (charged to NUTS and to SGLD-CV)")

    clock = Clock(budget=NUTS_BUDGET)
    try:
        with full:
            pm.sample(
                draws=N_NUTS, tune=N_NUTS, chains=1, random_seed=3, callback=clock,
                init="adapt_diag", initvals={"beta": mode["beta"]}, compile_kwargs=FAST,
                **QUIET,
            )  # fmt: skip
    except (KeyboardInterrupt, ValueError):  # ValueError: stopped before any kept draw
        pass
    elapsed = clock.elapsed() + t_map
    draws = np.array(clock.betas[N_NUTS:])
    done = len(clock.times)
    if len(draws) == 0:
        results["NUTS"] = (np.inf, np.nan, elapsed[-1])
    else:
        results["NUTS"] = time_to_accuracy(
            draws, np.ones(len(draws)), elapsed, ref_mean, ref_sd, N_NUTS
        )
    # generous to NUTS: its warm-up draws (from the mode) counted as posterior draws too
    warm = np.array(clock.betas)
    results["NUTS+warm-up"] = time_to_accuracy(warm, np.ones(len(warm)), elapsed, ref_mean, ref_sd)
    print(
        f"NUTS ({N_NUTS} tune + {N_NUTS} draws planned, {done} done, budget {NUTS_BUDGET} s): "
        f"{elapsed[-1]:.1f} s in all, {(elapsed[-1] - t_map) / done * 1e3:.0f} ms per draw"
    )

    mb = logistic_model(X, y, batch_size=100)
    for name, draws_n in (("SGLD", 20_000), ("SGLD-CV", 20_000)):
        extra = 0.0
        kwargs = {}
        start = {}
        if name == "SGLD-CV":
            # small gradient noise lets SGLD-CV keep a constant step: eps P / 4 = 0.075 with
            # P ~ 1.5e5 the posterior precision, an 8% variance bias that leaves the means be
            kwargs.update(control_variate=mode, schedule="constant", step_size=2.0 / n_rows)
            start = {"beta": mode["beta"]}
            extra = t_map
        with mb:
            t = time.perf_counter()
            step = SGLD(compile_kwargs=FAST, **kwargs)
            if name == "SGLD-CV":  # the anchor's full-data gradient is computed here
                extra += time.perf_counter() - t
            clock = Clock()
            idata = pm.sample(
                draws=draws_n, tune=0, chains=1, step=step, random_seed=4, callback=clock,
                initvals=start or None, **QUIET,
            )  # fmt: skip
        draws = idata.posterior["beta"].values[0]
        eps = idata.sample_stats["step_size"].values[0]
        elapsed = clock.elapsed() + extra
        results[name] = time_to_accuracy(draws, eps, elapsed, ref_mean, ref_sd)
        mean = step_size_weighted_mean(idata)["beta"].values
        print(
            f"{name} ({draws_n} steps): {elapsed[-1]:.1f} s in all (anchor {extra:.1f} s), "
            f"final eq. 11 error {np.max(np.abs(mean - ref_mean) / ref_sd):.3f} sd"
        )
    print()
    for name, (t_hit, err, total) in results.items():
        hit = f"{t_hit:7.2f} s" if np.isfinite(t_hit) else f"not within {total:.0f} s"
        print(f"{name:8s} time to stay within 0.1 sd: {hit}  (final max error {err:.3f} sd)")
    for nuts in ("NUTS", "NUTS+warm-up"):
        nuts_hit, _, nuts_total = results[nuts]
        for name in ("SGLD", "SGLD-CV"):
            t_hit = results[name][0]
            if not np.isfinite(t_hit):
                print(f"speed-up {name} vs {nuts}: none measured ({name} did not get there)")
            elif np.isfinite(nuts_hit):
                speedup = nuts_hit / t_hit
                verdict = "met" if speedup >= 5 else "MISSED"
                print(f"speed-up {name} vs {nuts}: {speedup:.1f}x  (target >= 5: {verdict})")
            else:  # NUTS had not got there when its run ended: a lower bound
                speedup = nuts_total / t_hit
                verdict = "met" if speedup >= 5 else "undecided"
                print(
                    f"speed-up {name} vs {nuts}: > {speedup:.1f}x, a lower bound "
                    f"(target >= 5: {verdict})"
                )


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    per_step_cost()
    time_to_means()


if __name__ == "__main__":
    main()
