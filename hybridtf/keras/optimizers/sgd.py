"""``tf.keras.optimizers.SGD``: gradient descent, optionally with (Nesterov) momentum."""
from hybridtf.keras.optimizers.optimizer import Optimizer


class SGD(Optimizer):
    """Gradient descent with optional momentum (``tf.keras.optimizers.SGD``).

    Without momentum: ``var -= learning_rate * g``.  With momentum:
    ``m = momentum * m - learning_rate * g`` then ``var += m``, or with ``nesterov=True``
    ``var += momentum * m - learning_rate * g`` (with the new ``m``).
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay,
                         clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, name=name, **kwargs)
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or \
                not 0 <= momentum <= 1:
            raise ValueError(f"`momentum` must be a float between [0, 1]. Received: "
                             f"momentum={momentum!r}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def build(self, var_list):
        super().build(var_list)
        if self.momentum != 0:
            for variable in var_list:
                self.add_variable_from_reference(variable, "momentum")

    def update_step(self, gradient, variable, learning_rate):
        if self.momentum == 0:
            variable.assign_sub(gradient * learning_rate)
            return
        m = self.get_slot(variable, "momentum")
        m.assign(m * self.momentum - gradient * learning_rate)
        if self.nesterov:
            variable.assign_add(m * self.momentum - gradient * learning_rate)
        else:
            variable.assign_add(m)

    def get_config(self):
        config = super().get_config()
        config.update({"momentum": self.momentum, "nesterov": self.nesterov})
        return config
