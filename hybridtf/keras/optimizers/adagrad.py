"""``tf.keras.optimizers.Adagrad``: per-coordinate rates from accumulated squared gradients."""
from hybridtf.api import math_ops
from hybridtf.keras.optimizers.optimizer import Optimizer


class Adagrad(Optimizer):
    """Adagrad (``tf.keras.optimizers.Adagrad``):

        accumulator += g**2          (starting at initial_accumulator_value)
        var -= learning_rate * g / sqrt(accumulator + epsilon)
    """

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay,
                         clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.initial_accumulator_value = initial_accumulator_value
        self.epsilon = epsilon

    def build(self, var_list):
        super().build(var_list)
        for variable in var_list:
            self.add_variable_from_reference(variable, "accumulator",
                                             initializer=self.initial_accumulator_value)

    def update_step(self, gradient, variable, learning_rate):
        accumulator = self.get_slot(variable, "accumulator")
        accumulator.assign_add(math_ops.square(gradient))
        variable.assign_sub((learning_rate * gradient) /
                            math_ops.sqrt(accumulator + self.epsilon))

    def get_config(self):
        config = super().get_config()
        config.update({"initial_accumulator_value": self.initial_accumulator_value,
                       "epsilon": self.epsilon})
        return config
