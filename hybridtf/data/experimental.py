"""``tf.data.experimental``: cardinality, its constants, and the CSV datasets."""
from hybridtf.data.dataset_ops import (  # noqa: F401
    AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, cardinality)
from hybridtf.data.readers import CsvDataset, make_csv_dataset  # noqa: F401
