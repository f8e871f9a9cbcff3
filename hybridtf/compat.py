"""``tf.compat``: conversions between ``bytes`` and ``str`` that TF code uses for file names,
serialized examples and string tensors."""
import os


def as_bytes(bytes_or_text, encoding="utf-8"):
    """``bytes_or_text`` as ``bytes``: text is encoded with ``encoding``; bytes (and
    bytearrays) are returned as bytes.  TypeError for anything else."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text, encoding="utf-8"):
    """``bytes_or_text`` as ``str``: bytes are decoded with ``encoding``; text is returned
    as is.  TypeError for anything else."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, (bytes, bytearray)):
        return bytes(bytes_or_text).decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_str(bytes_or_text, encoding="utf-8"):
    """The same as ``as_text`` (Python 3's ``str`` is text)."""
    return as_text(bytes_or_text, encoding)


def as_str_any(value, encoding="utf-8"):
    """``value`` as ``str``: bytes are decoded, anything else goes through ``str()``."""
    if isinstance(value, (bytes, bytearray)):
        return as_str(value, encoding)
    return str(value)


def path_to_str(path):
    """A path-like object (``pathlib.Path``) as a ``str``; other values unchanged."""
    return os.fspath(path) if isinstance(path, os.PathLike) else path
