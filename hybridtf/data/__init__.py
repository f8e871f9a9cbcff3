"""``tf.data``: input pipelines (``tf.data.Dataset``) and the file datasets."""
from hybridtf.data import experimental  # noqa: F401
from hybridtf.data.dataset_ops import (  # noqa: F401
    AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, DatasetV2)
from hybridtf.data.iterators import Iterator  # noqa: F401
from hybridtf.data.readers import TextLineDataset  # noqa: F401
from hybridtf.data.structure import DatasetSpec  # noqa: F401
