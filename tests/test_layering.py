"""The package's layers: imports go down only, never inside functions, and form no cycle.

Layers, lowest first (see the README's layout): kernels (``ops``), framework, registry, eager
execution, graphs, compiler, public ops (``api``), AutoGraph, ``tf.function``, and everything
built on them.  A module may import its own layer and the layers below it.
"""
import ast
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LAYERS = [
    ("kernels", ("ops",)),
    ("framework", ("hybridtf.framework",)),
    ("registry", ("hybridtf.registry",)),
    ("eager", ("hybridtf.eager",)),
    ("graph", ("hybridtf.graph",)),
    ("compiler", ("hybridtf.compiler",)),
    ("api", ("hybridtf.api",)),
    ("autograph", ("hybridtf.autograph",)),
    ("function", ("hybridtf.polymorphic_function", "hybridtf.execution_tiers")),
]
TOP = len(LAYERS)   # every other hybridtf module: built on all the layers above

# Function-level imports of hybridtf modules that remain, each with the reason.  All four are
# inside Keras, where a model is built from layers and models and layers save and load
# themselves: whole-model saving builds models from configs, and configs name models.
FUNCTION_IMPORTS_ALLOWED = {
    ("hybridtf.keras.layers", "hybridtf.keras.models"):
        "layers.deserialize of a 'Sequential' / 'Model' config builds a model, and models are "
        "made of layers",
    ("hybridtf.keras.layers.base_layer", "hybridtf.keras.saving"):
        "Layer.save_weights / load_weights delegate to keras.saving, which also saves whole "
        "models (built on Layer)",
    ("hybridtf.keras.models", "hybridtf.keras.model_saving"):
        "Model.save and keras.models.load_model delegate to the .keras file format, which "
        "rebuilds Model objects",
    ("hybridtf.keras.model_saving", "hybridtf.keras.models"):
        "reading a .keras file constructs Model / Sequential; the other half of the pair above",
}


def _modules():
    found = {}
    for package in ("hybridtf", "ops"):
        for directory, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(directory, name)
                    dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    found[dotted[:-len(".__init__")] if dotted.endswith(".__init__")
                          else dotted] = path
    return found


MODULES = _modules()


def layer_of(module):
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return TOP


def _imported(module, node):
    """The project modules an import statement needs: ``from package import submodule`` needs
    the submodule, and a package's ``__init__`` only when a name defined there is imported.
    (Python runs every enclosing package's ``__init__`` first in any case; a cycle through one
    matters only where a name it defines is needed while it is still loading.)"""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:   # the project uses absolute imports only
        names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES
                 else node.module for a in node.names]
    return {n for n in names if n in MODULES and n != module}


def _imports(module):
    """(module-level imports, function-level imports) of one module."""
    tree = ast.parse(open(MODULES[module]).read())
    top, inner = set(), set()

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                (inner if nested else top).update(_imported(module, child))
            else:
                visit(child, nested)
    visit(tree, False)
    return top, inner


IMPORTS = {m: _imports(m) for m in MODULES}


def test_modules_import_no_higher_layer():
    upward = sorted(f"{m} -> {n}" for m, (top, _) in IMPORTS.items() for n in top
                    if layer_of(n) > layer_of(m))
    assert not upward, "module-level imports of a higher layer:\n" + "\n".join(upward)


def test_no_project_imports_inside_functions():
    found = sorted(f"{m} -> {n}" for m, (_, inner) in IMPORTS.items() for n in inner
                   if (m, n) not in FUNCTION_IMPORTS_ALLOWED)
    assert not found, "hybridtf modules imported inside functions:\n" + "\n".join(found)


def test_allowlist_is_current():
    stale = sorted(f"{m} -> {n}" for m, n in FUNCTION_IMPORTS_ALLOWED
                   if n not in IMPORTS.get(m, ((), ()))[1])
    assert not stale, "allowed function-level imports that no longer exist:\n" + "\n".join(stale)


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
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
    return found


def test_no_import_cycle_between_modules():
    graph = {m: top for m, (top, _) in IMPORTS.items()}
    cycles = _cycles(graph)
    assert not cycles, "module-level import cycles:\n" + "\n".join(map(str, cycles))


def test_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("rank", range(len(LAYERS)), ids=[name for name, _ in LAYERS])
def test_each_layer_imports_alone(rank):
    """A fresh interpreter imports every module of a layer and of the layers below (without the
    package's ``__init__``, which loads everything) and loads nothing of a higher layer."""
    wanted = sorted(m for m in MODULES if layer_of(m) <= rank)
    script = textwrap.dedent(f"""
        import sys, types
        package = types.ModuleType("hybridtf")
        package.__path__ = [{os.path.join(ROOT, "hybridtf")!r}]
        sys.modules["hybridtf"] = package
        sys.path.insert(0, {ROOT!r})
        import importlib
        for name in {wanted!r}:
            importlib.import_module(name)
        print("\\n".join(sorted(m for m in sys.modules
                                if m.startswith(("hybridtf.", "ops.")) or m == "ops")))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    higher = [m for m in result.stdout.split() if layer_of(m) > rank]
    assert not higher, f"importing the {LAYERS[rank][0]} layer loaded {higher}"


def test_public_ops_namespace_before_and_after_the_api_loads():
    """Gradient rules reach the public ops through namespaces the api binds when it loads; used
    before that, a namespace says so instead of failing obscurely."""
    script = textwrap.dedent(f"""
        import sys, types
        package = types.ModuleType("hybridtf")
        package.__path__ = [{os.path.join(ROOT, "hybridtf")!r}]
        sys.modules["hybridtf"] = package
        sys.path.insert(0, {ROOT!r})
        from hybridtf.registry import public_ops
        try:
            public_ops.math_ops.reduce_sum
        except RuntimeError as err:
            print("unbound:", err)
        import hybridtf.api
        from hybridtf.api import math_ops
        print("bound:", public_ops.math_ops.reduce_sum is math_ops.reduce_sum)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "unbound: Gradient rule used hybridtf.api.math_ops.reduce_sum before" in result.stdout
    assert "bound: True" in result.stdout
