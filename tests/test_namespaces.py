"""What the namespaces list and resolve: ``dir()`` of every namespace holds its public names
(and, for ``pmt``, the older flat names that still work) and nothing else; every listed name
resolves; a submodule the docs name resolves through a lazy namespace
(``pmt.evidence.legs.combine_legs``); anything else is an AttributeError."""

import importlib
import os
import subprocess
import sys
import types

import pytest

import pymc_tempering as pmt
from pymc_tempering import _ALIASES, _PUBLIC

# pmt.distributed is checked with its own package (another change)
NAMESPACES = ("evidence", "singular", "diagnostics", "plots", "ladder", "resume", "exact")
# listed beyond __all__: documented submodules (the guide's pmt.exact.datasets)
EXTRA = {"exact": {"datasets"}}


def test_dir_of_pmt_lists_the_everyday_names_and_every_working_alias():
    listed = dir(pmt)
    assert listed == sorted(listed)
    assert set(listed) == set(_PUBLIC) | set(_ALIASES)
    assert "tempering_dataset" in listed and "thermodynamic_integration" in listed
    assert set(pmt.__all__) == set(_PUBLIC)  # star-import: the documented names only


@pytest.mark.parametrize("name", sorted(NAMESPACES))
def test_dir_of_a_namespace_lists_its_public_names_only(name):
    namespace = getattr(pmt, name)
    listed = set(dir(namespace))
    assert listed == set(namespace.__all__) | EXTRA.get(name, set()), sorted(
        listed ^ (set(namespace.__all__) | EXTRA.get(name, set()))
    )
    for public in listed:  # every listed name resolves, none a module unless documented so
        value = getattr(namespace, public)
        if isinstance(value, types.ModuleType):
            assert public in EXTRA.get(name, set()), public


def test_the_ladder_hides_numpy_and_its_helpers():
    assert "np" not in dir(pmt.ladder) and "_check_n_rungs" not in dir(pmt.ladder)
    assert dir(pmt.ladder) == sorted(pmt.ladder.__all__)


SUBMODULE_PATHS = {
    "evidence.legs.combine_legs": "evidence.legs:combine_legs",
    "evidence.core.tempered.ti_quadrature": "evidence.core.tempered:ti_quadrature",
    "diagnostics.summary.tempering_summary": "diagnostics.summary:tempering_summary",
    "trace.LOCAL_MOVES": "trace:LOCAL_MOVES",
}
RESOLVE = """
import importlib, sys
import pymc_tempering as pmt
for path, home in {paths!r}.items():
    value = pmt
    for part in path.split("."):
        value = getattr(value, part)
    module, _, attribute = home.partition(":")
    assert value is getattr(importlib.import_module("pymc_tempering." + module), attribute), path
print("resolved", len({paths!r}))
"""


def test_a_submodule_resolves_through_a_lazy_namespace():
    """In a fresh interpreter, where no other import has bound the submodule yet."""
    code = RESOLVE.format(paths=SUBMODULE_PATHS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"resolved {len(SUBMODULE_PATHS)}" in done.stdout


@pytest.mark.parametrize("name", ["not_a_name", "__wrapped__", "legs_"])
def test_anything_else_is_an_attribute_error_naming_it(name):
    with pytest.raises(
        AttributeError, match=f"'pymc_tempering.evidence' has no attribute '{name}'"
    ):
        getattr(pmt.evidence, name)
    assert not hasattr(pmt.evidence, name)


@pytest.mark.parametrize("alias", sorted(_ALIASES))
def test_every_alias_resolves_to_its_home(alias):
    module, _, attribute = _ALIASES[alias].partition(":")
    home = importlib.import_module(f"pymc_tempering.{module}")
    assert getattr(pmt, alias) is (getattr(home, attribute) if attribute else home)
