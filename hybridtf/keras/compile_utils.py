"""What ``Model.compile`` sets up for training: the compiled loss(es) and metrics.

As in Keras 3:

* ``model.compute_loss(x, y, y_pred, sample_weight)`` sums each output's loss (times its
  ``loss_weights`` entry) and the losses the layers added; it updates the per-output loss
  trackers (``<output>_loss``, several outputs only) but not the ``loss`` tracker: the train
  and test steps update that one with the value they got;
* ``model.metrics`` lists the ``loss`` tracker, then the compiled metrics as one metric named
  ``compile_metrics`` whose ``result()`` is a dict (``{"mae": ..., "accuracy": ...}``, keys
  prefixed by the output name for several outputs), then the per-output loss trackers.

Keras 2's ``model.compiled_loss(y, y_pred, sample_weight, regularization_losses)`` and
``model.compiled_metrics.update_state(y, y_pred)`` keep working in a custom ``train_step``:
the first returns the total loss and adds it to the ``loss`` tracker (as Keras 2 did), the
second updates the compiled metrics.
"""
from hybridtf.api import array_ops, math_ops
from hybridtf.framework import dtypes, nest
from hybridtf.framework.tensor import Tensor
from hybridtf.keras import losses as losses_lib
from hybridtf.keras import metrics as metrics_lib


# ---- output names and per-output arguments -----------------------------------------------------
def output_names(model, y_pred):
    """Keras's names of a model's outputs ``y_pred``: the keys of a dict of outputs (in
    flattening order), the names of the layers making a functional or Sequential model's
    outputs, else ``output_1``, ``output_2``, ..."""
    count = len(nest.flatten(y_pred))
    if isinstance(y_pred, dict) and all(not nest.is_nested(v) for v in y_pred.values()):
        return sorted(y_pred)
    outputs = model.__dict__.get("outputs")
    if outputs and len(outputs) == count:
        names = [t._keras_history[0].name for t in outputs]
        if len(set(names)) == count:
            return names
    return [f"output_{i + 1}" for i in range(count)]


def per_output(spec, names, argument):
    """``spec`` (one value for every output, a list with one per output, or a dict keyed by
    output name) as a list with one entry per output (None where none is given)."""
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(names))
        if unknown:
            raise ValueError(f"compile: {argument} has keys {unknown} that are not output names "
                             f"of the model; its outputs are {names}.")
        return [spec.get(name) for name in names]
    if isinstance(spec, (list, tuple)):
        if len(spec) != len(names):
            raise ValueError(f"compile: {argument} is a list of {len(spec)} entries but the "
                             f"model has {len(names)} output(s) {names}; give one entry per "
                             "output, or a dict keyed by output name.")
        return list(spec)
    return [spec] * len(names)


def flat_targets(y_true, names, who):
    """The targets ``y_true`` as one entry per output named ``names``: a dict is matched by
    output name (outputs without a target get None), a list or tuple by position."""
    count = len(names)
    if y_true is None:
        return [None] * count
    if isinstance(y_true, dict):
        unknown = sorted(set(y_true) - set(names))
        if unknown:
            raise ValueError(f"{who}: y has keys {unknown} that are not output names of the "
                             f"model; its outputs are {names}.")
        return [y_true.get(name) for name in names]
    if isinstance(y_true, (list, tuple)) and (count > 1 or (
            len(y_true) == 1 and hasattr(y_true[0], "shape"))):
        flat = nest.flatten(y_true)
        if len(flat) != count:
            raise ValueError(f"{who}: the model has {count} outputs {names} but y has "
                             f"{len(flat)} targets; give one target array per output.")
        return flat
    if count > 1:
        raise ValueError(f"{who}: the model has {count} outputs {names}; give y as a list (or "
                         "a dict keyed by output name) of one target array per output.")
    return [y_true]


def _flat_sample_weights(sample_weight, names):
    if isinstance(sample_weight, dict):
        return [sample_weight.get(name) for name in names]
    if isinstance(sample_weight, (list, tuple)) and len(names) > 1:
        return nest.flatten(sample_weight)
    return [sample_weight] * len(names)


def batch_size_of(x, dtype):
    """The number of samples in a batch: static when known, else a tensor (a step traced with
    an unknown batch dimension)."""
    first = next(t for t in nest.flatten(x) if t is not None)
    size = first.shape[0] if first.shape.rank else None
    if size is not None:
        return float(size)
    return math_ops.cast(array_ops.shape(first)[0], dtype)


def as_loss(spec):
    """A ``Loss`` object for a loss name, object or function."""
    loss = losses_lib.get(spec)
    if not isinstance(loss, losses_lib.Loss):
        # A function gives per-sample losses: reduced (and weighted) like a Loss.
        loss = losses_lib.LossFunctionWrapper(loss, name=getattr(loss, "__name__", None))
    return loss


def check_loss_specs(loss):
    """Rejects unknown loss names at compile time (Keras does the same)."""
    specs = loss.values() if isinstance(loss, dict) else loss if isinstance(
        loss, (list, tuple)) else [loss]
    for spec in specs:
        if spec is not None:
            as_loss(spec)


# ---- the compiled loss -------------------------------------------------------------------------
class LossesContainer:
    """``model.compiled_loss``: the loss(es) given to ``compile``.

    ``compute(y_true, y_pred, sample_weight)`` is the compiled part of
    ``model.compute_loss``.  Calling the container, Keras 2's way,
    ``compiled_loss(y_true, y_pred, sample_weight=None, regularization_losses=None)`` returns
    the total -- plus ``regularization_losses`` -- and adds it to the ``loss`` tracker.
    """

    def __init__(self, losses, loss_weights=None, loss_tracker=None, name_outputs=None):
        self._user_losses = losses
        self._user_loss_weights = loss_weights
        self._loss_tracker = loss_tracker
        self._name_outputs = name_outputs or (lambda y_pred: [
            f"output_{i + 1}" for i in range(len(nest.flatten(y_pred)))])
        self._per_output_metrics = []
        self._names = None
        self._losses = None       # [(Loss or None, weight)] per output, once built

    @property
    def built(self):
        return self._losses is not None

    @property
    def metrics(self):
        """One loss tracker per output (``<output>_loss``) for a model with several outputs,
        in output order -- in the order of the loss dict's keys when ``loss`` was a dict, as
        in Keras 3."""
        trackers = [m for m in self._per_output_metrics if m is not None]
        if isinstance(self._user_losses, dict) and self._names:
            order = {f"{name}_loss": i for i, name in enumerate(self._user_losses)}
            trackers.sort(key=lambda m: order.get(m.name, len(order)))
        return trackers

    def build(self, y_pred, names=None):
        names = names or self._name_outputs(y_pred)
        specs = per_output(self._user_losses, names, "loss")
        weights = per_output(self._user_loss_weights, names, "loss_weights")
        self._names = names
        self._losses = [(None if spec is None else as_loss(spec),
                         1.0 if weight is None else float(weight))
                        for spec, weight in zip(specs, weights)]
        several = len(names) > 1
        self._per_output_metrics = [
            metrics_lib.Mean(name=f"{name}_loss") if loss is not None and several else None
            for name, (loss, _) in zip(names, self._losses)]

    def compute(self, y_true, y_pred, sample_weight=None):
        """The sum of each output's loss times its weight (None when no output has a loss);
        updates the per-output loss trackers."""
        if not self.built:
            self.build(y_pred)
        flat_pred = nest.flatten(y_pred)
        if len(flat_pred) != len(self._losses):
            raise ValueError(f"compute_loss: the model gave {len(flat_pred)} outputs but the "
                             f"loss was set up for {len(self._losses)} ({self._names}).")
        flat_true = flat_targets(y_true, self._names, "compute_loss")
        weights = _flat_sample_weights(sample_weight, self._names)
        batch = None
        total = None
        for (loss, weight), y_t, y_p, s_w, tracker, name in zip(
                self._losses, flat_true, flat_pred, weights, self._per_output_metrics,
                self._names):
            if loss is None:
                continue
            if y_t is None:
                raise ValueError(f"The model was compiled with a loss for output {name!r}, but "
                                 "no target y was given for it to fit/evaluate/train_on_batch; "
                                 "pass y (or yield (x, y) batches).")
            value = loss(y_t, y_p, sample_weight=s_w)
            if tracker is not None:
                batch = batch_size_of(flat_pred, _float_dtype(flat_pred)) if batch is None \
                    else batch
                tracker.update_state(value, sample_weight=batch)
            if weight != 1.0:
                value = value * weight
            total = value if total is None else total + value
        return total

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        total = self.compute(y_true, y_pred, sample_weight)
        dtype = _float_dtype(nest.flatten(y_pred))
        for extra in regularization_losses or []:
            extra = math_ops.cast(extra, dtype) if isinstance(extra, Tensor) else extra
            total = extra if total is None else total + extra
        if total is None:
            total = array_ops.zeros([], dtype)
        if self._loss_tracker is not None:
            self._loss_tracker.update_state(
                total, sample_weight=batch_size_of(y_pred, dtype))
        return total

    def reset_state(self):
        for metric in self.metrics:
            metric.reset_state()


def _float_dtype(flat):
    dtype = flat[0].dtype
    return dtype if dtype.is_floating else dtypes.float32


# ---- the compiled metrics ----------------------------------------------------------------------
class MetricsContainer(metrics_lib.Metric):
    """``model.compiled_metrics``: the metrics given to ``compile``, listed in
    ``model.metrics`` as one metric named ``compile_metrics`` (Keras 3's ``CompileMetrics``).

    ``update_state(y_true, y_pred, sample_weight=None)`` updates them (only
    ``weighted_metrics`` receive the sample weights); ``result()`` is the dict of their
    results, named by their identifiers (prefixed by the output's name for a model with
    several outputs; a weighted metric sharing a name with a plain one gets a ``weighted_``
    prefix); ``metrics`` lists the Metric objects (``metrics`` first, then
    ``weighted_metrics``).  String identifiers are resolved against the first batch's shapes
    (``"accuracy"`` becomes binary, sparse or categorical accuracy).
    """

    def __init__(self, metrics=None, weighted_metrics=None, name_outputs=None):
        super().__init__(name="compile_metrics")
        self._user_metrics = metrics
        self._user_weighted_metrics = weighted_metrics
        self._name_outputs = name_outputs or (lambda y_pred: [
            f"output_{i + 1}" for i in range(len(nest.flatten(y_pred)))])
        self._names = None
        self._metrics = None           # per output: [Metric]
        self._weighted = None

    @property
    def built(self):
        return self._metrics is not None

    @property
    def metrics(self):
        if not self.built:
            return []
        return [m for group in self._metrics + self._weighted for m in group]

    @property
    def variables(self):
        return [v for metric in self.metrics for v in metric.variables]

    def build(self, y_true, y_pred, names=None):
        flat_pred = nest.flatten(y_pred)
        count = len(flat_pred)
        names = names or self._name_outputs(y_pred)
        flat_true = flat_targets(y_true, names, "compiled_metrics")

        def groups_of(spec, argument):
            if spec is None:
                return [[] for _ in range(count)]
            if isinstance(spec, dict):
                groups = per_output(spec, names, argument)
                return [[] if g is None else list(g) if isinstance(g, (list, tuple)) else [g]
                        for g in groups]
            spec = list(spec) if isinstance(spec, (list, tuple)) else [spec]
            if count > 1 and len(spec) == count and all(isinstance(s, (list, tuple))
                                                        for s in spec):
                return [list(s) for s in spec]
            if count > 1 and any(isinstance(s, (list, tuple)) for s in spec):
                raise ValueError(f"compile: {argument} as a list of lists needs one list per "
                                 f"output ({count} outputs {names}).")
            return [list(spec) for _ in range(count)]

        def make(groups):
            out = []
            for i, group in enumerate(groups):
                made = []
                for spec in group:
                    if i > 0 and isinstance(spec, metrics_lib.Metric) and any(
                            spec is first for first in groups[0]):
                        # One Metric object listed for every output: each output gets its own.
                        spec = type(spec).from_config(spec.get_config())
                    made.append(metrics_lib.resolve(spec, flat_true[i], flat_pred[i]))
                out.append(made)
            return out
        self._names = names
        self._metrics = make(groups_of(self._user_metrics, "metrics"))
        self._weighted = make(groups_of(self._user_weighted_metrics, "weighted_metrics"))

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Updates every metric with a batch (``weighted_metrics`` with ``sample_weight``)."""
        if not self.built:
            self.build(y_true, y_pred)
        if y_true is None:
            return
        flat_pred = nest.flatten(y_pred)
        flat_true = flat_targets(y_true, self._names, "compiled_metrics")
        weights = _flat_sample_weights(sample_weight, self._names)
        for i, (y_t, y_p) in enumerate(zip(flat_true, flat_pred)):
            if y_t is None:
                continue
            for metric in self._metrics[i]:
                metric.update_state(y_t, y_p)
            for metric in self._weighted[i]:
                metric.update_state(y_t, y_p, sample_weight=weights[i])

    def result(self):
        """``{name: result}`` of every compiled metric (empty before the first batch)."""
        results = {}
        if not self.built:
            return results
        several = len(self._names) > 1

        def key(output, name):
            return f"{output}_{name}" if several else name

        def unique(name):
            if name not in results:
                return name
            index = 1
            while f"{name}_{index}" in results:
                index += 1
            return f"{name}_{index}"

        for output, group in zip(self._names, self._metrics):
            for metric in group:
                results[unique(key(output, metric.name))] = metric.result()
        for output, group in zip(self._names, self._weighted):
            for metric in group:
                name = key(output, metric.name)
                if name in results:
                    name = unique(key(output, f"weighted_{metric.name}"))
                results[name] = metric.result()
        return results

    def reset_state(self):
        for metric in self.metrics:
            metric.reset_state()
