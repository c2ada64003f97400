"""The repository stands on its own as a package: the licence the metadata names, one version
source read by everything that states a version, project URLs and classifiers, CI's wheel
check wired in, and an sdist that is the source tree without build artefacts (built here, in a
few seconds; the wheel is built and installed by ``.ci/wheel_check``)."""

import ast
import re
import shutil
import subprocess
import sys
import tarfile
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
    test, wheel, docs = (
        next(i for i, step in enumerate(steps) if step.split(" -")[0] == s)
        for s in ("./run test", "bash .ci/wheel_check", "./run docs")
    )
    assert test < wheel < docs
    script = (ROOT / ".ci" / "wheel_check").read_text()
    for need in ("twine check", "-m venv", "smoke.py", "-m build"):
        assert need in script, need


def test_read_the_docs_builds_the_docs_extra_with_warnings_as_errors():
    text = (ROOT / ".readthedocs.yaml").read_text()
    assert re.search(r"^version: 2$", text, flags=re.M)
    assert "configuration: docs/conf.py" in text and "fail_on_warning: true" in text
    assert re.search(r"extra_requirements:\s*\n\s*- docs", text)


# --- the sdist -----------------------------------------------------------------------------------

#: Files an sdist adds of its own: the metadata setuptools writes.
SDIST_METADATA = re.compile(r"^(PKG-INFO|setup\.cfg|pymc_tempering\.egg-info/.+)$")

#: Build artefacts, caches and environments planted in the copy the sdist is built from; none
#: may ship. Figures written by the examples and the docs build are artefacts too.
ARTEFACTS = (
    "build/lib/pymc_tempering/__init__.py",
    "dist/pymc_tempering-0.0.0.tar.gz",
    ".venv/bin/python",
    ".venv/lib/python3.12/site-packages/numpy/__init__.py",
    "docs/_build/html/index.html",
    "docs/_build/.jupyter_cache/global.db",
    "docs/api/generated/pymc_tempering.MALA.rst",
    "docs/gallery/_output/01_clouds.png",
    "docs/guide/_runs/run.nc",
    "docs/guide/.ipynb_checkpoints/tempering-checkpoint.md",
    "examples/output/01_clouds.png",
    "examples/01_clouds.png",
    "benchmarks/output/table.txt",
    "pymc_tempering/__pycache__/ladder.cpython-312.pyc",
    "pymc_tempering/kernels/__pycache__/rules.log_accept_ratio-31.py312.nbi",  # numba's cache
    "pymc_tempering/kernels/__pycache__/rules.log_accept_ratio-31.py312.1.nbc",
    "pymc_tempering/kernels/ladder.pyc",
    "tests/__pycache__/test_packaging.cpython-312-pytest-8.0.pyc",
    ".pytest_cache/v/cache/lastfailed",
    "tests/.pytest_cache/v/cache/nodeids",
    ".ruff_cache/0.6.0/123",
)


#: Where builds, the docs and the examples write (mirrors .gitignore and MANIFEST.in's prunes).
OUTPUT_DIRS = (
    "build/", "dist/", ".venv/", "docs/_build/", "docs/api/generated/", "docs/gallery/_output/",
    "docs/guide/_runs/", "examples/output/", "benchmarks/output/",
)  # fmt: skip
CACHES = {"__pycache__", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints"}


def source_files(root: Path = ROOT) -> list[str]:
    """The files an sdist of ``root`` must carry: those git tracks in a checkout; in a tree
    without git (an unpacked sdist) its files less the sdist's own metadata and what builds,
    test runs and the docs write there (:data:`OUTPUT_DIRS`, :data:`CACHES`)."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True
        ).stdout.decode()
        if listed:
            return sorted(f for f in listed.split("\0") if f and (root / f).is_file())
    except (OSError, subprocess.CalledProcessError):
        pass
    found = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    return sorted(
        f
        for f in found
        if not SDIST_METADATA.match(f)
        and not f.startswith(OUTPUT_DIRS)
        and not CACHES & set(f.split("/"))
    )


def sdist_members(sdist: Path) -> list[str]:
    """The files of ``sdist`` relative to its top folder (``pymc_tempering-<version>/``)."""
    with tarfile.open(sdist) as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {f"pymc_tempering-{package_version()}"}, tops
    return sorted(n.split("/", 1)[1] for n in names)


def sdist_gaps(members, sources) -> list[str]:
    """What is wrong with an sdist of ``members`` built from ``sources``: a source file it
    lacks, or a file it holds that is neither a source file nor its own metadata."""
    members, sources = set(members), set(sources)
    gaps = [f"missing: {f}" for f in sorted(sources - members)]
    extra = sorted(f for f in members - sources if not SDIST_METADATA.match(f))
    return gaps + [f"not a source file: {f}" for f in extra]


def test_sdist_is_the_source_tree_without_artefacts(tmp_path):
    """``python -m build --sdist`` (setuptools' build_sdist, as build calls it) on a copy of the
    source files with build artefacts planted beside them: the sdist holds every source file
    (the package, all of tests/ with its helpers and data, docs, examples, README, LICENSE,
    CHANGELOG.md, CITATION.cff, pyproject.toml) and none of the artefacts."""
    pytest.importorskip("setuptools")
    sources = source_files()
    for need in (
        "pymc_tempering/__init__.py",
        "tests/helpers.py",
        "tests/conftest.py",
        "README.md",
        "LICENSE",
        "CHANGELOG.md",
        "CITATION.cff",
        "pyproject.toml",
        "MANIFEST.in",
    ):
        assert need in sources, need
    src = tmp_path / "src"
    for name in sources:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    for name in ARTEFACTS:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text("artefact\n")
    out = tmp_path / "dist"
    build = "import sys; from setuptools import build_meta; build_meta.build_sdist(sys.argv[1])"
    done = subprocess.run(
        [sys.executable, "-c", build, str(out)], cwd=src, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (sdist,) = out.glob("*.tar.gz")
    members = sdist_members(sdist)
    assert not sdist_gaps(members, sources), sdist_gaps(members, sources)[:20]
    assert not set(ARTEFACTS) & set(members)


def test_sdist_gaps_names_what_is_missing_and_what_is_extra():
    """Its broken variants: a source file left out, an artefact shipped."""
    sources = ["README.md", "pymc_tempering/__init__.py", "tests/helpers.py"]
    metadata = ["PKG-INFO", "setup.cfg", "pymc_tempering.egg-info/SOURCES.txt"]
    assert sdist_gaps(sources + metadata, sources) == []
    assert sdist_gaps(["README.md", "pymc_tempering/__init__.py", *metadata], sources) == [
        "missing: tests/helpers.py"
    ]
    shipped = [*sources, "docs/_build/html/index.html", "pymc_tempering.egg-info"]
    assert sdist_gaps(shipped, sources) == [
        "not a source file: docs/_build/html/index.html",
        "not a source file: pymc_tempering.egg-info",
    ]


def test_source_files_of_an_unpacked_sdist(tmp_path):
    """Without git, the tree's files less the sdist's metadata, the caches a test run leaves
    and what a build or the docs write."""
    for name in ("README.md", "tests/helpers.py", "PKG-INFO", "setup.cfg",
                 "pymc_tempering.egg-info/SOURCES.txt", "tests/__pycache__/helpers.pyc",
                 ".pytest_cache/v/x", "build/lib/pymc_tempering/__init__.py",
                 "docs/_build/html/index.html", "docs/guide.md"):  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    assert source_files(tmp_path) == ["README.md", "docs/guide.md", "tests/helpers.py"]


def test_ci_leaves_to_the_docs_build_only_checks_the_gallery_runs():
    """.ci/run deselects the ``gallery`` tests; each runs an example's quick mode and its
    ``check``, which a gallery page runs too (same output folder), so CI still runs every
    check once. A new example test must have its page, or CI would never run it."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert '-m "not gallery"' in ci
    tests = (ROOT / "tests" / "test_examples.py").read_text()
    assert "pytestmark = pytest.mark.gallery" in tests
    run = re.findall(r'run_and_check\("([^"]+)"', tests)
    pages = {
        re.search(r'gallery.load\("([^"]+)"\)', page.read_text()).group(1): page.read_text()
        for page in (ROOT / "docs" / "gallery").glob("*.md")
        if "gallery.load(" in page.read_text()
    }
    assert len(run) == len(set(run)) == 10
    for name in run:
        assert "def check(out, output)" in (ROOT / "examples" / f"{name}.py").read_text(), name
        assert name in pages and "story.check(out, " in pages[name], name
