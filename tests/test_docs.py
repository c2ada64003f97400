"""The documentation's sources: every public name has an API entry, every code snippet of the
guide is executed by the build, and the README's and the pages' relative links resolve.

The build itself (``./run docs``, warnings as errors, the executed pages) runs in CI after the
test suite; these checks are the fast part that needs no Sphinx.
"""

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API = DOCS / "api"
NAMESPACES = {
    "pymc_tempering": "pmt",
    "pymc_tempering.evidence": "evidence",
    "pymc_tempering.singular": "singular",
    "pymc_tempering.diagnostics": "diagnostics",
    "pymc_tempering.plots": "plots",
    "pymc_tempering.ladder": "ladder",
    "pymc_tempering.resume": "resume",
    "pymc_tempering.exact": "exact",
    "pymc_tempering.distributed": "distributed",
}
# pages whose code is prose (shell commands, tables): every Python snippet elsewhere is a cell
EXECUTED_PAGES = sorted(
    p for p in DOCS.rglob("*.md") if "_build" not in p.parts and "decisions" not in p.parts
)


def api_names(page: Path) -> set[str]:
    """Names an API page lists: autosummary entries and ``name`` literals."""
    text = page.read_text()
    listed = set(re.findall(r"^   ([A-Za-z_][A-Za-z0-9_]*)$", text, flags=re.M))
    return listed | set(re.findall(r"``([A-Za-z_][A-Za-z0-9_]*)``", text))


@pytest.mark.parametrize("module", NAMESPACES)
def test_every_public_name_has_an_api_entry(module):
    names = set(importlib.import_module(module).__all__)
    page = API / f"{NAMESPACES[module]}.rst"
    missing = names - api_names(page)
    assert not missing, f"{sorted(missing)} of {module}.__all__ are not in {page.name}"


def test_every_namespace_page_is_in_the_api_index():
    index = (API / "index.rst").read_text()
    for page in NAMESPACES.values():
        assert re.search(rf"^   {page}$", index, flags=re.M), page


def test_planted_missing_name_is_caught(tmp_path):
    """The check above fails when a name is dropped from a page (its broken variant)."""
    page = tmp_path / "evidence.rst"
    page.write_text((API / "evidence.rst").read_text().replace("   mbar\n", ""))
    assert "mbar" not in api_names(page)
    assert "mbar" in api_names(API / "evidence.rst")


@pytest.mark.parametrize("page", EXECUTED_PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_python_snippets_are_executed_cells(page):
    """A guide snippet is a MyST-NB code cell (the build runs it), never a plain ``python``
    fence that could rot; a page with cells declares the kernel that runs them."""
    text = page.read_text()
    assert not re.search(r"^```(python|py|ipython3?)\s*$", text, flags=re.M), (
        f"{page.name}: a ```python block is not executed; make it a {{code-cell}}"
    )
    if "```{code-cell}" in text:
        assert text.startswith("---\n") and "kernelspec:" in text.split("\n---\n")[0], page.name


def _relative_links(text: str) -> list[str]:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    return [link for link in links if "://" not in link and not link.startswith("mailto:")]


def test_readme_links_resolve():
    links = _relative_links((ROOT / "README.md").read_text())
    assert len(links) >= 10
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, missing


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250
