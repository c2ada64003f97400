"""The package's layer rules, read from its source (AST only: nothing is imported).

(a) array layers (``kernels``, ``evidence.core``, ``singular.core``) import no PyMC, PyTensor,
ArviZ, xarray, matplotlib or Dask and no package module outside the array layers; (b) readers
of a trace import no step method, no compiler and no ``resume``; (c) PyTensor is compiled only
in ``step_methods/_compile``; (d) no import cycle (deferred imports included); (e) every
namespace ``__init__`` resolves every name it lists; (f) no module imports through a lazy
namespace, so that (b) and (d) see every dependency; (g) the tempering engine imports no PyMC,
PyTensor, ArviZ, xarray or Dask and no step method, compiler or ``resume``; (h) ``distributed``
holds no swap, tuning or recording rule of its own: it imports none of the engine's rules. Each
rule is one function of a parsed tree, so the planted-violation test runs the same functions on
a fake tree. Known violations, being fixed elsewhere, are listed once in
:data:`KNOWN_VIOLATIONS`.
"""

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "pymc_tempering"

ARRAY_LAYERS = (f"{PACKAGE}.kernels", f"{PACKAGE}.evidence.core", f"{PACKAGE}.singular.core")
HEAVY = ("pymc", "pytensor", "arviz", "xarray", "matplotlib", "dask")
READERS = (
    f"{PACKAGE}.trace",
    f"{PACKAGE}.diagnostics",
    f"{PACKAGE}.plots",
    *(
        f"{PACKAGE}.evidence.{m}"
        for m in ("tempered", "bennett", "checks", "methods", "compare", "legs")
    ),
    f"{PACKAGE}.singular.estimators",
)
SAMPLER_SIDE = (f"{PACKAGE}.step_methods", f"{PACKAGE}.resume")
COMPILER = f"{PACKAGE}.step_methods._compile"
ENGINE = f"{PACKAGE}.engine"
DISTRIBUTED = f"{PACKAGE}.distributed"
# the engine's rules, which a placement must not hold a copy of: swaps, tuning, the records
# and stats, the sweep, and the kernels that compile the accept / swap rules
TEMPERING_RULES = tuple(
    f"{ENGINE}.{m}" for m in ("swap", "tuning", "records", "stats", "leg", "run", "explorers",
                              "auto", "variational", "discrete")
) + tuple(f"{PACKAGE}.kernels.{m}" for m in ("rules", "fused", "rwm", "mala_rungs"))  # fmt: skip
COMPILE_CALLS = ("pytensor.function", "pytensor.compile.function", "pymc.pytensorf.compile",
                 "pymc.pytensorf.compile_pymc", "pymc.compile_pymc")  # fmt: skip
COMPILE_METHODS = ("compile_pymc", "compile_fn", "compile_logp", "compile_dlogp", "compile_d2logp")

# Violations that other changes are removing: (rule, module, what). Delete an entry once its
# fix lands; test_known_violation_still_present then XPASSes to say which.
KNOWN_VIOLATIONS: set[tuple[str, str, str]] = set()


def _in(module: str, prefixes) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the module imported (dotted), or ``module.name`` of ``from module import name``
    line: int
    top_level: bool  # executed when the module is imported (not inside a function)


@dataclass(frozen=True)
class Violation:
    rule: str
    module: str
    what: str
    line: int
    why: str

    @property
    def key(self):
        return (self.rule, self.module, self.what)

    def __str__(self):
        return f"rule ({self.rule}): {self.module}:{self.line} {self.why}"


class Tree:
    """Every module of ``package`` under ``root``, parsed."""

    def __init__(self, root: Path, package: str = PACKAGE):
        self.package = package
        self.modules: dict[str, ast.Module] = {}
        self.packages: set[str] = set()
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
                self.packages.add(".".join(parts))
            self.modules[".".join(parts)] = ast.parse(path.read_text(), str(path))
        self.nodes = {module: list(ast.walk(tree)) for module, tree in self.modules.items()}
        self.defined: dict[str, set[str]] = {}  # _defined's cache

    def _base(self, module: str, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module
        parts = module.split(".")
        keep = len(parts) - node.level + (module in self.packages)
        return ".".join(parts[:keep] + ([node.module] if node.module else []))

    @functools.cached_property
    def all_imports(self) -> list[Import]:
        found = []
        for module, tree in self.modules.items():
            top = {id(n) for n in _top_level_nodes(tree)}
            for node in self.nodes[module]:
                if isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = self._base(module, node)
                    sub = [f"{base}.{alias.name}" for alias in node.names]
                    targets = [t if t in self.modules else base for t in sub]
                else:
                    continue
                for target in dict.fromkeys(targets):
                    found.append(Import(module, target, node.lineno, id(node) in top))
        return found

    def imports(self) -> list[Import]:
        """Every import of every module (module-level and deferred)."""
        return self.all_imports


def _top_level_nodes(tree: ast.Module):
    """Statements run at import: the module body, into if/try/with blocks, not into functions,
    classes' methods or ``if TYPE_CHECKING:``."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.ClassDef):
            for name in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, name, []):
                    stack.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])


# -- the rules ----------------------------------------------------------------------------------
def array_layer_imports(tree: Tree) -> list[Violation]:
    """(a) Array layers import no heavy library and no package module outside the array layers."""
    out = []
    for imp in tree.imports():
        if not _in(imp.module, ARRAY_LAYERS):
            continue
        if imp.target.split(".")[0] in HEAVY:
            why = f"imports {imp.target}: an array layer imports no {', '.join(HEAVY)}"
        elif imp.target.startswith(tree.package + ".") and not _in(imp.target, ARRAY_LAYERS):
            why = f"imports {imp.target}: an array layer imports only kernels and array cores"
        else:
            continue
        out.append(Violation("a", imp.module, imp.target, imp.line, why))
    return out


def reader_imports(tree: Tree) -> list[Violation]:
    """(b) Readers of a trace import no step method (nor ``_compile``) and no ``resume``."""
    return [
        Violation(
            "b",
            imp.module,
            imp.target,
            imp.line,
            f"imports {imp.target}: a reader of a trace imports no step method, compiler "
            "or resume module (read the trace's stats instead)",
        )  # fmt: skip
        for imp in tree.imports()
        if _in(imp.module, READERS) and _in(imp.target, SAMPLER_SIDE)
    ]


def engine_imports(tree: Tree) -> list[Violation]:
    """(g) The engine imports no heavy library and no step method, compiler or ``resume``: it
    takes the compiled log potential from its caller (engine.placement)."""
    out = []
    engine = ENGINE.replace(PACKAGE, tree.package, 1)
    sampler_side = tuple(m.replace(PACKAGE, tree.package, 1) for m in SAMPLER_SIDE)
    for imp in tree.imports():
        if not _in(imp.module, (engine,)):
            continue
        if imp.target.split(".")[0] in HEAVY:
            why = f"imports {imp.target}: the engine imports no {', '.join(HEAVY)}"
        elif _in(imp.target, sampler_side):
            why = f"imports {imp.target}: the engine imports no step method, compiler or resume"
        else:
            continue
        out.append(Violation("g", imp.module, imp.target, imp.line, why))
    return out


def distributed_rules(tree: Tree) -> list[Violation]:
    """(h) ``distributed`` places the engine's evaluations; it imports none of the engine's
    swap, tuning, sweep or recording modules (:data:`TEMPERING_RULES`): one code path."""
    distributed = DISTRIBUTED.replace(PACKAGE, tree.package, 1)
    rules = tuple(m.replace(PACKAGE, tree.package, 1) for m in TEMPERING_RULES)
    return [
        Violation(
            "h",
            imp.module,
            imp.target,
            imp.line,
            f"imports {imp.target}: a distributed run is the engine placed on Dask, with no "
            "swap, tuning or recording rule of its own",
        )  # fmt: skip
        for imp in tree.imports()
        if _in(imp.module, (distributed,)) and _in(imp.target, rules)
    ]


def _aliases(nodes) -> dict[str, str]:
    """Local name -> dotted name, from every import among a module's ``nodes``."""
    names = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:  # `import a.b` binds `a`
                    names[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def compile_calls(tree: Tree) -> list[Violation]:
    """(c) No PyTensor compilation outside ``step_methods/_compile``."""
    out = []
    compiler = COMPILER.replace(PACKAGE, tree.package, 1)
    for module in tree.modules:
        if _in(module, (compiler,)):
            continue
        aliases = _aliases(tree.nodes[module])
        for node in tree.nodes[module]:
            if not isinstance(node, ast.Call):
                continue
            name = _dotted(node.func)
            if name is None:
                continue
            head, _, rest = name.partition(".")
            full = ".".join(filter(None, [aliases.get(head, head), rest]))
            if full in COMPILE_CALLS or name.rsplit(".", 1)[-1] in COMPILE_METHODS:
                out.append(Violation("c", module, name, node.lineno,
                                     f"calls {name}: PyTensor is compiled only in "
                                     f"{COMPILER} (add a function there and call it)"))  # fmt: skip
    return out


def import_cycles(tree: Tree) -> list[Violation]:
    """(d) No cycle among the package's imports: module-level ones, and those deferred into a
    function too (a deferred import hides a cycle from the interpreter, not from the reader).
    One violation per strongly connected component, named by one closed path through it."""
    graph: dict[str, set[str]] = {m: set() for m in tree.modules}
    first_import = {}
    for imp in tree.imports():
        if imp.target in tree.modules and imp.target != imp.module:
            graph[imp.module].add(imp.target)
            first_import.setdefault((imp.module, imp.target), imp)
    out = []
    for component in _components(graph):
        path = _cycle_through(graph, component)
        steps = [
            f"{a} -> {b}" + ("" if first_import[(a, b)].top_level else " (deferred)")
            for a, b in zip(path, path[1:], strict=False)
        ]
        imp = first_import[(path[0], path[1])]
        out.append(Violation("d", imp.module, imp.target, imp.line,
                             f"imports {imp.target}, in the import cycle {'; '.join(steps)}: "
                             "move the code both need into a module below them"))  # fmt: skip
    return out


def facade_imports(tree: Tree) -> list[Violation]:
    """(f) Package modules import a name from the module that defines it, never through a
    lazy namespace (``from pymc_tempering.evidence import X``): the import graph of rules (b)
    and (d) must see the real dependency."""
    tables = {p: _lazy_table(tree, p) for p in tree.packages}
    out = []
    for module in tree.modules:
        for node in tree.nodes[module]:
            if not isinstance(node, ast.ImportFrom):
                continue
            base = tree._base(module, node)
            for alias in node.names:
                target = tables.get(base, {}).get(alias.name)
                if target is None or f"{base}.{alias.name}" in tree.modules:
                    continue
                home = f"{tree.package}.{target.replace(':', ' import ')}"
                out.append(Violation("f", module, f"{base}.{alias.name}", node.lineno,
                                     f"imports {alias.name} from the namespace {base}: "
                                     f"write `from {home}`"))  # fmt: skip
    return out


def _components(graph):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _cycle_through(graph, component):
    """A closed path from the component's first module back to it (breadth-first)."""
    start, members = component[0], set(component)
    parents, queue = {start: None}, [start]
    for node in queue:
        for child in sorted(graph[node] & members):
            if child == start:
                path = [node]
                while parents[path[-1]] is not None:
                    path.append(parents[path[-1]])
                return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, start]
            if child not in parents:
                parents[child] = node
                queue.append(child)
    raise AssertionError(f"no cycle through {component}")


def _defined(tree: Tree, module: str) -> set[str]:
    """Names bound at the top level of ``module``, its submodules, and the names of its lazy
    tables (a module with ``lazy_namespace``)."""
    names = {m.rsplit(".", 1)[1] for m in tree.modules if m.rpartition(".")[0] == module}
    for node in _top_level_nodes(tree.modules[module]):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    names.update(_lazy_table(tree, module))
    tree.defined[module] = names
    return names


def _lazy_table(tree: Tree, module: str) -> dict[str, str]:
    """``name -> "module:attribute"`` of every dict literal ``module`` passes to
    ``lazy_namespace``."""
    if module not in tree.packages:
        return {}
    dicts = {}
    for node in tree.modules[module].body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    dicts[target.id] = node.value
    table = {}
    for node in tree.nodes[module]:
        if isinstance(node, ast.Call) and _dotted(node.func) == "lazy_namespace":
            for arg in node.args[1:]:
                literal = dicts.get(arg.id) if isinstance(arg, ast.Name) else arg
                if isinstance(literal, ast.Dict):
                    table.update(ast.literal_eval(literal))
    return table


def namespace_names(tree: Tree) -> list[Violation]:
    """(e) Every name a namespace ``__init__`` lists resolves: each lazy entry
    ``"module:attribute"`` names a module of the tree that binds ``attribute``, and each name
    of an eager ``__all__`` is bound in the ``__init__``."""
    out = []
    for package in sorted(tree.packages):
        parsed, table = tree.modules[package], _lazy_table(tree, package)
        for name, target in table.items():
            module, _, attribute = target.partition(":")
            module = f"{tree.package}.{module}"
            if module not in tree.modules:
                why = f"lists {name!r} -> {target!r}, but there is no module {module}"
            elif attribute and attribute not in _defined(tree, module):
                why = f"lists {name!r} -> {target!r}, but {module} binds no {attribute!r}"
            else:
                continue
            out.append(Violation("e", package, name, 1, why))
        if table:
            continue
        bound = _defined(tree, package)
        for node in parsed.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                for name in ast.literal_eval(node.value):
                    if name not in bound:
                        out.append(Violation("e", package, name, node.lineno,
                                             f"lists {name!r} in __all__ but binds no such "
                                             "name"))  # fmt: skip
    return out


RULES = {
    "a": array_layer_imports,
    "b": reader_imports,
    "c": compile_calls,
    "d": import_cycles,
    "e": namespace_names,
    "f": facade_imports,
    "g": engine_imports,
    "h": distributed_rules,
}


# -- the tests ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def package_tree():
    return Tree(ROOT)


@pytest.fixture(scope="module")
def violations(package_tree):
    return {rule: check(package_tree) for rule, check in RULES.items()}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_layer_rule(violations, rule):
    new = [v for v in violations[rule] if v.key not in KNOWN_VIOLATIONS]
    assert not new, "\n".join(map(str, new))


@pytest.mark.parametrize(
    "key",
    [pytest.param(k, marks=pytest.mark.xfail(strict=False, reason="known: fixed elsewhere"))
     for k in sorted(KNOWN_VIOLATIONS)],
    ids=lambda k: "-".join(k),
)  # fmt: skip
def test_known_violation_fixed(violations, key):
    """XFAIL while the violation is there; XPASS once it is gone: then delete its entry."""
    assert key not in {v.key for v in violations[key[0]]}


def test_the_checker_sees_the_package(package_tree):
    assert f"{PACKAGE}.kernels.fused" in package_tree.modules
    assert f"{PACKAGE}.step_methods._compile" in package_tree.packages
    imports = package_tree.imports()
    assert any(i.module == f"{PACKAGE}.kernels.fused" and i.target.startswith("numba")
               for i in imports)  # fmt: skip


PLANTED = {
    "__init__.py": (
        "from pymc_tempering._util.lazy import lazy_namespace\n"
        "_PUBLIC = {'good': 'trace:tempering_dataset', 'gone': 'trace:nothing_here',\n"
        "           'ghost': 'nowhere:thing'}\n"
        "__getattr__, __dir__, __all__ = lazy_namespace('pymc_tempering', _PUBLIC)\n"
    ),
    "_util/__init__.py": "",
    "_util/lazy.py": "def lazy_namespace(package, names, aliases=None): ...\n",
    "kernels/__init__.py": "",
    "kernels/bad.py": "import numpy as np\nimport pymc as pm\nfrom ..trace import group\n",
    "kernels/fine.py": "import numba\nfrom pymc_tempering.kernels.bad import np\n",
    "trace.py": (
        "import xarray\n\ndef tempering_dataset(data):\n"
        "    from pymc_tempering.step_methods.exchange import stats\n    return stats\n\n"
        "def group(): ...\n"
    ),
    "step_methods/__init__.py": "",
    "step_methods/exchange/__init__.py": "__all__ = ['stats', 'missing']\nfrom . import stats\n",
    "step_methods/exchange/stats.py": "import pymc_tempering.step_methods.other\n",
    "step_methods/other.py": "from pymc_tempering.step_methods.exchange import stats\n",
    "engine/__init__.py": "",
    "engine/leg.py": (
        "import numpy\nimport pytensor\nfrom pymc_tempering.step_methods._compile import x\n"
        "from pymc_tempering.kernels import fused\nfrom pymc_tempering.engine import swap\n"
    ),
    "engine/swap.py": "",
    "distributed/__init__.py": "",
    "distributed/place.py": (
        "import dask\nfrom pymc_tempering.engine.swap import propose_swaps\n"
        "from pymc_tempering.engine.placement import Rowwise\n"
    ),
    "step_methods/_compile/__init__.py": "import pytensor\nf = pytensor.function([], [])\n",
    "evidence/__init__.py": "",
    "plots/__init__.py": "",
    "plots/uses.py": "from pymc_tempering import good\n",
    "evidence/approximations.py": (
        "import pytensor as pt\nfrom pymc.pytensorf import compile_pymc\n"
        "def f(model):\n    a = pt.function([], [])\n    b = compile_pymc([], [])\n"
        "    return model.compile_logp()\n"
    ),
}


def test_each_rule_reports_a_planted_violation(tmp_path):
    """A fake package with one violation of each rule: every rule names the module, the
    import (or call, or name) and itself; the allowed imports are not reported."""
    for name, text in PLANTED.items():
        path = tmp_path / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    tree = Tree(tmp_path)
    found = {rule: {v.key for v in check(tree)} for rule, check in RULES.items()}
    assert found["a"] == {
        ("a", f"{PACKAGE}.kernels.bad", "pymc"),
        ("a", f"{PACKAGE}.kernels.bad", f"{PACKAGE}.trace"),
    }
    assert found["b"] == {("b", f"{PACKAGE}.trace", f"{PACKAGE}.step_methods.exchange.stats")}
    assert found["c"] == {
        ("c", f"{PACKAGE}.evidence.approximations", "pt.function"),
        ("c", f"{PACKAGE}.evidence.approximations", "compile_pymc"),
        ("c", f"{PACKAGE}.evidence.approximations", "model.compile_logp"),
    }
    assert found["d"] == {
        ("d", f"{PACKAGE}.step_methods.exchange.stats", f"{PACKAGE}.step_methods.other"),
    }
    assert found["e"] == {
        ("e", PACKAGE, "gone"),
        ("e", PACKAGE, "ghost"),
        ("e", f"{PACKAGE}.step_methods.exchange", "missing"),
    }
    assert found["f"] == {("f", f"{PACKAGE}.plots.uses", f"{PACKAGE}.good")}
    assert found["g"] == {
        ("g", f"{PACKAGE}.engine.leg", "pytensor"),
        ("g", f"{PACKAGE}.engine.leg", f"{PACKAGE}.step_methods._compile"),
    }
    assert found["h"] == {
        ("h", f"{PACKAGE}.distributed.place", f"{PACKAGE}.engine.swap"),
    }
    message = str(next(v for v in RULES["a"](tree) if v.what == "pymc"))
    assert "rule (a)" in message and "kernels.bad" in message and "imports pymc" in message
    cycle = str(RULES["d"](tree)[0])
    assert "step_methods.other -> " in cycle and "rule (d)" in cycle
