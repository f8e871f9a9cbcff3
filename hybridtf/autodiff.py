"""``tf.autodiff``: ``GradientTape``, and the functional gradient API built on it
(``gradients_function``, ``val_and_grad_function``, ``make_vjp``, ``implicit_grad``,
``implicit_val_and_grad``, and their eager-era ``tfe`` names)."""
from hybridtf.eager.backprop import (  # noqa: F401
    GradientTape, gradients_function, implicit_grad, implicit_gradients, implicit_val_and_grad,
    implicit_value_and_gradients, make_vjp, val_and_grad_function, value_and_gradients_function)
