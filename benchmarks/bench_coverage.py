"""Coverage of the evidence error bars (MCSE) over seeds: the egg box against a regular model.

Run: python benchmarks/bench_coverage.py [--seeds N] [--offline] [--package-only]
     [--routes R ...] [--models M ...] [--estimators TI SS BAR MBAR] [--output DIR]

Models, each with an exact log Z from :mod:`pymc_tempering.exact`: the egg box (Feroz, Hobson &
Bridges 2009: uniform prior on [0, 10 pi]^2, loglik (2 + cos(x/2) cos(y/2))^5 as a Potential;
many sharp, equal maxima) and the seed lecture's regular, conjugate model (``problems.lecture``).

Routes, per seed s (``random_seed=s``, ``cores=1``; the MCSE does not depend on cores):

* ladder64: ``pm.sample(step=ExchangeMC(betas=evidence_ladder(64)), draws=2000, tune=1000,
  chains=4)``, the step built once per model and reused across seeds (a reused step gives the
  trace a fresh step gives for the same seed: checked at the start of every sampling run), then
  TI and stepping stone;
* default: ``pmt.marginal_likelihood(model, random_seed=s)`` with whatever its defaults are when
  run (runs saved under earlier defaults are kept as they are: keep them apart with
  ``--output``); adaptive: the same with ``ladder="adaptive"``;
* opt-in: chains2 and chains4 (``chains=2`` / ``4``, ``draws=2000``: the MCSE can barely use
  the spread between chains), rwm (``step_kwargs={"explorer": "rwm"}``), auto (``beta_min`` and
  ``n_rungs`` ``"auto"``), auto256 (the same with 256 rungs), beta30 (256 rungs from
  ``beta_min=2**-30``).

``--routes`` defaults to ladder64 and default (about 12 minutes for 50 seeds of both models on a
2-core machine). Every run's ``rung_loglik`` (chain, draw, rung), ladder, round trips and the
package's estimates go to ``benchmarks/output/coverage/<model>_<route>_<seed>.npz``; runs on
disk are never re-sampled, and ``--offline`` recomputes everything from those files.

Printed: (1) per model, route and estimator (TI, SS and BAR by default; MBAR opt-in, about 30 s
per 256-rung run), the package's numbers over seeds: mean error against the exact log Z, sd of
the estimates, rms of the reported MCSE, their ratio, coverage of +-1.96 MCSE with its binomial
standard error, and the runs with EvidenceWarnings; (2) the same for prototype MCSE estimators
computed offline from the saved draws (not in the package): ESS "mean" [the package's] and
bulk, batch means, overlapping batch means, between-chain replication and combinations of
these; (3) why the ESS-based MCSE misses: batch-means variance against the batch size, the
variance over seeds of one chain's and of the pooled estimate relative to the ESS-based
variance, the correlation of a chain's two halves, round trips.
"""

import argparse
import logging
import time
import warnings
from pathlib import Path

import numpy as np
import problems
import pymc as pm
import xarray as xr
from arviz_stats.base import array_stats
from scipy import stats

import pymc_tempering as pmt
from pymc_tempering import exact
from pymc_tempering.evidence.bennett import bar, mbar
from pymc_tempering.evidence.core.tempered import (
    stepping_stone_draws,
    ti_draws,
    ti_quadrature,
)

OUTPUT = Path(__file__).resolve().parent / "output" / "coverage"
QUIET = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}
LADDER64 = {"draws": 2000, "tune": 1000, "chains": 4}
ESTIMATORS = ("TI", "SS")
#: routes: ladder64 (pm.sample, 4 chains, 64 rungs), marginal_likelihood's defaults (8 chains),
#: the same with the adaptive ladder, and with 2 and 4 chains
ROUTES = {
    "ladder64": LADDER64,
    "default": {},
    "prior": {"reference": "prior"},  # the defaults before reference="auto" (decision 150)
    "adaptive": {"ladder": "adaptive"},
    "chains2": {"chains": 2, "draws": 2000},
    "chains4": {"chains": 4, "draws": 2000},
    "auto": {"beta_min": "auto", "n_rungs": "auto"},
    "auto256": {"beta_min": "auto", "n_rungs": 256},
    "beta30": {"beta_min": 2.0**-30, "n_rungs": 256},
    "rwm": {"step_kwargs": {"explorer": "rwm"}},
}
logging.getLogger("pymc").setLevel(logging.ERROR)


# --- models ------------------------------------------------------------------------------------


def models():
    """name -> (model, exact log Z, exact (E_beta, Var_beta) of loglik as a function of betas)."""
    return {
        "egg_box": (
            exact.egg_box_model(),
            exact.egg_box_log_evidence(),
            exact.egg_box_power_moments,
        ),
        "lecture": (*problems.lecture(), problems.lecture_power_moments),
    }


# --- sampling ----------------------------------------------------------------------------------
def _counted(caught, prefix):
    return sum(
        issubclass(w.category, pmt.EvidenceWarning) and str(w.message).startswith(prefix)
        for w in caught
    )


def _save(path, idata, log_z, mcse, caught, wall):
    ds = pmt.diagnostics.tempering_dataset(idata)
    stats_ = idata.sample_stats
    np.savez(
        path,
        round_trips=stats_["round_trips"].values[:, -1],
        rung_loglik=ds["rung_loglik"].transpose("chain", "draw", "rung").values.astype(float),
        betas=ds["beta"].values,
        log_z=np.asarray(log_z, dtype=float),
        mcse=np.asarray(mcse, dtype=float),
        n_warnings=[_counted(caught, "thermodynamic"), _counted(caught, "stepping")],
        wall=wall,
    )


def run_ladder64(model, step, seed, path):
    start = time.perf_counter()
    with model:
        idata = pm.sample(step=step, random_seed=seed, **LADDER64, **QUIET)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pmt.EvidenceWarning)
        ti, ss = pmt.evidence.thermodynamic_integration(idata), pmt.evidence.stepping_stone(idata)
    wall = time.perf_counter() - start
    log_z = [float(ti.log_marginal_likelihood), float(ss.log_marginal_likelihood)]
    _save(path, idata, log_z, [float(ti.mcse), float(ss.mcse)], caught, wall)


def run_default(model, seed, path, **kwargs):
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pmt.EvidenceWarning)
        res, idata = pmt.marginal_likelihood(
            model, random_seed=seed, return_idata=True, **kwargs, **QUIET
        )
    wall = time.perf_counter() - start
    _save(path, idata, res.log_marginal_likelihood.values, res.mcse.values, caught, wall)


def _path(model_name, route, seed):
    return OUTPUT / f"{model_name}_{route}_{seed:03d}.npz"


def check_step_reuse(model):
    """A reused step gives the trace a fresh step gives for the same seed."""
    with model:
        step = pmt.ExchangeMC(betas=pmt.ladder.evidence_ladder(64))
        kwargs = {"draws": 200, "tune": 100, "chains": 2, **QUIET}
        pm.sample(step=step, random_seed=1, **kwargs)
        reused = pm.sample(step=step, random_seed=2, **kwargs)
        fresh = pm.sample(
            step=pmt.ExchangeMC(betas=pmt.ladder.evidence_ladder(64)), random_seed=2, **kwargs
        )
    same = np.array_equal(
        reused.sample_stats["rung_loglik"].values, fresh.sample_stats["rung_loglik"].values
    )
    print(f"reused step reproduces a fresh step's trace for the same seed: {same}")
    return same


def sample_all(cases, n_seeds, routes):
    OUTPUT.mkdir(parents=True, exist_ok=True)
    reuse = check_step_reuse(next(iter(cases.values()))[0])
    for name, (model, *_) in cases.items():
        step = None
        for route in routes:
            start, done = time.perf_counter(), 0
            for seed in range(n_seeds):
                path = _path(name, route, seed)
                if path.is_file():
                    continue
                if route != "ladder64":
                    run_default(model, seed, path, **ROUTES[route])
                else:
                    if step is None or not reuse:
                        with model:
                            step = pmt.ExchangeMC(betas=pmt.ladder.evidence_ladder(64))
                    run_ladder64(model, step, seed, path)
                done += 1
            print(f"sampled {name} {route}: {done} runs in {time.perf_counter() - start:.0f} s")


# --- MCSE estimators (prototypes, offline) -------------------------------------------------------
def ess_mean(terms):
    """(a) The package's: sd / sqrt(ArviZ split-chain ESS, method="mean")."""
    ess = float(array_stats.ess(terms, chain_axis=0, draw_axis=1, method="mean"))
    return float(np.std(terms, ddof=1) / np.sqrt(ess))


def ess_bulk(terms):
    """Rank-normalised (bulk) split-chain ESS in place of the "mean" ESS."""
    ess = float(array_stats.ess(terms, chain_axis=0, draw_axis=1, method="bulk"))
    return float(np.std(terms, ddof=1) / np.sqrt(ess))


def batch_means(terms, n_batches):
    """(b) Non-overlapping batch means, ``n_batches`` per chain, deviations from the grand mean
    (so that between-chain differences count): MCSE^2 = sum (m_cb - m)^2 / (K (K - 1)),
    K = chains * n_batches."""
    n_chains, n_draws = terms.shape
    size = n_draws // n_batches
    means = terms[:, : size * n_batches].reshape(n_chains, n_batches, size).mean(axis=-1)
    return float(np.std(means, ddof=1) / np.sqrt(means.size))


def overlapping_batch_means(terms, size):
    """Overlapping batch means (Flegal & Jones 2010), batch ``size``, per chain around the grand
    mean, the variances averaged over chains: MCSE^2 = sigma^2 / (chains * draws)."""
    n_chains, n_draws = terms.shape
    grand = terms.mean()
    csum = np.concatenate([np.zeros((n_chains, 1)), np.cumsum(terms, axis=1)], axis=1)
    window = (csum[:, size:] - csum[:, :-size]) / size
    n_windows = window.shape[1]
    sigma2 = n_draws * size / ((n_draws - size) * n_windows) * np.sum((window - grand) ** 2, 1)
    return float(np.sqrt(sigma2.mean() / terms.size))


def between_chains(per_chain):
    """(c) Chain-level replication: sd of the per-chain estimates / sqrt(chains)."""
    return float(np.std(per_chain, ddof=1) / np.sqrt(per_chain.size))


def per_chain_estimates(betas, loglik, estimator):
    if estimator == "TI":
        return np.array([ti_draws(betas, chain[None]).mean() for chain in loglik])
    return np.array([stepping_stone_draws(betas, chain[None])[0].sum() for chain in loglik])


def estimate_and_terms(betas, loglik, estimator):
    if estimator == "TI":
        terms = ti_draws(betas, loglik)
        return float(terms.mean()), terms
    log_ratio, terms = stepping_stone_draws(betas, loglik)
    return float(log_ratio.sum()), terms


def mcse_variants(betas, loglik, estimator):
    """Every prototype MCSE of one run, by name."""
    value, terms = estimate_and_terms(betas, loglik, estimator)
    n_draws = terms.shape[1]
    out = {
        "(a) ESS mean [package]": ess_mean(terms),
        "(e1) ESS bulk": ess_bulk(terms),
        "(b) batch means 20/chain": batch_means(terms, 20),
        "(b) batch means 10/chain": batch_means(terms, 10),
        "(b) batch means 2/chain": batch_means(terms, 2),
        "(e2) overlapping BM, b=n/10": overlapping_batch_means(terms, n_draws // 10),
        "(e2) overlapping BM, b=n/5": overlapping_batch_means(terms, n_draws // 5),
        "(c) between chains": between_chains(per_chain_estimates(betas, loglik, estimator)),
    }
    out["(d) max(a, c)"] = max(out["(a) ESS mean [package]"], out["(c) between chains"])
    # t-calibrated: the between-chain term has chains - 1 degrees of freedom; as an MCSE whose
    # +-1.96 bar is the t interval
    t_ratio = stats.t.ppf(0.975, loglik.shape[0] - 1) / stats.norm.ppf(0.975)
    out["(g) max(a, c * t/z)"] = max(
        out["(a) ESS mean [package]"], out["(c) between chains"] * t_ratio
    )
    # switch on an F test: chains disagree more than the ESS-based MCSE allows (90% level)
    n_chains = loglik.shape[0]
    f_crit = stats.chi2.ppf(0.9, n_chains - 1) / (n_chains - 1)
    disagree = (out["(c) between chains"] / out["(a) ESS mean [package]"]) ** 2 > f_crit
    out["(h) F test ? c * t/z : a"] = (
        out["(c) between chains"] * t_ratio if disagree else out["(a) ESS mean [package]"]
    )
    out["(f) max(a, BM 2/chain)"] = max(
        out["(a) ESS mean [package]"], out["(b) batch means 2/chain"]
    )
    return value, out


# --- reading and reporting ---------------------------------------------------------------------
def load_runs(model_name, route, per_chain_ladders=True):
    """Saved runs of a route; ``per_chain_ladders=False`` gives none for a route whose chains
    tuned their own ladders (the offline prototypes of sections 2 and 3 need one ladder)."""
    paths = sorted(OUTPUT.glob(f"{model_name}_{route}_*.npz"))
    runs = [dict(np.load(path)) for path in paths]
    if runs and runs[0]["betas"].ndim > 1 and not per_chain_ladders:
        return []
    return runs


def coverage_row(errors, mcse):
    errors, mcse = np.asarray(errors), np.asarray(mcse)
    covered = np.mean(np.abs(errors) <= 1.96 * mcse)
    rms = np.sqrt(np.mean(mcse**2))
    sd = np.std(errors, ddof=1)
    return errors.mean(), sd, rms, sd / rms, covered, np.sqrt(covered * (1 - covered) / errors.size)


ROW = "{:<9}{:<9}{:<5}{:<29}{:>9.4f}{:>8.4f}{:>8.4f}{:>7.2f}{:>7.2f} +-{:.2f}{:>6}"
HEADER = (
    f"{'model':<9}{'route':<9}{'est':<5}{'MCSE':<29}{'mean err':>9}{'sd est':>8}{'rms se':>8}"
    f"{'ratio':>7}{'cover':>7}{'':>6}{'warn':>6}"
)


#: section 1's estimators: the package's public functions (MBAR costs about 30 s on one
#: 256-rung run, so it is opt-in: --estimators TI SS BAR MBAR)
PACKAGE = {
    "TI": pmt.evidence.thermodynamic_integration,
    "SS": pmt.evidence.stepping_stone,
    "BAR": bar,
    "MBAR": mbar,
}


def _recompute(run, estimators):
    """The package's current estimates on a saved run: (log Z, MCSE, warned) per estimator."""
    # as ExchangeMC's sample stats: the ladder of each draw, (rung,) or (chain, rung) saved
    loglik = run["rung_loglik"]
    betas = np.broadcast_to(np.atleast_2d(run["betas"])[:, None, :], loglik.shape)
    ds = xr.Dataset(
        {
            "rung_loglik": (("chain", "draw", "rung_loglik_dim_0"), loglik),
            "betas": (("chain", "draw", "betas_dim_0"), betas),
        }
    )
    out = []
    for fn in (PACKAGE[name] for name in estimators):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pmt.EvidenceWarning)
            res = fn(ds)
        warned = any(issubclass(w.category, pmt.EvidenceWarning) for w in caught)
        out.append((float(res.log_marginal_likelihood), float(res.mcse), warned))
    return out


def report_package(cases, estimators=("TI", "SS", "BAR")):
    """Section 1, recomputed from the saved draws with the package as it is now (the MCSE
    stored at sampling time may come from older code)."""
    print("\n## 1. The package's own estimates and MCSE over seeds (current code)\n")
    print(HEADER)
    print("-" * len(HEADER))
    for name, (_, log_z, moments) in cases.items():
        for route in ROUTES:
            runs = load_runs(name, route)
            if not runs:
                continue
            current = [_recompute(run, estimators) for run in runs]
            for j, est in enumerate(estimators):
                errors = [values[j][0] - log_z for values in current]
                mcse = [values[j][1] for values in current]
                warned = sum(values[j][2] for values in current)
                row = coverage_row(errors, mcse)
                print(ROW.format(name, route, est, "package", *row, f"{warned}/{len(runs)}"))
            # the pooled estimate is the chains' mean: so is its quadrature bias; the ladders
            # differ between seeds with beta_min="auto" (the distinct ones, at most 64)
            ladders = {b.tobytes(): b for run in runs for b in np.atleast_2d(run["betas"])}
            ladders = list(ladders.values())[:64]
            bias = np.mean([ti_quadrature(b, *moments(b))[1] for b in ladders]) - log_z
            wall = np.mean([run["wall"] for run in runs])
            print(
                f"{'':<22}{len(runs)} runs, {wall:.1f} s each; TI corrected rule's quadrature "
                f"bias on these ladders (exact moments): {bias:+.5f}"
            )


def _variant_table(runs, log_z, est):
    """{variant: (errors, mcse)} over runs for one estimator."""
    values, table = [], {}
    for run in runs:
        value, variants = mcse_variants(run["betas"], run["rung_loglik"], est)
        values.append(value)
        for key, mcse in variants.items():
            table.setdefault(key, []).append(mcse)
    return np.array(values) - log_z, table


def report_variants(cases):
    print("\n## 2. Prototype MCSE estimators on the same runs (error against the exact log Z)\n")
    cols = f"{'rms se':>8}{'ratio':>7}{'cover':>7}{'':>6}"
    header = f"{'model':<9}{'route':<9}{'MCSE':<27}|{'TI':^28}|{'SS':^28}"
    print(header + "\n" + f"{'':<45}|{cols}|{cols}")
    print("-" * len(header))
    for name, (_, log_z, _) in cases.items():
        for route in ROUTES:
            runs = load_runs(name, route, per_chain_ladders=False)
            if not runs:
                continue
            tables = [_variant_table(runs, log_z, est) for est in ESTIMATORS]
            for key in tables[0][1]:
                line = f"{name:<9}{route:<9}{key:<27}"
                for errors, table in tables:
                    _, _, rms, ratio, cover, se = coverage_row(errors, table[key])
                    line += f"|{rms:>8.4f}{ratio:>7.2f}{cover:>7.2f} +-{se:.2f}"
                print(line)
            sds = [np.std(errors, ddof=1) for errors, _ in tables]
            print(
                f"{'':<18}({len(runs)} runs; sd of the estimates TI {sds[0]:.4f}, SS {sds[1]:.4f})"
            )


def why_it_misses(cases):
    """Section 3: the variance the per-draw terms' autocorrelation does not show."""
    print("\n## 3. Why the ESS-based MCSE misses (TI terms; variances relative to the ESS-based)\n")
    sizes = (20, 100, 400, 1000)
    header = (
        f"{'model':<9}{'route':<9}{'N/ESS':>7}"
        + "".join(f"{'BM b=' + str(b):>10}" for b in sizes)
        + f"{'chain':>8}{'pooled':>8}{'halves r':>10}{'trips':>7}"
    )
    print(header)
    print("-" * len(header))
    for name in cases:
        for route in ROUTES:
            runs = load_runs(name, route, per_chain_ladders=False)
            if runs:
                print(_why_row(name, route, runs, sizes))
    print(
        "\nN/ESS: chains * draws / ESS of the terms (integrated autocorrelation time); BM b=: "
        "batch-means variance with batches of b draws / ESS-based variance (mean over runs); "
        "chain: variance over seeds of one chain's estimate / its mean ESS-based variance; "
        "pooled: the same for the run's estimate; halves r: correlation over seeds of the "
        "estimates from the first and second halves of one chain; trips: round trips per chain "
        "(all replicas, prior rung to beta = 1 and back) where saved."
    )


def _chain_ratio(runs, chain):
    """Variance over seeds of chain ``chain``'s estimate / its mean ESS-based variance."""
    one = [ti_draws(run["betas"], run["rung_loglik"][chain : chain + 1]) for run in runs]
    return np.var([t.mean() for t in one], ddof=1) / np.mean([ess_mean(t) ** 2 for t in one])


def _why_row(name, route, runs, sizes):
    """Each run on its own ladder (``beta_min="auto"`` places it per seed)."""
    terms = [ti_draws(run["betas"], run["rung_loglik"]) for run in runs]
    var_a = np.array([ess_mean(t) ** 2 for t in terms])
    n_chains, n_draws = terms[0].shape
    tau = np.mean([t.size * v / t.var() for t, v in zip(terms, var_a, strict=True)])
    bm = [
        np.mean([batch_means(t, n_draws // b) ** 2 for t in terms] / var_a)
        if n_draws // b >= 2
        else np.nan
        for b in sizes
    ]
    chain = np.mean([_chain_ratio(runs, c) for c in range(n_chains)])
    pooled = np.var([t.mean() for t in terms], ddof=1) / var_a.mean()
    half = n_draws // 2
    first = [ti_draws(run["betas"], run["rung_loglik"][:, :half]).mean(axis=1) for run in runs]
    second = [ti_draws(run["betas"], run["rung_loglik"][:, half:]).mean(axis=1) for run in runs]
    r = np.corrcoef(np.ravel(first), np.ravel(second))[0, 1]
    trips = [run["round_trips"].mean() for run in runs if "round_trips" in run]
    trips = f"{np.mean(trips):>7.0f}" if trips else f"{'-':>7}"
    return (
        f"{name:<9}{route:<9}{tau:>7.1f}"
        + "".join(f"{v:>10.2f}" for v in bm)
        + f"{chain:>8.2f}{pooled:>8.2f}{r:>10.2f}{trips}"
    )


def main():
    global OUTPUT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--offline", action="store_true", help="only read saved runs")
    parser.add_argument(
        "--routes", nargs="+", default=["ladder64", "default"], choices=list(ROUTES),
        help="routes to sample (the report covers every route found on disk)",
    )  # fmt: skip
    parser.add_argument("--models", nargs="+", default=["egg_box", "lecture"])
    parser.add_argument("--package-only", action="store_true", help="print section 1 only")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where runs are saved")
    parser.add_argument(
        "--estimators", nargs="+", default=["TI", "SS", "BAR"], choices=list(PACKAGE),
        help="section 1's estimators (MBAR: about 30 s per saved 256-rung run)",
    )  # fmt: skip
    args = parser.parse_args()
    OUTPUT = args.output
    cases = {name: case for name, case in models().items() if name in args.models}
    print(f"pymc {pm.__version__}; cores=1; {args.seeds} seeds per model and route")
    if not args.offline:
        sample_all(cases, args.seeds, args.routes)
    report_package(cases, args.estimators)
    if not args.package_only:
        report_variants(cases)
        why_it_misses(cases)


if __name__ == "__main__":
    main()
