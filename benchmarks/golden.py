"""Golden hashes: fixed-seed runs of every sampler and estimator, one hash per variable.

For changes that must not change behaviour (a refactor, a move): run it before and after, each
with fresh caches as a first run on a machine, and compare the two JSON files; every entry must
be identical unless the change says which and why (decision 100 used it for the new layout).

    C=$(mktemp -d); PYTHONPATH=. PYTENSOR_FLAGS=base_compiledir=$C/pt NUMBA_CACHE_DIR=$C/nb \\
        python benchmarks/golden.py /tmp/after.json

About 3 minutes on 2 cores.
"""

import argparse
import hashlib
import json
import warnings

import numpy as np
import pymc as pm

import pymc_tempering as pmt

SAMPLE = dict(cores=1, progressbar=False, compute_convergence_checks=False)


def digest(value) -> str:
    """A short hash of an array's bytes and dtype (of its repr otherwise)."""
    m = hashlib.sha256()
    if isinstance(value, np.ndarray | np.generic):
        m.update(np.ascontiguousarray(value).tobytes())
        m.update(str(value.dtype).encode())
    else:
        m.update(repr(value).encode())
    return m.hexdigest()[:12]


def hashes(obj):
    """``{group/variable: hash}`` of a DataTree or Dataset, else one hash."""
    if hasattr(obj, "subtree"):
        out = {}
        for node in obj.subtree:
            ds = node.to_dataset()
            out.update({f"{node.path}/{k}": digest(ds[k].values) for k in sorted(ds.data_vars)})
        return out
    if hasattr(obj, "data_vars"):
        return {k: digest(obj[k].values) for k in sorted(obj.data_vars)}
    return digest(obj)


def two_mode():
    with pm.Model() as model:
        x = pm.Normal("x", 0, 20, shape=2)
        modes = [
            np.log(0.3) + pm.logp(pm.MvNormal.dist(-5 * np.ones(2), np.eye(2)), x),
            np.log(0.7) + pm.logp(pm.MvNormal.dist(5 * np.ones(2), np.eye(2)), x),
        ]
        pm.Potential("mix", pm.math.logsumexp(pm.math.stack(modes)))
    return model


def regression():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = X @ np.array([1.0, -0.5]) + rng.normal(size=40)
    with pm.Model() as model:
        b = pm.Normal("b", 0, 2, shape=2)
        s = pm.HalfNormal("s", 1)
        pm.Normal("y", X @ b, s, observed=y)
    return model


def discrete():
    with pm.Model() as model:
        k = pm.Poisson("k", 3.0)
        mu = pm.Normal("mu", 0, 3)
        pm.Normal("y", mu + k, 1, observed=np.array([4.0, 5.0, 3.5]))
    return model


def steps():
    """``name: (model builder, step builder)`` of the step-method runs."""
    emc = pmt.ExchangeMC
    return {
        "exchange_rwm": (two_mode, lambda: emc(n_rungs=8)),
        "exchange_mala": (two_mode, lambda: emc(n_rungs=8, explorer="mala")),
        "exchange_dense": (regression, lambda: emc(n_rungs=8, proposal="dense")),
        "exchange_mala_dense": (
            regression,
            lambda: emc(n_rungs=8, explorer="mala", proposal="dense"),
        ),
        "exchange_indep": (regression, lambda: emc(n_rungs=8, explorer="independent")),
        "exchange_adaptive": (regression, lambda: emc(n_rungs=8, ladder="adaptive")),
        "exchange_variational": (
            regression,
            lambda: emc(n_rungs=8, reference="variational", ladder="adaptive"),
        ),
        "mala": (regression, lambda: pmt.MALA()),
        "ula": (regression, lambda: pmt.ULA(step_size=0.01)),
        "exchange_discrete": (discrete, lambda: emc(n_rungs=8)),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="the JSON file to write")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    out, runs = {}, {}
    for name, (build, step) in steps().items():
        with build():
            runs[name] = pm.sample(step=step(), draws=150, tune=150, chains=2, random_seed=7,
                                   **SAMPLE)  # fmt: skip
        out[name] = hashes(runs[name].posterior)
        out[name + ".stats"] = hashes(runs[name].sample_stats)
    dense = runs["exchange_dense"]
    out["ti"] = hashes(pmt.evidence.thermodynamic_integration(dense))
    out["ss"] = hashes(pmt.evidence.stepping_stone(dense))
    out["bar"] = hashes(pmt.evidence.bar(dense))
    out["mbar"] = hashes(pmt.evidence.mbar(dense))
    out["summary"] = hashes(pmt.tempering_summary(runs["exchange_rwm"]))
    with regression():
        out["bridge"] = hashes(pmt.bridge_sampling(runs["mala"], random_seed=3))
        evidence = pmt.marginal_likelihood(draws=200, chains=2, random_seed=5, **SAMPLE)
        out["marginal_likelihood"] = hashes(evidence)
        out["laplace"] = hashes(pmt.evidence.laplace_evidence())
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 2))
    y = X @ np.array([1.0, -0.5]) + rng.normal(size=2000)
    with pm.Model():
        X_mb, y_mb = pm.Minibatch(X, y, batch_size=50)
        w = pm.Normal("w", 0, 1, shape=2)
        pm.Normal("y", X_mb @ w, 1, observed=y_mb, total_size=len(y))
        sgld = pm.sample(step=pmt.SGLD(), draws=200, tune=100, chains=1, random_seed=11, **SAMPLE)
    out["sgld"], out["sgld.stats"] = hashes(sgld.posterior), hashes(sgld.sample_stats)
    n = 200
    with pm.Model():
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 1)
        pm.Normal("y", a * b, 1, observed=np.random.default_rng(2).normal(size=n))
        step = pmt.ExchangeMC(betas=pmt.ladder.wbic_ladder(n, n_rungs=8))
        ladder_run = pm.sample(step=step, draws=150, tune=150, chains=2, random_seed=9, **SAMPLE)
        out["wbic_run"] = hashes(ladder_run.posterior)
        out["wbic"] = hashes(pmt.singular.wbic(ladder_run, n_obs=n))
        out["lc"] = hashes(pmt.singular.learning_coefficient(ladder_run, n_obs=n))
        llc = pmt.singular.local_learning_coefficient(
            draws=100, tune=100, chains=2, random_seed=4, **SAMPLE
        )
        out["llc"] = hashes(llc)
    with open(args.output, "w") as f:
        json.dump(out, f, indent=1)
    print(f"{sum(len(v) if isinstance(v, dict) else 1 for v in out.values())} hashes written")


if __name__ == "__main__":
    main()
