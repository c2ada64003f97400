"""What OpenBLAS threads cost ExchangeMC's sweeps (issue 41, item 2): a logistic regression
(N = 2000 rows, 5 coefficients, N(0, 2.5^2) priors) sampled by ``pm.sample(step=
pmt.ExchangeMC(reference="variational"))`` (two legs) and ``pm.sample(step=pmt.ExchangeMC())``
(the prior leg only), with ``OPENBLAS_NUM_THREADS`` unset (OpenBLAS's default: one thread per
core) and ``=1``, for one or more checkouts (``--trees``: e.g. this one and ``/work/main``, to
compare before and after a change).

Run: python benchmarks/bench_blas_threads.py [--trees . /work/main] [--draws 1000]
         [--timeout 900] [--profile]

Each run is a fresh process (the environment variable is read when OpenBLAS loads) with the
tree first on ``PYTHONPATH``: ``pm.sample``'s defaults for tuning and draws, 2 chains one after
the other (``cores=1``), ``random_seed=1``. CPU s is that process's CPU time (all its threads:
BLAS threads that spin count) from the model's construction to the end of ``pm.sample``,
compilation included; wall s beside it. A run over ``--timeout`` wall seconds is stopped and
reported as such. Printed per tree: the four runs, the two-leg / prior-leg CPU ratio per
thread setting (target about 3x or less) and the unset / one-thread ratio per arm (target
1.2x or less on a loaded machine), and whether each arm's draws are identical across the
thread settings and trees (a hash of the posterior draws). ``--profile``: the variational
run's ``pm.sample`` under cProfile (CPU clock) in this tree, its top functions by own CPU time.
The load average is printed before and after: on a shared machine the numbers move with it.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ARMS = ("prior", "variational")
SETTINGS = ("unset", "1")


def _model():
    sys.path.insert(0, HERE)
    import problems

    return problems.logistic_regression(2000, 5, 2.5, seed=0)


def _sample(arm, draws):
    import pymc as pm

    import pymc_tempering as pmt

    with _model():
        step = pmt.ExchangeMC(reference="variational") if arm == "variational" else pmt.ExchangeMC()
        return pm.sample(
            tune=draws,
            draws=draws,
            chains=2,
            cores=1,
            step=step,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )


def worker(arm, draws):
    """One timed run in this process; prints a JSON line."""
    import hashlib
    import logging
    import warnings

    import numpy as np

    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    cpu, wall = time.process_time(), time.perf_counter()
    idata = _sample(arm, draws)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    coef = np.ascontiguousarray(idata.posterior["coef"].values)
    import pymc_tempering

    print(
        json.dumps(
            {
                "arm": arm,
                "cpu": cpu,
                "wall": wall,
                "hash": hashlib.sha256(coef.tobytes()).hexdigest()[:16],
                "tree": os.path.dirname(os.path.dirname(pymc_tempering.__file__)),
            }
        )
    )


def profile(draws, top=25):
    """The variational arm's ``pm.sample`` under cProfile (this process's BLAS settings)."""
    import cProfile
    import logging
    import pstats
    import warnings

    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    prof = cProfile.Profile(time.process_time)  # CPU: the wall clock moves with the load
    prof.enable()
    _sample("variational", draws)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def run(tree, setting, arm, draws, timeout):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    env.pop("OPENBLAS_NUM_THREADS", None)
    env.pop("OMP_NUM_THREADS", None)
    if setting != "unset":
        env["OPENBLAS_NUM_THREADS"] = setting
    cmd = [sys.executable, __file__, "--worker", arm, "--draws", str(draws)]
    start = time.perf_counter()
    try:
        out = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=timeout, check=True
        )
    except subprocess.TimeoutExpired:
        return {"arm": arm, "cpu": float("nan"), "wall": time.perf_counter() - start, "hash": None}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", nargs="+", default=[os.path.dirname(HERE)])
    parser.add_argument("--draws", type=int, default=1000, help="tuning and draws per chain")
    parser.add_argument("--timeout", type=float, default=900.0, help="wall s per run")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--worker", choices=ARMS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.draws)
    if args.profile:
        return profile(args.draws)
    print(f"load average before: {os.getloadavg()}, cores: {os.cpu_count()}")
    hashes = {arm: set() for arm in ARMS}
    for tree in args.trees:
        res = {}
        for setting in SETTINGS:
            for arm in ARMS:
                r = run(tree, setting, arm, args.draws, args.timeout)
                res[setting, arm] = r
                timed_out = r["hash"] is None
                if not timed_out:
                    hashes[arm].add(r["hash"])
                cpu = f"> {args.timeout:.0f} s wall" if timed_out else f"{r['cpu']:7.1f}"
                print(
                    f"{tree}  OPENBLAS_NUM_THREADS={setting:5s} {arm:11s} CPU s {cpu}  "
                    f"wall s {r['wall']:7.1f}  draws {r['hash']}  load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        for setting in SETTINGS:
            ratio = res[setting, "variational"]["cpu"] / res[setting, "prior"]["cpu"]
            print(f"  two legs / prior leg, OPENBLAS_NUM_THREADS={setting}: {ratio:.2f}x (<= ~3)")
        for arm in ARMS:
            ratio = res["unset", arm]["cpu"] / res["1", arm]["cpu"]
            print(f"  {arm}: unset / one thread: {ratio:.2f}x (<= 1.2)")
    for arm in ARMS:
        print(f"{arm}: draws identical in every finished run: {len(hashes[arm]) <= 1}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
