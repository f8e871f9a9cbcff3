"""``keras.callbacks.CSVLogger``: one CSV row of logs per epoch."""
import collections.abc
import csv
import os

import numpy as np

from hybridtf.keras.callback_base import Callback


def _cell(value):
    """A log value as Keras writes it: text as is, a sequence as ``"[a, b]"``, else the value
    (``csv`` writes numbers with ``str``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, collections.abc.Iterable) and not (
            isinstance(value, np.ndarray) and value.ndim == 0):
        return f'"[{", ".join(map(str, value))}]"'
    return value


class CSVLogger(Callback):
    """Writes ``epoch`` and the epoch's logs (columns in sorted order) to ``filename`` after
    each epoch, in Keras's format: Excel-style CSV with ``separator``, a header row, and, when
    the first epoch logs no ``val_`` entries, ``val_`` columns too (``NA`` where a value is
    missing).  ``append=True`` adds to an existing file (without a second header).
    """

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self.keys = None
        self.writer = None
        self.csv_file = None
        self.append_header = True

    def on_train_begin(self, logs=None):
        self.append_header = True
        if self.append and os.path.exists(self.filename):
            with open(self.filename) as f:
                self.append_header = not f.readline()
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.csv_file = open(self.filename, "a" if self.append else "w")  # noqa: SIM115
        self.writer = None
        self.keys = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            if self.keys and not any(key.startswith("val_") for key in self.keys):
                self.keys += [f"val_{key}" for key in self.keys]
        if self.writer is None:
            dialect = type("CSVLoggerDialect", (csv.excel,), {"delimiter": self.sep})
            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys,
                                         dialect=dialect)
            if self.append_header:
                self.writer.writeheader()
        row = {"epoch": epoch}
        row.update((key, _cell(logs.get(key, "NA"))) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.writer = None
