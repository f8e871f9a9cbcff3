"""``tf.distribute``: data-parallel training across processes and machines, on MPI.

* Strategies: ``MultiWorkerMirroredStrategy`` (the processes of an ``mpiexec`` job, one replica
  each), ``MirroredStrategy`` and ``get_strategy()`` (one process); ``scope()``, ``run``,
  ``reduce``, ``experimental_distribute_dataset``, and Keras ``fit`` under ``scope()``.
* ``hybridtf.distribute.mpi``: a Horovod-style API for custom loops (``init``, ``rank``,
  ``size``, ``DistributedGradientTape``, ``broadcast_variables``, ``allreduce``, ...).

MPI comes with the optional extra: ``pip install "hybridtf[distributed]"`` (mpi4py and the
``mpich`` wheel; any other MPI mpi4py is built for works the same).  Without it the strategies
run one replica in this process.
"""
from hybridtf.distribute import experimental  # noqa: F401
from hybridtf.distribute.distribute_lib import (  # noqa: F401
    ReduceOp, ReplicaContext, Strategy, StrategyExtended, get_replica_context, get_strategy,
    has_strategy, in_cross_replica_context)
from hybridtf.distribute.input_lib import DistributedDataset, InputContext  # noqa: F401
from hybridtf.distribute.strategies import (  # noqa: F401
    MirroredStrategy, MPIClusterResolver, MultiWorkerMirroredStrategy)
