"""The ``checkpoint`` state file: which checkpoints of a directory are current.

``Checkpoint.save`` and ``CheckpointManager`` keep, in a text file named ``checkpoint`` in the
directory they save to, the latest checkpoint and the list of managed ones, in TF's text format
(so the file reads the same in both frameworks)::

    model_checkpoint_path: "ckpt-3"
    all_model_checkpoint_paths: "ckpt-2"
    all_model_checkpoint_paths: "ckpt-3"
    all_model_checkpoint_timestamps: 1700000000.25
    all_model_checkpoint_timestamps: 1700000060.5
    last_preserved_timestamp: 1699999990.0

Paths are written relative to the directory.  The file is replaced atomically
(``framework.atomic_files.write_file``), and that replacement is what switches a directory to a
new checkpoint: the checkpoint's own file is complete before, and older ones are deleted only
after.  Saves into one directory hold ``state_lock(directory)``.  A state file that cannot be
parsed is refused with ``tf.errors.DataLossError`` naming it.
"""
import os
import re
import warnings

from hybridtf.framework import atomic_files
from hybridtf.framework.errors import DataLossError
from hybridtf.train import checkpoint_file

STATE_FILE = "checkpoint"

_LINE = re.compile(r"\s*([A-Za-z_]+)\s*:\s*(.*?)\s*\Z")
_STRING_FIELDS = ("model_checkpoint_path", "all_model_checkpoint_paths")
_FLOAT_FIELDS = ("all_model_checkpoint_timestamps", "last_preserved_timestamp")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "'": "'", "\\": "\\"}


class CheckpointState:
    """The content of a ``checkpoint`` state file (TF's ``CheckpointState``); paths are joined
    to the directory it was read from."""

    def __init__(self, model_checkpoint_path, all_model_checkpoint_paths=(),
                 all_model_checkpoint_timestamps=(), last_preserved_timestamp=None):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def __repr__(self):
        return (f"CheckpointState(model_checkpoint_path={self.model_checkpoint_path!r}, "
                f"all_model_checkpoint_paths={self.all_model_checkpoint_paths!r})")


def state_path(directory, latest_filename=None):
    return os.path.join(os.fspath(directory), latest_filename or STATE_FILE)


def state_lock(directory):
    """Held by every save that updates the state file of ``directory`` (created if needed)."""
    directory = os.fspath(directory) or "."
    os.makedirs(directory, exist_ok=True)
    return atomic_files.exclusive(state_path(directory))


# ---- text format ---------------------------------------------------------------------------------
def _quote(text):
    """A text-format string literal: printable ASCII as is, other bytes as octal escapes."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif 32 <= byte < 127:
            out.append(char)
        elif char in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char])
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _unquote(literal):
    if len(literal) < 2 or literal[0] != literal[-1] or literal[0] not in "\"'":
        raise ValueError(f"expected a quoted string, got {literal!r}")
    body, out, i = literal[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out += char.encode("utf-8")
            i += 1
            continue
        if i + 1 >= len(body):
            raise ValueError(f"a string ends with a lone backslash: {literal!r}")
        escaped = body[i + 1]
        octal = re.match(r"[0-7]{1,3}", body[i + 1:])
        if octal:
            out.append(int(octal.group(0), 8) & 0xFF)
            i += 1 + len(octal.group(0))
        elif escaped in _ESCAPES:
            out += _ESCAPES[escaped].encode("utf-8")
            i += 2
        else:
            raise ValueError(f"unknown escape \\{escaped} in {literal!r}")
    return out.decode("utf-8")


def _parse(text):
    fields = {"model_checkpoint_path": None, "all_model_checkpoint_paths": [],
              "all_model_checkpoint_timestamps": [], "last_preserved_timestamp": None}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None or match.group(1) not in fields:
            raise ValueError(f"line {number} is not a checkpoint state field: {line!r}")
        name, literal = match.groups()
        value = _unquote(literal) if name in _STRING_FIELDS else float(literal)
        if isinstance(fields[name], list):
            fields[name].append(value)
        else:
            fields[name] = value
    if not fields["model_checkpoint_path"]:
        raise ValueError("it names no model_checkpoint_path")
    return fields


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The ``CheckpointState`` of ``checkpoint_dir``, or None when it has no state file.

    Relative paths in the file are joined to ``checkpoint_dir``.  Raises
    ``tf.errors.DataLossError`` (naming the file) for a file that cannot be parsed.
    """
    checkpoint_dir = os.fspath(checkpoint_dir)
    path = state_path(checkpoint_dir, latest_filename)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        fields = _parse(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise DataLossError(f"The checkpoint state file {path!r} is corrupted and cannot be "
                            f"read ({err}). Delete it to start afresh, or pass a checkpoint "
                            "prefix explicitly.") from None

    def joined(p):
        return p if os.path.isabs(p) else os.path.join(checkpoint_dir, p)

    return CheckpointState(joined(fields["model_checkpoint_path"]),
                           [joined(p) for p in fields["all_model_checkpoint_paths"]],
                           fields["all_model_checkpoint_timestamps"],
                           fields["last_preserved_timestamp"])


def write_state(directory, latest, paths, timestamps=None, last_preserved_timestamp=None):
    """Replaces ``directory``'s state file atomically (hold ``state_lock(directory)``).

    ``latest`` and ``paths`` (oldest first; ``latest`` is appended if it is not last) are
    written relative to ``directory``.
    """
    directory = os.fspath(directory) or "."
    paths = list(paths)
    if not paths or paths[-1] != latest:
        paths.append(latest)
    if timestamps is not None and len(timestamps) != len(paths):
        raise ValueError(f"Checkpoint timestamps, if provided, must match checkpoint paths "
                         f"(got paths {paths} and timestamps {timestamps}).")
    path = state_path(directory)

    def relative(p):
        return os.path.relpath(os.path.abspath(p), os.path.abspath(directory))

    if os.path.abspath(latest) == os.path.abspath(path):
        raise RuntimeError(f"Save path {latest!r} conflicts with path used for checkpoint "
                           "state. Please use a different save path.")
    lines = [f"model_checkpoint_path: {_quote(relative(latest))}"]
    lines += [f"all_model_checkpoint_paths: {_quote(relative(p))}" for p in paths]
    lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in (timestamps or [])]
    if last_preserved_timestamp is not None:
        lines.append(f"last_preserved_timestamp: {last_preserved_timestamp!r}")
    text = ("\n".join(lines) + "\n").encode("utf-8")
    atomic_files.write_file(path, lambda f: f.write(text))


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the latest checkpoint saved in ``checkpoint_dir`` (``tf.train``).

    Read from the directory's ``checkpoint`` state file; None when there is none, or when the
    checkpoint it names no longer exists (with a warning).
    """
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None:
        return None
    if checkpoint_file.exists(state.model_checkpoint_path):
        return state.model_checkpoint_path
    warnings.warn(f"Couldn't match files for checkpoint {state.model_checkpoint_path} (named "
                  f"in {state_path(checkpoint_dir, latest_filename)!r}).", UserWarning,
                  stacklevel=2)
    return None
