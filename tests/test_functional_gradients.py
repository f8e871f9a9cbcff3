"""The functional gradient API (tf.autodiff.gradients_function, val_and_grad_function, make_vjp,
implicit_grad, implicit_val_and_grad): the reference's own docstring examples with their
numbers, and the behaviour around them."""
import numpy as np
import pytest

import hybridtf as tf
from hybridtf.eager import backprop


def f(x, y):
    # f(x, y) = x^3 y - x y^2: df/dx = 3 x^2 y - y^2, df/dy = x^3 - 2 x y, d2f/dx2 = 6 x y
    return x * x * x * y - x * y * y


def test_gradients_function_docstring_example():
    grad_fn = tf.autodiff.gradients_function(f)
    x = 2.0
    y = 3.0
    x_grad, y_grad = grad_fn(x, y)
    assert x_grad.numpy() == 3 * (2 ** 2) * 3 - 3 ** 2
    assert y_grad.numpy() == (2 ** 3) - 2 * 2 * 3
    gradgrad_fn = tf.autodiff.gradients_function(lambda x, y: grad_fn(x, y)[0])
    x_gradgrad = gradgrad_fn(x, y)[0]
    assert x_gradgrad.numpy() == 6 * 2 * 3
    ygrad_fn = tf.autodiff.gradients_function(f, params=[1])
    (y_grad,) = ygrad_fn(x, y)
    assert y_grad.numpy() == (2 ** 3) - 2 * 2 * 3


def test_val_and_grad_function_docstring_example():
    val_grads_fn = tf.autodiff.value_and_gradients_function(f)
    x = 2.0
    y = 3.0
    f_val, (x_grad, y_grad) = val_grads_fn(x, y)
    assert f_val.numpy() == (2 ** 3) * 3 - 2 * (3 ** 2)
    assert x_grad.numpy() == 3 * (2 ** 2) * 3 - 3 ** 2
    assert y_grad.numpy() == (2 ** 3) - 2 * 2 * 3
    val_ygrad_fn = tf.autodiff.value_and_gradients_function(f, params=[1])
    f_val, (y_grad,) = val_ygrad_fn(x, y)
    assert f_val.numpy() == (2 ** 3) * 3 - 2 * (3 ** 2)
    assert y_grad.numpy() == (2 ** 3) - 2 * 2 * 3
    assert tf.autodiff.value_and_gradients_function is tf.autodiff.val_and_grad_function


def test_make_vjp_docstring_example():
    def square(x):
        return x * x

    wrapped_fn = tf.autodiff.make_vjp(square)
    result, vjp = wrapped_fn(tf.constant(3.0))
    assert result.numpy() == 9.0
    grads = vjp()
    assert isinstance(grads, list) and [g.numpy() for g in grads] == [6.0]
    assert vjp(dy=tf.constant(2.0))[0].numpy() == 12.0   # persistent by default: call again
    result, vjp = tf.autodiff.make_vjp(square, persistent=False)(tf.constant(3.0))
    vjp()
    with pytest.raises(RuntimeError, match="non-persistent"):
        vjp()


def _dense_loss():
    dense_layer = tf.keras.layers.Dense(1)

    def loss(x, y):
        return tf.reduce_sum(tf.square(dense_layer(x) - y))
    return dense_layer, loss


def _expected(dense_layer, x, y):
    kernel, bias = (v.numpy() for v in dense_layer.weights)
    residual = x @ kernel + bias - y
    return (residual ** 2).sum(), 2 * x.T @ residual, 2 * residual.sum(axis=0)


def test_implicit_val_and_grad_docstring_example():
    dense_layer, loss = _dense_loss()
    val_grad_fn = tf.autodiff.implicit_value_and_gradients(loss)
    x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    y = tf.constant([[10.0], [20.0]])
    value, grads_and_vars = val_grad_fn(x, y)
    expected_value, expected_kernel, expected_bias = _expected(dense_layer, x.numpy(), y.numpy())
    np.testing.assert_allclose(value.numpy(), expected_value, rtol=1e-5)
    (g_kernel, v_kernel), (g_bias, v_bias) = grads_and_vars
    assert v_kernel is dense_layer.kernel and v_bias is dense_layer.bias   # creation order
    np.testing.assert_allclose(g_kernel.numpy(), expected_kernel, rtol=1e-5)
    np.testing.assert_allclose(g_bias.numpy(), expected_bias, rtol=1e-5)
    # Apply the gradients to the variables.
    before = v_kernel.numpy().copy()
    optimizer = tf.keras.optimizers.SGD(0.1)
    optimizer.apply_gradients(grads_and_vars)
    np.testing.assert_allclose(v_kernel.numpy(), before - 0.1 * expected_kernel, rtol=1e-5)


def test_implicit_grad_docstring_example():
    dense_layer, loss = _dense_loss()
    grad_fn = tf.autodiff.implicit_gradients(loss)
    x = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    y = tf.constant([[10.0], [20.0]])
    grads_and_vars = grad_fn(x, y)
    _, expected_kernel, expected_bias = _expected(dense_layer, x.numpy(), y.numpy())
    np.testing.assert_allclose(grads_and_vars[0][0].numpy(), expected_kernel, rtol=1e-5)
    np.testing.assert_allclose(grads_and_vars[1][0].numpy(), expected_bias, rtol=1e-5)
    tf.keras.optimizers.SGD(0.1).apply_gradients(grads_and_vars)
    assert tf.autodiff.implicit_gradients is tf.autodiff.implicit_grad


def test_implicit_functions_see_only_trainable_variables_and_need_some():
    w = tf.Variable(2.0)
    frozen = tf.Variable(5.0, trainable=False)
    value, pairs = tf.autodiff.implicit_val_and_grad(lambda x: w * x * frozen)(3.0)
    assert value.numpy() == 30.0 and len(pairs) == 1
    assert pairs[0][1] is w and pairs[0][0].numpy() == 15.0
    with pytest.raises(ValueError, match="No trainable variables were accessed"):
        tf.autodiff.implicit_grad(lambda x: x * frozen)(tf.constant(1.0))
    with pytest.raises(ValueError, match="returns None; did you forget"):
        tf.autodiff.implicit_grad(lambda x: None)(1.0)


def test_params_by_name_and_independent_arguments():
    grads = tf.autodiff.gradients_function(f, params=["y"])(2.0, 3.0)
    assert [g.numpy() for g in grads] == [(2 ** 3) - 2 * 2 * 3]
    one = tf.constant(1.0)
    # The same tensor passed twice counts as two parameters.
    assert [g.numpy() for g in tf.autodiff.gradients_function(lambda a, b: a * b)(one, one)] == \
        [1.0, 1.0]
    # A result that is a parameter itself still has its gradient.
    assert tf.autodiff.gradients_function(lambda a: a)(one)[0].numpy() == 1.0
    with pytest.raises(ValueError, match="params must be all strings or all integers"):
        tf.autodiff.gradients_function(f, params=[0, "y"])(1.0, 2.0)
    with pytest.raises(ValueError, match="\\['z'\\] are not positional parameters"):
        tf.autodiff.gradients_function(f, params=["z"])(1.0, 2.0)
    with pytest.raises(ValueError, match="cannot receive keyword arguments"):
        tf.autodiff.gradients_function(f)(1.0, y=2.0)
    with pytest.raises(ValueError, match="returns None"):
        tf.autodiff.gradients_function(lambda x: None)(1.0)


def test_structured_results_sum_and_dy_weights():
    def pair(x):
        return {"double": 2.0 * x, "square": x * x}

    value, grads = tf.autodiff.val_and_grad_function(pair)(tf.constant([1.0, 3.0]))
    assert sorted(value) == ["double", "square"]
    np.testing.assert_array_equal(grads[0].numpy(), [4.0, 8.0])   # 2 + 2x
    _, grads = tf.autodiff.val_and_grad_function(pair)(
        tf.constant([1.0, 3.0]), dy={"double": tf.constant([1.0, 0.0]),
                                     "square": tf.constant([0.0, 1.0])})
    np.testing.assert_array_equal(grads[0].numpy(), [2.0, 6.0])


def test_methods_and_varargs():
    class Model:
        def loss(self, x, y):
            return x * y

    grads = tf.autodiff.gradients_function(Model().loss)(2.0, 5.0)
    assert [g.numpy() for g in grads] == [5.0, 2.0]
    grads = tf.autodiff.gradients_function(lambda *xs: xs[0] * xs[1] * xs[2])(1.0, 2.0, 3.0)
    assert [g.numpy() for g in grads] == [6.0, 3.0, 2.0]


def test_inside_a_traced_function():
    @tf.function
    def gradients(x, y):
        return tf.autodiff.gradients_function(f)(x, y)

    x_grad, y_grad = gradients(tf.constant(2.0), tf.constant(3.0))
    assert x_grad.numpy() == 27.0 and y_grad.numpy() == -4.0


def test_available_from_the_backprop_module():
    for name in ["implicit_grad", "implicit_val_and_grad", "gradients_function",
                 "val_and_grad_function", "make_vjp"]:
        assert getattr(backprop, name) is getattr(tf.autodiff, name)
