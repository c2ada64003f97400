"""The built site as a reader gets it (``docs/_build/html``, from ``./run docs``): every plotting
cell shows its figure, no page names a path of the machine that built it, formulas render from
the site's own MathJax (no network), copy buttons are there, and every step method's API page
shows its real signature. Skipped when the site is not built (``./run test`` runs before
``./run docs`` in CI; run these after a build).
"""

import html
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "docs" / "_build" / "html"
built = pytest.mark.skipif(
    not (SITE / "index.html").is_file(), reason="the site is not built (./run docs)"
)

# a home, a temporary or a workspace folder, an installed package, a Windows profile, this checkout
MACHINE_PATH = re.compile(
    r"(?<![\w.])(/work/|/home/[\w.-]+/|/Users/[\w.-]+/|/root/|/tmp/|/private/var/)"
    r"|site-packages|[A-Z]:\\Users\\" + "|" + re.escape(str(ROOT))
)
CELL = '<div class="cell docutils container">'


def pages() -> list[Path]:
    return sorted(p for p in SITE.rglob("*.html") if "_static" not in p.parts)


def text_of(fragment: str) -> str:
    """What a reader sees of an HTML fragment: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def machine_paths(page_html: str) -> list[str]:
    """Each line of the page's text that names a machine path (with the match)."""
    found = []
    for line in text_of(page_html).splitlines():
        if m := MACHINE_PATH.search(line):
            found.append(f"{m.group(0)!r} in {line.strip()[:160]!r}")
    return found


def plotting_cells_without_figure(page_html: str) -> tuple[int, list[str]]:
    """The executed cells whose code calls ``pmt.plots``, and those among them that show no
    image (an output with ``<img``, or an inline SVG)."""
    cells = page_html.split(CELL)[1:]
    code = [text_of(c.split("cell_output")[0]) for c in cells]
    output = [c.split("cell_output", 1)[1] if "cell_output" in c else "" for c in cells]
    plotting = [i for i, c in enumerate(code) if "pmt.plots." in c]
    empty = [code[i].strip()[:120] for i in plotting if not re.search(r"<img |<svg", output[i])]
    return len(plotting), empty


@built
def test_every_plotting_cell_shows_its_figure():
    calls = re.compile(r"```\{code-cell\}[^`]*pmt\.plots\.")
    docs = [p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts]
    sources = [p for p in docs if calls.search(p.read_text())]
    assert sources, "no page calls pmt.plots: the check would check nothing"
    total, missing = 0, {}
    for src in sources:
        page = SITE / src.relative_to(ROOT / "docs").with_suffix(".html")
        n, empty = plotting_cells_without_figure(page.read_text())
        assert n, f"{page.name}: its source calls pmt.plots in a cell, its page shows no such cell"
        total += n
        if empty:
            missing[page.name] = empty
    assert not missing, f"plotting cells with no figure (MPLBACKEND=agg in the kernel?): {missing}"
    assert total >= 4, total


def test_figure_check_catches_an_empty_plotting_cell():
    """The broken variant: a plotting cell whose output has text only is reported; one with an
    image is not (the check reads the page as the built site writes it)."""
    code = '<div class="cell_input"><pre><span class="n">fig</span> = pmt.plots.plot_swap_rates(x)'
    code += "</pre></div>"
    out = '<div class="cell_output docutils container">'
    shown = f'{CELL}{code}{out}<img alt="" src="a.png" /></div></div>'
    blank = f"{CELL}{code}{out}<pre>&lt;Figure&gt;</pre></div></div>"
    other = f'{CELL}<div class="cell_input"><pre>print(1)</pre></div></div>'
    assert plotting_cells_without_figure(shown + other) == (1, [])
    n, empty = plotting_cells_without_figure(shown + blank + other)
    assert n == 2 and len(empty) == 1 and "plot_swap_rates" in empty[0]
    assert plotting_cells_without_figure(f"{CELL}{code}</div>")[1]  # no output at all


@built
def test_no_page_names_a_machine_path():
    found = {}
    for page in pages():
        if hits := machine_paths(page.read_text()):
            found[str(page.relative_to(SITE))] = hits[:3]
    assert not found, f"machine paths in the built site: {found}"


def test_machine_path_check():
    assert machine_paths("<p>data in /work/shared/data/radiata_pine.csv</p>")
    assert machine_paths(
        "<pre>File &quot;/home/ci/.venv/lib/python3.12/site-packages/x.py&quot;</pre>"
    )
    assert machine_paths("<pre>/opt/conda/lib/python3.12/site-packages/pymc/sampling.py:12</pre>")
    assert machine_paths(f"<p>{ROOT}/examples</p>")
    assert not machine_paths("<p>examples/06_model_selection.py and docs/decisions/</p>")
    assert not machine_paths("<p>see https://docs.python.org/3/tmp/ and a.b/tmp/</p>")


@built
def test_formulas_render_from_the_sites_own_mathjax():
    with_math = [p for p in pages() if 'class="math' in p.read_text()]
    assert len(with_math) >= 5, "no page with formulas: the check would check nothing"
    for page in with_math:
        text = page.read_text()
        scripts = re.findall(r'<script[^>]+src="([^"]*mathjax[^"]*)"', text, flags=re.I)
        assert scripts, f"{page.name}: formulas but no MathJax"
        assert not [s for s in scripts if "://" in s], (
            f"{page.name} loads MathJax remotely: {scripts}"
        )
        for src in scripts:
            assert (page.parent / src.split("?")[0]).is_file(), f"{page.name}: {src} missing"
    fonts = SITE / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    assert len(list(fonts.glob("*.woff"))) >= 10, "MathJax's fonts are not in the site"


@built
def test_no_page_loads_anything_from_the_network():
    remote = re.compile(r'<(?:script|link|img)[^>]+(?:src|href)="(https?:)?//', flags=re.I)
    found = [str(p.relative_to(SITE)) for p in pages() if remote.search(p.read_text())]
    assert not found, f"pages that load scripts, styles or images remotely: {found[:10]}"


@built
def test_copy_buttons():
    assert (SITE / "_static" / "copybutton.js").is_file()
    assert "copybutton.js" in (SITE / "getting_started.html").read_text()


@built
@pytest.mark.parametrize("name", ["ExchangeMC", "MALA", "ULA", "SGLD"])
def test_step_method_pages_show_their_arguments(name):
    page = (SITE / "api" / "generated" / f"pymc_tempering.{name}.html").read_text()
    head = rf'<dt class="sig sig-object py" id="pymc_tempering\.{name}">(.*?)</dt>'
    (signature,) = re.findall(head, page, flags=re.S)
    signature = " ".join(text_of(signature).split())
    assert "*args" not in signature, signature
    assert "step_size" in signature or "n_rungs" in signature, signature
