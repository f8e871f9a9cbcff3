"""``tf.io.gfile``: file and directory operations on local files, with TF's error types.

Paths are str, bytes, path-like objects or scalar string tensors; ``file://`` paths are
local.  Failures raise TF's errors (``tf.errors.NotFoundError`` for a missing file,
``AlreadyExistsError``, ``PermissionDeniedError``, ``FailedPreconditionError`` ...), worded as
TF words them.  Other file systems (``gs://``, ``s3://``, ...) are not available here: their
paths raise ``tf.errors.UnimplementedError``.
"""
import collections
import errno
import glob as _glob
import os
import shutil

from hybridtf.framework import errors
from hybridtf.framework.tensor import Tensor
from hybridtf.registry.file_io import os_errors, path_of

_MODES = ("r", "w", "a", "r+", "w+", "a+")

FileStatistics = collections.namedtuple("FileStatistics", "length mtime_nsec is_directory")
FileStatistics.__doc__ = "What ``stat`` tells of a file: its length in bytes, its modification " \
                         "time in nanoseconds and whether it is a directory."


def _path(path, op_name):
    """``path`` as a local file name (str)."""
    if isinstance(path, Tensor):
        path = path.numpy()
    path = path_of(path)
    scheme, sep, rest = path.partition("://")
    if sep and "/" not in scheme:
        if scheme != "file":
            raise errors.UnimplementedError(
                None, op_name, f"File system scheme '{scheme}' not implemented (file: {path}); "
                "only local files (and file:// paths) are available.")
        path = rest
    return path


def exists(path):
    """Whether ``path`` (a file or directory) exists."""
    return os.path.exists(_path(path, "exists"))


def isdir(path):
    """Whether ``path`` is a directory."""
    return os.path.isdir(_path(path, "isdir"))


def join(path, *paths):
    """The paths joined with the separator (``os.path.join``)."""
    return os.path.join(path_of(path), *(path_of(p) for p in paths))


def glob(pattern):
    """The paths matching ``pattern`` (or any of a list of patterns): ``*``, ``?`` and
    ``[...]`` match within one path component."""
    patterns = pattern if isinstance(pattern, (list, tuple)) else [pattern]
    found = []
    for p in patterns:
        found.extend(_glob.glob(_path(p, "glob")))
    return found


def listdir(path):
    """The names of the entries of directory ``path`` (not their paths; no '.' or '..')."""
    directory = _path(path, "listdir")
    if not os.path.isdir(directory):
        raise errors.NotFoundError(None, "listdir", f"Could not find directory {directory}")
    with os_errors("listdir", directory):
        return os.listdir(directory)


def makedirs(path):
    """Creates directory ``path`` and any missing parents; an existing directory is fine."""
    directory = _path(path, "makedirs")
    with os_errors("makedirs", directory):
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise NotADirectoryError(errno.ENOTDIR, "is not a directory", directory)
        os.makedirs(directory, exist_ok=True)


def mkdir(path):
    """Creates directory ``path``, whose parent must exist; an existing directory is fine."""
    directory = _path(path, "mkdir")
    with os_errors("mkdir", directory):
        if not os.path.isdir(directory):
            os.mkdir(directory)


def remove(path):
    """Deletes the file ``path`` (not a directory: see ``rmtree``)."""
    file = _path(path, "remove")
    with os_errors("remove", file):
        if os.path.isdir(file):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", file)
        os.remove(file)


def rmtree(path):
    """Deletes ``path`` and everything below it (a file is deleted too)."""
    target = _path(path, "rmtree")
    if not os.path.lexists(target):
        raise errors.NotFoundError(None, "rmtree", f"{target} not found")
    with os_errors("rmtree", target):
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        else:
            os.remove(target)


def _transfer(op_name, src, dst, overwrite, source_exists, action):
    """``action(source, target)`` after TF's checks: the source must exist
    (``source_exists``), an existing target is an AlreadyExistsError unless ``overwrite``."""
    source, target = _path(src, op_name), _path(dst, op_name)
    with os_errors(op_name, source):
        if not source_exists(source):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", source)
    if not overwrite and os.path.exists(target):
        raise errors.AlreadyExistsError(None, op_name, f"{target}; file already exists (pass "
                                        "overwrite=True to replace it)")
    with os_errors(op_name, target):
        action(source, target)


def copy(src, dst, overwrite=False):
    """Copies the file ``src`` to ``dst``; an existing ``dst`` is an AlreadyExistsError unless
    ``overwrite``."""
    _transfer("copy", src, dst, overwrite, os.path.exists, shutil.copyfile)


def rename(src, dst, overwrite=False):
    """Renames (moves) the file or directory ``src`` to ``dst``; an existing ``dst`` is an
    AlreadyExistsError unless ``overwrite``."""
    # lexists: a dangling symbolic link is renamed as it is.
    _transfer("rename", src, dst, overwrite, os.path.lexists, os.replace)


def stat(path):
    """``FileStatistics(length, mtime_nsec, is_directory)`` of ``path``."""
    target = _path(path, "stat")
    with os_errors("stat", target):
        info = os.stat(target)
    return FileStatistics(info.st_size, info.st_mtime_ns, os.path.isdir(target))


def walk(top, topdown=True, onerror=None):
    """Yields ``(directory, subdirectory names, file names)`` for ``top`` and each directory
    below it, parents first (``topdown``) or last.  A directory that cannot be listed is
    skipped, after calling ``onerror`` with TF's error if given."""
    root = _path(top, "walk")
    try:
        names = listdir(root)
    except errors.OpError as err:
        if onerror is not None:
            onerror(err)
        return
    subdirectories = [n for n in names if os.path.isdir(os.path.join(root, n))]
    is_subdirectory = set(subdirectories)
    files = [n for n in names if n not in is_subdirectory]
    if topdown:
        yield root, subdirectories, files
    for name in subdirectories:
        yield from walk(os.path.join(root, name), topdown, onerror)
    if not topdown:
        yield root, subdirectories, files


class GFile:
    """A file (``tf.io.gfile.GFile``): modes 'r', 'w', 'a', 'r+', 'w+', 'a+', with 'b' for
    bytes.  In text mode reads return str (decoded as UTF-8); writes take str or bytes in
    either mode.  Sizes and positions (``read(n)``, ``tell``, ``seek``) count bytes, as in TF.
    The file is opened on first use, so a missing file raises NotFoundError when read."""

    def __init__(self, name, mode="r"):
        base = mode.replace("b", "")
        if base not in _MODES or mode.count("b") > 1:
            raise errors.InvalidArgumentError(
                None, "GFile", f"mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+' (with "
                f"an optional 'b'), got {mode!r}.")
        self.name = _path(name, "GFile")
        self.mode = mode
        self._binary = "b" in mode
        self._file = None

    # -- opening ----------------------------------------------------------------------------------
    def _opened(self):
        if self._file is None:
            with os_errors("GFile", self.name):
                self._file = open(self.name, self.mode.replace("b", "") + "b")
        return self._file

    def _readable(self):
        if self.mode.replace("b", "") not in ("r", "r+", "w+", "a+"):
            raise errors.PermissionDeniedError(None, "GFile", "File isn't open for reading")
        return self._opened()

    def _writable(self):
        if self.mode.replace("b", "") == "r":
            raise errors.PermissionDeniedError(None, "GFile", "File isn't open for writing")
        return self._opened()

    def _out(self, data):
        return data if self._binary else data.decode("utf-8")

    # -- reading ----------------------------------------------------------------------------------
    def read(self, n=-1):
        """Up to ``n`` bytes (all the rest by default)."""
        return self._out(self._readable().read(-1 if n is None else n))

    def readline(self):
        """The next line, with its newline; empty at the end of the file."""
        return self._out(self._readable().readline())

    def readlines(self):
        """The remaining lines."""
        return [self._out(line) for line in self._readable().readlines()]

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    # -- writing ----------------------------------------------------------------------------------
    def write(self, file_content):
        """Writes ``file_content`` (str, encoded as UTF-8, or bytes)."""
        if isinstance(file_content, Tensor):
            file_content = file_content.numpy()
        if isinstance(file_content, str):
            file_content = file_content.encode("utf-8")
        self._writable().write(file_content)

    def flush(self):
        if self._file is not None:
            self._file.flush()

    # -- positions --------------------------------------------------------------------------------
    def tell(self):
        return self._opened().tell()

    def seek(self, offset=None, whence=0, position=None):
        """Moves to byte ``offset`` from the start (``whence`` 0), the current position (1) or
        the end (2).  ``position`` is TF's older name of ``offset``."""
        if position is not None:
            offset = position
        self._opened().seek(0 if offset is None else offset, whence)

    def seekable(self):
        return True

    def size(self):
        """The file's size in bytes."""
        if self._file is not None:
            self._file.flush()
        return stat(self.name).length

    # -- closing ----------------------------------------------------------------------------------
    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
