"""Rebuilding a kernel from the disk cache without reading its LLVM bitcode until it is linked.

A cache entry holds a kernel's object code, which LLVM loads and runs, and its bitcode, which
is only needed when a kernel compiled later links this one in.  Numba's own rebuild parses the
bitcode at every load and walks it for the names it defines: together about 2.5 ms of the
3.5 ms a load takes, paid for each of the 30-odd kernels a first train step loads.  Here the
names are saved beside the entry when it is written, and the bitcode is parsed on first link.

Everything else is Numba's rebuild (``CompileResult._rebuild``), step for step; an entry of
another shape (another Numba version's) goes through Numba's own.
"""
from llvmlite import binding as ll
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler import CompileResult

_REDUCED_FIELDS = 9   # CompileResult._reduce(): libdata, fndesc, env, signature, ... envs


def defined_names(library):
    """The names of the functions and globals ``library`` (a compiled Numba code library)
    defines: what Numba's engine records when it loads the library's code."""
    module = library._get_module_for_linking()
    return frozenset(value.name for values in (module.functions, module.global_variables)
                     for value in values if not value.is_declaration)


class _LinkedOnDemand(JITCodeLibrary):
    """A library loaded from object code whose bitcode is parsed when something links it."""

    _linking_bitcode = None

    def _get_module_for_linking(self):
        if self._shared_module is None and self._linking_bitcode is not None:
            # under Numba's compiler lock: only a compile links libraries
            self._shared_module = ll.parse_bitcode(self._linking_bitcode)
            self._linking_bitcode = None
        return super()._get_module_for_linking()


def _loads_object_code(target_context, libdata):
    """Whether ``libdata`` (Numba's serialised library) is object code for the JIT of the CPU,
    the kind this module rebuilds; others take Numba's own way."""
    return (libdata[1] == "object"
            and target_context.codegen()._library_class is JITCodeLibrary)


def _library(codegen, libdata, names):
    """The code library of ``libdata``, its names defined in the engine."""
    name, _, (object_code, linking_bitcode) = libdata
    library = _LinkedOnDemand(codegen, name)
    library.enable_object_caching()
    library._set_compiled_object(object_code)
    library._linking_bitcode = linking_bitcode
    library._finalize_final_module()
    codegen._engine._defined_symbols.update(names)
    return library


def rebuild(target_context, reduced, names):
    """The ``CompileResult`` of a cache entry: ``reduced`` as ``CompileResult._reduce()`` gave
    it, ``names`` as ``defined_names`` gave them when the entry was saved."""
    if len(reduced) != _REDUCED_FIELDS or not _loads_object_code(target_context, reduced[0]):
        return CompileResult._rebuild(target_context, *reduced)
    libdata, fndesc, env, signature, objectmode, lifted, typeann, reload_init, envs = reduced
    for initialise in reload_init or ():   # before the code loads, as in Numba's rebuild
        initialise()
    library = _library(target_context.codegen(), libdata, names)
    result = CompileResult(
        target_context=target_context, typing_context=target_context.typing_context,
        library=library, environment=env,
        entry_point=target_context.get_executable(library, fndesc, env), fndesc=fndesc,
        type_annotation=typeann, signature=signature, objectmode=objectmode, lifted=lifted,
        typing_error=None, call_helper=None, metadata=None, reload_init=reload_init,
        referenced_envs=envs)
    for referenced in envs:
        library.codegen.set_env(referenced.env_name, referenced)
    return result
