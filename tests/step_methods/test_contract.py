"""The step-method contract, checked for every sampler and every option that changes its state.

For each case of :data:`CASES`: a saved ``sampling_state`` repeats the draws and stats bit for
bit (while tuning and after); every stat a draw returns has the dtype and shape declared in
``stats_dtypes_shapes``, and so has the DataTree; the same ``random_seed`` gives the same
DataTree (a fresh step object, the same object sampled again, ``cores=2``), another seed
another; tuned settings freeze when tuning ends. Per class: the competence table
(:data:`COMPETENCE`, agreeing with what the constructor accepts) and one bad argument refused
by name.
"""

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import pytensor
import pytest
from helpers import normal_model, run_steps
from pymc.step_methods.compound import Competence
from pymc.util import get_value_vars_from_user_vars

from pymc_tempering.step_methods.exchange.sampler import ExchangeMC
from pymc_tempering.step_methods.langevin import MALA, ULA
from pymc_tempering.step_methods.sgld import SGLD

C, I = Competence.COMPATIBLE, Competence.INCOMPATIBLE
# What each class claims: edit this table when a class changes its `competence`.
# Columns: a continuous variable with a gradient, the same without one, a discrete variable.
COMPETENCE = {
    ExchangeMC: (C, C, C),
    ULA: (C, I, I),
    MALA: (C, I, I),
    SGLD: (C, I, I),
}

FAST = {"mode": pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run")}
SAMPLE = {"progressbar": False, "compute_convergence_checks": False}
TUNE, DRAWS, SEED = 40, 20, 7  # pm.sample runs: 2 chains, warm-up kept
PYMC_NAMES = {"model_logp": "lp"}  # PyMC's DataTree name for a stat, as for NUTS
NOT_RECORDED = ("tune", "warning")  # PyMC splits the warm-up by `tune` and drops `warning`


small_model = normal_model


def minibatch_model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = (rng.uniform(size=100) < 1 / (1 + np.exp(-X @ np.array([1.0, -1.0, 0.5])))).astype("int32")
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=3)
        X_mb, y_mb = pm.Minibatch(X, y, batch_size=10)
        pm.Bernoulli("y", logit_p=X_mb @ beta, observed=y_mb, total_size=100)
    return model


def mixed_model():
    with pm.Model() as model:
        k = pm.Poisson("k", 3.0)
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu + k, 1, observed=[0.1, 0.2])
    return model


@dataclass(frozen=True)
class Case:
    """One sampler with options that change its state.

    ``frozen``: stats (or a ratio ``"a/b"`` of two) that tuning moves and that must stay
    constant over the recorded draws; ``keeps_last_tuned``: those whose first recorded value
    is the last warm-up value.
    """

    id: str
    cls: type
    kwargs: dict = field(default_factory=dict)
    model: Callable = small_model
    frozen: tuple = ()
    keeps_last_tuned: tuple = ()

    def step(self):
        return self.cls(**self.kwargs, compile_kwargs=FAST)


_EXCHANGE_SCALES = ("scaling", "rung_scaling")
CASES = [
    Case("exchange-rwm", ExchangeMC, {"n_rungs": 4, "explorer": "rwm"},
         frozen=_EXCHANGE_SCALES, keeps_last_tuned=_EXCHANGE_SCALES),
    Case("exchange-mala", ExchangeMC, {"n_rungs": 4, "explorer": "mala"},
         frozen=_EXCHANGE_SCALES, keeps_last_tuned=_EXCHANGE_SCALES),
    Case("exchange-adaptive", ExchangeMC, {"n_rungs": 5, "ladder": "adaptive"},
         frozen=(*_EXCHANGE_SCALES, "betas"), keeps_last_tuned=(*_EXCHANGE_SCALES, "betas")),
    Case("exchange-adapt-n-rungs", ExchangeMC,
         {"n_rungs": 5, "ladder": "adaptive", "adapt_n_rungs": True},
         frozen=(*_EXCHANGE_SCALES, "betas"), keeps_last_tuned=(*_EXCHANGE_SCALES, "betas")),
    Case("exchange-sweeps-2", ExchangeMC, {"n_rungs": 4, "sweeps_per_draw": 2},
         frozen=_EXCHANGE_SCALES, keeps_last_tuned=_EXCHANGE_SCALES),
    Case("exchange-discrete", ExchangeMC, {"n_rungs": 4}, model=mixed_model,
         frozen=_EXCHANGE_SCALES, keeps_last_tuned=_EXCHANGE_SCALES),
    Case("exchange-dense", ExchangeMC, {"n_rungs": 4, "proposal": "dense"},
         frozen=_EXCHANGE_SCALES, keeps_last_tuned=_EXCHANGE_SCALES),
    Case("exchange-dense-mala", ExchangeMC,
         {"n_rungs": 4, "explorer": "mala", "proposal": "dense"},
         frozen=_EXCHANGE_SCALES, keeps_last_tuned=_EXCHANGE_SCALES),
    # (its fitted moves need longer tuning than these runs: test_explorers_independent.py)
    Case("exchange-independent", ExchangeMC, {"n_rungs": 4, "explorer": "independent"},
         frozen=_EXCHANGE_SCALES, keeps_last_tuned=_EXCHANGE_SCALES),
    Case("exchange-dense-discrete", ExchangeMC, {"n_rungs": 4, "proposal": "dense"},
         model=mixed_model, frozen=_EXCHANGE_SCALES, keeps_last_tuned=_EXCHANGE_SCALES),
    Case("ula", ULA, {"step_size": 0.05}),
    Case("mala", MALA, frozen=("step_size", "scaling_min", "scaling_max")),
    Case("mala-diag", MALA, {"preconditioner": "diag", "steps_per_draw": 1},
         frozen=("step_size", "scaling_min", "scaling_max")),
    Case("mala-steps-3", MALA, {"steps_per_draw": 3},
         frozen=("step_size", "scaling_min", "scaling_max")),
    Case("mala-dense", MALA, {"preconditioner": "dense", "steps_per_draw": "auto"},
         frozen=("step_size", "scaling_min", "scaling_max")),
    Case("sgld", SGLD, {"threshold_every": 3}, model=minibatch_model),
    Case("sgld-rmsprop", SGLD, {"preconditioner": "rmsprop", "threshold_every": 3},
         model=minibatch_model, frozen=("injected_noise_var/step_size",)),
]  # fmt: skip


def _equal(a, b, what):
    """Bit-for-bit equality of two stat values or points (NaN equals NaN)."""
    if a is None or b is None or not isinstance(a, np.ndarray | np.generic | float | int | bool):
        assert a == b, what
    else:
        np.testing.assert_array_equal(a, b, err_msg=what, strict=True)


def _check_draw_stats(step, stats):
    """One draw's stats: exactly the declared names, each with its declared dtype and shape
    (the step object's: ExchangeMC declares a run's own stats, e.g. ``explorer_score`` where
    ``explorer="auto"``, beside its class's)."""
    (stats,) = stats
    declared = step.stats_dtypes_shapes
    assert set(stats) == set(declared)
    for name, (dtype, shape) in declared.items():
        value = stats[name]
        if dtype is object:  # a per-rung / per-parameter array, one per draw
            assert isinstance(value, np.ndarray) and value.ndim == 1, name
            assert value.dtype.kind in "fiub", (name, value.dtype)
        elif shape is None:  # e.g. PyMC's SamplerWarning: the object or None
            assert value is None or isinstance(value, dtype), (name, value)
        else:
            assert np.asarray(value).dtype == np.dtype(dtype), (name, np.asarray(value).dtype)
            assert np.shape(value) == tuple(shape), name


# -- sampling_state ------------------------------------------------------------------------------
def _assert_same_steps(step, first, again, what):
    for i, ((p1, s1), (p2, s2)) in enumerate(zip(first, again, strict=True)):
        _check_draw_stats(step, s1)
        for name in p1:
            _equal(p1[name], p2[name], f"{what}, draw {i}: {name}")
        for name in s1[0]:
            _equal(s1[0][name], s2[0][name], f"{what}, draw {i}: stat {name}")


@pytest.fixture(scope="module", params=CASES, ids=lambda c: c.id)
def compiled(request):
    """(case, model, step object) of one case, compiled once for the tests that step by hand;
    each of them starts with ``setup_chain``."""
    case = request.param
    model = case.model()
    with model:
        return case, model, case.step()


def test_a_restored_sampling_state_repeats_draws_and_stats_bit_for_bit(compiled):
    """Save the state, run 5 draws, restore, run them again: identical points and stats, while
    tuning (the adaptive ladder's first round ends inside those 5 draws) and after it. Every
    draw's stats have the declared dtypes and shapes."""
    case, model, step = compiled
    step.setup_chain(np.random.default_rng(4), tune=60, draws=40)
    point = model.initial_point()
    for phase in ("tuning", "tuned"):
        point = run_steps(step, point, 28)[-1][0]
        state = step.sampling_state
        first = run_steps(step, point, 5)
        step.sampling_state = state
        again = run_steps(step, point, 5)
        _assert_same_steps(step, first, again, phase)
        point = again[-1][0]
        step.stop_tuning()


def test_setup_chain_alone_restarts_the_chain(compiled):
    """``setup_chain`` must reset all tuning by itself: PyMC's parallel sampler calls it and
    not ``reset_tuning`` (the sequential one calls both). After 50 tuning draws, a new chain
    with the same generator repeats the first chain's draws."""
    case, model, step = compiled
    step.setup_chain(np.random.default_rng(5), tune=60, draws=40)
    first = run_steps(step, model.initial_point(), 50)
    step.setup_chain(np.random.default_rng(5), tune=60, draws=40)
    again = run_steps(step, model.initial_point(), 50)
    _assert_same_steps(step, first, again, "second chain")


def test_exchange_cached_proposal_scale_follows_a_restored_state():
    model = small_model()
    with model:  # the random walk's cached scale (explorer="auto" wraps it)
        step = ExchangeMC(n_rungs=4, explorer="rwm", compile_kwargs=FAST)
    step.setup_chain(np.random.default_rng(0), tune=10, draws=10)
    run_steps(step, model.initial_point(), 3)
    state = step.sampling_state
    state.scales = state.scales._replace(
        log_scaling=state.scales.log_scaling + 0.5, param_scale=state.scales.param_scale * 2.0
    )
    step.sampling_state = state
    expected = np.exp(step.scales.log_scaling)[:, None] * step.scales.param_scale
    np.testing.assert_array_equal(step.explorer._step_scale(step.scales), expected)


# -- pm.sample: seeds, reused step objects, cores, and what lands in the DataTree ----------------
def _sample(model, step, seed=SEED, cores=1):
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few draws: PyMC's ESS/R-hat notes
        return pm.sample(
            step=step, draws=DRAWS, tune=TUNE, chains=2, cores=cores, random_seed=seed,
            discard_tuned_samples=False, **SAMPLE,
        )  # fmt: skip


@pytest.fixture(scope="module", params=CASES, ids=lambda c: c.id)
def runs(request):
    """pm.sample runs of one case: ``fresh`` (a new step object), ``same_seed`` (another new
    object, same seed), ``reused`` (the first object again), ``parallel`` (cores=2, the second
    object again) and ``other_seed``."""
    case = request.param
    model = case.model()
    with model:
        step, other = case.step(), case.step()
    out = {"case": case, "fresh": _sample(model, step), "same_seed": _sample(model, other)}
    out["declared"] = step.stats_dtypes_shapes
    out["reused"] = _sample(model, step)
    out["parallel"] = _sample(model, other, cores=2)  # also a reused object
    out["other_seed"] = _sample(model, other, seed=SEED + 1)
    return out


def _assert_same_run(a, b, what):
    for group in ("posterior", "sample_stats", "warmup_posterior", "warmup_sample_stats"):
        assert set(a[group].data_vars) == set(b[group].data_vars), (what, group)
        for name in a[group].data_vars:
            np.testing.assert_array_equal(
                a[group][name].values, b[group][name].values, err_msg=f"{what}: {group}.{name}"
            )


@pytest.mark.parametrize(
    "other, what",
    [
        ("same_seed", "a new step object, same seed"),
        ("reused", "the same step object sampled again"),
        ("parallel", "cores=2 (a reused object) against cores=1"),
    ],
)
def test_same_seed_same_datatree(runs, other, what):
    _assert_same_run(runs["fresh"], runs[other], what)


def test_another_seed_and_another_chain_differ(runs):
    name = next(iter(runs["fresh"].posterior.data_vars))
    fresh = runs["fresh"].posterior[name].values
    assert not np.array_equal(fresh, runs["other_seed"].posterior[name].values)
    assert not np.array_equal(fresh[0], fresh[1])


def test_datatree_stats_have_the_declared_dtypes_and_shapes(runs):
    idata = runs["fresh"]
    declared = {
        PYMC_NAMES.get(name, name): spec
        for name, spec in runs["declared"].items()
        if name not in NOT_RECORDED
    }
    for group, n_draws in (("sample_stats", DRAWS), ("warmup_sample_stats", TUNE)):
        stats = idata[group]
        assert set(stats.data_vars) == set(declared), group
        for name, (dtype, shape) in declared.items():
            if dtype is object:
                assert stats[name].dims == ("chain", "draw", f"{name}_dim_0"), name
                assert stats[name].dtype.kind in "fiub", (name, stats[name].dtype)
            elif shape:  # a fixed length, declared for ZarrTrace and mcbackend (_record)
                assert stats[name].dims == ("chain", "draw", f"{name}_dim_0"), name
                assert stats[name].dtype == np.dtype(dtype), (name, stats[name].dtype)
                assert stats[name].sizes[f"{name}_dim_0"] == shape[0], name
            else:
                assert stats[name].dims == ("chain", "draw"), name
                assert stats[name].dtype == np.dtype(dtype), (name, stats[name].dtype)
            assert stats[name].sizes["chain"] == 2 and stats[name].sizes["draw"] == n_draws
    for value in idata.posterior.data_vars.values():
        assert np.all(np.isfinite(value.values))


def _stat(stats, name):
    if "/" in name:
        top, bottom = (stats[n].values for n in name.split("/"))
        return top / (bottom[..., None] if top.ndim > bottom.ndim else bottom)
    return stats[name].values


def test_tuned_settings_freeze_when_tuning_ends(runs):
    case, idata = runs["case"], runs["fresh"]
    if not case.frozen:
        pytest.skip(f"{case.id} tunes nothing")
    for name in case.frozen:
        warm, post = _stat(idata.warmup_sample_stats, name), _stat(idata.sample_stats, name)
        # a ratio of two stats is constant up to rounding
        rtol = 1e-12 if "/" in name else 0
        for chain in range(2):
            np.testing.assert_allclose(
                post[chain],
                np.broadcast_to(post[chain, :1], post[chain].shape),
                rtol=rtol,
                err_msg=name,
            )
            assert not np.allclose(warm[chain, 0], warm[chain, -1], equal_nan=True), name
            if name in case.keeps_last_tuned:
                np.testing.assert_array_equal(warm[chain, -1], post[chain, 0], err_msg=name)


# -- per class: competence and bad arguments -----------------------------------------------------
@pytest.mark.parametrize("cls", list(COMPETENCE), ids=lambda c: c.__name__)
def test_competence_table(cls):
    model = mixed_model()
    continuous, discrete = model["mu"], model["k"]
    with_grad, without_grad, on_discrete = COMPETENCE[cls]
    assert cls.competence(continuous, True) == with_grad
    assert cls.competence(continuous, False) == without_grad
    for has_grad in (True, False):
        assert cls.competence(discrete, has_grad) == on_discrete


@pytest.mark.parametrize("cls", list(COMPETENCE), ids=lambda c: c.__name__)
def test_constructor_agrees_with_competence_on_a_discrete_variable(cls):
    """A class INCOMPATIBLE with discrete variables refuses one by name; otherwise it takes
    the whole model."""
    model = mixed_model()
    kwargs = {"step_size": 0.1} if cls is ULA else {}
    with model:
        if COMPETENCE[cls][2] == I:
            with pytest.raises(ValueError, match=r"\['k'\]"):
                cls(vars=[model["k"]], compile_kwargs=FAST, **kwargs)
        else:
            step = cls(compile_kwargs=FAST, **kwargs)
            assert {v.name for v in step.vars} == {
                v.name for v in get_value_vars_from_user_vars(model.free_RVs, model)
            }


@pytest.mark.parametrize(
    "cls, kwargs, argument",
    [
        (ExchangeMC, {"swap_scheme": "sideways"}, "swap_scheme"),
        (ULA, {"step_size": 0.0}, "step_size"),
        (MALA, {"target_accept": 1.0}, "target_accept"),
        (SGLD, {"rmsprop_decay": 1.0}, "rmsprop_decay"),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else None,
)
def test_a_bad_argument_is_refused_by_name(cls, kwargs, argument):
    with small_model(), pytest.raises(ValueError, match=f"`{argument}`"):
        cls(compile_kwargs=FAST, **kwargs)


# -- per class: the step's variables and a reused step object -------------------------------------
CLASS_KWARGS = {ExchangeMC: {"n_rungs": 4, "explorer": "rwm"}, ULA: {"step_size": 0.05}}


def _two_means_model():
    """a ~ N(0, 1), b ~ N(100, 1), y ~ N(a + b, 1), y = 100: the posterior is Gaussian with
    means (0, 100) and covariance [[2, -1], [-1, 2]] / 3, so a step that reads one variable's
    value as the other's is 100 / 0.8 posterior sds off."""
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 1.0)
        b = pm.Normal("b", 100.0, 1.0)
        pm.Normal("y", a + b, 1.0, observed=[100.0])
    return model


@pytest.mark.parametrize("cls", list(COMPETENCE), ids=lambda c: c.__name__)
def test_variables_given_in_another_order_sample_each_its_own_law(cls):
    """``vars=[b, a]`` on a model that declares ``a`` first: each variable's posterior mean
    within 4 MCSE of the exact one (the flat state is in the model's order, and so is the
    compiled density's input: ``_flat_step.in_model_order``)."""
    from helpers import z_score

    model = _two_means_model()
    with model:
        step = cls(vars=[model["b"], model["a"]], compile_kwargs=FAST, **CLASS_KWARGS.get(cls, {}))
        idata = pm.sample(
            draws=300, tune=300, chains=1, step=step, random_seed=4, **SAMPLE
        )  # fmt: skip
    assert [v.name for v in step.vars] == ["a", "b"]
    for name, truth in (("a", 0.0), ("b", 100.0)):
        assert abs(z_score(idata.posterior[name].values, truth)) < 4, name


def _data_model():
    with pm.Model() as model:
        y = pm.Data("y", np.zeros(20))
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("obs", mu, 1.0, observed=y)
    return model


@pytest.mark.parametrize("cls", [ULA, MALA, SGLD], ids=lambda c: c.__name__)
def test_a_reused_step_sees_data_set_since_its_last_chain(cls):
    """A step sampled, then ``pm.set_data``, then sampled again from its last draw gives the
    draws a new step gives from there: nothing of the old data's density (the cached log
    density and gradient at the last state) survives into the new chain."""
    model = _data_model()
    kwargs = dict(compile_kwargs=FAST, **CLASS_KWARGS.get(cls, {}))
    if cls is MALA:  # untuned, its first step size (1) rejects every move here
        kwargs["step_size"] = 0.05
    with model:
        reused = cls(**kwargs)
        first = pm.sample(draws=10, tune=0, chains=1, step=reused, random_seed=1, **SAMPLE)
        pm.set_data({"y": np.full(20, 5.0)})
        start = {"mu": first.posterior["mu"].values[0, -1]}
        runs = [
            pm.sample(draws=5, tune=0, chains=1, step=step, random_seed=2, initvals=start,
                      **SAMPLE)
            for step in (reused, cls(**kwargs))
        ]  # fmt: skip
    again, fresh = (run.posterior["mu"].values for run in runs)
    np.testing.assert_array_equal(again, fresh)
    assert np.unique(again).size > 1  # the chain moved: the equality above is not of two stuck ones
