"""pymc_tempering: replica-exchange, Langevin and stochastic-gradient samplers for PyMC.

Step methods for ``pm.sample(step=...)``: :class:`ExchangeMC` (parallel tempering),
:class:`ULA`, :class:`MALA`, :class:`SGLD`. Analysis functions take the DataTree that
``pm.sample`` returns: evidence (thermodynamic integration, stepping stone, bridge sampling,
Bayes factors), tempering diagnostics and plots. Exact reference values live in
:mod:`pymc_tempering.exact`.

Names are imported on first use (PEP 562), so ``import pymc_tempering`` costs about 0.3 s
instead of about 2.5 s (matplotlib, scipy.integrate, the exact references are loaded only
when a plot, an evidence function or a reference is used)."""

import importlib

# public name -> (module, attribute); a module path alone for a subpackage
_LAZY = {
    "ExchangeMC": ("pymc_tempering.step_methods.exchange", "ExchangeMC"),
    "ULA": ("pymc_tempering.step_methods.langevin", "ULA"),
    "MALA": ("pymc_tempering.step_methods.langevin", "MALA"),
    "SGLD": ("pymc_tempering.step_methods.sgld", "SGLD"),
    "thermodynamic_integration": ("pymc_tempering.evidence", "thermodynamic_integration"),
    "stepping_stone": ("pymc_tempering.evidence", "stepping_stone"),
    "bar": ("pymc_tempering.acceptance_ratio", "bar"),
    "mbar": ("pymc_tempering.acceptance_ratio", "mbar"),
    "marginal_likelihood": ("pymc_tempering.evidence", "marginal_likelihood"),
    "compare_evidence": ("pymc_tempering.comparison", "compare_evidence"),
    "compare_models": ("pymc_tempering.selection", "compare_models"),
    "laplace_evidence": ("pymc_tempering.approximations", "laplace_evidence"),
    "bic": ("pymc_tempering.approximations", "bic"),
    "learning_coefficient_evidence": (
        "pymc_tempering.approximations",
        "learning_coefficient_evidence",
    ),
    "bridge_sampling": ("pymc_tempering.bridge", "bridge_sampling"),
    "evidence_ladder": ("pymc_tempering.evidence", "evidence_ladder"),
    "prior_spread_beta_min": ("pymc_tempering.ladder", "prior_spread_beta_min"),
    "evidence_n_rungs": ("pymc_tempering.ladder", "evidence_n_rungs"),
    "auto_beta_min": ("pymc_tempering.evidence_sampling", "auto_beta_min"),
    "EvidenceWarning": ("pymc_tempering.evidence", "EvidenceWarning"),
    "tempering_dataset": ("pymc_tempering._trace", "tempering_dataset"),
    "tempering_summary": ("pymc_tempering.diagnostics", "tempering_summary"),
    "swap_rates": ("pymc_tempering.diagnostics", "swap_rates"),
    "round_trips": ("pymc_tempering.diagnostics", "round_trips"),
    "global_barrier": ("pymc_tempering.diagnostics", "global_barrier"),
    "add_tempering_group": ("pymc_tempering.diagnostics", "add_tempering_group"),
    "plot_ti_curve": ("pymc_tempering.plots", "plot_ti_curve"),
    "plot_swap_rates": ("pymc_tempering.plots", "plot_swap_rates"),
    "plot_replica_trajectories": ("pymc_tempering.plots", "plot_replica_trajectories"),
    "plot_sgld_noise": ("pymc_tempering.plots", "plot_sgld_noise"),
    "step_size_weighted_mean": ("pymc_tempering.sgld_analysis", "step_size_weighted_mean"),
    "sampling_threshold_crossing": ("pymc_tempering.sgld_analysis", "sampling_threshold_crossing"),
    "geometric_ladder": ("pymc_tempering.ladder", "geometric_ladder"),
    "power_ladder": ("pymc_tempering.ladder", "power_ladder"),
    "wbic": ("pymc_tempering.slt", "wbic"),
    "learning_coefficient": ("pymc_tempering.slt", "learning_coefficient"),
    "local_learning_coefficient": ("pymc_tempering.llc", "local_learning_coefficient"),
    "wbic_beta": ("pymc_tempering.ladder", "wbic_beta"),
    "wbic_ladder": ("pymc_tempering.ladder", "wbic_ladder"),
    "plot_learning_coefficient": ("pymc_tempering.plots", "plot_learning_coefficient"),
    "continue_sampling": ("pymc_tempering.resume", "continue_sampling"),
    "concatenate_draws": ("pymc_tempering.resume", "concatenate_draws"),
    "resume_step": ("pymc_tempering.resume", "resume_step"),
    "datasets": "pymc_tempering.datasets",
    "exact": "pymc_tempering.exact",
}

__all__ = list(_LAZY)
__version__ = "0.1.0"


def __getattr__(name):
    try:
        target = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'pymc_tempering' has no attribute {name!r}") from None
    if isinstance(target, str):
        value = importlib.import_module(target)
    else:
        value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
