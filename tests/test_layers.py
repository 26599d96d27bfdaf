"""The package's layers, read from its imports: production code never imports the
emulator or the demo, and no module imports itself back through others.

The graph is built from the source (:mod:`ast`), not from ``sys.modules``, so
every import counts wherever it is written: one inside a function only moves a
circle to run time, and one under ``if TYPE_CHECKING:`` is still two modules
that cannot be read one without the other. ``import a.b`` is an edge to
``a.b``; ``from a.b import c`` is an edge to ``a.b`` (whose ``__init__`` it
reads ``c`` from) and, when ``c`` is a module, to ``a.b.c``. A package
importing its own submodules (``from a.b import c`` in ``a/b/__init__.py``) is
no edge back to itself.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "airflow_quota_provider"

TESTING_TOOLS = ("emulator", "demo")
"""Subpackages that only tests and the demo may use: never production code."""
MAY_USE_TESTING_TOOLS = (
    f"{PACKAGE}.emulator",  # and its modules
    f"{PACKAGE}.demo",
    f"{PACKAGE}.cli.emulator",  # `airflow-quota emulator`: starts the local endpoint
    f"{PACKAGE}.cli.demo",  # `airflow-quota demo`: runs the demo
)


@dataclass(frozen=True)
class Import:
    """One module's import of another, where it is written."""

    importer: str
    imported: str
    line: int
    lazy: bool
    """Inside a function: runs when it is called, not when the module is loaded."""

    def __str__(self) -> str:
        where = "inside a function, " if self.lazy else ""
        return f"{self.importer} imports {self.imported} ({where}line {self.line})"


Graph = Mapping[str, Mapping[str, Import]]
"""Module -> the modules it imports, each with the first line that does."""


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` (found in ``root``) by its dotted name."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


class _ImportVisitor(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, known: Container[str]) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.known = known
        self.depth = 0
        self.found: list[Import] = []

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._visit_function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._visit_function(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        source = self._absolute(node.module, node.level)
        if source != self.module:
            self._add(source, node)
        for alias in node.names:
            self._add(f"{source}.{alias.name}", node)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def _absolute(self, module: str | None, level: int) -> str:
        if not level:
            return module or ""
        parts = self.package.split(".")
        base = parts[: len(parts) - level + 1]
        return ".".join([*base, module] if module else base)

    def _add(self, name: str, node: ast.stmt) -> None:
        if name in self.known:
            self.found.append(Import(self.module, name, node.lineno, self.depth > 0))


def package_imports(root: Path, package: str) -> list[Import]:
    """Every import of one module of ``package`` by another, top-level or lazy."""
    modules = module_names(root, package)
    found: list[Import] = []
    for name, path in modules.items():
        visitor = _ImportVisitor(name, path.name == "__init__.py", modules)
        visitor.visit(ast.parse(path.read_text(), filename=str(path)))
        found.extend(visitor.found)
    return found


def import_graph(imports: Iterable[Import]) -> Graph:
    graph: dict[str, dict[str, Import]] = {}
    for edge in imports:
        graph.setdefault(edge.importer, {}).setdefault(edge.imported, edge)
    return graph


def circles(graph: Graph) -> list[frozenset[str]]:
    """The import circles: each set of modules that all reach one another (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph.get(module, {}):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            members: set[str] = set()
            while not members or module not in members:
                members.add(stack.pop())
            if len(members) > 1:
                found.append(frozenset(members))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found, key=sorted)


def shortest_loop(graph: Graph, members: frozenset[str]) -> list[Import]:
    """One shortest way around a circle, import by import, from its first module."""
    start = min(members)
    came_by: dict[str, Import] = {}
    queue = deque([start])
    while queue:
        module = queue.popleft()
        for target, edge in sorted(graph.get(module, {}).items()):
            if target == start:
                loop = [edge]
                while loop[0].importer != start:
                    loop.insert(0, came_by[loop[0].importer])
                return loop
            if target in members and target not in came_by:
                came_by[target] = edge
                queue.append(target)
    raise AssertionError(f"no loop through {start} in {sorted(members)}")


def describe(graph: Graph, members: frozenset[str]) -> str:
    loop = "\n".join(f"    {edge}" for edge in shortest_loop(graph, members))
    return f"circle of {len(members)} modules: {', '.join(sorted(members))}\n  for one:\n{loop}"


def package_of(module: str) -> str:
    """The provider's subpackage (or top-level module) that ``module`` belongs to."""
    return ".".join(module.split(".")[:2])


def package_graph(imports: Iterable[Import]) -> Graph:
    """The imports between the provider's subpackages, each pair with its first import."""
    graph: dict[str, dict[str, Import]] = {}
    for edge in imports:
        importer, imported = package_of(edge.importer), package_of(edge.imported)
        if importer != imported and imported != PACKAGE:
            graph.setdefault(importer, {}).setdefault(imported, edge)
    return graph


def describe_packages(graph: Graph, members: frozenset[str]) -> str:
    """A circle of packages, with one module import for each step around it."""
    steps, module = [], min(members)
    for _ in range(len(members) + 1):
        target = min(t for t in graph[module] if t in members)
        steps.append(f"    {graph[module][target]}")
        module = target
        if module == min(members):
            break
    return f"circle of {len(members)} packages: {', '.join(sorted(members))}\n" + "\n".join(steps)


def uses_testing_tool(edge: Import) -> bool:
    tools = tuple(f"{PACKAGE}.{tool}" for tool in TESTING_TOOLS)
    return _within(edge.imported, tools) and not _within(edge.importer, MAY_USE_TESTING_TOOLS)


def _within(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == prefix or module.startswith(f"{prefix}.") for prefix in prefixes)


def _lines(items: Iterable[object]) -> Iterator[str]:
    return (f"  {item}" for item in items)


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return package_imports(ROOT, PACKAGE)


@pytest.fixture(scope="module")
def graph(imports: list[Import]) -> Graph:
    return import_graph(imports)


def test_production_never_imports_the_emulator_or_the_demo(imports: list[Import]) -> None:
    bad = [edge for edge in imports if uses_testing_tool(edge)]
    assert not bad, "production code imports a testing tool:\n" + "\n".join(_lines(bad))


def test_production_never_imports_a_moved_module(imports: list[Import]) -> None:
    from airflow_quota_provider.moved import MOVED

    bad = [edge for edge in imports if edge.imported in MOVED]
    assert not bad, "production code imports a deprecated path:\n" + "\n".join(_lines(bad))


def test_no_import_circles(graph: Graph) -> None:
    new = circles(graph)
    found = "\n".join(describe(graph, members) for members in new)
    assert not new, f"modules import each other in a circle:\n{found}"


def test_no_import_circles_between_packages(imports: list[Import]) -> None:
    graph = package_graph(imports)
    new = circles(graph)
    found = "\n".join(describe_packages(graph, members) for members in new)
    assert not new, f"packages import each other in a circle:\n{found}"


DAEMON = f"{PACKAGE}.pool_manager"
"""The pool manager's loop, lease and config watch: started by its command, read by no one."""
MAY_IMPORT_THE_DAEMON = (DAEMON, f"{PACKAGE}.cli")


def test_only_its_command_imports_the_daemon(imports: list[Import]) -> None:
    """The view, metrics, the backends, operators, sensors and triggers read the pools
    backend (``airflow_pools``), never the daemon that runs it."""
    bad = [
        edge
        for edge in imports
        if _within(edge.imported, (DAEMON,)) and not _within(edge.importer, MAY_IMPORT_THE_DAEMON)
    ]
    assert not bad, "imports of the pool manager daemon:\n" + "\n".join(_lines(bad))


METRICS_READS = (f"{PACKAGE}.core",)
"""What :mod:`metrics` may import of the provider: the core's read-model records."""


def test_metrics_read_only_the_core(imports: list[Import]) -> None:
    bad = [
        edge
        for edge in imports
        if edge.importer == f"{PACKAGE}.metrics" and not _within(edge.imported, METRICS_READS)
    ]
    assert not bad, "metrics imports more than the core's records:\n" + "\n".join(_lines(bad))


def test_the_package_is_read() -> None:
    modules = module_names(ROOT, PACKAGE)
    assert {f"{PACKAGE}.cli", f"{PACKAGE}.emulator.world", f"{PACKAGE}.core.cycle"} <= set(modules)


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_circle_is_found_and_shown(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg import a\n",
            "pkg/a.py": "from pkg.b import thing\n",
            "pkg/b.py": "import typing\nif typing.TYPE_CHECKING:\n    from .c import C\n",
            "pkg/c.py": "def later() -> None:\n    import pkg.a\n",
            "pkg/d.py": "from pkg import a\n",
        },
    )
    graph = import_graph(package_imports(tmp_path, "pkg"))

    assert circles(graph) == [frozenset({"pkg.a", "pkg.b", "pkg.c"})]
    assert describe(graph, frozenset({"pkg.a", "pkg.b", "pkg.c"})) == (
        "circle of 3 modules: pkg.a, pkg.b, pkg.c\n"
        "  for one:\n"
        "    pkg.a imports pkg.b (line 1)\n"
        "    pkg.b imports pkg.c (line 3)\n"
        "    pkg.c imports pkg.a (inside a function, line 2)"
    )


def test_a_sibling_imported_through_its_package_is_a_circle_with_the_init(
    tmp_path: Path,
) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "from pkg.sub import one\n",
            "pkg/sub/one.py": "from pkg.sub import two\n",
            "pkg/sub/two.py": "",
        },
    )
    graph = import_graph(package_imports(tmp_path, "pkg"))

    assert circles(graph) == [frozenset({"pkg.sub", "pkg.sub.one"})]


def test_a_circle_of_packages_is_found_and_shown(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/view/__init__.py": "",
            "pkg/view/page.py": "from pkg.daemon.loop import cycle\n",
            "pkg/daemon/__init__.py": "",
            "pkg/daemon/loop.py": "from pkg.daemon import figures\n",
            "pkg/daemon/figures.py": "def later() -> None:\n    from pkg.view import text\n",
            "pkg/view/text.py": "",
            "pkg/core.py": "",
            "pkg/other.py": "from pkg import core\n",
        },
    )
    imports = package_imports(tmp_path, "pkg")
    graph = package_graph(imports)

    assert circles(import_graph(imports)) == []  # no circle of modules
    assert circles(graph) == [frozenset({"pkg.daemon", "pkg.view"})]
    assert describe_packages(graph, frozenset({"pkg.daemon", "pkg.view"})) == (
        "circle of 2 packages: pkg.daemon, pkg.view\n"
        "    pkg.daemon.figures imports pkg.view (inside a function, line 2)\n"
        "    pkg.view.page imports pkg.daemon.loop (line 1)"
    )


def test_lazy_imports_of_testing_tools_are_found(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            f"{PACKAGE}/__init__.py": "",
            f"{PACKAGE}/emulator/__init__.py": "",
            f"{PACKAGE}/emulator/world.py": "",
            f"{PACKAGE}/demo/__init__.py": "from ..emulator import world\n",
            f"{PACKAGE}/cli/__init__.py": "",
            f"{PACKAGE}/cli/demo.py": "from airflow_quota_provider.demo import *\n",
            f"{PACKAGE}/view.py": f"def f() -> None:\n    import {PACKAGE}.emulator.world\n",
        },
    )
    bad = [edge for edge in package_imports(tmp_path, PACKAGE) if uses_testing_tool(edge)]

    assert [str(edge) for edge in bad] == [
        f"{PACKAGE}.view imports {PACKAGE}.emulator.world (inside a function, line 2)"
    ]
