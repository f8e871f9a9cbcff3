"""``tf.distribute.experimental``: options of the collectives and the multi-worker strategy's
old name."""
from hybridtf.distribute.strategies import (  # noqa: F401
    CommunicationImplementation, CommunicationOptions, MultiWorkerMirroredStrategy)

CollectiveCommunication = CommunicationImplementation
