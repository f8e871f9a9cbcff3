"""``tf.summary``: summaries for TensorBoard, written to event files.

```python
writer = tf.summary.create_file_writer("logs/run1")
with writer.as_default(step=0):
    tf.summary.scalar("loss", 0.5)
```

Writers need the ``tensorboard`` package (``pip install "hybridtf[tensorboard]"``), which also
gives the ``tensorboard --logdir logs`` command to view them; ``import hybridtf`` works without
it.  The events are the ones TF 2 writes, so TensorBoard's dashboards show them the same way.
"""
from hybridtf.summary import experimental  # noqa: F401
from hybridtf.summary.state import record_if, should_record_summaries  # noqa: F401
from hybridtf.summary.summary_ops import histogram, image, scalar, text, write  # noqa: F401
from hybridtf.summary.writer import (  # noqa: F401
    SummaryWriter, create_file_writer, create_noop_writer, flush)
