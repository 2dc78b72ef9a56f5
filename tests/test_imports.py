"""The package's import rules, read from the source with ``ast`` (imports inside functions included):
the layers ``numbers``/``models`` < ``layout``, ``geometry`` < ``provers``, ``search``, ``construct`` < commands, and
an independent checker."""
import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "exactform"


def module_name(path: Path) -> str:
    parts = ("exactform",) + path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imports(name: str) -> set[str]:
    """Every module ``name`` imports, anywhere in its file: exactform modules resolved to the
    module (or package) imported, other imports as their top-level name."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "exactform":
                while target not in MODULES:
                    target = target.rpartition(".")[0]
            else:
                target = target.split(".")[0]
            found.add(target)
    return found


GRAPH = {name: imports(name) for name in MODULES}


def inside(name: str, *packages: str) -> bool:
    return any(name == f"exactform.{p}" or name.startswith(f"exactform.{p}.") for p in packages)


def offending(importers: tuple[str, ...], imported: tuple[str, ...]) -> list[tuple[str, str]]:
    return sorted((m, t) for m, ts in GRAPH.items() if inside(m, *importers) for t in ts if inside(t, *imported))


def test_imports_are_read():
    """The reader sees module-level, relative and function-level imports."""
    assert "exactform.geometry.bounds" in GRAPH["exactform.provers.symbolic"]
    assert "exactform.checker.smt" in GRAPH["exactform.checker.construction"]       # inside a function
    assert "exactform.layout" in GRAPH["exactform.construct.maxout_to_transformer"]
    assert {"flint", "fractions"} <= GRAPH["exactform.numbers"]


def test_provers_and_construct_do_not_import_each_other():
    assert offending(("provers", "search"), ("construct",)) == []
    assert offending(("construct",), ("provers", "search")) == []


def test_geometry_and_layout_sit_below_prove_and_construct():
    assert offending(("geometry", "layout"), ("provers", "search", "construct", "commands", "cli")) == []


def test_layout_is_standard_library_only():
    assert GRAPH["exactform.layout"] <= set(sys.stdlib_module_names)


def test_models_and_numbers_import_nothing_of_the_command_line():
    assert offending(("models", "numbers"), ("commands", "cli", "driver")) == []


CHECKER = {n for n in MODULES if inside(n, "checker")}
"""The checker package: ``check --junit`` writes its report with ``checker.report``, standard library only too."""


def closure(name: str) -> set[str]:
    seen, todo = set(), [name]
    while todo:
        for t in GRAPH.get(todo.pop(), ()):
            if t.startswith("exactform") and t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


@pytest.mark.parametrize("name", sorted(CHECKER))
def test_checker_imports_only_the_standard_library(name):
    allowed = set(sys.stdlib_module_names) | CHECKER | {"exactform"} | ({"z3"} if name == "exactform.checker.smt" else set())
    assert {t for t in GRAPH[name] if t not in allowed} == set()
    for module in closure(name):
        solver = {"z3"} if module == "exactform.checker.smt" else set()
        assert {t for t in GRAPH[module] if not t.startswith("exactform") and t not in allowed | solver} == set(), module
    assert closure(name) <= CHECKER | {"exactform"}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with a cycle (Tarjan), each sorted."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"a"}}) == [["a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    """No cycles anywhere, the checker's files included (``command`` loads the others lazily; none imports it)."""
    assert cycles(GRAPH) == []
