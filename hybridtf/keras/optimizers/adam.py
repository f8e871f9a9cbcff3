"""``tf.keras.optimizers.Adam``: adaptive moment estimation."""
from hybridtf.api import math_ops
from hybridtf.keras.optimizers.optimizer import Optimizer


class Adam(Optimizer):
    """Adam (``tf.keras.optimizers.Adam``), in TF's formulation: at step ``t`` (from 1)

        alpha = learning_rate * sqrt(1 - beta_2**t) / (1 - beta_1**t)
        m += (g - m) * (1 - beta_1)
        v += (g**2 - v) * (1 - beta_2)
        var -= alpha * m / (sqrt(v) + epsilon)

    With ``amsgrad=True`` the running maximum of ``v`` is used in the last line.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay,
                         clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.amsgrad = amsgrad

    def build(self, var_list):
        super().build(var_list)
        for variable in var_list:
            self.add_variable_from_reference(variable, "momentum")
            self.add_variable_from_reference(variable, "velocity")
            if self.amsgrad:
                self.add_variable_from_reference(variable, "velocity_hat")

    def _step_size(self, learning_rate, dtype):
        """``alpha`` of this step: the bias corrections folded into the learning rate."""
        step = math_ops.cast(self.iterations + 1, dtype)
        beta_1_power = math_ops.pow(math_ops.cast(self.beta_1, dtype), step)
        beta_2_power = math_ops.pow(math_ops.cast(self.beta_2, dtype), step)
        return learning_rate * math_ops.sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power)

    def update_step(self, gradient, variable, learning_rate):
        alpha = self._cached(("adam_alpha", variable.dtype),
                             lambda: self._step_size(learning_rate, variable.dtype))
        m = self.get_slot(variable, "momentum")
        v = self.get_slot(variable, "velocity")
        m.assign_add((gradient - m) * (1.0 - self.beta_1))
        v.assign_add((math_ops.square(gradient) - v) * (1.0 - self.beta_2))
        if self.amsgrad:
            v_hat = self.get_slot(variable, "velocity_hat")
            v_hat.assign(math_ops.maximum(v_hat, v))
            v = v_hat
        variable.assign_sub((m * alpha) / (math_ops.sqrt(v) + self.epsilon))

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                       "amsgrad": self.amsgrad})
        return config
