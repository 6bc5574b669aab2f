"""The package layout is the architecture (issue 21): read from tinytf's own imports with an AST walk that also
sees imports inside functions.

* no import cycles;
* the model core (``tinytf/*.py``) imports nothing from the laboratory (``lab/``) or the figures (``viz/``), and
  no core module imports the package facade ``tinytf`` itself; the laboratory imports nothing from ``viz/``;
* no import of a tinytf module hidden inside a function, except the few below, each for a reason that is not a
  cycle;
* no function or method longer than 80 lines.

``tinytf/__init__.py`` (the facade that re-exports the core and the laboratory, so chapters can write
``tinytf.train``) and ``tinytf/__main__.py`` (the command line) sit above all three layers.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "tinytf"
MAX_FUNCTION_LINES = 80

# (module, imported tinytf module) pairs allowed inside a function, with the reason.
LAZY_IMPORTS_ALLOWED = {
    # the live panel imports ipywidgets (and anywidget), which only a live kernel has; `import tinytf.viz` must
    # work without them (the book build, nbval and the static figures never make a panel)
    ("tinytf.viz", "tinytf.viz.panel"),
}
TOP = {"tinytf", "tinytf.__main__"}  # the facade and the command line: above every layer


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(mod: str) -> str:
    if mod in TOP:
        return "top"
    parts = mod.split(".")
    return parts[1] if len(parts) >= 2 and parts[1] in ("lab", "viz") else "core"


def targets(mod: str, path: Path, node) -> list:
    """The tinytf modules an import statement of ``mod`` imports (a name imported from a package counts as
    its submodule when there is one, else as the package)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names if a.name.split(".")[0] == "tinytf"]
    else:
        if node.level:
            base = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            src = ".".join(base + ([node.module] if node.module else []))
        else:
            src = node.module or ""
        if src.split(".")[0] != "tinytf":
            return []
        names = [f"{src}.{a.name}" if f"{src}.{a.name}" in MODULES else src for a in node.names]
    out = []
    for n in names:
        while n not in MODULES and "." in n:
            n = n.rsplit(".", 1)[0]
        if n != mod:
            out.append(n)
    return out


def read_imports():
    """{module: {imported module: [line, ...]}} and the list of (module, imported, line) inside functions."""
    edges, in_functions = {}, []
    for mod, path in MODULES.items():
        edges[mod] = {}

        def visit(node, in_function):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in targets(mod, path, child):
                        edges[mod].setdefault(target, []).append(child.lineno)
                        if in_function:
                            in_functions.append((mod, target, child.lineno))
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(ast.parse(path.read_text(), str(path)), False)
    return edges, in_functions


EDGES, IN_FUNCTIONS = read_imports()


def cycles(edges) -> list:
    """The strongly connected components with more than one module (Tarjan), or a module importing itself."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return found


def test_the_walk_sees_the_package():
    assert {"tinytf.attention", "tinytf.mla", "tinytf.lab.train", "tinytf.viz.binding"} <= set(MODULES)
    assert "tinytf.attention" in EDGES["tinytf.mla"] and "tinytf.ffn" in EDGES["tinytf.moe"]
    # the walk would see an import hidden in a function (checked on a made-up module)
    tree = ast.parse("def f():\n    from .attention import Attention\n")
    assert targets("tinytf.mla", PACKAGE / "mla.py", tree.body[0].body[0]) == ["tinytf.attention"]


def test_no_import_cycles():
    assert cycles(EDGES) == []


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b": [1]}, "b": {"c": [1]}, "c": {"a": [1]}, "d": {"a": [1]}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("low, high", [("core", "lab"), ("core", "viz"), ("core", "top"), ("lab", "viz"),
                                       ("lab", "top"), ("viz", "top")])
def test_no_import_points_up_the_layers(low, high):
    up = [(mod, target, lines) for mod, targets_ in EDGES.items() if layer(mod) == low
          for target, lines in targets_.items() if layer(target) == high]
    assert up == [], f"{low} modules import {high} modules"


def test_no_tinytf_import_hidden_in_a_function():
    hidden = [(mod, target, line) for mod, target, line in IN_FUNCTIONS if (mod, target) not in LAZY_IMPORTS_ALLOWED]
    assert hidden == [], "move these imports to the top of their module (or the shared piece to a lower module)"
    assert LAZY_IMPORTS_ALLOWED <= {(mod, target) for mod, target, _ in IN_FUNCTIONS}, "a stale allow-list entry"



def test_no_function_longer_than_80_lines():
    long = []
    for mod, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append((f"{mod}.{node.name}", n))
    assert long == [], f"split these into named helpers (at most {MAX_FUNCTION_LINES} lines each)"
