"""K2: ``Model.predict`` of W3's MLP (with W3's initial weights) over 12,800 rows, with
``predict``'s default batch size (32) and ``verbose=0``; ``hybridtf eager`` is ``predict``
with ``run_eagerly=True``.  The NumPy reference is the forward pass over all rows at once."""
from functools import partial

import numpy as np

from benchmarks import data
from benchmarks.frameworks import require
from benchmarks.harness import Prepared
from benchmarks.workloads import k1_keras_fit, w3_mlp
from benchmarks.workloads.base import Impl, Workload

ROWS = 12_800


def inputs():
    return data.uniform("K2.x", (ROWS, w3_mlp.SIZES[0]))


def build_numpy(np_module, profile):
    w1, b1, w2, b2, w3, b3 = w3_mlp.initial_params()
    x = inputs()

    def predict():
        h = np.maximum(x @ w1 + b1, 0)
        h = np.maximum(h @ w2 + b2, 0)
        return h @ w3 + b3
    return Prepared(predict)


def build_predict(tf, profile, run_eagerly=False):
    require(tf, *k1_keras_fit.KERAS_REQUIRED, "keras.Model.predict")
    model = k1_keras_fit.keras_model(tf)
    model.compile(run_eagerly=run_eagerly)
    x = inputs()
    return Prepared(lambda: model.predict(x, verbose=0))


IMPLS = (
    Impl("numpy", "eager", build_numpy),
    Impl("tensorflow", "function", build_predict),
    Impl("hybridtf", "eager", partial(build_predict, run_eagerly=True)),
    Impl("hybridtf", "function", build_predict),
)

WORKLOAD = Workload(
    id="K2",
    title="Keras predict of W3's MLP",
    shapes=f"{ROWS} rows, batch size 32 (predict's default)",
    tolerance=1e-4,
    impls=IMPLS,
    notes="TF function / hybridtf function: model.predict; hybridtf eager: predict with "
          "run_eagerly=True; NumPy: the forward pass over all rows at once.",
)
