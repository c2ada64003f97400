"""ReplicaBlock, the block of replicas a Dask worker holds, called in this process: each sweep
is one random-walk Metropolis step per replica at the beta and scale the coordinator sent,
replayed here from the replica's own stream and the closed-form densities; starts replay the
stream; the point sent is the one before the move; snapshots and restores are copies."""

import copy
import functools

import cloudpickle
import numpy as np
import pymc as pm
import pytest
import scipy.stats
import targets

from pymc_tempering.distributed.streams import replica_rng
from pymc_tempering.distributed.worker import MAX_INIT_TRIES, ReplicaBlock

X = targets.lecture_data()
SEED = 20261128
# betas and proposal scales sent to replicas 0..3 (not in rung order, scales 60x apart)
BETAS = np.array([0.5, 0.0, 1.0, 0.1])
LOG_SCALING = np.log([0.3, 3.0, 0.05, 1.0])


def log_prior(mu):
    return scipy.stats.norm.logpdf(mu, 0.0, 1.0)


def log_lik(mu):
    return scipy.stats.norm.logpdf(X, mu, 1.0).sum()


# Payloads are builders pickled by reference that return one model per process: each block
# unpickles the same model, so its density is compiled once per module, not once per block.
@functools.cache
def lecture_model():
    return targets.lecture_model(X)


def bounded_model(observed):
    """mu ~ N(0, 1), y ~ U(mu - 0.5, mu + 0.5): the likelihood is zero on part of the prior."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Uniform("y", mu - 0.5, mu + 0.5, observed=observed)
    return model


@functools.cache
def bounded_near():
    return bounded_model([0.2, 0.4])  # a positive likelihood on mu in [-0.1, 0.7]


@functools.cache
def bounded_far():
    return bounded_model([10.0])  # a positive likelihood on mu in [9.5, 10.5] only


@pytest.fixture(scope="module")
def lecture():
    return cloudpickle.dumps(lecture_model)


def replay_sweep(x, rngs, betas, log_scaling):
    """One sweep as the block must make it: per replica, z then u from its stream, the
    Metropolis ratio of prior * lik ** beta from the closed forms."""
    x = x.copy()
    prob, accepted = np.empty(x.size), np.zeros(x.size, dtype=bool)
    for i, rng in enumerate(rngs):
        proposal = x[i] + np.exp(log_scaling[i]) * rng.standard_normal(1)[0]
        log_u = np.log(rng.random())
        ratio = log_prior(proposal) - log_prior(x[i])
        if betas[i] > 0:
            ratio += betas[i] * (log_lik(proposal) - log_lik(x[i]))
        prob[i] = min(1.0, np.exp(ratio))
        if log_u < ratio:
            x[i], accepted[i] = proposal, True
    return x, prob, accepted


def test_a_sweep_is_one_metropolis_step_per_replica_at_its_beta_and_scale(lecture):
    """40 sweeps against the replay: proposals, accept probabilities, decisions, the
    log-likelihoods returned (of the states after the move) all equal."""
    block = ReplicaBlock(lecture, [0, 1, 2, 3], BETAS, SEED)
    n_accepted = np.zeros(4)
    for _ in range(40):
        _, x, _, _ = block.state()
        expected_x, expected_prob, expected_acc = replay_sweep(
            x[:, 0], copy.deepcopy(block.rngs), BETAS, LOG_SCALING
        )
        loglik, prob, accepted, point, _, snap = block.sweep(BETAS, LOG_SCALING)
        assert point is None and snap is None
        np.testing.assert_array_equal(accepted, expected_acc)
        np.testing.assert_allclose(prob, expected_prob, rtol=1e-9, atol=1e-12)
        _, x, logprior, _ = block.state()
        np.testing.assert_allclose(x[:, 0], expected_x, rtol=1e-12)
        np.testing.assert_allclose(loglik, [log_lik(m) for m in expected_x], rtol=1e-10)
        np.testing.assert_allclose(logprior, log_prior(expected_x), rtol=1e-10)
        n_accepted += accepted
    # the test has power: every replica both accepted and rejected
    assert np.all((n_accepted > 0) & (n_accepted < 40)), n_accepted


def test_streams_follow_the_replica_not_the_block(lecture):
    """Replicas 2 and 3 held alone move exactly as in a block of all four."""
    whole = ReplicaBlock(lecture, [0, 1, 2, 3], BETAS, SEED)
    part = ReplicaBlock(lecture, [2, 3], BETAS, SEED)
    for _ in range(5):
        whole.sweep(BETAS, LOG_SCALING)
        part.sweep(BETAS[2:], LOG_SCALING[2:])
    np.testing.assert_array_equal(part.state()[1], whole.state()[1][2:])


def test_the_point_sent_is_before_the_move_and_the_snapshot_after(lecture):
    block = ReplicaBlock(lecture, [4, 5], np.array([0, 0, 0, 0, 1.0, 0.0]), SEED)
    before = block.state()[1]
    tiny = np.log([1e-4, 1e-4])  # both moves accepted: the states change
    _, _, accepted, point, _, snap = block.sweep(np.array([1.0, 0.0]), tiny, 5, True)
    after = block.state()[1]
    assert accepted.all() and not np.array_equal(before, after)
    np.testing.assert_array_equal(point, before[1])
    np.testing.assert_array_equal(snap["x"], after)
    np.testing.assert_array_equal(block.point(4), after[0])
    # a snapshot is a copy: later sweeps leave it as it was
    kept = copy.deepcopy(snap)
    block.sweep(np.array([1.0, 0.0]), tiny)
    for name in ("x", "logprior", "loglik"):
        np.testing.assert_array_equal(snap[name], kept[name])
    assert [r.bit_generator.state for r in snap["rngs"]] == [
        r.bit_generator.state for r in kept["rngs"]
    ]


def test_blocks_restored_from_one_snapshot_continue_alike(lecture):
    """A restore copies the snapshot's generators: two blocks restored from it move alike,
    and as the block that made it."""
    block = ReplicaBlock(lecture, [0, 1, 2, 3], BETAS, SEED)
    block.sweep(BETAS, LOG_SCALING)
    snap = block.snapshot()
    runs = []
    for source in (block, ReplicaBlock(lecture, [0, 1, 2, 3], BETAS, 0, restore=snap),
                   ReplicaBlock(lecture, [0, 1, 2, 3], BETAS, 0, restore=snap)):  # fmt: skip
        runs.append([source.sweep(BETAS, LOG_SCALING)[0] for _ in range(3)])
    np.testing.assert_array_equal(runs[1], runs[0])
    np.testing.assert_array_equal(runs[2], runs[0])


def test_a_restore_of_another_shape_is_refused(lecture):
    restore = {"x": np.zeros((2, 3)), "logprior": np.zeros(2), "loglik": np.zeros(2),
               "rngs": [replica_rng(0, 0), replica_rng(0, 1)]}  # fmt: skip
    with pytest.raises(ValueError, match="shape.*1 parameters.*model sampled"):
        ReplicaBlock(lecture, [0, 1], BETAS, SEED, restore=restore)


def first_admissible_prior_draw(density, replica, beta):
    """The start the block must take: the first of its stream's prior draws in the support
    of ``prior * lik ** beta`` (at beta = 0 a zero likelihood is admissible)."""
    rng = replica_rng(SEED, replica)
    for k in range(MAX_INIT_TRIES):
        x = density.sample_prior(1, rng)[0]
        logprior, loglik = density.batch(x[None, :])
        if np.isfinite(loglik[0]) or beta == 0:
            return x, k
    raise AssertionError("no admissible draw")


def test_prior_starts_are_the_first_admissible_draws_of_each_stream():
    """Replica 0 at beta = 0 keeps its first draw although the likelihood is zero there; the
    others retry until the likelihood is positive (30% of the prior) and keep that draw,
    never the initial point."""
    betas = np.array([0.0, 0.3, 1.0, 1.0, 1.0])
    block = ReplicaBlock(cloudpickle.dumps(bounded_near), range(5), betas, SEED)
    _, x, _, loglik = block.state()
    tries = []
    for r, beta in enumerate(betas):
        expected, k = first_admissible_prior_draw(block.density, r, beta)
        np.testing.assert_array_equal(x[r], expected)
        tries.append(k)
    assert loglik[0] == -np.inf  # the inputs show the bug: a zero-likelihood first draw ...
    assert max(tries[1:]) > 0  # ... and a replica whose first draw was refused
    assert np.all(np.isfinite(loglik[1:]))


def test_jitter_starts_are_the_initial_point_plus_a_uniform_of_the_stream(lecture):
    betas = np.array([0.0, 0.5, 1.0])
    block = ReplicaBlock(lecture, range(3), betas, SEED, init="jitter")
    expected = [replica_rng(SEED, r).uniform(-1.0, 1.0, 1) for r in range(3)]  # mu0 = 0
    np.testing.assert_array_equal(block.state()[1], np.array(expected))
    assert np.any(np.array(expected) < 0)  # a U(0, 1) jitter would fail here


def test_no_admissible_start_names_the_fix():
    """Data outside every prior draw's support and the initial point's: a clear error."""
    with pytest.raises(ValueError, match=r"beta=1\.0.*initval"):
        ReplicaBlock(cloudpickle.dumps(bounded_far), [0, 1], np.array([0.0, 1.0]), SEED)
