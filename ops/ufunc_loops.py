"""NumPy ufuncs whose inner loops load from the kernel cache.

A Numba ``@vectorize`` ufunc compiles its inner-loop wrapper (the function NumPy calls with the
operands' pointers, strides and length) in every process: about 40 ms per op and dtype, paid
again by every new process's first eager ops and first interpreted steps.  Here the inner loop
is written in Python and compiled by ``ops.kernel_cache.cfunc`` -- cached like every kernel, so
a new process loads it in about a millisecond -- and NumPy builds the ufunc from its address
(``numba.np.ufunc._internal.fromfunc``, what Numba's own ufunc builder calls).

A loop calls the op's scalar function on each element: over C-contiguous vectors when every
stride is the item size, or a binary op's other operand is one broadcast value (stride 0) --
loops LLVM vectorizes -- else at each operand's byte stride (reversed views have negative ones).
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic
from numba.np.ufunc import _internal

from ops.kernel_cache import cfunc

# void loop(char **args, npy_intp const *dimensions, npy_intp const *steps, void *data)
LOOP_SIGNATURE = types.void(types.CPointer(types.voidptr), types.CPointer(types.intp),
                            types.CPointer(types.intp), types.voidptr)


def _address(builder, pointer, offset):
    return builder.gep(builder.bitcast(pointer, ir.IntType(8).as_pointer()), [offset])


@intrinsic
def load_at(typingctx, pointer, offset, kind):
    """The value of type ``kind`` (a Numba number class: ``types.float32``) at byte ``offset``
    of ``pointer``."""
    value_type = kind.dtype

    def codegen(context, builder, signature, args):
        model = context.data_model_manager[value_type]
        address = builder.bitcast(_address(builder, args[0], args[1]),
                                  model.get_data_type().as_pointer())
        return model.from_data(builder, builder.load(address))
    return value_type(pointer, offset, kind), codegen


@intrinsic
def store_at(typingctx, pointer, offset, value):
    """Stores ``value`` at byte ``offset`` of ``pointer``."""
    def codegen(context, builder, signature, args):
        model = context.data_model_manager[value]
        address = builder.bitcast(_address(builder, args[0], args[1]),
                                  model.get_data_type().as_pointer())
        builder.store(model.as_data(builder, args[2]), address)
        return context.get_dummy_value()
    return types.void(pointer, offset, value), codegen


def loop_source(name, input_dtypes, output_dtype, scalar="f"):
    """The source of the inner loop ``name`` (a Python function of ``LOOP_SIGNATURE``) calling
    the scalar function named ``scalar`` on inputs of ``input_dtypes`` (NumPy dtype names) and
    storing ``output_dtype``: the module holding it imports that function, ``np``, ``carray``,
    ``types``, ``load_at`` and ``store_at``."""
    n = len(input_dtypes)
    kinds = [_kind(d) for d in list(input_dtypes) + [output_dtype]]
    sizes = [np.dtype(d).itemsize for d in list(input_dtypes) + [output_dtype]]
    convert = "np.bool_" if output_dtype == "bool" else f"np.{output_dtype}"
    lines = [f"def {name}(args, dims, steps, data):", "    n = dims[0]",
             f"    s{n} = steps[{n}]"]
    # Vector forms, which LLVM vectorizes: every operand contiguous, or (two inputs) one of
    # them a broadcast scalar (stride 0: ``x * 0.5``), the output contiguous.
    for pattern in _VECTOR_FORMS.get(n, ["c" * n]):
        condition = " and ".join([f"s{n} == {sizes[n]}"] + [
            f"steps[{k}] == {sizes[k] if form == 'c' else 0}" for k, form in enumerate(pattern)])
        lines.append(f"    if {condition}:")
        lines.append(f"        out = carray(args[{n}], n, {kinds[n]})")
        for k, form in enumerate(pattern):
            lines.append(f"        v{k} = carray(args[{k}], n, {kinds[k]})" if form == "c"
                         else f"        v{k} = load_at(args[{k}], 0, {kinds[k]})")
        values = ", ".join(f"v{k}[i]" if form == "c" else f"v{k}"
                           for k, form in enumerate(pattern))
        lines += ["        for i in range(n):",
                  f"            out[i] = {convert}({scalar}({values}))", "        return"]
    lines += [f"    p{k} = args[{k}]" for k in range(n + 1)]
    lines += [f"    s{k} = steps[{k}]" for k in range(n)]
    values = ", ".join(f"load_at(p{k}, i * s{k}, {kinds[k]})" for k in range(n))
    lines += ["    for i in range(n):",
              f"        store_at(p{n}, i * s{n}, {convert}({scalar}({values})))"]
    return "\n".join(lines) + "\n"


_VECTOR_FORMS = {2: ["cc", "cs", "sc"]}   # by the number of inputs; else all contiguous


def _kind(dtype):
    return "types.boolean" if dtype == "bool" else f"types.{dtype}"


def make_ufunc(name, loop, input_dtypes, output_dtype):
    """The NumPy ufunc ``name`` with one inner loop: the Python function ``loop`` (made by
    ``loop_source``) compiled, for inputs of ``input_dtypes`` and an output of
    ``output_dtype``."""
    compiled = cfunc(LOOP_SIGNATURE, error_model="numpy")(loop)
    type_numbers = [np.dtype(d).num for d in list(input_dtypes) + [output_dtype]]
    # (the compiled loop is kept alive by the ufunc, which holds it)
    return _internal.fromfunc(name, f"{name} ({output_dtype})", [compiled.address], [type_numbers],
                              len(input_dtypes), 1, [None], [compiled], _internal.PyUFunc_None)
