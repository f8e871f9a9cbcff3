"""The strategies: ``MultiWorkerMirroredStrategy`` (the processes of an MPI job) and the
one-process ``MirroredStrategy``; ``CommunicationOptions`` for the collectives."""
from hybridtf.distribute import processes
from hybridtf.distribute.communicator import LOCAL
from hybridtf.distribute.distribute_lib import Strategy


class CommunicationImplementation:
    """Which collective implementation to use (``tf.distribute.experimental.
    CommunicationImplementation``): hybridtf's collectives always run on MPI, which picks its
    own algorithms (a ring among them) -- AUTO and RING are accepted; NCCL (GPUs) is not."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


class CommunicationOptions:
    """Options of a strategy's collectives (``tf.distribute.experimental.CommunicationOptions``).

    Args:
      bytes_per_pack: gradients are all-reduced in buffers of about this many bytes (0: one
        buffer per dtype, the default).
      timeout_seconds: how long one collective may take before the job is aborted with an
        error naming the collective (a peer died or hangs).  None: the default, 300 s or
        ``$HYBRIDTF_COLLECTIVE_TIMEOUT``; 0: no limit.
      implementation: ``CommunicationImplementation.AUTO`` or ``.RING``.
    """

    def __init__(self, bytes_per_pack=0, timeout_seconds=None,
                 implementation=CommunicationImplementation.AUTO):
        if isinstance(bytes_per_pack, bool) or not isinstance(bytes_per_pack, int) or \
                bytes_per_pack < 0:
            raise ValueError(f"bytes_per_pack must be a non-negative integer, got "
                             f"{bytes_per_pack!r}.")
        if timeout_seconds is not None and (isinstance(timeout_seconds, bool) or not isinstance(
                timeout_seconds, (int, float)) or timeout_seconds < 0):
            raise ValueError(f"timeout_seconds must be None or a non-negative number of "
                             f"seconds, got {timeout_seconds!r}.")
        if implementation not in (CommunicationImplementation.AUTO,
                                  CommunicationImplementation.RING):
            raise ValueError(f"implementation={implementation!r} is not available: hybridtf's "
                             "collectives run on MPI; use CommunicationImplementation.AUTO or "
                             ".RING.")
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation


class MPIClusterResolver:
    """The cluster of an MPI job as TF's cluster resolvers describe it: every process is a
    ``"worker"`` whose ``task_id`` is its rank (rank 0 is the chief)."""

    def __init__(self, task_id, num_workers):
        self.task_type = "worker"
        self.task_id = task_id
        self.num_workers = num_workers
        self.rpc_layer = None

    def cluster_spec(self):
        """``{"worker": [...]}`` with one entry per rank (MPI addresses its processes by rank,
        not by host and port)."""
        return {"worker": [f"mpi-rank-{i}" for i in range(self.num_workers)]}

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return {}


class MultiWorkerMirroredStrategy(Strategy):
    """Synchronous data-parallel training over the processes of an MPI job
    (``tf.distribute.MultiWorkerMirroredStrategy``).

    Launch the program with ``mpiexec -n N python train.py`` (one process per replica, on one
    machine or many); ``num_replicas_in_sync`` is N.  Variables created in ``scope()`` start
    from rank 0's values on every process; inside ``run`` (and Keras ``fit``) the gradients are
    summed over the processes in fused all-reduces, so the weights stay identical.  Checkpoints
    and ``model.save`` are written by rank 0 while every process calls them.  Without MPI
    (mpi4py not installed, or one process) it runs one replica, as TF does on one worker.

    Args:
      cluster_resolver: None (the cluster is the MPI job) or an ``MPIClusterResolver``.
      communication_options: a ``CommunicationOptions``.
    """

    def __init__(self, cluster_resolver=None, communication_options=None):
        if communication_options is None:
            communication_options = CommunicationOptions()
        if not isinstance(communication_options, CommunicationOptions):
            raise ValueError(f"communication_options must be a tf.distribute.experimental."
                             f"CommunicationOptions, got {communication_options!r}.")
        if cluster_resolver is not None and not isinstance(cluster_resolver,
                                                           MPIClusterResolver):
            raise ValueError("MultiWorkerMirroredStrategy takes its cluster from MPI: start the "
                             "processes with `mpiexec -n N python train.py` and leave "
                             f"cluster_resolver=None (got {cluster_resolver!r}).")
        communicator = processes.join_job(communication_options.timeout_seconds)
        super().__init__(communicator, communication_options)
        self._cluster_resolver = MPIClusterResolver(communicator.rank, communicator.size)

    @property
    def cluster_resolver(self):
        """The job's ``MPIClusterResolver`` (``task_id`` is this process's rank)."""
        return self._cluster_resolver


class MirroredStrategy(Strategy):
    """``tf.distribute.MirroredStrategy`` on the CPU: one process, one replica.  (TF mirrors
    over the GPUs of a machine; to train on several processes or machines use
    ``MultiWorkerMirroredStrategy`` under ``mpiexec``.)

    Args:
      devices: None, or a list of one CPU device name.
      cross_device_ops: accepted for compatibility (there is nothing to combine).
    """

    def __init__(self, devices=None, cross_device_ops=None):
        if devices is not None:
            devices = list(devices)
            if len(devices) != 1 or "CPU" not in str(devices[0]).upper():
                raise ValueError(f"MirroredStrategy: hybridtf runs one replica per process, on "
                                 f"its CPU; got devices={devices!r}. Give None or one CPU "
                                 "device, and use MultiWorkerMirroredStrategy under mpiexec for "
                                 "several replicas.")
        super().__init__(LOCAL)
