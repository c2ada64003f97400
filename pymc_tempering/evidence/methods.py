"""Evidence estimators by name: the ``method=`` argument of :func:`marginal_likelihood` and
:func:`compare_evidence`.

Short names as PyMC's ``init=`` / ``method=`` strings: ``"ti"`` (thermodynamic integration,
corrected trapezoid), ``"ss"`` (stepping stone), ``"bar"`` (Bennett's acceptance ratio between
neighbouring rungs), ``"mbar"`` (MBAR over all rungs); the full names that results carry in
their ``estimator`` coordinate are accepted too.
"""

from collections.abc import Sequence

import xarray as xr

from pymc_tempering.evidence.bennett import acceptance_ratio_evidence
from pymc_tempering.evidence.tempered import estimate_evidence

__all__ = ["METHODS", "DEFAULT_METHOD", "resolve_methods", "evidence_by_method"]

#: short name -> the full name used in results' ``estimator`` coordinate
METHODS = {
    "ti": "thermodynamic_integration",
    "ss": "stepping_stone",
    "bar": "bennett_acceptance_ratio",
    "mbar": "mbar",
}
#: the estimator :func:`compare_evidence` reads by default (docs/decisions/002)
DEFAULT_METHOD = "ti"
_FULL = {full: full for full in METHODS.values()}


def resolve_methods(method, argument: str = "method") -> tuple[str, ...]:
    """Full estimator names for ``method`` (a name or a sequence of names), in order, once
    each; a clear error naming ``argument`` for anything else."""
    names = [method] if isinstance(method, str) else method
    if not isinstance(names, Sequence) or len(names) == 0:
        raise ValueError(
            f"`{argument}` must be one of {list(METHODS)} or a non-empty list of them, got "
            f"{method!r}."
        )
    out = []
    for name in names:
        full = METHODS.get(name, _FULL.get(name)) if isinstance(name, str) else None
        if full is None:
            raise ValueError(
                f"`{argument}` must name evidence estimators among {list(METHODS)} "
                f"(thermodynamic integration, stepping stone, Bennett's acceptance ratio, "
                f"MBAR) or their full names {list(METHODS.values())}; got {name!r}."
            )
        if full not in out:
            out.append(full)
    return tuple(out)


def evidence_by_method(data, methods: tuple[str, ...]) -> dict[str, tuple[xr.Dataset, list]]:
    """``{full name: (result, problems)}`` for the resolved ``methods``, without warning.

    TI and stepping stone come from one pass (:func:`estimate_evidence`, each cross-checked
    against the other); BAR and MBAR from :func:`acceptance_ratio_evidence`.
    """
    out = {}
    if {"thermodynamic_integration", "stepping_stone"} & set(methods):
        both = estimate_evidence(data)
        out["thermodynamic_integration"] = (both.ti, both.ti_problems)
        out["stepping_stone"] = (both.ss, both.ss_problems)
    for short in ("bar", "mbar"):
        if METHODS[short] in methods:
            out[METHODS[short]] = acceptance_ratio_evidence(data, short)
    return {name: out[name] for name in methods}
