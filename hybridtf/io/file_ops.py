"""``tf.io.read_file`` and ``tf.io.write_file``: a whole file as a scalar string tensor."""
from hybridtf.eager.execute import as_tensor, execute, execute1
from hybridtf.framework import dtypes
from hybridtf.registry import file_io as FIO


def read_file(filename, name=None):
    """The contents of the file ``filename`` (a scalar string) as a scalar ``tf.string`` tensor
    of bytes.  Inside a ``tf.function`` the file is read on every call."""
    return execute1(FIO.READ_FILE, [as_tensor(filename, dtypes.string)], None)


def write_file(filename, contents, name=None):
    """Writes ``contents`` (a scalar string) to the file ``filename``, creating its directory
    if needed.  The file is replaced atomically: readers see the old or the new contents,
    never a part, even if the process is killed while writing."""
    execute(FIO.WRITE_FILE, [as_tensor(filename, dtypes.string),
                             as_tensor(contents, dtypes.string)], None)
