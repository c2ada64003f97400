"""Every sampler in a compound step next to PyMC's NUTS and Metropolis.

PyMC builds one trace for all the steps of a ``CompoundStep`` and refuses a sampler stat that
two steps declare with different dtypes, so these runs check the declarations as well as the
draws. The models have known moments: independent blocks for the biased samplers, whose
stationary law is exact there (ULA's on a Gaussian), and a correlated Gaussian for MALA, where
the exact joint law needs each step to see the other's latest values.
"""

import arviz as az
import numpy as np
import pymc as pm
import pytensor
import pytest

import pymc_tempering as pmt

SAMPLE = {"progressbar": False, "compute_convergence_checks": False}
FAST = {"mode": pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run")}

# independent blocks: a ~ N(1, 1.5^2) for our sampler, b ~ N(-2, 0.5^2) for PyMC's
A_MEAN, A_SD, B_MEAN, B_SD = 1.0, 1.5, -2.0, 0.5
H = 0.5  # ULA's h; SGLD's epsilon = 2h is the same move (theta + (eps/2) grad + sqrt(eps) z)
# h-form ULA on N(m, s^2): stationary law N(m, s^2 / (1 - h / (2 s^2))), exactly
A_VAR_ULA = A_SD**2 / (1 - H / (2 * A_SD**2))


def independent_model():
    with pm.Model() as model:
        pm.Normal("a", A_MEAN, A_SD)
        pm.Normal("b", B_MEAN, B_SD)
    return model


def z_score(draws, truth):
    """(mean - truth) / MCSE of a (chain, draw) array, MCSE from ArviZ (ESS-based)."""
    draws = np.asarray(draws, dtype=float)
    return (draws.mean() - truth) / float(az.mcse(draws))


def check_moments(idata, name, mean, var):
    draws = idata["posterior"][name].values
    z_mean = z_score(draws, mean)
    z_var = z_score((draws - mean) ** 2, var)
    assert abs(z_mean) < 4 and abs(z_var) < 4, (name, z_mean, z_var)


OURS = {
    "mala": (lambda a: pmt.MALA([a], compile_kwargs=FAST), A_SD**2),
    "ula": (lambda a: pmt.ULA([a], step_size=H, compile_kwargs=FAST), A_VAR_ULA),
    "sgld": (
        lambda a: pmt.SGLD([a], step_size=2 * H, schedule="constant", compile_kwargs=FAST),
        A_VAR_ULA,
    ),
}
THEIRS = {
    "nuts": lambda b: [pm.NUTS([b])],
    "metropolis": lambda b: [pm.Metropolis([b])],
    "auto": lambda b: [],  # pm.sample assigns NUTS to b
}


@pytest.mark.parametrize("theirs", list(THEIRS))
@pytest.mark.parametrize("ours", list(OURS))
def test_sampler_next_to_nuts_and_metropolis_on_independent_blocks(ours, theirs, seed=1):
    make_ours, a_var = OURS[ours]
    with independent_model() as model:
        a, b = model["a"], model["b"]
        steps = [make_ours(a), *THEIRS[theirs](b)]
        idata = pm.sample(
            step=steps, draws=2000, tune=300, chains=2, cores=1, random_seed=seed, **SAMPLE
        )
    check_moments(idata, "a", A_MEAN, a_var)
    check_moments(idata, "b", B_MEAN, B_SD**2)
    stats = idata["sample_stats"]
    assert not stats["diverging"].values.any()
    if ours != "sgld" and theirs != "metropolis":  # both emit `divergences`: int, one per step
        assert stats["divergences"].dtype == np.int64
        assert stats["divergences"].sizes["divergences_dim_0"] == 2


# correlated Gaussian: the conditional of a given b moves with b, so MALA must re-evaluate its
# cached density after every move of b
RHO = 0.8
COV = np.array([[1.0, RHO * 0.5], [RHO * 0.5, 0.25]])


@pytest.mark.parametrize("theirs", ["nuts", "metropolis"])
def test_mala_next_to_nuts_and_metropolis_on_a_correlated_gaussian(theirs, seed=2):
    with pm.Model():
        a = pm.Normal("a", 0.0, 1.0)
        b = pm.Normal("b", RHO * 0.5 * a, 0.5 * np.sqrt(1 - RHO**2))  # joint cov COV
        idata = pm.sample(
            step=[pmt.MALA([a], compile_kwargs=FAST), *THEIRS[theirs](b)],
            draws=2000,
            tune=300,
            chains=2,
            cores=1,
            random_seed=seed,
            **SAMPLE,
        )
    draws_a, draws_b = (idata["posterior"][v].values for v in ("a", "b"))
    for name, values, truth in [
        ("a^2", draws_a**2, COV[0, 0]),
        ("b^2", draws_b**2, COV[1, 1]),
        ("ab", draws_a * draws_b, COV[0, 1]),
        ("a", draws_a, 0.0),
    ]:
        z = z_score(values, truth)
        assert abs(z) < 4, (name, z)


# -- ExchangeMC: every free variable, or a clear refusal -----------------------------------------
def test_exchange_mc_refuses_some_variables_and_runs_alone_in_a_step_list(seed=3):
    # mu, nu ~ N(0, 1), one observation of each with unit noise: posteriors N(y / 2, 1 / 2)
    y = {"mu": 2.0, "nu": -1.5}
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        nu = pm.Normal("nu", 0, 1)
        pm.Normal("y_mu", mu, 1, observed=y["mu"])
        pm.Normal("y_nu", nu, 1, observed=y["nu"])
        with pytest.raises(ValueError, match=r"every free variable.*not given \['nu'\]"):
            pmt.ExchangeMC([mu], n_rungs=4)
        with pytest.raises(ValueError, match=r"every free variable.*not given \['nu'\]"):
            pm.sample(step=[pmt.ExchangeMC([mu], n_rungs=4), pm.NUTS([nu])], **SAMPLE)
        idata = pm.sample(
            step=[pmt.ExchangeMC(n_rungs=4)], draws=1000, tune=300, chains=1, random_seed=seed,
            **SAMPLE,
        )  # fmt: skip
    for name in ("mu", "nu"):
        check_moments(idata, name, y[name] / 2, 0.5)
