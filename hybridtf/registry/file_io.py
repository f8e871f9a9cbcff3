"""File ops: ``read_file`` and ``write_file``, and the translation of the operating system's
errors into TF's (``NotFoundError``, ``PermissionDeniedError``, ...), which ``tf.io.gfile``
shares.

Both ops are stateful, so that inside a traced function they run on every call, in program
order (a file read is never folded into a constant).  A write replaces the file atomically (a
reader sees the old contents or the new, never a part) with ``framework.atomic_files``, which
every hybridtf save uses.
"""
import contextlib
import errno
import os

import numpy as np

from hybridtf.framework import atomic_files, errors
from hybridtf.registry import OpDef, Spec, checks, register

_ERRORS = {
    errno.ENOENT: (errors.NotFoundError, "No such file or directory"),
    errno.EISDIR: (errors.FailedPreconditionError, "Is a directory"),
    errno.ENOTDIR: (errors.FailedPreconditionError, "Not a directory"),
    errno.EACCES: (errors.PermissionDeniedError, "Permission denied"),
    errno.EPERM: (errors.PermissionDeniedError, "Operation not permitted"),
    errno.EEXIST: (errors.AlreadyExistsError, "File exists"),
    errno.ENOTEMPTY: (errors.FailedPreconditionError, "Directory not empty"),
    errno.ENOSPC: (errors.ResourceExhaustedError, "No space left on device"),
}


def tf_error(op_name, path, err):
    """TF's error for the OSError ``err`` of an operation on ``path``:
    ``"<path>; <reason>"``, as TF words it."""
    error_type, reason = _ERRORS.get(err.errno, (errors.UnknownError, None))
    return error_type(None, op_name, f"{path}; {reason or err.strerror or err}")


@contextlib.contextmanager
def os_errors(op_name, path):
    """Raises the operating system's errors inside the block as TF's (``tf_error``)."""
    try:
        yield
    except OSError as err:
        raise tf_error(op_name, path, err) from None


def path_of(value):
    """A file name given as bytes (a string tensor's value), str or path-like, as a str."""
    return os.fsdecode(value) if isinstance(value, (bytes, os.PathLike)) else str(value)


def _scalar_string(op_name, spec, what):
    if spec.dtype != object:
        raise TypeError(f"{op_name}: {what} must be a tf.string tensor, got "
                        f"{checks.dtype_name(spec.dtype)}.")
    if spec.shape is not None and len(spec.shape) != 0:
        checks.fail(op_name, f"{what} must be a scalar, but had shape "
                    f"{checks.fmt_shape(spec.shape)}.")


def read(path):
    """The bytes of the file at ``path``, or TF's error."""
    with os_errors("read_file", path):
        with open(path, "rb") as f:
            return f.read()


def _read_eager(arrays, attrs):
    return np.array(read(path_of(arrays[0][()])), dtype=object)


def _read_infer(specs, attrs):
    _scalar_string("read_file", specs[0], "filename")
    return [Spec((), np.dtype(object))]


READ_FILE = register(OpDef("read_file", "opaque", {"cpu": _read_eager}, _read_infer, stateful=True))


def _write_eager(arrays, attrs):
    path = path_of(arrays[0][()])
    contents = arrays[1][()]
    data = contents.encode("utf-8") if isinstance(contents, str) else bytes(contents)
    with os_errors("write_file", path):
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        atomic_files.write_file(path, lambda f: f.write(data))
    return ()


def _write_infer(specs, attrs):
    _scalar_string("write_file", specs[0], "filename")
    _scalar_string("write_file", specs[1], "contents")
    return []


WRITE_FILE = register(OpDef("write_file", "opaque", {"cpu": _write_eager}, _write_infer,
                            num_outputs=0, stateful=True))
