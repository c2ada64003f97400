"""What ULA and MALA share (:mod:`pymc_tempering.step_methods.langevin.base`, and
``step_methods._flat_step``, which ExchangeMC and SGLD use too).

The per-draw glue (issue 12) gives the numbers of the plain path, bit for bit: the flat point
step against PyMC's map / rmap, MALA's kept h M and sqrt(2 h M) against the Langevin proposal
computed afresh (and renewed when h or M changes), SGLD's step size in Python floats against
NumPy's. The start checks: a non-finite start is refused naming the variable and the fix, and
``initvals`` start a chain where the default initial point has zero density.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from helpers import FAST, z_score
from helpers import SAMPLE_KWARGS as SAMPLE
from pymc.step_methods.arraystep import GradientSharedStep

from pymc_tempering.kernels.langevin import langevin_proposal
from pymc_tempering.kernels.sgld import StepSizeSchedule, polynomial_schedule
from pymc_tempering.step_methods._flat_step import FlatPointStep, same_state
from pymc_tempering.step_methods.langevin import MALA, ULA


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


@pytest.fixture(scope="module")
def mixed_model():
    """Scalar, vector, matrix and a transformed variable: the layouts map / rmap handle."""
    with pm.Model() as model:
        pm.Normal("a", 0.0, 1.0)
        pm.Normal("b", 0.0, 2.0, shape=3)
        pm.Normal("c", 0.0, 0.5, shape=(2, 2))
        pm.HalfNormal("s", 1.0)
    return model


def test_flat_point_step_equals_pymc_map_rmap(mixed_model):
    step = MALA(step_size=0.1, scaling=1.0, model=mixed_model, compile_kwargs=FAST)
    step.tune = False
    point = mixed_model.initial_point()
    fast_point = generic_point = point
    for _ in range(5):
        state = step.sampling_state
        fast_point, fast_stats = FlatPointStep.step(step, fast_point)
        step.sampling_state = state
        generic_point, generic_stats = GradientSharedStep.step(step, generic_point)
        assert list(fast_point) == list(generic_point) == list(point)
        for name, value in generic_point.items():
            assert fast_point[name].shape == value.shape == np.shape(point[name])
            assert fast_point[name].dtype == value.dtype
            np.testing.assert_array_equal(bits(fast_point[name]), bits(value))
        assert fast_stats[0]["model_logp"] == generic_stats[0]["model_logp"]
    assert any(not np.array_equal(generic_point[k], point[k]) for k in point)  # it moved


def test_flat_point_step_leaves_other_steps_variables_to_pymc(mixed_model):
    step = MALA(vars=[mixed_model["a"]], step_size=0.1, model=mixed_model, compile_kwargs=FAST)
    step.tune = False
    point = mixed_model.initial_point()
    new, _ = FlatPointStep.step(step, point)
    assert step.shared and list(new) == list(point)  # the full point, as PyMC returns it
    for name in ("b", "c", "s_log__"):
        np.testing.assert_array_equal(new[name], point[name])
    assert not np.array_equal(new["a"], point["a"])


def test_langevin_proposal_with_kept_scales_is_bit_identical():
    rng = np.random.default_rng(4)
    x, grad, noise = rng.normal(size=(3, 50))
    m = rng.uniform(0.01, 30.0, size=50)
    for h in (1e-4, 0.37, 2.5):
        fresh = langevin_proposal(x, grad, h, m, noise)
        kept = langevin_proposal(
            x, grad, h, m, noise, step_scaling=h * m, noise_scale=np.sqrt(2.0 * h * m)
        )
        np.testing.assert_array_equal(bits(kept), bits(fresh))


def test_mala_diagonal_move_renews_its_scales_when_h_or_m_change(mixed_model):
    step = MALA(
        step_size=0.2, scaling=1.0, preconditioner="diag", model=mixed_model, compile_kwargs=FAST
    )
    point = mixed_model.initial_point()
    x = np.concatenate([np.ravel(v) for v in point.values()])
    logp, grad = step._logp_grad(x)
    m_new = np.linspace(0.5, 2.0, x.size)
    for h, m in ((0.2, step.scaling), (0.05, step.scaling), (0.05, m_new), (0.05, m_new)):
        step.step_size, step.scaling = h, m
        state = step.rng.bit_generator.state
        noise = step.rng.standard_normal(x.size)
        step.rng.bit_generator.state = state
        y, *_ = step._diag_propose(x, logp, grad, h)
        np.testing.assert_array_equal(bits(y), bits(langevin_proposal(x, grad, h, m, noise)))


def test_step_size_in_python_floats_equals_numpy():
    schedules = [
        polynomial_schedule(0.01, 1e-4, 5000, 0.55),
        polynomial_schedule(3e-3, 2.9e-3, 200, 1.0),
        StepSizeSchedule.constant(0.02),
    ]
    for schedule in schedules:
        for t in range(0, 5000, 37):
            fast = schedule(t)
            assert isinstance(fast, float)
            assert fast == schedule(np.asarray(t)) == schedule(np.int64(t))
            assert bits(fast) == bits(schedule(np.asarray(t)))
    with np.errstate(divide="ignore"):  # b + t = 0: NumPy's inf, not a ZeroDivisionError
        assert StepSizeSchedule(1.0, 0.0, 0.55)(0) == np.inf


def test_same_state_knows_views_and_compares_the_rest():
    cached = np.arange(6.0)
    assert same_state(cached, cached) and same_state(cached.reshape(6).ravel(), cached)
    assert same_state(cached.copy(), cached)
    assert not same_state(cached[::-1].copy(), cached)
    assert not same_state(cached[::-1], cached)  # a reversed view of the state is not it
    moved = cached.copy()
    moved[3] = np.nextafter(moved[3], 10.0)
    assert not same_state(moved, cached)


# -- the chain starts where pm.sample starts it ----------------------------------------------------


def test_nonfinite_start_is_refused_at_the_first_step_naming_variable_and_fix():
    with pm.Model() as model:
        x = pm.Normal("x", 0, 1, initval=-1.0)
        pm.Potential("sqrt_term", pt.log(x))  # NaN at x = -1
    with model:
        for step in (MALA(), ULA(step_size=0.1)):  # building a step does not evaluate the start
            with pytest.raises(
                ValueError,
                match=r"cannot start the chain at \{'x': -1.0\}.*'sqrt_term'.*not finite.*"
                r"initvals=\{'x': \.\.\.\}",
            ):
                pm.sample(step=step, draws=5, tune=5, chains=1, random_seed=0, **SAMPLE)


# x ~ N(0, 10^2), y = 5 ~ N(x, 0.5^2), and a Potential that is -inf for x <= 0: the default
# initial point x = 0 has zero density. The posterior is N(m, v), 10 sd above 0.
POST_VAR = 1 / (1 / 100 + 4)

POST_MEAN = 5 * 4 * POST_VAR

H_START = 0.1


def above_one_model():
    with pm.Model() as model:
        x = pm.Normal("x", 0, 10)
        pm.Normal("y", x, 0.5, observed=5.0)
        pm.Potential("positive", pt.switch(x > 0, 0.0, -np.inf))
    return model


@pytest.mark.parametrize(
    "cls, kwargs, var",
    [
        (MALA, {}, POST_VAR),
        (ULA, {"step_size": H_START}, POST_VAR / (1 - H_START / (2 * POST_VAR))),  # exact law
    ],
    ids=["MALA", "ULA"],
)
def test_initvals_start_chains_where_the_default_initial_point_has_zero_density(
    cls, kwargs, var, seed=3
):
    with above_one_model():
        with pytest.raises(ValueError, match=r"\{'x': 0.0\}.*'positive': -inf.*initvals="):
            pm.sample(step=cls(**kwargs), draws=5, tune=0, chains=1, random_seed=0, **SAMPLE)
        idata = pm.sample(
            step=cls(**kwargs, compile_kwargs=FAST),
            initvals={"x": 4.0},
            draws=2000,
            tune=300,
            chains=2,
            cores=1,
            random_seed=seed,
            **SAMPLE,
        )
    draws = idata["posterior"]["x"].values
    z_mean, z_var = z_score(draws, POST_MEAN), z_score((draws - POST_MEAN) ** 2, var)
    assert abs(z_mean) < 4 and abs(z_var) < 4, (z_mean, z_var)
