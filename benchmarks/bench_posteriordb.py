"""``ExchangeMC()`` with its defaults against NUTS on posteriordb posteriors (issue 42), side by
side in one run, as a user runs them: ``pm.sample(draws=2000, tune=1000, chains=2)`` with
``step=pmt.ExchangeMC()`` and without (NUTS), the same seed, time from the call to the DataTree
(compiling and tuning included).

Run: python benchmarks/bench_posteriordb.py --posteriordb PATH [--seeds 1 2 3] [--models ...]
     [--draws N] [--tune N] [--cores N]

PATH is a clone of https://github.com/stan-dev/posteriordb (its ``posterior_database/data/
data/*.json.zip`` files are read; nothing of it is in this repository). The models, written
in PyMC from the posteriordb Stan programs with their priors:

- ``arK-arK``: Stan's AR(5) on 200 observations, ``alpha, beta ~ N(0, 10)``,
  ``sigma ~ HalfCauchy(2.5)``;
- ``eight_schools-eight_schools_noncentered``: ``mu ~ N(0, 5)``, ``tau ~ HalfCauchy(5)``,
  ``theta = mu + tau theta_tilde``, ``theta_tilde ~ N(0, 1)``;
- ``kidiq-kidscore_momiq`` (``beta`` flat, ``sigma ~ HalfCauchy(2.5)``) and
  ``mesquite-logmesquite_logvolume`` (``beta`` and ``sigma`` flat): Stan's implicit flat
  priors (``pm.Flat``, ``pm.HalfFlat``), which ExchangeMC tempers from the variational
  reference alone (a ``beta = 0`` rung cannot sample an improper prior).

Printed per model and seed: each sampler's seconds, min bulk ESS over the scalar parameters,
ESS per second, max R-hat, and for ExchangeMC the local move each chain ended with
(``tempering_summary(...).attrs["explorer"]``: chains that disagree make R-hat compare
different kernels); then the ratio of ESS per second against NUTS. The load average before
and after says whether the machine was busy. Each sampler's posterior means are checked
against posteriordb's reference draws (``reference_posteriors/draws``, 10 x 1,000 draws thinned
to near independence): ``max z`` is the largest ``|mean - reference mean|`` over the scalar
parameters, in units of ``sqrt(MCSE^2 + reference sd^2 / 10,000)``; below 4 is agreement.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
import zipfile  # noqa: E402
from pathlib import Path  # noqa: E402

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import load_report  # noqa: E402

import pymc_tempering as pmt  # noqa: E402


def posteriordb_data(root: Path, name: str) -> dict:
    """The data set ``name`` of the posteriordb clone at ``root``."""
    path = root / "posterior_database" / "data" / "data" / f"{name}.json.zip"
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read(f"{name}.json"))


def reference_draws(root: Path, name: str) -> dict | None:
    """posteriordb's reference draws of posterior ``name`` (``{"beta[1]": array, ...}``, chains
    pooled), or None where the clone does not have them."""
    path = root / "posterior_database" / "reference_posteriors" / "draws" / "draws"
    path = path / f"{name}.json.zip"
    if not path.exists():
        return None
    with zipfile.ZipFile(path) as archive:
        chains = json.loads(archive.read(archive.namelist()[0]))
    return {key: np.concatenate([c[key] for c in chains]) for key in chains[0]}


def max_z(idata, reference: dict | None) -> float:
    """The largest ``|mean - reference mean| / sqrt(MCSE^2 + sd_ref^2 / n_ref)`` over the
    reference's scalar parameters (``"beta[2]"`` is ``beta``'s second entry); NaN without
    reference draws."""
    if reference is None:
        return float("nan")
    posterior = idata["posterior"]
    mcse = az.mcse(posterior)
    worst = 0.0
    for key, draws in reference.items():
        name, _, index = key.partition("[")
        if name not in posterior:
            continue
        where = {} if not index else {posterior[name].dims[-1]: int(index[:-1]) - 1}
        mean = float(posterior[name].isel(where).mean())
        error = float(mcse[name].isel(where))
        z = abs(mean - draws.mean()) / np.hypot(error, draws.std() / np.sqrt(draws.size))
        worst = max(worst, z)
    return worst


def ark(data):
    y, k = np.asarray(data["y"], dtype=float), int(data["K"])
    lags = np.column_stack([y[k - j - 1 : len(y) - j - 1] for j in range(k)])
    with pm.Model() as model:
        alpha = pm.Normal("alpha", 0.0, 10.0)
        beta = pm.Normal("beta", 0.0, 10.0, shape=k)
        sigma = pm.HalfCauchy("sigma", 2.5)
        pm.Normal("y", alpha + pm.math.dot(lags, beta), sigma, observed=y[k:])
    return model


def eight_schools_noncentered(data):
    y, sigma = np.asarray(data["y"], dtype=float), np.asarray(data["sigma"], dtype=float)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta_tilde = pm.Normal("theta_tilde", 0.0, 1.0, shape=len(y))
        pm.Normal("y", mu + tau * theta_tilde, sigma, observed=y)
    return model


def kidscore_momiq(data):
    x, y = np.asarray(data["mom_iq"], dtype=float), np.asarray(data["kid_score"], dtype=float)
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=2)
        sigma = pm.HalfCauchy("sigma", 2.5)
        pm.Normal("y", beta[0] + beta[1] * x, sigma, observed=y)
    return model


def logmesquite_logvolume(data):
    weight = np.log(np.asarray(data["weight"], dtype=float))
    volume = np.log(
        np.asarray(data["diam1"], dtype=float)
        * np.asarray(data["diam2"], dtype=float)
        * np.asarray(data["canopy_height"], dtype=float)
    )
    with pm.Model() as model:
        beta = pm.Flat("beta", shape=2)
        sigma = pm.HalfFlat("sigma")
        pm.Normal("y", beta[0] + beta[1] * volume, sigma, observed=weight)
    return model


MODELS = {
    "arK-arK": ("arK", ark),
    "eight_schools-eight_schools_noncentered": ("eight_schools", eight_schools_noncentered),
    "kidiq-kidscore_momiq": ("kidiq", kidscore_momiq),
    "mesquite-logmesquite_logvolume": ("mesquite", logmesquite_logvolume),
}


def run(build, data, seed, args, exchange, reference=None):
    """``(seconds, min bulk ESS, max R-hat, max z, explorer per chain or "")``, or the
    error."""
    model = build(data)
    started = time.perf_counter()
    try:
        with model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            step = pmt.ExchangeMC() if exchange else None
            idata = pm.sample(
                draws=args.draws, tune=args.tune, chains=2, cores=args.cores, step=step,
                random_seed=seed, progressbar=False,
            )  # fmt: skip
    except Exception as err:  # noqa: BLE001 a refused model is a row, with its message
        return f"{type(err).__name__}: {str(err).splitlines()[0][:110]}"
    seconds = time.perf_counter() - started
    ess, rhat = az.ess(idata["posterior"], method="bulk"), az.rhat(idata["posterior"])
    ess = min(float(ess[v].min()) for v in ess.data_vars)
    rhat = max(float(rhat[v].max()) for v in rhat.data_vars)
    explorer = pmt.tempering_summary(idata).attrs["explorer"] if exchange else ""
    return seconds, ess, rhat, max_z(idata, reference), explorer


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posteriordb", type=Path, required=True, help="a posteriordb clone")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--cores", type=int, default=None, help="pm.sample's cores (default)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    print(f"{'model':42} {'seed':>4} {'sampler':10} {'s':>7} {'min ESS':>8} {'ESS/s':>7} "
          f"{'R-hat':>6} {'max z':>6} {'x NUTS':>7}  explorer per chain")  # fmt: skip
    for name in args.models:
        data_name, build = MODELS[name]
        data = posteriordb_data(args.posteriordb, data_name)
        reference = reference_draws(args.posteriordb, name)
        for seed in args.seeds:
            rates = {}
            for label, exchange in (("NUTS", False), ("ExchangeMC", True)):
                out = run(build, data, seed, args, exchange, reference)
                if isinstance(out, str):
                    print(f"{name:42} {seed:4d} {label:10} {out}")
                    continue
                seconds, ess, rhat, z, explorer = out
                rates[label] = ess / seconds
                ratio = rates[label] / rates["NUTS"] if "NUTS" in rates else float("nan")
                print(f"{name:42} {seed:4d} {label:10} {seconds:7.1f} {ess:8.0f} "
                      f"{rates[label]:7.1f} {rhat:6.3f} {z:6.2f} {ratio:7.3f}  "
                      f"{explorer}")  # fmt: skip
    load_after = os.getloadavg()
    print(load_report(load_before, load_after))


if __name__ == "__main__":
    main()
