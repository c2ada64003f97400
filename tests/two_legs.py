"""The two-leg ExchangeMC run (``reference="variational"``) that the evidence, summary and
plot tests share, sampled once per session, and its exact log Z. Test modules import from
here (``from two_legs import ...``)."""

import functools

import pymc as pm
import targets

import pymc_tempering as pmt

SAMPLE_KWARGS = {"progressbar": False, "compute_convergence_checks": False, "cores": 1}
X = targets.lecture_data()
N_RUNGS, N_RUNGS_VARIATIONAL = 12, 5


def exact_log_evidence() -> float:
    """The lecture model's closed-form log Z (``x_i ~ N(mu, 1)``, ``mu ~ N(0, 1)``)."""
    return float(targets.lecture_log_evidence(X))


@functools.cache
def two_leg_run(seed: int = 3):
    """4 chains of 400 draws on the lecture model: the fixed leg on the 12-rung evidence ladder
    from 1e-4, the variational leg on 5 rungs."""
    step_kwargs = {"betas": pmt.evidence_ladder(N_RUNGS, 1e-4), "reference": "variational"}
    with targets.lecture_model(X):
        return pm.sample(
            draws=400,
            tune=400,
            chains=4,
            step=pmt.ExchangeMC(n_rungs_variational=N_RUNGS_VARIATIONAL, **step_kwargs),
            random_seed=seed,
            **SAMPLE_KWARGS,
        )


def legs_of(idata):
    """The tempering Dataset of each leg, ``{"prior": ..., "variational": ...}``."""
    return {leg: pmt.tempering_dataset(idata, leg=leg) for leg in ("prior", "variational")}


__all__ = ["N_RUNGS", "N_RUNGS_VARIATIONAL", "exact_log_evidence", "two_leg_run", "legs_of"]
