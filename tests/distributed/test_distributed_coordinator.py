"""The coordinator's sweep loop (``run_sweeps``) driving real ReplicaBlocks in this process.

The blocks are called as Dask calls an actor, arguments and answers through pickle, without
the cluster (its own tests: ``test_distributed_run.py``). Checked against exact references:
every rung's mean log-likelihood and the beta = 1 mean against the conjugate power posteriors,
every rung's acceptance against the closed-form rate of a random walk on a Gaussian at the
scale recorded for that rung, the tuning against the Robbins-Monro recursion replayed rung by
rung (blocks whose acceptance is that closed form), the stats against the per-rung records,
and a run stopped by a lost block and continued from its snapshot against the whole run."""

import copy
import functools
import pickle

import cloudpickle
import numpy as np
import pytest
import targets
from helpers import batch_means_mcse

from pymc_tempering.distributed import cluster, coordinator, streams
from pymc_tempering.kernels.rules import round_trip_events
from pymc_tempering.ladder import make_ladder

X = targets.lecture_data()
B = 1.0  # prior sd of mu
BETAS = make_ladder(None, 8)  # 0, 1/64, ..., 1/2, 1
N_RUNGS = BETAS.size
SEED = 4242
TUNE, DRAWS = 500, 3000
TARGET = 0.44  # optimal random-walk acceptance in one dimension (Gelman, Roberts, Gilks 1996)


@functools.cache
def lecture_model():
    """One model per process: every block unpickles this builder (pickled by reference) and
    gets the same model, so its density is compiled once."""
    return targets.lecture_model(X, B)


PAYLOAD = cloudpickle.dumps(lecture_model)


def rung_sd(betas):
    """sd of mu under prior * lik ** beta."""
    return 1.0 / np.sqrt(1.0 / B**2 + np.asarray(betas) * X.size)


def rw_accept(scale, sd):
    """Mean acceptance of random-walk Metropolis with N(0, scale^2) steps on a N(m, sd^2)
    target, at stationarity: (2 / pi) arctan(2 sd / scale)."""
    return 2.0 / np.pi * np.arctan(2.0 * sd / scale)


def log_lik(mu):
    mu = np.asarray(mu, dtype=float)[..., None]
    return (-0.5 * np.log(2 * np.pi) - 0.5 * (X - mu) ** 2).sum(axis=-1)


class Done:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def through_pickle(value):
    return pickle.loads(pickle.dumps(value))


class InProcess:
    """A block called as the coordinator calls its actor; its ``fail_at``-th call (counting
    from 0) raises, as a call to a dead worker does."""

    def __init__(self, block, fail_at=None):
        self.block, self.fail_at, self.calls = block, fail_at, 0

    def sweep(self, *args):
        if self.calls == self.fail_at:
            raise OSError("Timed out trying to connect to the worker")
        self.calls += 1
        return Done(through_pickle(self.block.sweep(*args)))


class InProcessClient:
    """What :func:`cluster.start_blocks` asks of a Dask client, in this process."""

    def submit(self, cls, *args, **kwargs):
        return Done(InProcess(cls(*through_pickle(args))))


def start(n_blocks, seed=SEED, snapshot=None):
    """``(actors, blocks, state)``: ``n_blocks`` blocks of replicas (from ``snapshot`` or the
    seed), as ``run_on_cluster`` starts them on as many workers."""
    replicas = None if snapshot is None else snapshot["replicas"]
    workers = [f"worker-{k}" for k in range(n_blocks)]
    actors, blocks, _ = cluster.start_blocks(
        InProcessClient(), workers, PAYLOAD, BETAS, seed, "prior", None, replicas
    )
    if snapshot is None:
        state = coordinator.SweepState.start(N_RUNGS, 1, streams.swap_rng(seed))
    else:
        state = copy.deepcopy(snapshot["coordinator"])
    return actors, blocks, state


def run(n_blocks, stop, *, tune=TUNE, record_from=None, snapshot=None, fail_at=None, every=100):
    actors, blocks, state = start(n_blocks, snapshot=snapshot)
    if fail_at is not None:
        actors[-1].fail_at = fail_at - state.sweep
    return coordinator.run_sweeps(
        actors, blocks, BETAS, state, tune=tune, stop=stop,
        record_from=tune if record_from is None else record_from, n_params=1,
        checkpoint_every=every,
    )  # fmt: skip


def stat(record, name):
    return np.asarray(record.stats[name])


class ClosedFormBlock:
    """A block whose replicas' acceptance is the exact rate of their scale on their rung's
    Gaussian and whose log-likelihoods are equal (so every proposed swap happens and the
    replicas travel); ``seconds`` its compute time per call."""

    def __init__(self, size, seconds):
        self.size, self.seconds = size, seconds

    def sweep(self, betas, log_scaling, send=-1, snapshot=False):
        rate = rw_accept(np.exp(log_scaling), rung_sd(betas))
        point = np.zeros(1) if send >= 0 else None
        state = None
        if snapshot:
            state = {"x": np.zeros((self.size, 1)), "logprior": np.zeros(self.size),
                     "loglik": np.zeros(self.size), "rngs": [None] * self.size}  # fmt: skip
        return np.zeros(self.size), rate, rate > 0.5, point, self.seconds, state


def test_tuning_is_robbins_monro_on_each_rungs_own_acceptance():
    """With exact acceptance rates the tuning is deterministic: the recorded scales equal the
    recursion log s_k += (t + 1) ** -0.6 * (a_k(s_k) - 0.44), t = 0 .. tune - 1, run for each
    rung alone from 2.38 (one parameter), although the replicas change rungs every sweep."""
    tune, stop = 60, 70
    blocks = [np.arange(0, 3), np.arange(3, 8)]
    seconds = (0.004, 0.001)
    actors = [InProcess(ClosedFormBlock(b.size, s)) for b, s in zip(blocks, seconds, strict=True)]
    state = coordinator.SweepState.start(N_RUNGS, 1, streams.swap_rng(SEED))
    record = coordinator.run_sweeps(actors, blocks, BETAS, state, tune=tune, stop=stop,
                                    record_from=tune, n_params=1)  # fmt: skip
    log_s = np.full(N_RUNGS, np.log(2.38))
    for t in range(tune):
        log_s = log_s + (t + 1) ** -0.6 * (rw_accept(np.exp(log_s), rung_sd(BETAS)) - TARGET)
    scaling = stat(record, "rung_scaling")
    np.testing.assert_allclose(scaling, np.broadcast_to(np.exp(log_s), scaling.shape), rtol=1e-12)
    assert np.ptp(stat(record, "rung_replica")[:, 0]) > 0  # replicas did travel
    # the slowest block's compute, summed over sweeps
    assert record.timing.compute == pytest.approx(stop * 0.004, rel=1e-12)
    assert record.timing.sweeps == stop


def test_a_lost_block_keeps_whole_draws_and_its_snapshot_continues_the_run():
    """A block's call fails at sweep 66 (after the snapshot of sweep 50) or 75 (the snapshot
    sweep 74's draw came with no point: it is taken from the snapshot). The draws kept are the
    whole run's first ones; continuing from the snapshot on other blocks gives the rest, stats
    and points, bit for bit (the whole run on 1 block, the failed one on 2, the continuation
    on 3: the snapshot's rows are in replica order whatever the blocks)."""
    tune, stop, every = 30, 100, 25
    whole = run(1, stop, tune=tune, every=every)
    for fail_at, snapshot_sweep, kept in ((66, 50, 35), (75, 75, 45), (12, None, 0)):
        with pytest.raises(coordinator.WorkerLost, match=f"sweep {fail_at}") as info:
            run(2, stop, tune=tune, every=every, fail_at=fail_at)
        record = info.value.record
        coordinator.complete_last_draw(record, tune)
        assert record.n_draws == kept
        assert all(len(values) == kept for values in record.stats.values())
        for name, values in record.stats.items():
            np.testing.assert_array_equal(values, whole.stats[name][:kept], name)
        np.testing.assert_array_equal(record.points, whole.points[:kept])
        if snapshot_sweep is None:
            assert record.snapshot is None
            continue
        assert record.snapshot["coordinator"].sweep == snapshot_sweep
        rest = run(3, stop, tune=tune, record_from=tune + kept, snapshot=record.snapshot,
                   every=every)  # fmt: skip
        for name, values in rest.stats.items():
            np.testing.assert_array_equal(values, whole.stats[name][kept:], name)
        np.testing.assert_array_equal(rest.points, whole.points[kept:])
        final = rest.snapshot
        assert final["coordinator"].sweep == stop
        np.testing.assert_array_equal(final["replicas"]["x"], whole.snapshot["replicas"]["x"])
        np.testing.assert_array_equal(final["coordinator"].log_scaling,
                                      whole.snapshot["coordinator"].log_scaling)  # fmt: skip


@pytest.fixture(scope="module")
def law():
    """TUNE tuning sweeps and DRAWS draws on three blocks (3, 3 and 2 replicas)."""
    return run(3, TUNE + DRAWS)


def test_each_rung_samples_its_power_posterior(law):
    """Every rung's mean log-likelihood and the recorded points' mean within 4 MCSE of the
    conjugate closed forms."""
    loglik = stat(law, "rung_loglik")
    mean, _ = targets.lecture_power_moments(X, B, BETAS)
    z = (loglik.mean(axis=0) - mean) / [batch_means_mcse(loglik[:, k]) for k in range(N_RUNGS)]
    assert np.all(np.abs(z) < 4), z
    mu = np.concatenate(law.points)
    exact_mu = BETAS[-1] * X.sum() * rung_sd(1.0) ** 2
    assert abs((mu.mean() - exact_mu) / batch_means_mcse(mu)) < 4


def test_the_recorded_point_is_the_replica_on_the_top_rung(law):
    """Draw t's point has the log-likelihood recorded for rung beta = 1 at draw t."""
    assert law.n_draws == DRAWS
    np.testing.assert_allclose(log_lik(np.concatenate(law.points)),
                               stat(law, "rung_loglik")[:, -1], rtol=1e-10)  # fmt: skip


def test_each_rung_accepts_at_the_rate_of_its_own_scale(law):
    """After tuning each rung keeps its scale; its mean acceptance is the closed-form rate of
    that scale on that rung's Gaussian, within 4 MCSE: the scale recorded for a rung is the
    one its replicas moved with."""
    scaling, accept = stat(law, "rung_scaling"), stat(law, "rung_accept")
    np.testing.assert_array_equal(scaling, np.broadcast_to(scaling[0], scaling.shape))
    exact = rw_accept(scaling[0], rung_sd(BETAS))
    mcse = np.array([batch_means_mcse(accept[:, k]) for k in range(N_RUNGS)])
    z = (accept.mean(axis=0) - exact) / mcse
    assert np.all(np.abs(z) < 4), z
    assert scaling[0, 0] / scaling[0, -1] > 3  # rungs of sd 1 and 0.22: not one shared scale


def test_each_rung_is_tuned_towards_the_target(law):
    """Each rung's exact acceptance at its tuned scale is within 4 sd of the target, the sd of
    Robbins-Monro with gains (t + 1) ** -0.6 after TUNE steps: gain * Sigma * |a'| / 2
    (Sigma: the long-run variance of the acceptance, from the draws; a': d rate / d log scale
    at the root)."""
    scaling, accept = stat(law, "rung_scaling")[0], stat(law, "rung_accept")
    sd = rung_sd(BETAS)
    rate = rw_accept(scaling, sd)
    ratio = 2.0 * sd / scaling
    slope = 2.0 / np.pi * ratio / (1.0 + ratio**2)
    sigma = np.array([DRAWS * batch_means_mcse(accept[:, k]) ** 2 for k in range(N_RUNGS)])
    tolerance = 4 * np.sqrt(TUNE**-coordinator.GAIN_EXPONENT * sigma * slope / 2)
    assert np.all(np.abs(rate - TARGET) < tolerance), (rate, tolerance)


def test_stats_agree_with_the_rung_records(law):
    """ExchangeMC's summary stats are the beta = 1 rung's records; the swap rate and round
    trips restart after tuning and count the recorded draws' swaps and replica paths."""
    assert not stat(law, "tune").any()
    np.testing.assert_array_equal(stat(law, "accept"), stat(law, "rung_accept")[:, -1])
    np.testing.assert_array_equal(stat(law, "scaling"), stat(law, "rung_scaling")[:, -1])
    np.testing.assert_array_equal(stat(law, "betas"), np.broadcast_to(BETAS, (DRAWS, N_RUNGS)))
    swap = stat(law, "swap_accept")
    proposed = np.isfinite(swap)
    assert np.all(proposed.sum(axis=1) == np.where(np.arange(DRAWS) % 2 == TUNE % 2, 4, 3))
    expected = np.cumsum(np.nansum(swap, axis=1)) / np.cumsum(proposed.sum(axis=1))
    np.testing.assert_allclose(stat(law, "swap_rate"), expected, rtol=1e-12)
    replicas = stat(law, "rung_replica")
    assert np.all(np.sort(replicas, axis=1) == np.arange(N_RUNGS))  # a permutation each draw
    trips = round_trip_events(replicas[None].astype(np.int64))[0].any(axis=1)
    np.testing.assert_array_equal(stat(law, "round_trips"), np.cumsum(trips))
    assert stat(law, "round_trips")[-1] > 10
