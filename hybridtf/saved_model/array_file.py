"""Files of named arrays with a JSON manifest: NumPy's ``.npz`` container, written atomically.

A SavedModel's variables and constants and weight files whose names do not end in ``.h5``
use this format (so do the weights in ``.keras`` archives of earlier hybridtf versions).  The
manifest (a JSON object stored as bytes under ``MANIFEST_KEY``) names the format and its
version, so that a foreign ``.npz``, an HDF5 file or random bytes are recognised and rejected
with a clear message.
Arrays are never pickled: object arrays are refused when writing and ``allow_pickle=False`` when
reading.
"""
import io
import json
import os
import zipfile
import zlib

import numpy as np

from hybridtf.framework import atomic_files

MANIFEST_KEY = "__manifest__"

_ZIP_MAGIC = b"PK\x03\x04"
_HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"


class UnreadableFileError(ValueError):
    """A file exists but is not a readable file of the expected kind (truncated, corrupted,
    or written by something else)."""

    def __init__(self, path, message):
        super().__init__(message)
        self.path = path


def write_arrays(path, manifest, arrays):
    """Writes ``arrays`` (name -> ndarray) and the ``manifest`` dict to ``path`` atomically."""
    payload = {}
    for name, array in arrays.items():
        array = np.asarray(array)
        if array.dtype.hasobject:
            raise TypeError(f"Cannot write array {name!r} of dtype {array.dtype} to {path!r}: "
                            "only numeric and boolean arrays can be saved.")
        payload[name] = array
    text = json.dumps(manifest, sort_keys=True).encode("utf-8")
    payload[MANIFEST_KEY] = np.frombuffer(text, dtype=np.uint8)
    atomic_files.write_file(path, lambda f: np.savez(f, **payload))


def read_arrays(path, what, expected_format, max_version, data=None):
    """Reads a file written by ``write_arrays``; returns ``(manifest, {name: ndarray})``.

    ``what`` names the file in errors ("weights file").  ``data``: the file's bytes, when
    they come from elsewhere (a member of an archive); ``path`` then only names them in
    errors.  Raises FileNotFoundError / IsADirectoryError for a missing path and
    ``UnreadableFileError`` (a ValueError) for a file that is truncated, corrupted, foreign,
    or of another format or a newer version.
    """
    path = os.fspath(path)
    if data is None:
        if os.path.isdir(path):
            raise IsADirectoryError(f"Cannot read the {what} {path!r}: it is a directory.")
        if not os.path.exists(path):
            raise FileNotFoundError(f"The {what} {path!r} does not exist.")
    with (open(path, "rb") if data is None else io.BytesIO(data)) as f:
        head = f.read(8)
        if not head.startswith(_ZIP_MAGIC):
            raise UnreadableFileError(path, f"The {what} {path!r} is not a hybridtf "
                                      f"{expected_format} file: {_describe_foreign(head)}.")
        f.seek(0)
        try:
            with np.load(f, allow_pickle=False) as archive:
                names = list(archive.files)
                if MANIFEST_KEY not in names:
                    raise UnreadableFileError(
                        path, f"The {what} {path!r} is a zip/.npz archive but was not written by "
                        f"hybridtf (it has no {MANIFEST_KEY!r} entry).")
                arrays = {name: archive[name] for name in names}
        except UnreadableFileError:
            raise
        except (zipfile.BadZipFile, zlib.error, ValueError, OSError, EOFError, KeyError,
                RuntimeError) as err:
            raise UnreadableFileError(path, f"The {what} {path!r} is truncated or corrupted "
                                      f"and cannot be read ({type(err).__name__}: {err}). "
                                      "Save it again, or restore it from a copy.") from None
    manifest = _parse_manifest(path, what, arrays.pop(MANIFEST_KEY))
    found = manifest.get("format")
    if found != expected_format:
        raise UnreadableFileError(path, f"The {what} {path!r} holds a {found!r} file, not a "
                                  f"{expected_format!r} file.")
    version = manifest.get("version")
    if not isinstance(version, int) or version > max_version:
        raise UnreadableFileError(path, f"The {what} {path!r} has format version {version!r}; "
                                  f"this hybridtf reads versions up to {max_version}. Upgrade "
                                  "hybridtf to read it.")
    return manifest, arrays


def _parse_manifest(path, what, array):
    try:
        manifest = json.loads(np.asarray(array, dtype=np.uint8).tobytes().decode("utf-8"))
    except (ValueError, UnicodeDecodeError, TypeError):
        manifest = None
    if not isinstance(manifest, dict):
        raise UnreadableFileError(path, f"The {what} {path!r} has an unreadable manifest; the "
                                  "file is corrupted or was not written by hybridtf.")
    return manifest


def _describe_foreign(head):
    if head.startswith(_HDF5_MAGIC):
        return ("it is an HDF5 file (as Keras writes for '.h5' names); hybridtf reads only "
                "files it wrote itself")
    if not head:
        return "it is empty"
    return f"it starts with bytes {head[:8]!r}, not a zip/.npz archive"
