"""Joining the MPI job: the communicator of the processes, and their share of the cores.

``mpiexec -n N python train.py`` starts N processes; each joins the job through MPI when a
strategy of several workers (or ``hybridtf.distribute.mpi.init()``) asks for it.  Processes
sharing a machine split its cores: each kernel runs on ``cores // processes_on_this_machine``
threads (BLAS too), unless the program chose a thread count itself
(``tf.config.threading.set_intra_op_parallelism_threads``).
"""
from threadpoolctl import ThreadpoolController

from ops import threads

from hybridtf.config import threading as threading_config
from hybridtf.distribute import communicator as communicator_lib

_blas_limit = []     # the threadpoolctl limit in force (kept so that it stays applied)


def join_job(timeout_seconds=None):
    """The communicator of this process's job: every process ``mpiexec`` started when mpi4py
    is installed, this process alone otherwise.

    Raises:
      ImportError: a launcher started several processes but mpi4py is not installed (each
        would otherwise train alone, unaware of the others).
    """
    if not communicator_lib.mpi_available():
        if communicator_lib.launched_size() > 1:
            raise ImportError(
                f"This process is one of {communicator_lib.launched_size()} that an MPI "
                "launcher started, but mpi4py is not installed, so they cannot train "
                f"together. Install the extra: {communicator_lib.INSTALL_HINT}.")
        return communicator_lib.LOCAL
    communicator = communicator_lib.world()
    if timeout_seconds is not None:
        communicator.timeout_seconds = communicator_lib.checked_timeout(timeout_seconds,
                                                                        "timeout_seconds")
    share_cores(communicator.local_size)
    return communicator


def share_cores(processes_here):
    """One share of this machine's cores per process on it, unless a thread count was set."""
    if processes_here <= 1 or threading_config.get_intra_op_parallelism_threads() != 0:
        return
    count = max(1, threads.usable_cores() // processes_here)
    threading_config.set_intra_op_parallelism_threads(count)
    if not _blas_limit:
        _blas_limit.append(ThreadpoolController().limit(limits=count, user_api="blas"))
