"""``tf.train``: checkpoints of objects' variables, managed checkpoint directories, and
checkpoint readers.

* ``Checkpoint(**objects)``: ``save`` / ``write`` / ``restore`` / ``read`` of everything the
  objects hold (``train.checkpoint``), with restoration of variables made later;
* ``CheckpointManager``: numbered checkpoints in a directory, the oldest deleted;
* ``latest_checkpoint``, ``get_checkpoint_state``: the directory's ``checkpoint`` state file;
* ``load_checkpoint``, ``list_variables``, ``load_variable``: values by checkpoint key.

Checkpoint files are hybridtf's own format (TensorFlow's are not read), written atomically.
"""
from hybridtf.train.checkpoint import Checkpoint, CheckpointOptions  # noqa: F401
from hybridtf.train.manager import CheckpointManager  # noqa: F401
from hybridtf.train.reader import list_variables, load_checkpoint, load_variable  # noqa: F401
from hybridtf.train.state import get_checkpoint_state, latest_checkpoint  # noqa: F401
