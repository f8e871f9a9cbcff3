"""The MPI collective layer: all-reduce, broadcast and all-gather of NumPy arrays between the
processes of an MPI job, on mpi4py (the optional ``distributed`` extra) and whatever MPI
library it was built for (the ``mpich`` wheel, Open MPI, Intel MPI, a cluster's).

Every collective

1. first agrees with the other ranks on what it is -- the operation, the dtypes and the shapes
   -- through a two-integer MAX all-reduce of a fingerprint.  Ranks that disagree (different
   shapes, or one rank saving while another all-reduces gradients) all raise
   ``InvalidArgumentError`` naming what each rank ran, instead of MPI pairing mismatched
   buffers (a crash, a hang or garbage);
2. packs its arrays into one contiguous buffer per dtype (tensor fusion), so that a step's
   gradients travel in a few large messages rather than one per variable, reduced in place
   (``MPI.IN_PLACE``);
3. is watched: one that has not completed within ``timeout_seconds`` -- a peer has died, hangs,
   or runs fewer steps -- makes this rank print a clear error and abort the MPI job, so that
   no rank waits forever.  An error MPI reports (a lost connection) becomes
   ``UnavailableError``.  An exception nobody catches on one rank aborts the job too (as
   ``python -m mpi4py`` does): without that, the failed rank would wait in ``MPI_Finalize`` and
   the others in their next collective.
"""
import atexit
import hashlib
import importlib
import os
import sys
import threading
import time

import numpy as np

from hybridtf.framework import errors

try:
    import mpi4py   # importing the package does not start MPI; importing mpi4py.MPI does
except ImportError:   # the `distributed` extra is not installed: one process, one replica
    mpi4py = None

DEFAULT_TIMEOUT_SECONDS = 300.0
TIMEOUT_VARIABLE = "HYBRIDTF_COLLECTIVE_TIMEOUT"
INSTALL_HINT = 'pip install "hybridtf[distributed]"  (mpi4py and an MPI library: mpich)'
ABORT_OUTPUT_GRACE_SECONDS = 1.0   # see Communicator.abort

# Variables MPI launchers (mpiexec of MPICH, Intel MPI, Open MPI, MVAPICH) set to the job's size.
_LAUNCHER_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
_TEXT_BYTES = 1024    # room for one rank's description in a mismatch report


def mpi_available():
    """True when mpi4py is installed (the ``distributed`` extra)."""
    return mpi4py is not None


def launched_size():
    """The number of processes the MPI launcher started (1 when not started by one)."""
    for name in _LAUNCHER_SIZE_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 1


def default_timeout():
    """Seconds a collective may take: ``$HYBRIDTF_COLLECTIVE_TIMEOUT`` or 300 (0: none)."""
    value = os.environ.get(TIMEOUT_VARIABLE)
    if value is None:
        return DEFAULT_TIMEOUT_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{TIMEOUT_VARIABLE}={value!r} is not a number of seconds.") from None
    return checked_timeout(seconds, TIMEOUT_VARIABLE)


def checked_timeout(seconds, argument):
    """``seconds`` as a float, or None for no timeout (None or 0)."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float, np.integer,
                                                             np.floating)) or seconds < 0:
        raise ValueError(f"{argument} must be a non-negative number of seconds (0 or None: no "
                         f"timeout), got {seconds!r}.")
    return float(seconds) or None


def _load_mpi():
    """The mpi4py.MPI module; importing it initializes MPI (done only when a program asks for
    more than one process)."""
    if mpi4py is None:
        raise ImportError(f"Training on several processes needs MPI: {INSTALL_HINT}.")
    return importlib.import_module("mpi4py.MPI")


_world = None
_world_lock = threading.Lock()


def world():
    """The communicator of every process of the job (``MPI_COMM_WORLD``), made once; MPI is
    initialized on the first call."""
    global _world
    with _world_lock:
        if _world is None:
            mpi = _load_mpi()
            _world = Communicator(mpi.COMM_WORLD, mpi)
        return _world


def _fingerprint(description):
    # 56 bits: its negation (sent beside it) fits an int64.
    return int.from_bytes(hashlib.blake2b(description.encode(), digest_size=7).digest(), "little")


def _contiguous(array):
    """``array`` as a C-contiguous ndarray of its own shape (0-d stays 0-d)."""
    array = np.asarray(array)
    return array if array.flags.c_contiguous else array.copy(order="C")


def _describe_arrays(arrays):
    return ", ".join(f"{a.dtype.name}{list(a.shape)}" for a in arrays)


def _reduce_dtype(dtype, op, what):
    """The dtype an all-reduce of ``dtype`` arrays runs in."""
    if dtype.kind in "fc":
        return np.dtype(np.float32) if dtype == np.float16 else dtype
    if dtype.kind in "iu":
        return dtype
    raise errors.InvalidArgumentError(
        None, what, f"{what}: cannot {op}-reduce tensors of dtype {dtype.name}; only numeric "
        "(floating-point, complex or integer) tensors can be all-reduced.")


class _Layout:
    """How a list of arrays (shapes and dtypes) travels: its agreed description and, per
    buffer, the positions of the arrays it carries and their offsets."""

    __slots__ = ("description", "fingerprint", "groups")

    def __init__(self, description, groups):
        self.description = description
        self.fingerprint = _fingerprint(description)
        self.groups = groups      # [(buffer dtype, [(index, offset, size, shape, dtype)], total)]


class _Watchdog:
    """Aborts the MPI job when a collective outlives its deadline: a thread that looks at the
    collectives in progress (one per calling thread) a few times per timeout."""

    def __init__(self, communicator):
        self._communicator = communicator
        self._pending = {}       # thread id -> (deadline, description)
        self._thread = None
        self._lock = threading.Lock()

    def start(self, what, timeout):
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._watch, daemon=True,
                                                    name="hybridtf-collective-watchdog")
                    self._thread.start()
        self._pending[threading.get_ident()] = (time.monotonic() + timeout, timeout, what)

    def stop(self):
        self._pending.pop(threading.get_ident(), None)

    def _watch(self):
        while True:
            now = time.monotonic()
            for deadline, timeout, what in list(self._pending.values()):
                if now > deadline:
                    self._communicator.abort(
                        f"{what} did not complete within {timeout:g} s. A peer process has "
                        "died, hangs, or is not running the same collectives (for example it "
                        "ran fewer steps or raised an error). Aborting the MPI job so that no "
                        f"rank waits forever (the limit: CommunicationOptions(timeout_seconds="
                        f"...) or ${TIMEOUT_VARIABLE}).")
            timeouts = [entry[1] for entry in list(self._pending.values())]
            time.sleep(min([1.0] + [t / 20 for t in timeouts]))


class Communicator:
    """Collectives over an MPI communicator, on NumPy arrays.

    Attributes:
      rank, size: this process's rank and the number of processes.
      local_rank, local_size: the same among the processes of this machine.
      timeout_seconds: how long one collective may take before the job is aborted (None: no
        limit).
    """

    def __init__(self, comm, mpi):
        self._comm = comm
        self._mpi = mpi
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        local = comm.Split_type(mpi.COMM_TYPE_SHARED, key=self.rank)
        self.local_rank = local.Get_rank()
        self.local_size = local.Get_size()
        local.Free()
        self.timeout_seconds = default_timeout()
        self._layouts = {}
        self._broken = None          # why MPI can no longer be used, once it cannot
        self._watchdog = _Watchdog(self)
        if self.size > 1:
            _abort_on_uncaught_exceptions(self)
        atexit.register(self._abort_if_broken)

    def __repr__(self):
        return f"<Communicator rank {self.rank} of {self.size}>"

    # ---- collectives ----------------------------------------------------------------------------
    def all_reduce(self, arrays, op="sum", what="all_reduce", bytes_per_pack=0):
        """The element-wise reduction (``"sum"``, ``"mean"``, ``"min"``, ``"max"``, ``"prod"``)
        of each array over the ranks, as new arrays: one fused buffer per dtype, or buffers of
        about ``bytes_per_pack`` bytes when it is positive (all in flight together)."""
        arrays = [np.asarray(a) for a in arrays]
        if self.size == 1 or not arrays:
            return [np.array(a) for a in arrays]
        layout = self._layout(("all_reduce", op, what, bytes_per_pack), arrays,
                              self._reduce_layout)
        self._agree(layout.description)
        mpi_op = getattr(self._mpi, "SUM" if op == "mean" else op.upper())
        buffers, requests = [], []
        with self._errors(what):
            for dtype, members, total in layout.groups:
                # A floating-point mean is the sum of the values scaled by 1 / size while they
                # are packed (one pass over the data instead of two).
                scale = 1.0 / self.size if op == "mean" and dtype.kind in "fc" else None
                buffer = np.empty(total, dtype)
                for index, offset, size, _, _ in members:
                    part, value = buffer[offset:offset + size], arrays[index].reshape(-1)
                    if scale is None:
                        np.copyto(part, value)
                    else:
                        np.multiply(value, scale, out=part)
                buffers.append(buffer)
                requests.append(self._comm.Iallreduce(self._mpi.IN_PLACE, buffer, mpi_op))
            self._wait(requests, what, layout.description)
        out = [None] * len(arrays)
        for buffer, (dtype, members, _) in zip(buffers, layout.groups):
            if op == "mean" and dtype.kind not in "fc":
                buffer = buffer // self.size     # an integer mean, floored
            for index, offset, size, shape, original in members:
                piece = buffer[offset:offset + size].reshape(shape)
                out[index] = piece if original == dtype else piece.astype(original)
        return out

    def broadcast(self, arrays, root=0, what="broadcast"):
        """The arrays of rank ``root``, on every rank (one buffer of bytes for all)."""
        arrays = [_contiguous(a) for a in arrays]
        self._check_root(root, what)
        if self.size == 1 or not arrays:
            return [np.array(a) for a in arrays]
        layout = self._layout(("broadcast", root, what), arrays, self._bytes_layout)
        self._agree(layout.description)
        _, members, total = layout.groups[0]
        buffer = np.empty(total, np.uint8)
        if self.rank == root:
            for (index, offset, size, _, _), array in zip(members, arrays):
                buffer[offset:offset + size] = array.reshape(-1).view(np.uint8)
        with self._errors(what):
            self._wait([self._comm.Ibcast(buffer, root=root)], what, layout.description)
        return [buffer[offset:offset + size].view(dtype).reshape(shape)
                for _, offset, size, shape, dtype in members]

    def all_gather(self, array, what="all_gather"):
        """The arrays of every rank concatenated along axis 0 in rank order; their first
        dimensions may differ, the rest of the shape and the dtype must agree."""
        array = _contiguous(array)
        if array.ndim == 0:
            raise errors.InvalidArgumentError(
                None, what, f"{what}: cannot gather a scalar; gather tensors of rank >= 1 (they "
                "are concatenated along their first dimension).")
        if array.dtype.kind not in "biufc":
            raise errors.InvalidArgumentError(
                None, what, f"{what}: cannot gather tensors of dtype {array.dtype.name}.")
        if self.size == 1:
            return np.array(array)
        self._agree(f"{what}: all_gather of {array.dtype.name}[?, "
                    f"{', '.join(map(str, array.shape[1:]))}]")
        rows = np.array([array.shape[0]], np.int64)
        counts = np.empty(self.size, np.int64)
        with self._errors(what):
            self._wait([self._comm.Iallgather(rows, counts)], what, "row counts")
            row_bytes = array.itemsize * int(np.prod(array.shape[1:], dtype=np.int64))
            sizes = counts * row_bytes
            offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            out = np.empty((int(counts.sum()),) + array.shape[1:], array.dtype)
            receive = [out.reshape(-1).view(np.uint8), (sizes, offsets), self._mpi.BYTE]
            self._wait([self._comm.Iallgatherv(array.reshape(-1).view(np.uint8), receive)],
                       what, f"{counts.sum()} rows")
        return out

    def all_gather_text(self, text, what="all_gather_text"):
        """Each rank's ``text`` (up to about 1,000 bytes), in rank order."""
        encoded = text.encode("utf-8")[:_TEXT_BYTES - 8]
        mine = np.zeros(_TEXT_BYTES, np.uint8)
        mine[:8] = np.frombuffer(np.int64(len(encoded)).tobytes(), np.uint8)
        mine[8:8 + len(encoded)] = np.frombuffer(encoded, np.uint8)
        if self.size == 1:
            return [text]
        every = np.empty((self.size, _TEXT_BYTES), np.uint8)
        with self._errors(what):
            self._wait([self._comm.Iallgather(mine, every)], what, "texts")
        texts = []
        for row in every:
            length = int(row[:8].view(np.int64)[0])
            texts.append(bytes(row[8:8 + length]).decode("utf-8", "replace"))
        return texts

    def agree(self, description):
        """Checks that every rank reached the same point (the same ``description``): a barrier
        that raises ``InvalidArgumentError`` on every rank when they differ."""
        if self.size > 1:
            self._agree(description)

    # ---- failures -------------------------------------------------------------------------------
    def abort(self, message):
        """Prints ``message`` (naming this rank) and ends every process of the job."""
        sys.stdout.flush()
        sys.stderr.write(f"\nhybridtf.distribute: rank {self.rank} of {self.size}: "
                         f"{message}\n")
        sys.stderr.flush()
        # mpiexec relays output through pipes and stops relaying once the job is aborted: the
        # pause lets it pass on the message (and a traceback written just before) first.
        time.sleep(ABORT_OUTPUT_GRACE_SECONDS)
        self._comm.Abort(1)

    def _abort_if_broken(self):
        if self._broken is not None:
            self.abort(f"exiting after an MPI failure ({self._broken}).")

    def _errors(self, what):
        return _MpiErrors(self, what)

    def _check_usable(self, what):
        if self._broken is not None:
            raise errors.UnavailableError(
                None, what, f"{what}: MPI failed earlier on rank {self.rank} ({self._broken}); "
                "no collective can run any more. Restart the job (from the last checkpoint).")

    def _check_root(self, root, what):
        if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not \
                0 <= root < self.size:
            raise errors.InvalidArgumentError(
                None, what, f"{what}: root_rank must be a rank of the job, 0 .. {self.size - 1}; "
                f"got {root!r}.")

    def _wait(self, requests, what, detail):
        self._check_usable(what)
        timeout = self.timeout_seconds
        if timeout is not None:
            self._watchdog.start(f"{what} ({detail})", timeout)
        try:
            self._mpi.Request.Waitall(requests)
        finally:
            if timeout is not None:
                self._watchdog.stop()

    def _agree(self, description):
        fingerprint = _fingerprint(description)
        check = np.array([fingerprint, -fingerprint], np.int64)
        with self._errors("collective check"):
            request = self._comm.Iallreduce(self._mpi.IN_PLACE, check, self._mpi.MAX)
            self._wait([request], "the check before a collective", description)
        if check[0] == fingerprint and -check[1] == fingerprint:
            return
        ranks = self.all_gather_text(description, "collective mismatch report")
        lines = "\n".join(f"  rank {r}: {text}" for r, text in enumerate(ranks))
        raise errors.InvalidArgumentError(
            None, "collective", f"The processes of the MPI job ran different collectives at "
            f"the same point (seen on rank {self.rank} of {self.size}):\n{lines}\nEvery rank "
            "must create the same variables (same shapes) and run the same steps on tensors of "
            "the same shapes; check for rank-dependent code.")

    # ---- layouts --------------------------------------------------------------------------------
    def _layout(self, key, arrays, build):
        full_key = key + tuple((a.shape, a.dtype.str) for a in arrays)
        layout = self._layouts.get(full_key)
        if layout is None:
            if len(self._layouts) > 1024:
                self._layouts.clear()
            layout = self._layouts[full_key] = build(key, arrays)
        return layout

    @staticmethod
    def _reduce_layout(key, arrays):
        _, op, what, bytes_per_pack = key
        packs = {}       # (dtype, pack number) -> members
        current = {}     # dtype -> (pack number, bytes in it)
        for index, array in enumerate(arrays):
            dtype = _reduce_dtype(array.dtype, op, what)
            number, used = current.get(dtype, (0, 0))
            size = array.size * dtype.itemsize
            if bytes_per_pack > 0 and used and used + size > bytes_per_pack:
                number, used = number + 1, 0
            current[dtype] = (number, used + size)
            members = packs.setdefault((dtype, number), [])
            offset = members[-1][1] + members[-1][2] if members else 0
            members.append((index, offset, array.size, array.shape, array.dtype))
        description = f"{what}: {op}-reduce of {len(arrays)} tensors: {_describe_arrays(arrays)}"
        return _Layout(description, [(dtype, members, sum(m[2] for m in members))
                                     for (dtype, _), members in packs.items()])

    @staticmethod
    def _bytes_layout(key, arrays):
        _, root, what = key
        members, offset = [], 0
        for index, array in enumerate(arrays):
            if array.dtype.kind not in "biufc":
                raise errors.InvalidArgumentError(
                    None, what, f"{what}: cannot broadcast tensors of dtype {array.dtype.name}.")
            members.append((index, offset, array.nbytes, array.shape, array.dtype))
            offset += array.nbytes
        description = (f"{what}: broadcast from rank {root} of {len(arrays)} tensors: "
                       f"{_describe_arrays(arrays)}")
        return _Layout(description, [(np.dtype(np.uint8), members, offset)])


class _MpiErrors:
    """Turns an error MPI reports into ``UnavailableError`` and marks MPI unusable."""

    __slots__ = ("_communicator", "_what")

    def __init__(self, communicator, what):
        self._communicator = communicator
        self._what = what

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None or not issubclass(kind, self._communicator._mpi.Exception):
            return False
        communicator = self._communicator
        communicator._broken = value.Get_error_string()
        raise errors.UnavailableError(
            None, self._what, f"{self._what} failed on rank {communicator.rank} of "
            f"{communicator.size}: MPI reported: {communicator._broken}. A peer process has "
            "probably died or become unreachable.") from value


def _abort_on_uncaught_exceptions(communicator):
    previous = sys.excepthook

    def hook(kind, value, traceback):
        previous(kind, value, traceback)
        communicator.abort(f"uncaught {kind.__name__} (traceback above); aborting the MPI job so "
                           "that the other ranks do not wait for this one.")
    sys.excepthook = hook


class LocalCommunicator(Communicator):
    """The communicator of a program that runs as one process, without MPI: every collective
    returns its inputs."""

    def __init__(self):  # noqa: super().__init__ would start MPI
        self._comm = self._mpi = None
        self.rank, self.size = 0, 1
        self.local_rank, self.local_size = 0, 1
        self.timeout_seconds = None
        self._layouts = {}
        self._broken = None


LOCAL = LocalCommunicator()
