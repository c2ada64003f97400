"""The repository stands on its own as a package: the licence the metadata names, one version
source read by everything that states a version, project URLs and classifiers, and CI's wheel
check wired in. Reads files only (the build itself runs in ``.ci/wheel_check``)."""

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def package_version(init: Path = ROOT / "pymc_tempering" / "__init__.py") -> str:
    """``__version__`` as written in the package's ``__init__`` (the one version source)."""
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__version__":
            return ast.literal_eval(node.value)
    raise AssertionError(f"{init} assigns no literal __version__")


def test_license_is_the_apache_text_the_metadata_names():
    text = (ROOT / "LICENSE").read_text()
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    assert "LICENSE" in PYPROJECT["project"]["license-files"]
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    # the full text, not a stub: all nine sections and the appendix
    for section in range(1, 10):
        assert re.search(rf"^\s+{section}\. \w", text, flags=re.M), f"section {section}"
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX" in text


def test_one_version_source():
    version = package_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", version), version
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    dynamic = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "pymc_tempering.__version__"}
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert "pymc_tempering.__version__" in conf and version not in conf
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(rf"^version: {re.escape(version)}$", cff, flags=re.M), "CITATION.cff"
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(version)}\b", changelog, flags=re.M), "CHANGELOG.md"


def test_version_reader_reads_the_assignment(tmp_path):
    """Its broken variant: a version written elsewhere than ``__version__`` is not taken."""
    init = tmp_path / "__init__.py"
    init.write_text('VERSION = "9.9.9"\n__version__ = "1.2.3"\n')
    assert package_version(init) == "1.2.3"
    init.write_text('VERSION = "9.9.9"\n')
    with pytest.raises(AssertionError, match="no literal __version__"):
        package_version(init)


def test_metadata_for_an_index():
    project = PYPROJECT["project"]
    assert {"Homepage", "Documentation", "Source", "Issues", "Changelog"} <= set(project["urls"])
    classifiers = project["classifiers"]
    assert project["requires-python"] == ">=3.12"
    assert "Programming Language :: Python :: 3.12" in classifiers
    assert not [c for c in classifiers if re.search(r"Python :: 3\.(\d+)$", c) and
                int(c.rsplit(".", 1)[1]) < 12], classifiers  # fmt: skip
    assert not [c for c in classifiers if c.startswith("License ::")], (
        "the licence is the SPDX expression in project.license (PEP 639), not a classifier"
    )
    deps = " ".join(project["dependencies"])
    for need in ("pymc>=6,<7", "pytensor>=3,<4", "arviz>=1,<2"):
        assert need in deps, need
    assert PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"] == ["pymc_tempering*"]


def test_docs_extra_has_every_extension_the_site_loads():
    conf = (ROOT / "docs" / "conf.py").read_text()
    extra = " ".join(PYPROJECT["project"]["optional-dependencies"]["docs"]).replace("_", "-")
    for ext, dist in [
        ("myst_nb", "myst-nb"),
        ("numpydoc", "numpydoc"),
        ("sphinx_design", "sphinx-design"),
        ("sphinx_copybutton", "sphinx-copybutton"),
        ("sphinx-mathjax-offline", "sphinx-mathjax-offline"),
    ]:
        assert f'"{ext}"' in conf, ext
        assert dist in extra, dist


def test_ci_checks_the_wheel_between_tests_and_docs():
    lines = [ln.split("#")[0].strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    steps = [ln for ln in lines if ln]
    test, wheel, docs = (steps.index(s) for s in ("./run test", "bash .ci/wheel_check",
                                                  "./run docs"))  # fmt: skip
    assert test < wheel < docs
    script = (ROOT / ".ci" / "wheel_check").read_text()
    for need in ("twine check", "-m venv", "smoke.py", "-m build"):
        assert need in script, need


def test_read_the_docs_builds_the_docs_extra_with_warnings_as_errors():
    text = (ROOT / ".readthedocs.yaml").read_text()
    assert re.search(r"^version: 2$", text, flags=re.M)
    assert "configuration: docs/conf.py" in text and "fail_on_warning: true" in text
    assert re.search(r"extra_requirements:\s*\n\s*- docs", text)
