"""Lazy namespaces (PEP 562): a package names its public objects in a table, and each is
imported on first use, so ``import pymc_tempering`` stays cheap and no namespace import can
start an import cycle."""

import importlib
import importlib.util

__all__ = ["lazy_namespace"]


def lazy_namespace(package: str, names: dict, aliases: dict | None = None):
    """``(__getattr__, __dir__, __all__)`` for ``package``.

    ``names`` maps each public name to ``"module:attribute"`` or to ``"module"`` (a
    subpackage or module namespace), the module's path taken below ``pymc_tempering``; ``aliases``
    are further names that resolve the same way (older spellings kept working). ``dir()`` lists
    both, and nothing else: no helper the package imports, no submodule. ``__all__`` holds
    ``names`` only, so ``from package import *`` brings the documented names, not the aliases.

    A name in neither table that is a submodule of ``package`` (``pmt.evidence.legs``) is
    imported as ``import pymc_tempering.evidence.legs`` would: the homes the docs name work
    through the namespace too, without being listed.
    """
    table = {**(aliases or {}), **names}
    listed = sorted(table)

    def __getattr__(name):
        target = table.get(name)
        if target is None:
            return _submodule(package, name)
        module, _, attribute = target.partition(":")
        value = importlib.import_module(f"pymc_tempering.{module}")
        if attribute:
            value = getattr(value, attribute)
        setattr(importlib.import_module(package), name, value)  # later look-ups skip this
        return value

    def __dir__():
        return list(listed)

    return __getattr__, __dir__, list(names)


def _submodule(package: str, name: str):
    """Submodule ``name`` of ``package``, imported; an AttributeError where there is none."""
    missing = AttributeError(f"module {package!r} has no attribute {name!r}")
    if name.startswith("__"):  # dunders (copy, pickle and doctest probe them): never modules
        raise missing
    try:
        spec = importlib.util.find_spec(f"{package}.{name}")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise missing
    return importlib.import_module(f"{package}.{name}")
