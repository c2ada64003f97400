"""pymc_tempering: replica-exchange, Langevin and stochastic-gradient samplers for PyMC.

The front door holds the everyday names: the step methods for ``pm.sample(step=...)``
(:class:`ExchangeMC`, :class:`MALA`, :class:`ULA`, :class:`SGLD`), the evidence runners
(:func:`marginal_likelihood`, :func:`compare_evidence`, :func:`compare_models`,
:func:`bridge_sampling`), :func:`tempering_summary`, :func:`continue_sampling` and
:class:`EvidenceWarning`. Everything else lives in namespaces that are the package's folders, as
``pm.gp`` and ``pm.math`` do in PyMC: ``pmt.evidence``, ``pmt.singular``, ``pmt.diagnostics``,
``pmt.plots``, ``pmt.ladder``, ``pmt.resume``, ``pmt.exact``, ``pmt.distributed``.

Names are imported on first use (PEP 562), so ``import pymc_tempering`` does not load PyMC,
matplotlib or SciPy until a name is used.
"""

from pymc_tempering._util.lazy import lazy_namespace

_PUBLIC = {
    "ExchangeMC": "step_methods.exchange.sampler:ExchangeMC",
    "MALA": "step_methods.langevin.mala:MALA",
    "ULA": "step_methods.langevin.ula:ULA",
    "SGLD": "step_methods.sgld.sampler:SGLD",
    "marginal_likelihood": "evidence.runner:marginal_likelihood",
    "compare_evidence": "evidence.compare:compare_evidence",
    "compare_models": "selection.runner:compare_models",
    "bridge_sampling": "evidence.bridge:bridge_sampling",
    "tempering_summary": "diagnostics.summary:tempering_summary",
    "continue_sampling": "resume.run:continue_sampling",
    "EvidenceWarning": "evidence.checks:EvidenceWarning",
    # namespaces
    "evidence": "evidence",
    "singular": "singular",
    "diagnostics": "diagnostics",
    "plots": "plots",
    "ladder": "ladder",
    "resume": "resume",
    "exact": "exact",
    "distributed": "distributed",
}
# the flat names of earlier versions, kept working; their home is the namespace named here
_ALIASES = {
    "thermodynamic_integration": "evidence.tempered:thermodynamic_integration",
    "stepping_stone": "evidence.tempered:stepping_stone",
    "bar": "evidence.bennett:bar",
    "mbar": "evidence.bennett:mbar",
    "laplace_evidence": "evidence.approximations:laplace_evidence",
    "bic": "evidence.approximations:bic",
    "learning_coefficient_evidence": "evidence.approximations:learning_coefficient_evidence",
    "evidence_ladder": "ladder:evidence_ladder",
    "prior_spread_beta_min": "ladder:prior_spread_beta_min",
    "evidence_n_rungs": "ladder:evidence_n_rungs",
    "auto_beta_min": "evidence.runner:auto_beta_min",
    "tempering_dataset": "trace:tempering_dataset",
    "swap_rates": "diagnostics.barrier:swap_rates",
    "round_trips": "diagnostics.round_trip:round_trips",
    "global_barrier": "diagnostics.barrier:global_barrier",
    "add_tempering_group": "diagnostics.tempering_group:add_tempering_group",
    "plot_ti_curve": "plots.ti_curve:plot_ti_curve",
    "plot_swap_rates": "plots.swap_rates:plot_swap_rates",
    "plot_replica_trajectories": "plots.replicas:plot_replica_trajectories",
    "plot_sgld_noise": "plots.sgld_noise:plot_sgld_noise",
    "plot_learning_coefficient": "plots.learning_coefficient:plot_learning_coefficient",
    "step_size_weighted_mean": "diagnostics.sgld:step_size_weighted_mean",
    "sampling_threshold_crossing": "diagnostics.sgld:sampling_threshold_crossing",
    "geometric_ladder": "ladder:geometric_ladder",
    "power_ladder": "ladder:power_ladder",
    "wbic": "singular.estimators:wbic",
    "learning_coefficient": "singular.estimators:learning_coefficient",
    "local_learning_coefficient": "singular.llc:local_learning_coefficient",
    "wbic_beta": "ladder:wbic_beta",
    "wbic_ladder": "ladder:wbic_ladder",
    "concatenate_draws": "resume.run:concatenate_draws",
    "resume_step": "resume.run:resume_step",
    "datasets": "exact.datasets",
}

__getattr__, __dir__, __all__ = lazy_namespace("pymc_tempering", _PUBLIC, _ALIASES)
__version__ = "0.1.0"
