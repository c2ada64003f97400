"""Lazy namespaces (PEP 562): a package names its public objects in a table, and each is
imported on first use, so ``import pymc_tempering`` stays cheap and no namespace import can
start an import cycle."""

import importlib

__all__ = ["lazy_namespace"]


def lazy_namespace(package: str, names: dict, aliases: dict | None = None):
    """``(__getattr__, __dir__, __all__)`` for ``package``.

    ``names`` maps each public name to ``"module:attribute"`` or to ``"module"`` (a
    subpackage or module namespace), the module's path taken below ``pymc_tempering``; ``aliases``
    are further names that resolve the same way but
    stay out of ``__all__`` and ``dir()`` (older spellings kept working).
    """
    table = {**(aliases or {}), **names}

    def __getattr__(name):
        try:
            target = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module, _, attribute = target.partition(":")
        value = importlib.import_module(f"pymc_tempering.{module}")
        if attribute:
            value = getattr(value, attribute)
        setattr(importlib.import_module(package), name, value)  # later look-ups skip this
        return value

    def __dir__():
        return sorted(names)

    return __getattr__, __dir__, list(names)
