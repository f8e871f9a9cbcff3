"""Every registered op declares what executors and compilers need, and they read nothing else.

Checked over all of ``OPS``, so a new op is covered as soon as it is registered: a kind from the
known set, statefulness, a CPU kernel, and the declarations its kind requires.  The modules that
run and compile graphs keep no lists of op names: no comparison there involves an op's name.
"""
import ast
import pathlib

import numpy as np
import pytest

from ops import elementwise as elementwise_kernels

import hybridtf  # (importing it registers every op)
from hybridtf.registry import OPS, Kernel, opdef

ALL_OPS = sorted(OPS)


def _op(name):
    return OPS[name]


def test_the_registry_is_populated():
    assert len(OPS) > 150
    assert {"add", "matmul", "reduce_sum", "while_loop", "reshape"} <= set(OPS)


@pytest.mark.parametrize("name", ALL_OPS)
def test_every_op_declares_kind_statefulness_and_a_cpu_kernel(name):
    op = _op(name)
    assert op.name == name
    assert op.kind in opdef.KINDS
    assert isinstance(op.stateful, bool)
    assert callable(op.infer)
    assert op.num_outputs is None or (isinstance(op.num_outputs, int) and op.num_outputs >= 0)
    assert "cpu" in op.kernels
    for kernel in op.kernels.values():
        assert isinstance(kernel, Kernel) and callable(kernel.run)


@pytest.mark.parametrize("name", ALL_OPS)
def test_kind_specific_declarations(name):
    op = _op(name)
    if op.kind == "elementwise":
        assert op.scalar is elementwise_kernels.SCALAR_OPS[op.scalar.name]
        assert op.num_outputs == 1
    else:
        assert op.scalar is None
    if op.kind == "reduction":
        assert op.reduction in opdef.REDUCTIONS and op.num_outputs == 1 and not op.stateful
    elif op.kind == "opaque" and op.reduction is not None:
        assert op.reduction in opdef.OPAQUE_REDUCTIONS and op.num_outputs == 1
    else:
        assert op.reduction is None
    if op.kind == "control_flow":
        assert op.subgraphs and all(isinstance(key, str) for key in op.subgraphs)
        assert op.control_flow in (None,) + opdef.CONTROL_FLOW
    else:
        assert op.subgraphs == () and op.control_flow is None
    if op.kind in ("view", "alias"):
        # A compiler computes these without the kernel: nothing may need to be checked.
        assert op.check_values is None and op.num_outputs == 1 and not op.stateful


@pytest.mark.parametrize("name", ALL_OPS)
def test_flags_are_consistent(name):
    op = _op(name)
    assert isinstance(op.float_safe_checks, bool) and isinstance(op.random_stream, bool)
    assert isinstance(op.shape_only, bool)
    if op.float_safe_checks:
        assert op.kind == "elementwise" and op.check_values is not None
    if op.random_stream:
        assert op.stateful   # drawn in program order, a new stream per call
    if op.shape_only:
        assert not op.stateful


@pytest.mark.parametrize("name", ALL_OPS)
def test_cpu_kernel_forms_fit_the_op(name):
    op = _op(name)
    cpu = op.kernels["cpu"]
    if cpu.ufunc is not None or cpu.literal_pays is not None or cpu.flat_loop is not None:
        assert op.kind == "elementwise"
    if cpu.flat_loop is not None:
        assert op.scalar.arity == 2
    if cpu.rows is not None:
        assert cpu.direct is not None
    if cpu.direct_args is not None:
        assert cpu.direct is not None or cpu.rows is not None


ELEMENTWISE_WITH_UFUNC = [name for name in ALL_OPS if OPS[name].kernels["cpu"].ufunc is not None]


@pytest.mark.parametrize("name", ELEMENTWISE_WITH_UFUNC)
def test_ufunc_form_computes_what_the_kernel_computes(name):
    op = _op(name)
    dtype = np.dtype("float64" if "float64" in op.scalar.dtypes else op.scalar.dtypes[-1])
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(0.5, 2.0, 5).astype(dtype) for _ in range(op.scalar.arity)]
    if op.scalar.arity == 3:   # select: a bool condition first
        arrays[0] = np.array([True, False, True, True, False])
    if name == "polygamma":
        arrays[0] = np.array([0.0, 1.0, 2.0, 1.0, 0.0], dtype)
    want = op.kernels["cpu"].run(arrays, None)
    with np.errstate(all="ignore"):
        got = op.kernels["cpu"].ufunc(dtype)(*arrays)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", [n for n in ALL_OPS if OPS[n].kind == "reduction"])
def test_declared_accumulator_is_what_the_kernel_computes(name):
    op = _op(name)
    x = np.random.default_rng(1).normal(size=(3, 4))
    want = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[op.reduction](x, 1)
    got = op.kernels["cpu"].run([x], {"axis": [1], "keepdims": False})
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_view_and_alias_kinds_are_what_their_kernels_compute():
    x = np.arange(6.0).reshape(2, 3)
    for name in [n for n in ALL_OPS if OPS[n].kind == "alias"]:
        assert OPS[name].kernels["cpu"].run([x], None) is x
    for name in [n for n in ALL_OPS if OPS[n].kind == "view"]:
        out = OPS[name].kernels["cpu"].run([x], {"shape": [3, 2]})
        np.testing.assert_array_equal(out, x.reshape(3, 2))


def test_a_fill_folds_as_a_zero_strided_view_of_its_value():
    cpu = OPS["fill_like"].kernels["cpu"]
    x, attrs = np.zeros((300, 400)), {"value": 2.5, "dtype": np.dtype(np.float32)}
    whole, constant = cpu.run([x], attrs), cpu.constant([x], attrs)
    np.testing.assert_array_equal(constant, whole)
    assert constant.dtype == whole.dtype == np.float32
    assert constant.strides == (0, 0) and whole.flags.writeable   # a tensor's own array


def test_shape_only_ops_read_no_values():
    # Their kernels give the same result for any values of the input's shape and dtype.
    attrs = {"value": 7, "dtype": np.dtype(np.int32)}
    for name in [n for n in ALL_OPS if OPS[n].shape_only]:
        run = OPS[name].kernels["cpu"].run
        a = run([np.zeros((2, 3))], attrs)
        b = run([np.broadcast_to(np.float64(5.0), (2, 3))], attrs)
        np.testing.assert_array_equal(a, b)


# ---- the compiler and the executors read entries, not op names ----------------------------------
_ROOT = pathlib.Path(hybridtf.__file__).parent
_READERS = sorted(
    [p for p in (_ROOT / "compiler").rglob("*.py")]
    + [_ROOT / "graph" / "interpreter.py", _ROOT / "graph" / "func_graph.py",
       _ROOT / "eager" / "execute.py"])


def _is_op_name(node):
    """``<anything>.op.name`` or ``op.name``."""
    return (isinstance(node, ast.Attribute) and node.attr == "name"
            and ((isinstance(node.value, ast.Name) and node.value.id == "op")
                 or (isinstance(node.value, ast.Attribute) and node.value.attr == "op")))


def _is_attrs(node):
    """``attrs`` or ``<anything>.attrs``."""
    return (isinstance(node, ast.Name) and node.id == "attrs") or (
        isinstance(node, ast.Attribute) and node.attr == "attrs")


def decisions_by_name(source):
    """Line numbers where ``source`` tells ops apart by name or by attribute keys: comparisons
    with an op's name, tables indexed by it, the name kept in a variable, "key" in attrs."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left] + list(node.comparators)
            if any(_is_op_name(o) for o in operands):
                found.append(node.lineno)   # op.name == "...", op.name in NAMES
            if isinstance(node.left, ast.Constant) and any(_is_attrs(o)
                                                           for o in node.comparators):
                found.append(node.lineno)   # "key" in attrs
        elif isinstance(node, ast.Subscript) and _is_op_name(node.slice):
            found.append(node.lineno)       # TABLE[op.name]
        elif isinstance(node, ast.Assign) and _is_op_name(node.value):
            found.append(node.lineno)       # name = op.name
    return sorted(found)


@pytest.mark.parametrize("path", _READERS, ids=lambda p: str(p.relative_to(_ROOT)))
def test_no_op_name_or_attribute_key_tests_in_compilers_and_executors(path):
    found = decisions_by_name(path.read_text())
    assert not found, (f"{path.name} decides what an op is by its name or its attribute keys at "
                       f"lines {found}: declare it in the op's registry entry instead.")


def test_the_name_check_finds_each_form_of_decision():
    source = """
if node.op.name == "matmul": pass
if op.name in _REDUCTIONS: pass
start = _START[node.op.name]
name = node.op.name
if "counter" in node.attrs: pass
if "body" in attrs: pass
fail(op.name, f"{op.name}: bad")
"""
    assert decisions_by_name(source) == [2, 3, 4, 5, 6, 7]
