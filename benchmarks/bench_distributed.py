"""Distributed tempering on Dask (issue 34): wall time per sweep with 1 and 2 workers (the
speed-up), the coordinator's overhead, the density cost at which distribution starts to pay,
the round latency of actors vs tasks, and a cheap model against the local batched ExchangeMC.

Run: python benchmarks/bench_distributed.py [--rows N] [--sweeps S] [--rungs L]

(a) Expensive: y_i ~ StudentT(4, mu, sigma) over ``--rows`` rows (default 10^6: ~5-20 ms per density
evaluation), 32 rungs, ``sample_tempered`` with 1 and 2 workers of one LocalCluster
(processes, one thread each); the sweep time is the mean round (send betas, move every
replica, gather log-likelihoods), from ``sample_stats.attrs``; the overhead per sweep is the
round minus the slowest worker's compute plus the coordinator's own time, and with ``W``
workers distribution pays when the density cost ``c`` exceeds ``overhead / (L (1 - 1/W))``
(the compute it saves, ``L c (1 - 1/W)``, equals the overhead). (b) Latency: one empty actor
method call vs one ``client.submit(...).result()`` of an empty function on a pinned worker,
median of 200. (c) Cheap: the 20-observation lecture model (a density of ~0.05 ms), 32 rungs,
``sample_tempered`` with 1 worker vs ``pm.sample(step=ExchangeMC(n_rungs=32))`` locally, wall
time per sweep. Record: docs/decisions/120-distributed-rungs-on-dask-actors.md.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import distributed  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pymc_tempering.distributed import DistributedCostWarning, sample_tempered  # noqa: E402
from pymc_tempering.distributed.worker import ReplicaBlock  # noqa: E402
from pymc_tempering.step_methods._compile import compile_tempered_density  # noqa: E402
from pymc_tempering.step_methods.exchange import ExchangeMC  # noqa: E402


def rows_model(n_rows, seed=0):
    y = np.random.default_rng(seed).normal(0.3, 1.2, size=n_rows)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.StudentT("y", nu=4.0, mu=mu, sigma=sigma, observed=y)
    return model


def cheap_model():
    y = np.random.default_rng(20).normal(0.5, 1.0, size=20)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("x", mu, 1.0, observed=y)
    return model


def density_ms(model, repeats=20):
    """Median ms of one single-row density call (what a worker does per replica)."""
    density = compile_tempered_density(model, model.value_vars, model.initial_point())
    x = np.zeros((1, density.n_params))
    density.batch(x)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        density.batch(x)
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def distributed_sweep(model, client, n_workers, sweeps, rungs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DistributedCostWarning)
        idata = sample_tempered(
            model, client=client, draws=sweeps // 2, tune=sweeps - sweeps // 2, n_rungs=rungs,
            random_seed=1, n_workers=n_workers, progressbar=False,
        )  # fmt: skip
    attrs = dict(idata.sample_stats.attrs)
    attrs["warned"] = any(issubclass(w.category, DistributedCostWarning) for w in caught)
    return attrs


def _noop():
    return None


def latency(client, repeats=200):
    address = sorted(client.scheduler_info(n_workers=-1)["workers"])[0]
    actor = client.submit(Pinger, actor=True, workers=[address]).result()
    actor_ms, task_ms = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        actor.ping().result()
        actor_ms.append(time.perf_counter() - t)
        t = time.perf_counter()
        client.submit(_noop, workers=[address], pure=False).result()
        task_ms.append(time.perf_counter() - t)
    return 1e3 * np.median(actor_ms), 1e3 * np.median(task_ms)


class Pinger:
    def ping(self):
        return None


def local_sweep_ms(model, sweeps, rungs):
    with model:
        step = ExchangeMC(n_rungs=rungs)
        t = time.perf_counter()
        pm.sample(draws=sweeps, tune=sweeps, chains=1, step=step, progressbar=False,
                  compute_convergence_checks=False, random_seed=1)  # fmt: skip
        return 1e3 * (time.perf_counter() - t) / (2 * sweeps)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--sweeps", type=int, default=40)
    parser.add_argument("--rungs", type=int, default=32)
    args = parser.parse_args()
    assert ReplicaBlock  # the actor class the runs use
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    with cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        model = rows_model(args.rows)
        print(f"(a) {args.rows} rows: one density evaluation {density_ms(model):.2f} ms")
        sweep_ms = {}
        for n in (1, 2):
            a = distributed_sweep(model, client, n, args.sweeps, args.rungs)
            sweep_ms[n] = a["round_ms"] + a["coordinator_ms"]
            overhead = a["round_ms"] - a["worker_compute_ms"] + a["coordinator_ms"]
            print(
                f"    {n} worker(s), {args.rungs} rungs: {sweep_ms[n]:.1f} ms per sweep "
                f"(slowest worker's compute {a['worker_compute_ms']:.1f} ms, coordinator "
                f"{a['coordinator_ms']:.2f} ms, overhead {overhead:.2f} ms); cost warning: "
                f"{a['warned']}"
            )
        print(f"    speed-up 2 vs 1 worker: {sweep_ms[1] / sweep_ms[2]:.2f}x (target >= 1.7x)")
        print(
            f"    break-even density cost with 2 workers: {overhead / (args.rungs / 2):.3f} ms "
            f"(overhead {overhead:.2f} ms / (L (1 - 1/W)) = / {args.rungs / 2:g})"
        )
        actor_ms, task_ms = latency(client)
        print(f"(b) round latency: actor call {actor_ms:.2f} ms, submit+result {task_ms:.2f} ms")
        cheap = cheap_model()
        a = distributed_sweep(cheap, client, 1, 200, args.rungs)
        local = local_sweep_ms(cheap, 200, args.rungs)
        print(
            f"(c) cheap model ({density_ms(cheap):.3f} ms): distributed {a['round_ms']:.2f} ms "
            f"per sweep (1 worker) vs local batched {local:.3f} ms: "
            f"{a['round_ms'] / local:.0f}x slower; cost warning: {a['warned']}"
        )


if __name__ == "__main__":
    main()
