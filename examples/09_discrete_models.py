"""Story 9: discrete models, a change point and variable selection, against exact enumeration.

Part 1, the coal-mining disasters (Carlin, Gelfand & Smith 1992; ``pmt.datasets``): yearly
counts 1851-1962, a DiscreteUniform switchpoint year and Gamma(1, 1) rates before and after,
written as in PyMC's getting-started notebook (the early rate covers the switchpoint year).
``pm.sample(step=pmt.ExchangeMC(...))`` samples it as it is written: the switchpoint gets an
integer Metropolis move on every rung, the rates a random walk. Summing over the 112 years with
the rates integrated out gives the exact posterior of the year, the rates' posterior means and
log Z (``pmt.exact.change_point``); we check all of them, and the Bayes factor of "one change"
against "no change" (one rate for all years) by thermodynamic integration, stepping stone and
``pmt.compare_evidence``.

Part 2, variable selection with correlated predictors (``pmt.exact.variable_selection``): 8
predictors in which columns 0/1 and 2/3 are correlated 0.97 and the truth uses one of each
pair, Bernoulli(1/2) inclusion indicators ``gamma`` and N(0, 5^2) coefficients ``b``. The exact
inclusion probabilities (PIPs) and log Z follow by enumerating the 2^8 subsets. ExchangeMC
(Gibbs on each indicator on every rung) against ``pm.sample``'s default (NUTS for ``b`` and
BinaryGibbsMetropolis for ``gamma``): a single-flip step has to switch a pair's member through
"both in" or "neither in", and the wide slab makes the excluded coefficient land far from the
fit, so the default step sticks. Wall times include compilation.

Figures: ``09_change_point.png`` and ``09_variable_selection.png`` in ``--output``.
``benchmarks/bench_discrete.py`` compares the samplers at equal wall time.

Run: ``python examples/09_discrete_models.py [--quick]`` (``--quick``: shorter runs, for CI).
"""

import argparse
import logging
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_tempering as pmt  # noqa: E402
from pymc_tempering.evidence.core.mcse import mean_mcse  # noqa: E402
from pymc_tempering.exact import change_point, variable_selection  # noqa: E402

OUTPUT = Path(__file__).resolve().parents[1] / "examples" / "output"
SETTINGS = {"n_rungs": 64, "draws": 3000, "tune": 1000, "chains": 4}
QUICK_SETTINGS = {"n_rungs": 64, "draws": 1000, "tune": 500, "chains": 4}
# pm.sample's default step costs ~10x more per draw: PyMC's default 1000 + 1000 per chain
DEFAULT_SETTINGS = {"draws": 1000, "tune": 1000, "chains": 4}
QUICK_DEFAULT_SETTINGS = {"draws": 200, "tune": 200, "chains": 2}
QUIET = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}


def coal_model(years, counts):
    """The change point as a PyMC user writes it (PyMC's docs' convention)."""
    with pm.Model() as model:
        switchpoint = pm.DiscreteUniform("switchpoint", years[0], years[-1])
        early_rate = pm.Gamma("early_rate", 1.0, 1.0)
        late_rate = pm.Gamma("late_rate", 1.0, 1.0)
        rate = pm.math.switch(switchpoint >= years, early_rate, late_rate)
        pm.Poisson("disasters", rate, observed=counts)
    return model


def no_change_model(counts):
    """One rate for every year: the alternative to a change."""
    with pm.Model() as model:
        rate = pm.Gamma("rate", 1.0, 1.0)
        pm.Poisson("disasters", rate, observed=counts)
    return model


def sample(model, step, settings, seed):
    """``pm.sample`` with the story's settings; the wall time includes the step's compilation."""
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PyMC's r-hat advice: reported below
        start = time.perf_counter()
        idata = pm.sample(
            settings["draws"], tune=settings["tune"], chains=settings["chains"],
            step=step() if step else None, random_seed=seed, **QUIET,
        )  # fmt: skip
    return idata, time.perf_counter() - start


def mean_with_mcse(values):
    """Mean over (chain, draw) of each trailing column, its MCSE and its ESS."""
    values = np.asarray(values, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column that never changed: NaN
        mcse = mean_mcse(values)
    return values.mean(axis=(0, 1)), mcse.mcse, mcse.ess


def evidence(idata, exact):
    """TI and stepping stone against the exact log Z; a row per estimator."""
    rows = {}
    for name, estimator in (("TI", pmt.thermodynamic_integration), ("SS", pmt.stepping_stone)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", pmt.EvidenceWarning)
            result = estimator(idata)
        value, mcse = float(result.log_marginal_likelihood), float(result.mcse)
        why = [str(w.message) for w in caught if issubclass(w.category, pmt.EvidenceWarning)]
        rows[name] = {
            "log Z": value,
            "mcse": mcse,
            "exact": exact,
            "|error| / mcse": abs(value - exact) / mcse,
            "warning": "; ".join(why),
        }
    return rows


def change_point_story(settings, seed):
    years, counts = pmt.datasets.coal_mining_disasters()
    exact = change_point.change_point_posterior()
    betas = pmt.evidence_ladder(settings["n_rungs"])
    step = lambda: pmt.ExchangeMC(betas=betas)  # noqa: E731
    idata, wall = sample(coal_model(years, counts), step, settings, seed)
    flat, _ = sample(no_change_model(counts), step, settings, seed + 1)
    post = idata.posterior
    p, p_mcse, _ = mean_with_mcse(post.switchpoint.values[..., None] == exact.switchpoint)
    probabilities = pd.DataFrame(
        {"estimate": p, "mcse": p_mcse, "exact": exact.probability}, index=exact.switchpoint
    )
    probabilities.index.name = "year"
    rates = {}
    for name, truth in (("early_rate", exact.early_rate_mean), ("late_rate", exact.late_rate_mean)):
        mean, mcse, _ = mean_with_mcse(post[name].values)
        rates[name] = {"estimate": float(mean), "mcse": float(mcse), "exact": truth}
    log_z = {
        "one change": evidence(idata, change_point.change_point_log_evidence()),
        "no change": evidence(flat, change_point.no_change_log_evidence()),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)  # shown per estimator above
        ranking = pmt.compare_evidence({"one change": idata, "no change": flat})
    exact_bf = change_point.no_change_log_evidence() - change_point.change_point_log_evidence()
    bf = ranking.loc["no change"]
    log_bf = {"estimate": float(bf.log_bayes_factor), "mcse": float(bf.log_bayes_factor_mcse),
              "exact": exact_bf, "warning": "; ".join(w for w in ranking.warning if w)}  # fmt: skip
    return {"probabilities": probabilities, "rates": pd.DataFrame(rates).T, "log_z": log_z,
            "ranking": ranking, "log_bf": log_bf, "wall": wall, "counts": counts,
            "years": years, "idata": idata}  # fmt: skip


def print_change_point(out):
    p = out["probabilities"]
    shown = p[p.exact > 0.01].copy()
    shown["|error| / mcse"] = (shown.estimate - shown.exact).abs() / shown.mcse
    with pd.option_context("display.width", 160, "display.precision", 4):
        print(f"P(switchpoint = year), years with exact probability > 1% ({out['wall']:.1f} s):")
        print(shown.to_string())
        rates = out["rates"].copy()
        rates["|error| / mcse"] = (rates.estimate - rates.exact).abs() / rates.mcse
        print("\nPosterior means of the rates (disasters per year):")
        print(rates.to_string())
        print("\nlog Z, thermodynamic integration (TI) and stepping stone (SS):")
        for model, rows in out["log_z"].items():
            for name, row in rows.items():
                print(f"  {model:<11}{name}: {row['log Z']:9.3f} ± {row['mcse']:.3f}, exact "
                      f"{row['exact']:9.3f}, |error| {row['|error| / mcse']:.1f} MCSE"
                      f"{'  WARNING: ' + row['warning'] if row['warning'] else ''}")  # fmt: skip
    bf = out["log_bf"]
    print(f"\nlog Bayes factor, no change against one change (compare_evidence, TI): "
          f"{bf['estimate']:.2f} ± {bf['mcse']:.2f}, exact {bf['exact']:.2f}: |error| "
          f"{abs(bf['estimate'] - bf['exact']) / bf['mcse']:.1f} MCSE"
          f"{'  WARNING: ' + bf['warning'] if bf['warning'] else ''}")  # fmt: skip
    prob = out["ranking"].loc["one change", "model_probability"]
    print(f"P(one change | data) = {prob:.12f} under equal prior odds")


def variable_selection_story(settings, default_settings, seed):
    data = variable_selection.variable_selection_data()
    exact = variable_selection.variable_selection_posterior(data.X, data.y)
    exact_log_z = variable_selection.variable_selection_log_evidence(data.X, data.y)
    betas = pmt.evidence_ladder(settings["n_rungs"])
    runs = {
        "ExchangeMC": (lambda: pmt.ExchangeMC(betas=betas), settings),
        "pm.sample default": (None, default_settings),
    }
    table = pd.DataFrame(index=pd.RangeIndex(data.X.shape[1], name="predictor"))
    summary, traces = {}, {}
    for name, (step, run_settings) in runs.items():
        model = variable_selection.variable_selection_model(data.X, data.y)
        idata, wall = sample(model, step, run_settings, seed)
        gamma = idata.posterior.gamma.values
        estimate, mcse, ess = mean_with_mcse(gamma)
        table[name], table[f"{name} mcse"] = estimate, mcse
        error = np.abs(estimate - exact.inclusion_probability)
        with np.errstate(divide="ignore", invalid="ignore"):  # never changed: MCSE 0 or NaN
            z = np.where(mcse > 0, error / mcse, np.inf)
        min_ess = float(np.nan_to_num(ess, nan=0.0).min())  # never changed: no ESS
        frozen = int((gamma == gamma[:, :1]).all(axis=1).sum())  # (chain, indicator) pairs
        summary[name] = {"chains x draws": f"{gamma.shape[0]} x {gamma.shape[1]}",
                         "wall s": wall, "min ESS": min_ess, "min ESS/s": min_ess / wall,
                         "max |error|": float(error.max()),
                         "max |error| / mcse": float(z.max()),
                         "frozen chains": frozen}  # fmt: skip
        traces[name] = gamma[..., 0]
        if name == "ExchangeMC":
            log_z = evidence(idata, exact_log_z)
    table["exact"] = exact.inclusion_probability
    return {"pips": table, "summary": pd.DataFrame(summary).T, "log_z": log_z,
            "traces": traces}  # fmt: skip


def print_variable_selection(out):
    with pd.option_context("display.width", 160, "display.precision", 3):
        print("Posterior inclusion probabilities (exact: the 2^8 subsets enumerated):")
        print(out["pips"].to_string())
        print("\nPer sampler (chains one after the other, compilation included; frozen chains:")
        print("(chain, indicator) pairs that never changed, whose MCSE and ESS mean nothing):")
        print(out["summary"].to_string())
    for name, row in out["log_z"].items():
        print(f"log Z, ExchangeMC {name}: {row['log Z']:.3f} ± {row['mcse']:.3f}, exact "
              f"{row['exact']:.3f}, |error| {row['|error| / mcse']:.1f} MCSE"
              f"{'  WARNING: ' + row['warning'] if row['warning'] else ''}")  # fmt: skip
    s = out["summary"]
    other = s.loc["pm.sample default", "min ESS/s"]
    ratio = f"{s.loc['ExchangeMC', 'min ESS/s'] / other:.1f}x" if other > 0 else "inf"
    print(f"Min ESS per second over the indicators, ExchangeMC / pm.sample default: {ratio}")


def plot_change_point(out, path):
    fig, axes = plt.subplots(1, 3, figsize=(14, 4), layout="constrained")
    years, counts, post = out["years"], out["counts"], out["idata"].posterior
    ax = axes[0]
    ax.bar(years, counts, color="0.75", width=1.0, label="disasters")
    switch = post.switchpoint.values.ravel()[:, None] >= years
    curve = np.where(switch, post.early_rate.values.ravel()[:, None],
                     post.late_rate.values.ravel()[:, None])  # fmt: skip
    ax.plot(years, curve.mean(0), color="C3", label="posterior mean rate")
    ax.set(xlabel="year", ylabel="disasters per year")
    ax.legend(fontsize=8)
    ax.set_title("British coal-mining disasters, 1851-1962", fontsize=10)
    ax = axes[1]
    p = out["probabilities"].loc[1880:1900]
    ax.bar(p.index, p.exact, color="0.8", label="exact (sum over years)")
    ax.errorbar(p.index, p.estimate, yerr=2 * p.mcse, fmt="o", ms=3, color="C3",
                label="ExchangeMC (±2 MCSE)")  # fmt: skip
    ax.set(xlabel="switchpoint year", ylabel="posterior probability")
    ax.legend(fontsize=8)
    ax.set_title("P(switchpoint = year)", fontsize=10)
    ax = axes[2]
    for i, (model, rows) in enumerate(out["log_z"].items()):
        exact = next(iter(rows.values()))["exact"]
        for j, (name, row) in enumerate(rows.items()):
            ax.errorbar(j + 0.1 * i, row["log Z"] - exact, yerr=2 * row["mcse"], fmt="os"[i],
                        capsize=4, color=f"C{i}", label=f"{model}, {name}")  # fmt: skip
    ax.axhline(0, color="k", lw=1)
    ax.set_xticks([0, 1], ["TI", "SS"])
    ax.set(ylabel="estimated - exact log Z (±2 MCSE)", xlim=(-0.5, 1.5))
    ax.legend(fontsize=8)
    ax.set_title(f"log Z; exact log BF (no change) = {out['log_bf']['exact']:.2f}", fontsize=10)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_variable_selection(out, path):
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), layout="constrained")
    pips, ax = out["pips"], axes[0]
    pos = np.arange(len(pips))
    ax.bar(pos, pips.exact, color="0.8", label="exact (2^8 subsets)")
    for i, name in enumerate(("ExchangeMC", "pm.sample default")):
        ax.errorbar(pos + 0.15 * (2 * i - 1), pips[name], yerr=2 * pips[f"{name} mcse"],
                    fmt="o", ms=4, color=f"C{3 * (1 - i)}", label=f"{name} (±2 MCSE)")  # fmt: skip
    ax.set_xticks(pos, [f"x{j}" for j in pips.index])
    ax.set(ylabel="posterior inclusion probability", ylim=(0, 1.1))
    ax.legend(fontsize=8)
    ax.set_title("Inclusion probabilities; x0/x1 and x2/x3 correlated 0.97", fontsize=10)
    ax = axes[1]
    for i, (name, gamma) in enumerate(out["traces"].items()):
        running = np.cumsum(gamma, axis=1) / np.arange(1, gamma.shape[1] + 1)
        for chain, line in enumerate(running):
            ax.plot(line, color=f"C{3 * (1 - i)}", lw=1, label=name if chain == 0 else None)
    ax.axhline(pips.exact.iloc[0], color="k", lw=1, ls="--", label="exact")
    ax.set(xlabel="draw", ylabel="running mean of gamma_0, per chain", ylim=(-0.05, 1.05))
    ax.legend(fontsize=8)
    ax.set_title("P(x0 included): each chain's running estimate", fontsize=10)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, for CI")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--seed", type=int, default=1851)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)
    settings = QUICK_SETTINGS if args.quick else SETTINGS
    args.output.mkdir(parents=True, exist_ok=True)
    print(f"ExchangeMC: {settings['chains']} chains x {settings['draws']} draws "
          f"(+{settings['tune']} tuning), {settings['n_rungs']} rungs\n")  # fmt: skip
    coal = change_point_story(settings, args.seed)
    print_change_point(coal)
    plot_change_point(coal, args.output / "09_change_point.png")
    print()
    default_settings = QUICK_DEFAULT_SETTINGS if args.quick else DEFAULT_SETTINGS
    selection = variable_selection_story(settings, default_settings, args.seed + 2)
    print_variable_selection(selection)
    plot_variable_selection(selection, args.output / "09_variable_selection.png")
    print(f"\nFigures saved to {args.output}/09_change_point.png, 09_variable_selection.png")
    coal.pop("idata")
    return {"change_point": coal, "variable_selection": selection}


def check(out, output):
    """The change point and the variable selection against exact enumeration (called after
    ``main`` by tests/test_examples.py and by the gallery page; ``output`` is the
    ``--output`` folder)."""
    for name in ("09_change_point.png", "09_variable_selection.png"):
        assert (Path(output) / name).is_file(), name
    coal = out["change_point"]
    p = coal["probabilities"]
    p = p[p.exact > 0.01]  # the 10 years that carry 97% of the posterior
    assert len(p) >= 5 and np.all(np.abs(p.estimate - p.exact) < 4 * p.mcse), p
    rates = coal["rates"]
    assert np.all(np.abs(rates.estimate - rates.exact) < 4 * rates.mcse), rates
    for model, rows in coal["log_z"].items():  # TI and SS: a warning is an honest answer,
        _check_evidence(model, rows)  # but one of the two must be trusted and within 4 MCSE
    bf = coal["log_bf"]  # compare_evidence (TI): within 4 MCSE unless it warned
    assert bf["warning"] or abs(bf["estimate"] - bf["exact"]) < 4 * bf["mcse"], bf
    selection = out["variable_selection"]
    pips = selection["pips"]
    error = np.abs(pips["ExchangeMC"] - pips["exact"])
    assert np.all(error < 4 * pips["ExchangeMC mcse"]), pips
    _check_evidence("variable selection", selection["log_z"])


def _check_evidence(model, rows):
    trusted = {name: row for name, row in rows.items() if not row["warning"]}
    assert trusted, (model, "every estimator warned", rows)
    for name, row in trusted.items():
        assert row["|error| / mcse"] < 4, (model, name, row)


if __name__ == "__main__":
    main()
