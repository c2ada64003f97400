"""Log evidence: ExchangeMC's estimators (``marginal_likelihood``) against ``pm.sample_smc``
and closed-form log Z, side by side in one process.

Run: python benchmarks/bench_evidence.py [--seeds 100] [--skip-calibration]
     python benchmarks/bench_evidence.py --smc-only [--smc-seeds 5] [--budgets 1 5] [--smc-mbar]
         [--problems two_mode_10d radiata] [--smc-ladder adaptive] [--smc-explorer rwm]

1. Accuracy and wall time against closed-form log Z, ours vs PyMC's SMC (its defaults with 2
   chains; ours one chain on a dense geometric ladder; cores=1 for both), on the seed lecture's
   model (x_i ~ N(mu, 1), mu ~ N(0, 1), n = 20) and the seed paper's singular model
   (H(w) = w1^2 w2^2, n = 100,000), with the paper's error rate G = (F_hat - F) / F and its
   asymptotic formula (4).
2. Calibration: over many seeds, how often |error| < 1 and < 1.96 MCSE (nominal 68% / 95%).
3. Radiata pine (Williams 1959): exact evidences of the two regressions under the Normal-Gamma
   prior, TI / stepping stone with the data's raw parametrisation and a non-centred one, Laplace
   and BIC, and the model-comparison table.
4. Equal wall time against ``pm.sample_smc`` as a user runs it (``--smc-only`` runs only this),
   on ``problems.EVIDENCE_PROBLEMS`` (a 10-D two-mode target and radiata pine's Normal-Gamma
   regression, non-centred). Per problem a timed pilot of ``marginal_likelihood`` (its defaults,
   two draw counts) gives its overhead and cost per draw. Then per budget and seed:
   ``pm.sample_smc(draws=2000 * budget)`` with its other defaults (2 chains), timed from the
   call to the result; then ``marginal_likelihood`` with its defaults but ``draws`` filling
   SMC's wall time of that seed (at least 100) and ``tune`` in the defaults' ratio to the draws
   of the explorer it runs (at least 100). Both ``cores=1``, one after the other, so load hits
   both. Every estimator comes from the same run: a method's wall time is the run's with the
   default estimator's time replaced by its own. MBAR is opt-in (``--smc-mbar``: its exact
   passes on 256 rungs cost several times SMC's budget). Per cell over seeds: rms error, mean
   error bar, coverage (|error| < 2 error bars); SMC's error bar is the sd of its chains'
   estimates / sqrt(chains). Run with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` on a shared
   machine.

Wall times include compilation, for both samplers. Measured: README ("Against pm.sample_smc at
equal wall time").
"""

import argparse
import logging
import time
import warnings

import numpy as np
import problems
import pymc as pm
from harness import SMC_DRAWS, Estimate, smc_run

import pymc_tempering as pmt
from pymc_tempering import evidence as ev
from pymc_tempering.evidence.methods import evidence_by_method, resolve_methods
from pymc_tempering.evidence.runner import (
    DEFAULT_METHODS,
    _default_explorer,
    _evidence_step_kwargs,
    default_tune,
)
from pymc_tempering.exact import singular_free_energy_asymptotic

QUIET = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}
logging.getLogger("pymc").setLevel(logging.ERROR)

# our settings per model: a dense geometric ladder (cheap: one batched call serves all rungs)
OURS = {
    "lecture": {"n_rungs": 512, "beta_min": 1e-4, "draws": 1500, "tune": 300, "chains": 1},
    "singular": {"n_rungs": 512, "beta_min": 1e-7, "draws": 3000, "tune": 400, "chains": 1},
}


def smc_log_evidence(model, seed):
    """Mean over chains of the last stage's log evidence (pm.sample_smc's object array)."""
    start = time.perf_counter()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = pm.sample_smc(chains=2, random_seed=seed, **QUIET)
    wall = time.perf_counter() - start
    per_chain = [
        float(np.asarray(stages, dtype=float)[np.isfinite(np.asarray(stages, dtype=float))][-1])
        for stages in np.asarray(idata.sample_stats["log_marginal_likelihood"].values)
    ]
    return float(np.mean(per_chain)), wall, per_chain


def ours_log_evidence(model, seed, **settings):
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ev.EvidenceWarning)
        result = ev.marginal_likelihood(model, random_seed=seed, **settings, **QUIET)
    wall = time.perf_counter() - start
    notes = [str(w.message)[:160] for w in caught if issubclass(w.category, ev.EvidenceWarning)]
    return result, wall, notes


def side_by_side(seed):
    print("\n## 1. Accuracy and wall time vs pm.sample_smc (one run each, same process)\n")
    n = 100_000
    cases = {"lecture": problems.lecture(), "singular": problems.singular(n)}
    header = f"{'model':<26}{'method':<34}{'log Z':>11}{'|error|':>9}{'mcse':>8}{'wall s':>8}"
    print(header)
    print("-" * len(header))
    for name, (model, exact) in cases.items():
        label = "lecture n=20" if name == "lecture" else f"singular d=2 n={n:,}"
        print(f"{label:<26}{'exact':<34}{exact:>11.4f}")
        smc, smc_wall, per_chain = smc_log_evidence(model, seed)
        chains = ", ".join(f"{v:.3f}" for v in per_chain)
        print(
            f"{'':<26}{'pm.sample_smc (default)':<34}{smc:>11.4f}{abs(smc - exact):>9.4f}"
            f"{'-':>8}{smc_wall:>8.1f}   chains: {chains}"
        )
        result, wall, notes = ours_log_evidence(model, seed, **OURS[name])
        settings = OURS[name]
        tag = f"{settings['n_rungs']} rungs, {settings['tune']}+{settings['draws']}"
        for est, short in (("thermodynamic_integration", "TI corr."), ("stepping_stone", "SS")):
            row = result.sel(estimator=est)
            log_z, mcse = float(row.log_marginal_likelihood), float(row.mcse)
            print(
                f"{'':<26}{'ExchangeMC ' + short + ' (' + tag + ')':<34}{log_z:>11.4f}"
                f"{abs(log_z - exact):>9.4f}{mcse:>8.4f}{wall:>8.1f}"
            )
        for note in notes:
            print(f"{'':<26}warning: {note}")
        if name == "singular":
            f_exact = -exact
            f_asym = singular_free_energy_asymptotic(n)
            f_lead = singular_free_energy_asymptotic(n, constant=0)
            print(
                f"{'':<26}F(n) exact (1-D quadrature) {f_exact:.6f}; eq. (4) {f_asym:.6f}; "
                f"eq. (4) without the O(1/log n) term {f_lead:.6f}"
            )
            for est in ev.ESTIMATORS:
                f_hat = -float(result.sel(estimator=est).log_marginal_likelihood)
                print(f"{'':<26}G = (F_hat - F)/F, {est}: {(f_hat - f_exact) / f_exact:+.5f}")
            smc_g = (-smc - f_exact) / f_exact
            print(f"{'':<26}G, pm.sample_smc: {smc_g:+.5f}")
        print()
    # the seed paper's own ladder (32 rungs, ratio 2) for reference, singular model
    model, exact = cases["singular"]
    settings = OURS["singular"] | {"n_rungs": 32, "beta_min": 2.0**-30, "draws": 6000}
    result, wall, _ = ours_log_evidence(model, seed, **settings)
    for est in ev.ESTIMATORS:
        row = result.sel(estimator=est)
        print(
            f"seed-paper ladder (32 rungs, ratio 2, 400+6000), singular, {est}: |error| "
            f"{abs(float(row.log_marginal_likelihood) - exact):.4f}, mcse {float(row.mcse):.4f}, "
            f"discretisation {float(row.discretisation_error):.4f}, wall {wall:.1f} s"
        )


def calibration(n_seeds):
    print(f"\n## 2. Calibration over {n_seeds} seeds (error / MCSE)\n")
    cases = [
        ("lecture n=20, section-1 settings", *problems.lecture(), OURS["lecture"], n_seeds),
        (
            "singular n=100,000, section-1 settings",
            *problems.singular(100_000),
            OURS["singular"],
            max(n_seeds // 3, 10),
        ),
    ]
    header = f"{'case':<44}{'estimator':<28}{'|z|<1':>8}{'|z|<1.96':>10}{'mean z':>8}{'sd z':>7}"
    print(header)
    print("-" * len(header))
    for label, model, exact, settings, seeds in cases:
        z = []
        start = time.perf_counter()
        for seed in range(seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ev.EvidenceWarning)
                res = ev.marginal_likelihood(model, random_seed=1000 + seed, **settings, **QUIET)
            z.append((res.log_marginal_likelihood.values - exact) / res.mcse.values)
        z = np.array(z)
        for j, est in enumerate(ev.ESTIMATORS):
            print(
                f"{label:<44}{est:<28}{np.mean(np.abs(z[:, j]) < 1):>8.2f}"
                f"{np.mean(np.abs(z[:, j]) < 1.96):>10.2f}{z[:, j].mean():>8.2f}"
                f"{z[:, j].std():>7.2f}"
            )
        print(f"{'':<44}({seeds} seeds, {time.perf_counter() - start:.0f} s)")


def radiata(seed):
    print("\n## 3. Radiata pine (Williams 1959), Normal-Gamma prior, original table\n")
    if not problems.radiata_available():
        print("skipped: ../shared/data/radiata_pine.csv is not beside the repository")
        return
    settings = {"n_rungs": 128, "beta_min": 1e-6, "draws": 3000, "tune": 1000, "chains": 2}
    header = f"{'model':<22}{'method':<40}{'log Z':>11}{'error':>9}{'mcse':>8}{'wall s':>8}"
    print(header)
    print("-" * len(header))
    results = {}
    for name, cov in (("M1 density x", "x"), ("M2 adjusted z", "z")):
        exact = problems.radiata(cov).log_evidence
        print(f"{name:<22}{'exact (closed form)':<40}{exact:>11.4f}")
        for noncentred in (False, True):
            model = problems.radiata(cov, noncentred=noncentred).model
            result, wall, notes = ours_log_evidence(model, seed, **settings)
            param = "non-centred" if noncentred else "raw (intercept ~3000)"
            for est, short in (("thermodynamic_integration", "TI"), ("stepping_stone", "SS")):
                row = result.sel(estimator=est)
                log_z = float(row.log_marginal_likelihood)
                print(
                    f"{'':<22}{short + ', ' + param:<40}{log_z:>11.4f}{log_z - exact:>+9.4f}"
                    f"{float(row.mcse):>8.4f}{wall:>8.1f}"
                )
            for note in notes:
                print(f"{'':<22}warning: {note}")
            if noncentred:
                results[name] = result
        for label, fn in (
            ("Laplace (approximation)", pmt.evidence.laplace_evidence),
            ("BIC", pmt.evidence.bic),
        ):
            value = float(fn(model).log_marginal_likelihood)
            print(f"{'':<22}{label:<40}{value:>11.4f}{value - exact:>+9.4f}")
    print("\ncompare_evidence (non-centred runs, TI):")
    print(pmt.compare_evidence(results).to_string(float_format=lambda v: f"{v:.4g}"))


# --- 4. equal wall time against pm.sample_smc --------------------------------------------------

EQUAL_TIME_METHODS = ("bar", "ti", "ss")
PILOT_DRAWS = (100, 600)
#: marginal_likelihood's arguments besides draws and tune (--smc-ladder, --smc-explorer)
OURS_SMC = {}


def _tune(model, draws):
    """``marginal_likelihood``'s default ratio of ``tune`` to its default 1000 draws, for the
    explorer and ladder it would use on ``model`` (:func:`default_tune`), times ``draws``
    (at least 100: two tuning windows)."""
    ladder = OURS_SMC.get("ladder", "geometric")
    kwargs = _default_explorer(model, OURS_SMC.get("step_kwargs"), ladder)
    ratio = default_tune(_evidence_step_kwargs(kwargs, 256, 2.0**-30, ladder)) / 1000
    return max(int(round(ratio * draws)), 100)


def _timed_estimate(idata, method):
    start = time.perf_counter()
    ((result, issues),) = evidence_by_method(idata, resolve_methods(method)).values()
    return result, issues, time.perf_counter() - start


def ours_run(model, seed, draws, methods=EQUAL_TIME_METHODS) -> tuple[dict[str, Estimate], float]:
    """``marginal_likelihood`` with its defaults but ``draws`` (``tune`` in proportion): every
    method's estimate from one run, each with the run's wall time, its own estimator's time in
    place of the default's; and the call's wall time."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, idata = ev.marginal_likelihood(
            model,
            draws=draws,
            tune=_tune(model, draws),
            random_seed=seed,
            cores=1,
            return_idata=True,
            **OURS_SMC,
        )
        wall = time.perf_counter() - start
        default_cost = sum(_timed_estimate(idata, m)[2] for m in DEFAULT_METHODS)
        out = {}
        for method in methods:
            result, issues, cost = _timed_estimate(idata, method)
            out[method] = Estimate(
                float(result.log_marginal_likelihood), float(result.mcse),
                wall - default_cost + cost, bool(issues),
            )  # fmt: skip
    return out, wall


def pilot(model) -> tuple[float, float]:
    """``(overhead, seconds per draw)`` of a default ``marginal_likelihood`` call with
    ``tune`` in the defaults' ratio to ``draws``, from two timed runs (the smaller twice,
    keeping its faster time: the first compiles)."""
    small, large = PILOT_DRAWS
    walls = {}
    for draws, seeds in ((small, (90, 91)), (large, (92,))):
        times = []
        for seed in seeds:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ev.marginal_likelihood(
                    model,
                    draws=draws,
                    tune=_tune(model, draws),
                    random_seed=seed,
                    cores=1,
                    **OURS_SMC,
                )
            times.append(time.perf_counter() - start)
        walls[draws] = min(times)
    per_draw = max((walls[large] - walls[small]) / (large - small), 1e-6)
    return max(walls[small] - small * per_draw, 0.0), per_draw


def _row(label, estimates, exact):
    err = np.array([e.log_z - exact for e in estimates])
    bars = np.array([e.error_bar for e in estimates])
    covered = np.mean(np.abs(err) < 2 * bars)
    wall = np.mean([e.wall for e in estimates])
    warned = sum(e.warned for e in estimates)
    return (
        f"{label:<26}{np.sqrt(np.mean(err**2)):>9.4f}{np.mean(err):>+9.4f}{np.mean(bars):>9.4f}"
        f"{covered:>7.2f}{wall:>8.1f}{warned:>8d}"
    )


def _cell(model, exact, budget, seeds, cost, methods):
    """One budget: per seed SMC, then ours with the draws that fill SMC's wall time by the
    cost model last measured (the pilot's, rescaled by each run's wall time over its
    prediction: load changes)."""
    smc, ours, draws = [], {m: [] for m in methods}, []
    overhead, per_draw = cost
    for seed in seeds:
        smc.append(smc_run(model, seed, SMC_DRAWS * budget))
        draws.append(max(int((smc[-1].wall - overhead) / per_draw), 100))
        estimates, wall = ours_run(model, seed, draws[-1], methods)
        for method, estimate in estimates.items():
            ours[method].append(estimate)
        load = wall / (overhead + per_draw * draws[-1])  # the machine's load stretches both
        overhead, per_draw = overhead * load, per_draw * load
    rows = [_row(f"pm.sample_smc {SMC_DRAWS * budget} draws", smc, exact)]
    rows += [_row(f"ours {m.upper()}", ours[m], exact) for m in methods]
    return rows, draws


def equal_time(names, budgets, n_seeds, mbar=False):
    """Section 4: print one table per problem (rows: budget x sampler/estimator)."""
    print("\n## 4. Equal wall time: marginal_likelihood vs pm.sample_smc (cores=1 each)\n")
    seeds = list(range(n_seeds))
    methods = (("mbar",) if mbar else ()) + EQUAL_TIME_METHODS
    for name in names:
        model, exact = problems.EVIDENCE_PROBLEMS[name]()
        cost = pilot(model)
        print(
            f"{name}: exact log Z {exact:.4f}; our pilot: overhead {cost[0]:.1f} s, "
            f"{1e3 * cost[1]:.2f} ms per draw; {n_seeds} seeds per cell"
        )
        header = f"{'budget / method':<26}{'rms err':>9}{'mean err':>9}{'err bar':>9}{'cover':>7}"
        print(header + f"{'wall s':>8}{'warned':>8}")
        for budget in budgets:
            rows, draws = _cell(model, exact, budget, seeds, cost, methods)
            tune = _tune(model, 1000) / 1000
            print(f"-- SMC x{budget}; our draws per chain {min(draws)}-{max(draws)}, "
                  f"tune {tune:g} of the draws")  # fmt: skip
            print("\n".join(rows))
        print()
    budgets_arg = " ".join(str(b) for b in budgets)
    print(
        "rerun: PYTHONPATH=. python benchmarks/bench_evidence.py --smc-only "
        f"--smc-seeds {n_seeds} --budgets {budgets_arg} --problems {' '.join(names)}"
        + (" --smc-mbar" if mbar else "")
        + f" --smc-ladder {OURS_SMC.get('ladder', 'geometric')}"
        + "".join(f" --smc-explorer {v}" for v in OURS_SMC.get("step_kwargs", {}).values())
    )
    print("err bar: ours the reported MCSE; SMC the sd of its 2 chains' estimates / sqrt(2).")
    print("cover: share of seeds with |error| < 2 err bars; warned: runs with an EvidenceWarning.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="calibration seeds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-calibration", action="store_true")
    parser.add_argument("--smc-only", action="store_true", help="only section 4")
    parser.add_argument("--smc-seeds", type=int, default=5, help="seeds per cell, section 4")
    parser.add_argument("--budgets", type=int, nargs="+", default=[1, 5],
                        help="SMC draws as multiples of its default 2000")  # fmt: skip
    parser.add_argument("--problems", nargs="+", default=list(problems.EVIDENCE_PROBLEMS))
    parser.add_argument("--smc-mbar", action="store_true", help="section 4 with MBAR too")
    parser.add_argument("--smc-ladder", choices=["geometric", "adaptive"], default="geometric",
                        help="section 4: marginal_likelihood's ladder=")  # fmt: skip
    parser.add_argument("--smc-explorer", choices=["rwm", "independent", "mala"], default=None,
                        help="section 4: step_kwargs={'explorer': ...}")  # fmt: skip
    args = parser.parse_args()
    print(f"pymc {pm.__version__}; one process; wall times include compilation")
    OURS_SMC["ladder"] = args.smc_ladder
    if args.smc_explorer is not None:
        OURS_SMC["step_kwargs"] = {"explorer": args.smc_explorer}
    if args.smc_only:
        equal_time(args.problems, args.budgets, args.smc_seeds, args.smc_mbar)
        return
    side_by_side(args.seed)
    if not args.skip_calibration:
        calibration(args.seeds)
    radiata(args.seed)
    equal_time(args.problems, args.budgets, args.smc_seeds, args.smc_mbar)


if __name__ == "__main__":
    main()
