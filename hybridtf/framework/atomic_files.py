"""Atomic saves: whenever a saving process is killed, the last good save stays readable.

Every hybridtf save -- weight files, ``.keras`` archives, SavedModels, checkpoints, and
``tf.io.write_file`` -- switches from the old version to the new one in a single
``os.replace``, after everything the new version needs is on disk and fsync'ed, and deletes the
old version's files only after the switch.  A kill at any moment therefore leaves the old save
(or, for a first save, nothing) or the complete new one.  Two building blocks:

* **One file** -- ``write_file(path, write)``: ``write(f)`` fills a temporary file beside
  ``path``; it is fsync'ed, renamed onto ``path`` and the directory is fsync'ed.
* **A set of files** (a SavedModel directory, a checkpoint) -- each save writes its data
  files under names that contain its save token (``versioned_name``), each with
  ``write_file``; then a small manifest naming them is written with ``write_file``: that
  rename is the switch.  Readers open the manifest first and only the files it names.  After
  the switch, ``remove_stale_versions`` deletes the older versions' files.  Saves of one
  set hold ``exclusive(manifest_path)`` (a lock file beside the manifest, released by the
  operating system when a process dies), so that one save's cleanup never races another
  save's switch.  In outline (``tokens_in_manifest`` is the caller's: the tokens the current
  manifest names, None when it cannot be read)::

      with exclusive(manifest_path), live_save() as token:
          keep = tokens_in_manifest()
          if keep is not None:                     # the leftovers of killed saves
              remove_stale_versions(directory, "data", ".bin", keep)
          write_file(os.path.join(directory, versioned_name("data", token, ".bin")), ...)
          write_file(manifest_path, ...)           # names the new data file: the switch
          remove_stale_versions(directory, "data", ".bin", {token})

  (A set that keeps several versions, like the last few checkpoints, passes all their
  tokens as ``keep``.)

Every file a save creates carries its save token (``new_save_token``, valid for the duration of
``live_save()``): which machine (host name and boot) and which process wrote it.  A later save
deletes what killed saves left behind -- temporaries and unreferenced versions -- only when
that is provably safe: the token is from this machine and its process has exited, or it is
this process's own and no save of this process is using it.  Leftovers of other machines, or of
processes that are still running, are kept (a later save removes them).  Where the operating
system cannot say whether a process exists (Windows), only this process's own leftovers are
removed.
"""
import contextlib
import errno
import hashlib
import os
import re
import secrets
import socket
import threading
import warnings

if os.name == "nt":
    import msvcrt
else:
    import fcntl

_TOKEN = r"[0-9a-f]{8}-[0-9]+-[0-9a-f]{8}"
_TOKEN_PARTS = re.compile(r"([0-9a-f]{8})-([0-9]+)-([0-9a-f]{8})\Z")

_live_tokens = set()
_live_lock = threading.Lock()
_host_tag = None
_warned_directory_sync = False
_warned_no_lock = False
_thread_locks = {}


# ---- save tokens ---------------------------------------------------------------------------------
def _this_host():
    """A short tag of this machine and boot: processes of another host or container (their
    own pid namespace, usually their own host name) are never judged from here."""
    global _host_tag
    if _host_tag is None:
        identity = socket.gethostname()
        boot_id = "/proc/sys/kernel/random/boot_id"
        if os.path.isfile(boot_id):
            with open(boot_id, encoding="ascii") as f:
                identity += "/" + f.read().strip()
        _host_tag = hashlib.sha1(identity.encode("utf-8")).hexdigest()[:8]
    return _host_tag


def new_save_token():
    """A new, unique token for one save: ``<host tag>-<pid>-<random>``."""
    return f"{_this_host()}-{os.getpid()}-{secrets.token_hex(4)}"


@contextlib.contextmanager
def live_save():
    """Yields a new save token that no cleanup (in this or another process) removes files of
    while the ``with`` block runs."""
    token = new_save_token()
    with _live_lock:
        _live_tokens.add(token)
    try:
        yield token
    finally:
        with _live_lock:
            _live_tokens.discard(token)


def _process_exists(pid):
    if os.name == "nt":
        return True          # no safe probe in the standard library: never judged stale
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True          # exists, but belongs to another user
    return True


def is_stale(token):
    """True when the save that used ``token`` is provably over: the token is from this host,
    and its process has exited, or it is this process and no live save uses the token."""
    match = _TOKEN_PARTS.match(token)
    if match is None or match.group(1) != _this_host():
        return False
    pid = int(match.group(2))
    if pid == os.getpid():
        with _live_lock:
            return token not in _live_tokens
    return not _process_exists(pid)


# ---- durability ----------------------------------------------------------------------------------
def fsync_directory(directory):
    """Makes the entries of ``directory`` (renames, new and deleted files) durable.

    Windows cannot open directories (NTFS journals renames itself); a file system that cannot
    sync directories gets a one-time warning, since a power loss there may undo a save.
    """
    global _warned_directory_sync
    if os.name == "nt":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
        if not _warned_directory_sync:
            _warned_directory_sync = True
            warnings.warn(f"The file system of {directory!r} cannot sync directories "
                          f"({err.strerror}); saves there are atomic, but a power loss just "
                          "after one may undo it.", UserWarning, stacklevel=2)
    finally:
        os.close(fd)


# ---- one file ------------------------------------------------------------------------------------
def temporary_path(path, token):
    """Where ``write_file`` writes ``path``'s content before renaming it onto ``path``."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.{token}.tmp")


def remove_stale_temporaries(path):
    """Deletes the temporaries of killed saves of ``path``; returns their paths."""
    directory, name = os.path.split(os.path.abspath(path))
    pattern = re.compile(re.escape(f".{name}.") + f"({_TOKEN})" + re.escape(".tmp") + r"\Z")
    return _remove_matching(directory, pattern)


def write_file(path, write):
    """Replaces ``path`` atomically and durably with what ``write(f)`` writes.

    ``f`` is a new binary file opened for reading and writing (h5py and zipfile need both)
    beside ``path``.  It is flushed, fsync'ed and renamed onto ``path``; then the directory is
    fsync'ed.  If ``write`` raises, ``path`` is untouched and the temporary removed.  Parent
    directories are created; leftovers of killed saves of ``path`` are removed first.
    """
    path = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    remove_stale_temporaries(path)
    with live_save() as token:
        temporary = temporary_path(path, token)
        # os.open with 0o666 (not mkstemp's 0o600) so the file gets the usual permissions.
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o666)
        try:
            with os.fdopen(fd, "w+b") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
    fsync_directory(directory)


# ---- a set of files switched by a manifest ------------------------------------------------------
@contextlib.contextmanager
def exclusive(manifest_path):
    """Holds the save lock of the set of files that ``manifest_path`` switches: one save at a
    time among the threads of this process and among the processes of this machine (and of
    others, where the file system supports locks).  The lock file
    ``.<manifest name>.lock`` stays beside the manifest."""
    directory, name = os.path.split(os.path.abspath(manifest_path))
    lock_path = os.path.join(directory, f".{name}.lock")
    with _live_lock:
        thread_lock = _thread_locks.setdefault(lock_path, threading.Lock())
    with thread_lock:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            if os.name == "nt":
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                try:
                    yield
                finally:
                    os.lseek(fd, 0, os.SEEK_SET)
                    msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
            else:
                _lock_or_warn(fd, directory)
                yield             # closing the file releases the lock
        finally:
            os.close(fd)


def _lock_or_warn(fd, directory):
    """``flock``; on a file system without locks, a one-time warning: saves stay atomic, but
    saves by several processes into one directory at the same time are not serialised."""
    global _warned_no_lock
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as err:
        if err.errno not in (errno.ENOLCK, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EINVAL):
            raise
        if not _warned_no_lock:
            _warned_no_lock = True
            warnings.warn(f"The file system of {directory!r} has no file locks "
                          f"({err.strerror}); each save there is still atomic, but do not let "
                          "several processes save into one directory at the same time.",
                          UserWarning, stacklevel=4)


def versioned_name(stem, token, suffix):
    """The name of one save's version of a data file: ``stem.<token>suffix``."""
    return f"{stem}.{token}{suffix}"


def token_of(name, stem, suffix):
    """The save token in a ``versioned_name``, or None for any other name."""
    match = re.match(re.escape(f"{stem}.") + f"({_TOKEN})" + re.escape(suffix) + r"\Z", name)
    return match.group(1) if match else None


def remove_stale_versions(directory, stem, suffix, keep):
    """Deletes the ``versioned_name`` files in ``directory`` whose token is not in ``keep``
    (the tokens the current manifest names) and whose save is over (``is_stale``): older
    versions and the data of killed saves.  Also removes their stale temporaries.  Returns
    the paths removed."""
    versions = re.compile(re.escape(f"{stem}.") + f"({_TOKEN})" + re.escape(suffix) + r"\Z")
    temporaries = re.compile(re.escape(f".{stem}.") + _TOKEN + re.escape(suffix)
                             + rf"\.({_TOKEN})\.tmp\Z")
    return (_remove_matching(directory, versions, keep)
            + _remove_matching(directory, temporaries))


def _listdir(directory):
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        return []


def _remove_matching(directory, pattern, keep=()):
    removed = []
    for name in _listdir(directory):
        match = pattern.match(name)
        if match is None or match.group(1) in keep or not is_stale(match.group(1)):
            continue
        path = os.path.join(directory, name)
        with contextlib.suppress(FileNotFoundError):     # another cleanup got there first
            os.unlink(path)
            removed.append(path)
    return removed
