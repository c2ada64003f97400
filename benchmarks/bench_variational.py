"""Parallel tempering with a variational reference (issue 32): today's default ``ExchangeMC()``
against ``ExchangeMC(reference="variational")``, and ``marginal_likelihood(model)`` against
``marginal_likelihood(model, reference="variational")``, side by side in one process.

Run: python benchmarks/bench_variational.py [--quick] [--large] [--seeds 10] [--repeats 3]
         [--skip-rates] [--skip-evidence] [--agreement]

Problems. Posteriors that concentrate: a logistic regression (n = 10^4, 10 predictors, N(0, 5^2)
prior; ``--large`` adds n = 10^5 to the rate measures), a centred normal hierarchical model with
50 groups of 40 rows (53 parameters), a conjugate linear regression with known noise, n = 10^5
rows of 5 predictors (its log-likelihood through X^T X, X^T y, y^T y: the posterior and exact
log Z of the 10^5 rows at a cost independent of n), radiata pine (non-centred) under a Normal-Gamma
prior 10x vaguer in the coefficients (exact log Z; skipped with a message when
``../shared/data/radiata_pine.csv`` is missing). Targets where the prior leg matters: the egg
box, the 10-D two-mode target (modes 25 sds apart, weights 0.3 / 0.7), the seed paper's singular
model (d = 2, n = 10^5). Builders: ``problems.py``.

1. Rates. ``pm.sample(step=ExchangeMC())`` and ``pm.sample(step=ExchangeMC(reference=
   "variational"))``, pm.sample's defaults (1000 tuning, 1000 draws), 2 chains one after the
   other, ``cores=1``, a fresh model per run, the arms interleaved, ``--repeats`` times where
   a problem's first pair of runs costs under 20 CPU s (the median per CPU s is compared; once
   otherwise), after an untimed warm-up of both arms. CPU s is the process's CPU
   time of the whole call: construction, compilation, tuning and draws. Per run: the global
   barrier Lambda of each leg (``pymc_tempering.ladder.communication_barrier`` of the leg's mean
   swap rejection per pair), round trips after tuning (the ``round_trips`` stat of the last
   draw, summed over chains: both legs' trips in the variational arm), min bulk ESS over all
   scalar parameters at beta = 1 (ArviZ), each per CPU second; on the two-mode target, also the
   weight of the mode at +m (exact 0.7) with its MCSE.
2. Evidence. ``marginal_likelihood(model)`` and ``marginal_likelihood(model, reference=
   "variational")`` with their defaults (``cores=1``) over ``--seeds`` seeds on the problems with
   an exact log Z: rms error, mean MCSE, coverage of 1.96 MCSE, runs warned, CPU s, and the rms
   error at one CPU second ``rms * sqrt(CPU s)`` (if the error falls as 1 / sqrt(time): the
   comparison at equal CPU). The variational arm's rows: each leg and the combination.
   ``--agreement`` adds the logistic regression and the hierarchical model (no exact log Z):
   the two arms' and the two legs' estimates against each other (costly: minutes per call).
3. Ratios (variational / default) per problem against the issue's targets: >= 5x round trips
   per CPU s and >= 2x smaller rms log Z error at equal CPU on the posteriors that concentrate;
   coverage of 1.96 MCSE within 0.90-0.98 (met where the 95% binomial interval of the
   coverage over the seeds reaches that range); no worse than 1.1x elsewhere.

``--quick``: a smoke run of a minute or two (three problems, 200 + 200 draws, two seeds of
``marginal_likelihood`` with 4 chains of 200 draws). Run with ``OMP_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1`` on a shared machine (set here when unset).
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import logging  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
import problems  # noqa: E402
import pymc as pm  # noqa: E402
from scipy import stats  # noqa: E402

import pymc_tempering as pmt  # noqa: E402
from pymc_tempering.ladder import communication_barrier  # noqa: E402

logging.getLogger("pymc").setLevel(logging.ERROR)

QUIET = {"cores": 1, "progressbar": False}
ARMS = {"default": {}, "variational": {"reference": "variational"}}
CONCENTRATING, PRIOR_LEG = "concentrating", "prior leg matters"
TRIPS_TARGET, RMS_TARGET, WORSE_LIMIT = 5.0, 2.0, 1.1
COVERAGE_RANGE = (0.90, 0.98)
CHEAP_CPU = 20.0  # CPU s of a problem's first repeat (both arms) below which it is repeated
SHORT = {
    "thermodynamic_integration": "TI",
    "stepping_stone": "SS",
    "bennett_acceptance_ratio": "BAR",
    "mbar": "MBAR",
}


def _model(problem):
    return problem.model if isinstance(problem, problems.Problem) else problem


# name: (builder of a model or Problem, class); the rate measures run every one of them
RATE_PROBLEMS = {
    "logistic n=1e4 k=10": (
        lambda: problems.logistic_regression(10_000, 10, prior_sd=5.0),
        CONCENTRATING,
    ),
    "hierarchical 50 groups": (problems.hierarchical_model, CONCENTRATING),
    "regression n=1e5": (problems.large_regression, CONCENTRATING),
    "radiata vague": (problems.radiata_vague, CONCENTRATING),
    "egg box": (problems.egg_box, PRIOR_LEG),
    "two-mode 10-D": (problems.two_mode_10d, PRIOR_LEG),
    "singular n=1e5": (problems.singular, PRIOR_LEG),
}
LARGE = {
    "logistic n=1e5 k=10": (
        lambda: problems.logistic_regression(100_000, 10, prior_sd=5.0),
        CONCENTRATING,
    )
}
EVIDENCE_PROBLEMS = (
    "regression n=1e5",
    "radiata vague",
    "egg box",
    "two-mode 10-D",
    "singular n=1e5",
)
AGREEMENT_PROBLEMS = ("logistic n=1e4 k=10", "hierarchical 50 groups")
QUICK_PROBLEMS = ("regression n=1e5", "egg box", "singular n=1e5")


def available(name):
    if name == "radiata vague" and not problems.radiata_available():
        print(f"{name}: skipped, ../shared/data/radiata_pine.csv is not beside the repository")
        return False
    return True


# --- 1. rates ----------------------------------------------------------------------------------


def leg_barrier(idata, leg):
    """Global barrier Lambda of one leg: the last entry of ``communication_barrier`` of the
    leg's mean swap rejection per neighbouring pair (chains pooled)."""
    ds = pmt.tempering_dataset(idata, leg=leg)
    rejection = 1.0 - ds["swap_accept"].mean(("chain", "draw"), skipna=True).values
    return float(communication_barrier(ds["beta"].values, rejection)[-1])


def mode_weight(idata):
    """Share of the draws with ``x[0] > 0`` (the two-mode target's mode at +m) and its MCSE."""
    upper = (idata["posterior"]["x"].isel(x_dim_0=0) > 0).astype(float)
    mcse = float(az.mcse(upper.to_dataset(name="w"), method="mean")["w"])
    return float(upper.mean()), mcse


def rate_run(build, arm, draws, tune, seed):
    """One ``pm.sample`` run of ``arm`` on a fresh model; a dict of its measures."""
    model = _model(build())
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        step = pmt.ExchangeMC(**ARMS[arm])
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=2,
            random_seed=seed,
            step=step,
            compute_convergence_checks=False,
            **QUIET,
        )
        cpu = time.process_time() - start
    ess = az.ess(idata["posterior"], method="bulk")
    run = {
        "cpu": cpu,
        "trips": int(idata["sample_stats"]["round_trips"].values[:, -1].sum()),
        "ess": min(float(ess[v].min()) for v in ess.data_vars),
        "barrier_prior": leg_barrier(idata, "prior"),
        "barrier_variational": leg_barrier(idata, "variational") if arm != "default" else np.nan,
        "weight": mode_weight(idata) if "x_dim_0" in idata["posterior"].dims else None,
    }
    return run


def rates(names, draws, tune, repeats, seed=1):
    print(
        f"\n## 1. Rates: ExchangeMC() vs ExchangeMC(reference='variational'), {tune} tuning + "
        f"{draws} draws, 2 chains (sequential), cores=1, {repeats} repeat(s), seed {seed}+\n"
    )
    header = (
        f"{'problem':<24}{'arm':<13}{'CPU s':>7}{'trips':>7}{'trips/s':>9}{'min ESS':>9}"
        f"{'ESS/s':>8}{'Lambda prior':>14}{'Lambda var.':>13}"
    )
    print(header)
    print("-" * len(header))
    table = {}
    for name in names:
        build = {**RATE_PROBLEMS, **LARGE}[name][0]
        runs = {arm: [] for arm in ARMS}
        for rep in range(repeats):  # interleaved, the order alternated every repeat
            if rep and sum(r["cpu"] for rs in runs.values() for r in rs) > CHEAP_CPU:
                break  # one repeat of a costly problem
            for arm in list(ARMS)[:: 1 if rep % 2 == 0 else -1]:
                try:
                    run = rate_run(build, arm, draws, tune, seed + rep)
                except Exception as exc:  # the implementation's failure, reported as it is
                    print(f"{name:<24}{arm:<13}FAILED: {type(exc).__name__}: {exc}", flush=True)
                    continue
                runs[arm].append(run)
                extra = ""
                if run["weight"] is not None:
                    extra = f"   weight(+m) {run['weight'][0]:.3f} +- {run['weight'][1]:.3f}"
                print(
                    f"{name:<24}{arm:<13}{run['cpu']:>7.1f}{run['trips']:>7d}"
                    f"{run['trips'] / run['cpu']:>9.2f}{run['ess']:>9.0f}"
                    f"{run['ess'] / run['cpu']:>8.1f}{run['barrier_prior']:>14.2f}"
                    f"{run['barrier_variational']:>13.2f}{extra}",
                    flush=True,
                )
        table[name] = {
            arm: {
                "trips/s": float(np.median([r["trips"] / r["cpu"] for r in rs])),
                "ess/s": float(np.median([r["ess"] / r["cpu"] for r in rs])),
            }
            for arm, rs in runs.items()
            if rs
        }
    return table


# --- 2. evidence -------------------------------------------------------------------------------


def legs(result):
    """``{label: Dataset over estimator}`` of a ``marginal_likelihood`` result: the result
    itself, or one entry per value of its ``leg`` dim (the variational arm's legs and their
    combination)."""
    if "leg" in result.dims:
        return {str(leg): result.sel(leg=leg) for leg in result["leg"].values}
    return {"-": result}


def evidence_run(model, arm, seed, settings):
    """``(CPU s, {leg: (log Z, MCSE, warned) per estimator}, estimators)`` of one call."""
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = pmt.marginal_likelihood(model, random_seed=seed, **ARMS[arm], **settings, **QUIET)
    cpu = time.process_time() - start
    out = {
        label: (
            np.asarray(ds["log_marginal_likelihood"].values, dtype=float),
            np.asarray(ds["mcse"].values, dtype=float),
            np.array([bool(w) for w in np.atleast_1d(ds["warning"].values)]),
        )
        for label, ds in legs(result).items()
    }
    names = [str(e) for e in np.atleast_1d(result["estimator"].values)]
    return cpu, out, [SHORT.get(name, name) for name in names]


def evidence_summary(name, arm, runs, estimators, exact):
    """Print one row per leg and estimator; return ``{(leg, estimator): (rms*sqrt(cpu), cover)}``
    against ``exact`` (or, without one, the spread of the estimates)."""
    cpu = np.array([r[0] for r in runs])
    rows = {}
    for label in runs[0][1]:
        est = np.array([r[1][label][0] for r in runs])  # (seed, estimator)
        mcse = np.array([r[1][label][1] for r in runs])
        warned = np.array([r[1][label][2] for r in runs])
        for j, estimator in enumerate(estimators):
            if exact is None:
                print(
                    f"{name:<24}{arm:<13}{label:<13}{estimator:<11}"
                    f" mean {est[:, j].mean():.4f} sd over seeds {est[:, j].std(ddof=1):.4f}"
                    f" mean mcse {mcse[:, j].mean():.4f} warned {warned[:, j].sum()}"
                    f" CPU {np.median(cpu):.1f}",
                    flush=True,
                )
                rows[label, estimator] = {
                    "mean": est[:, j].mean(),
                    "error_bar": np.sqrt(np.mean(mcse[:, j] ** 2) / len(runs)),
                }
                continue
            err = est[:, j] - exact
            rms = float(np.sqrt(np.mean(err**2)))
            cover = float(np.mean(np.abs(err) < 1.96 * mcse[:, j]))
            at_one = rms * np.sqrt(np.median(cpu))
            print(
                f"{name:<24}{arm:<13}{label:<13}{estimator:<11}{rms:>8.4f}{err.mean():>+9.4f}"
                f"{mcse[:, j].mean():>8.4f}{cover:>7.2f}{warned[:, j].sum():>7d}"
                f"{np.median(cpu):>7.1f}{at_one:>10.4f}",
                flush=True,
            )
            covered = int(np.sum(np.abs(err) < 1.96 * mcse[:, j]))
            rows[label, estimator] = {"at_one": at_one, "covered": (covered, len(runs))}
    return rows


def evidence(names, seeds, settings, first_seed=100):
    print(
        f"\n## 2. Evidence: marginal_likelihood(model) vs (model, reference='variational'), "
        f"{seeds} seeds from {first_seed}, settings {settings or 'defaults'}, cores=1\n"
    )
    header = (
        f"{'problem':<24}{'arm':<13}{'leg':<13}{'estimator':<11}{'rms':>8}{'mean err':>9}"
        f"{'mcse':>8}{'cover':>7}{'warned':>7}{'CPU s':>7}{'rms*√CPU':>10}"
    )
    print(header)
    print("-" * len(header))
    table = {}
    for name in names:
        problem = RATE_PROBLEMS[name][0]()
        model = _model(problem)
        exact = problem.log_evidence if isinstance(problem, problems.Problem) else None
        if exact is not None:
            print(f"{name:<24}exact log Z {exact:.4f}")
        table[name] = {}
        for arm in ARMS:
            runs, estimators = [], None
            for seed in range(first_seed, first_seed + seeds):
                try:
                    cpu, out, estimators = evidence_run(model, arm, seed, settings)
                except Exception as exc:  # the implementation's failure, reported as it is
                    print(f"{name:<24}{arm:<13}seed {seed} FAILED: {type(exc).__name__}: {exc}")
                    break
                runs.append((cpu, out))
            if runs:
                table[name][arm] = evidence_summary(name, arm, runs, estimators, exact)
    return table


# --- 3. ratios against the targets -------------------------------------------------------------


def verdict(ok):
    return "met" if ok else "MISSED"


def ratio_row(name, kind, measure, value, target):
    print(f"{name:<24}{kind:<19}{measure:<34}{value:>8.2f}  {target}", flush=True)


def ratio_table(rate_table, evidence_table):
    print("\n## 3. Ratios variational / default, against the targets of issue 32\n")
    header = f"{'problem':<24}{'class':<19}{'measure':<34}{'ratio':>8}  target"
    print(header)
    print("-" * len(header))
    for name, arms in rate_table.items():
        kind = {**RATE_PROBLEMS, **LARGE}[name][1]
        if len(arms) < 2:
            continue
        for measure in ("trips/s", "ess/s"):
            d, v = arms["default"][measure], arms["variational"][measure]
            ratio = v / d if d > 0 else (np.inf if v > 0 else np.nan)
            if kind == CONCENTRATING and measure == "trips/s":
                target = f">= {TRIPS_TARGET:g}x: {verdict(ratio >= TRIPS_TARGET)}"
            else:
                target = f">= 1/{WORSE_LIMIT}: {verdict(not ratio < 1 / WORSE_LIMIT)}"
            label = "round trips per CPU s" if measure == "trips/s" else "min ESS per CPU s"
            ratio_row(name, kind, label, ratio, f"{target}   ({d:.2f} -> {v:.2f})")
    for name, arms in evidence_table.items():
        kind = RATE_PROBLEMS[name][1]
        if "default" not in arms or "variational" not in arms:
            continue
        default, variational = arms["default"], arms["variational"]
        for (leg, estimator), row in variational.items():
            base = default.get(("-", estimator))
            if base is None or leg in ("prior", "variational"):  # the legs: in section 2
                continue
            if "at_one" in row:
                gain = base["at_one"] / row["at_one"] if row["at_one"] > 0 else np.inf
                need = RMS_TARGET if kind == CONCENTRATING else 1 / WORSE_LIMIT
                target = f">= {need:.2f}x: {verdict(gain >= need)}"
                ratio_row(name, kind, f"rms err at equal CPU, {estimator}", gain, target)
                for arm, cell in (("default", base), (leg, row)):
                    k, n = cell["covered"]
                    ci = stats.binomtest(k, n).proportion_ci(0.95)
                    lo, hi = COVERAGE_RANGE
                    ok = ci.low <= hi and ci.high >= lo
                    target = (
                        f"{lo}-{hi}: {verdict(ok)} ({k}/{n}, 95% interval "
                        f"{ci.low:.2f}-{ci.high:.2f})"
                    )
                    ratio_row(name, kind, f"coverage 1.96 mcse, {estimator} {arm}", k / n, target)
            else:  # no exact log Z: the arms' means over seeds, in their combined error bars
                diff = row["mean"] - base["mean"]
                z = diff / np.hypot(row["error_bar"], base["error_bar"])
                target = f"|z| < 2: {verdict(abs(z) < 2)}   (difference {diff:+.4f})"
                ratio_row(name, kind, f"agreement (z), {leg} {estimator}", z, target)


def warm_up():
    """Both arms once on a small model, untimed: the process's one-off costs (imports, caches)
    fall on no measured run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for arm in ARMS:
            rate_run(problems.singular, arm, draws=20, tune=20, seed=0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a minute or two")
    parser.add_argument("--large", action="store_true", help="add logistic n = 10^5 to the rates")
    parser.add_argument("--seeds", type=int, default=10, help="seeds of marginal_likelihood")
    parser.add_argument(
        "--repeats", type=int, default=3, help=f"repeats of a rate run under {CHEAP_CPU:g} CPU s"
    )
    parser.add_argument("--skip-rates", action="store_true")
    parser.add_argument("--skip-evidence", action="store_true")
    parser.add_argument("--agreement", action="store_true", help=f"add {AGREEMENT_PROBLEMS}")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    args = parser.parse_args(argv)
    for arm in set(ARMS) - set(args.arms):
        del ARMS[arm]
    start = time.perf_counter()
    warm_up()
    rate_names = [n for n in RATE_PROBLEMS if available(n)]
    evidence_names = [n for n in EVIDENCE_PROBLEMS if n in rate_names]
    if args.agreement:
        evidence_names += list(AGREEMENT_PROBLEMS)
    draws = tune = 1000
    seeds, settings = args.seeds, {}
    if args.large:
        rate_names += list(LARGE)
    if args.quick:
        rate_names = evidence_names = list(QUICK_PROBLEMS)
        draws = tune = 200
        seeds, settings = 2, {"draws": 200, "chains": 4}
    rate_table = {} if args.skip_rates else rates(rate_names, draws, tune, args.repeats)
    evidence_table = {} if args.skip_evidence else evidence(evidence_names, seeds, settings)
    ratio_table(rate_table, evidence_table)
    print(f"\nwall {time.perf_counter() - start:.0f} s, CPU {time.process_time():.0f} s")


if __name__ == "__main__":
    main()
