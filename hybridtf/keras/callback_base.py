"""The base class of Keras callbacks and what callbacks share (``keras.callbacks.Callback``)."""

WHOLE_RUN_HOOKS = ("on_train_begin", "on_train_end", "on_test_begin", "on_test_end",
                   "on_predict_begin", "on_predict_end")
HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
         "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
         "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
         "on_predict_batch_begin", "on_predict_batch_end")


class Callback:
    """Base class: override the ``on_*`` hooks you need; ``self.model`` and ``self.params``
    (epochs, steps, verbose) are set before training starts."""

    def __init__(self):
        self.model = None
        self.params = {}
        self.validation_data = None

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_batch_begin(self, batch, logs=None):
        """Alias of ``on_train_batch_begin`` (older Keras name)."""

    def on_batch_end(self, batch, logs=None):
        """Alias of ``on_train_batch_end`` (older Keras name)."""

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs)


for _hook in HOOKS:
    if not hasattr(Callback, _hook):
        setattr(Callback, _hook, lambda self, *args, **kwargs: None)


def monitor_mode(monitor, mode, who):
    """``"min"`` or ``"max"``: how ``monitor`` improves; ``"auto"`` infers it from the name
    (accuracies and AUCs go up, everything else down)."""
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"{who}: mode must be 'auto', 'min' or 'max', got {mode!r}.")
    if mode == "auto":
        mode = "max" if ("acc" in monitor or monitor.startswith("fmeasure")
                         or "auc" in monitor) else "min"
    return mode
