"""The evidence readers on a two-leg run (``ExchangeMC(reference="variational")``): they read
the fixed leg unless told (``leg=``), say which in ``attrs["leg"]``, and warn where they were
given both legs and no choice, naming the variational leg and the combination.

Most tests read a synthetic two-leg DataTree of exact draws (a conjugate Gaussian model: every
rung of both legs is a Gaussian, drawn exactly), so the leg read is told apart by value and
the estimates are checked against the closed-form log Z; one slow test reads the shared
sampled two-leg run (:mod:`two_legs`)."""

import functools
import warnings

import numpy as np
import pytest
import xarray as xr

import pymc_tempering as pmt
from pymc_tempering.evidence.checks import EvidenceWarning
from pymc_tempering.ladder import evidence_ladder

N_OBS, N_CHAINS, N_DRAWS = 30, 4, 500
X = np.random.default_rng(20).normal(0.7, 1.0, size=N_OBS)
# q of the variational leg: near the posterior, 1.15 times wider and off-centre, so its leg's
# rung_loglik varies a little (an exact q would give a constant)
Q_SHIFT, Q_WIDTH = 0.02, 1.15
READERS = {
    "thermodynamic_integration": pmt.evidence.thermodynamic_integration,
    "stepping_stone": pmt.evidence.stepping_stone,
    "bar": pmt.evidence.bar,
}


def _loglik(mu):
    return -0.5 * N_OBS * np.log(2 * np.pi) - 0.5 * ((X[:, None] - mu[None]) ** 2).sum(0)


def _log_prior(mu):  # N(0, 1)
    return -0.5 * np.log(2 * np.pi) - 0.5 * mu**2


def _posterior():
    precision = 1.0 + N_OBS
    return X.sum() / precision, precision**-0.5


def exact_log_z() -> float:
    """log of the integral of N(mu | 0, 1) prod N(x_i | mu, 1) over mu."""
    mean, sd = _posterior()
    mu = np.array([mean])
    return float(_log_prior(mu)[0] + _loglik(mu)[0] - (-0.5 * np.log(2 * np.pi) - np.log(sd)))


def _draws(betas, rng, variational):
    """``(chain, draw, rung)`` rung log-likelihoods of exact draws from each rung's target."""
    post_mean, post_sd = _posterior()
    q_mean, q_sd = post_mean + Q_SHIFT, post_sd * Q_WIDTH
    out = np.empty((N_CHAINS, N_DRAWS, betas.size))
    for rung, beta in enumerate(betas):
        if variational:  # q^(1 - beta) (prior * lik)^beta, a product of Gaussians
            precision = (1 - beta) / q_sd**2 + beta / post_sd**2
            mean = ((1 - beta) * q_mean / q_sd**2 + beta * post_mean / post_sd**2) / precision
        else:  # prior * lik^beta
            precision = 1.0 + beta * N_OBS
            mean = beta * X.sum() / precision
        mu = rng.normal(mean, precision**-0.5, size=N_CHAINS * N_DRAWS)
        value = _loglik(mu)
        if variational:
            log_q = -0.5 * np.log(2 * np.pi) - np.log(q_sd) - 0.5 * ((mu - q_mean) / q_sd) ** 2
            value = _log_prior(mu) + value - log_q
        out[..., rung] = value.reshape(N_CHAINS, N_DRAWS)
    return out


@functools.cache
def two_leg_tree(seed: int = 4) -> xr.DataTree:
    """A DataTree laid out as pm.sample(step=ExchangeMC(reference="variational")) lays out
    its sample stats: the fixed leg on 16 rungs, the variational leg on 5."""
    rng = np.random.default_rng(seed)
    stats = {}
    for prefix, betas in (("", evidence_ladder(16, 1e-4)), ("variational_", evidence_ladder(5))):
        loglik = _draws(betas, rng, variational=bool(prefix))
        shape = (N_CHAINS, N_DRAWS, betas.size)
        ladder_dim, rung_dim = f"{prefix}betas_dim_0", f"{prefix}rung_loglik_dim_0"
        stats[f"{prefix}betas"] = (("chain", "draw", ladder_dim), np.broadcast_to(betas, shape))
        stats[f"{prefix}rung_loglik"] = (("chain", "draw", rung_dim), loglik)
        pair_dim = f"{prefix}swap_accept_dim_0"
        stats[f"{prefix}swap_accept"] = (("chain", "draw", pair_dim), np.full(shape, 0.5)[..., 1:])
    coords = {"chain": np.arange(N_CHAINS), "draw": np.arange(N_DRAWS)}
    observed = xr.Dataset({"y": ("y_dim_0", X)})
    return xr.DataTree.from_dict(
        {"sample_stats": xr.Dataset(stats, coords=coords), "observed_data": observed}
    )


def _read(reader, data, **kwargs):
    """``reader(data, **kwargs)`` and the UserWarnings it raised (EvidenceWarnings apart)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = reader(data, **kwargs)
    notes = [w for w in caught if w.category is UserWarning]
    return result, notes


@pytest.mark.parametrize("name", sorted(READERS))
def test_default_reads_the_fixed_leg_says_so_and_warns(name):
    """Given the whole two-leg run and no leg: the fixed leg's estimate, attrs['leg'] =
    'prior', and one UserWarning at the caller's line naming the variational leg, the
    combination and the runner."""
    tree = two_leg_tree()
    result, notes = _read(READERS[name], tree)
    fixed, quiet = _read(READERS[name], tree, leg="prior")
    assert float(result.log_marginal_likelihood) == float(fixed.log_marginal_likelihood)
    assert result.attrs["leg"] == fixed.attrs["leg"] == "prior"
    assert not quiet, [str(w.message) for w in quiet]
    assert len(notes) == 1, [str(w.message) for w in notes]
    text = str(notes[0].message)
    assert f"pmt.evidence.{name} read the fixed leg" in text
    for fix in (
        f"pmt.evidence.{name}(idata, leg='variational')",
        "pmt.tempering_dataset(idata, leg='variational')",
        "pmt.evidence.combine_legs(",
        "pmt.marginal_likelihood(model, reference='variational')",
        "leg='prior'",
    ):
        assert fix in text, fix
    assert notes[0].filename == __file__  # at the caller's line, not inside the package


@pytest.mark.parametrize("name", sorted(READERS))
def test_leg_variational_reads_the_variational_leg(name):
    """leg='variational' reads the same numbers as the leg's tempering Dataset, keeps the
    run's observed-data fingerprint, and says which leg it read."""
    tree = two_leg_tree()
    result, notes = _read(READERS[name], tree, leg="variational")
    alone, _ = _read(READERS[name], pmt.tempering_dataset(tree, leg="variational"))
    assert not notes
    assert result.attrs["leg"] == alone.attrs["leg"] == "variational"
    assert float(result.log_marginal_likelihood) == float(alone.log_marginal_likelihood)
    assert result.attrs["observed_data"] is not None  # from the run, which the leg lacks
    assert alone.attrs["observed_data"] is None
    fixed, _ = _read(READERS[name], tree, leg="prior")
    assert float(result.log_marginal_likelihood) != float(fixed.log_marginal_likelihood)


def test_both_legs_estimate_the_exact_log_z_the_variational_one_closer():
    """Each leg's TI within 4 MCSE (plus its discretisation error) of the closed-form log Z,
    and the variational leg's MCSE the smaller: the reason the warning points to it."""
    tree, truth = two_leg_tree(), exact_log_z()
    errors = {}
    for leg in ("prior", "variational"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvidenceWarning)
            res = pmt.evidence.thermodynamic_integration(tree, leg=leg)
        bound = 4 * float(res.mcse) + abs(float(res.discretisation_error))
        assert abs(float(res.log_marginal_likelihood) - truth) < bound, (leg, res)
        errors[leg] = float(res.mcse)
    assert errors["variational"] < errors["prior"] / 3, errors


def test_a_leg_dataset_or_a_one_leg_run_is_read_without_the_warning():
    """A leg's own Dataset, or the fixed leg's, names its leg; no warning for either."""
    tree = two_leg_tree()
    for leg in ("prior", "variational"):
        result, notes = _read(pmt.evidence.stepping_stone, pmt.tempering_dataset(tree, leg=leg))
        assert not notes and result.attrs["leg"] == leg
    one_leg = xr.DataTree.from_dict(
        {"sample_stats": tree["sample_stats"].to_dataset()[["betas", "rung_loglik"]]}
    )
    result, notes = _read(pmt.evidence.thermodynamic_integration, one_leg)
    assert not notes and result.attrs["leg"] == "prior"


def test_mbar_reads_and_names_the_leg(monkeypatch):
    """MBAR shares BAR's reader: its leg in attrs and the same warning (MBAR's solver replaced
    by BAR's, which returns the same record, to keep this fast)."""
    from pymc_tempering.evidence.core import bennett as kernels

    monkeypatch.setattr(kernels, "mbar", kernels.bar)
    result, notes = _read(pmt.evidence.mbar, two_leg_tree())
    assert result.attrs["leg"] == "prior" and len(notes) == 1
    assert "pmt.evidence.mbar(idata, leg='variational')" in str(notes[0].message)
    result, notes = _read(pmt.evidence.mbar, two_leg_tree(), leg="variational")
    assert result.attrs["leg"] == "variational" and not notes


@pytest.mark.slow
def test_the_sampled_two_leg_run_warns_and_reads_the_prior_leg():
    """End to end on the shared sampled two-leg run (tests/two_legs.py): the warning, the leg
    in attrs, and the variational leg's smaller MCSE."""
    from two_legs import two_leg_run

    idata = two_leg_run()
    with pytest.warns(UserWarning, match="read the fixed leg"):
        prior = pmt.evidence.thermodynamic_integration(idata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        variational = pmt.evidence.thermodynamic_integration(idata, leg="variational")
    assert (prior.attrs["leg"], variational.attrs["leg"]) == ("prior", "variational")
    assert float(variational.mcse) < float(prior.mcse) / 3
