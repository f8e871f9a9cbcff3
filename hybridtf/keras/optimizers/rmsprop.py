"""``tf.keras.optimizers.RMSprop``: gradients scaled by a running RMS of their magnitude."""
from hybridtf.api import math_ops
from hybridtf.keras.optimizers.optimizer import Optimizer


class RMSprop(Optimizer):
    """RMSprop (``tf.keras.optimizers.RMSprop``), in TF's formulation:

        velocity = rho * velocity + (1 - rho) * g**2
        increment = learning_rate * g / sqrt(velocity + epsilon)
        var -= increment                  (or, with momentum: m = momentum * m + increment;
                                           var -= m)

    With ``centered=True`` the running mean ``a`` of ``g`` is also kept and
    ``velocity - a**2 + epsilon`` is used under the square root.
    """

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay,
                         clipnorm=clipnorm, clipvalue=clipvalue,
                         global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.rho = rho
        self.momentum = momentum
        self.epsilon = epsilon
        self.centered = centered

    def build(self, var_list):
        super().build(var_list)
        for variable in var_list:
            self.add_variable_from_reference(variable, "velocity")
            if self.momentum > 0:
                self.add_variable_from_reference(variable, "momentum")
            if self.centered:
                self.add_variable_from_reference(variable, "average_gradient")

    def update_step(self, gradient, variable, learning_rate):
        rho = self.rho
        velocity = self.get_slot(variable, "velocity")
        velocity.assign(rho * velocity + (1.0 - rho) * math_ops.square(gradient))
        if self.centered:
            average = self.get_slot(variable, "average_gradient")
            average.assign(rho * average + (1.0 - rho) * gradient)
            denominator = velocity - math_ops.square(average) + self.epsilon
        else:
            denominator = velocity + self.epsilon
        increment = (learning_rate * gradient) / math_ops.sqrt(denominator)
        if self.momentum > 0:
            m = self.get_slot(variable, "momentum")
            m.assign(self.momentum * m + increment)
            variable.assign_sub(m)
        else:
            variable.assign_sub(increment)

    def get_config(self):
        config = super().get_config()
        config.update({"rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon,
                       "centered": self.centered})
        return config
