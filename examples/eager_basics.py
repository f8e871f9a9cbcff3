"""Eager hybridtf: tensors, ops on Numba kernels, and gradients with GradientTape."""
import hybridtf as tf

x = tf.constant([[2.0, 3.0]])
y = tf.constant([[3.0, -2.0]])
print("f(x, y) =", tf.reduce_mean(tf.multiply(x ** 2, 3) + y))

w = tf.Variable([[1.0], [2.0]], name="w")
b = tf.Variable(0.5, name="b")
with tf.GradientTape() as tape:
    prediction = tf.matmul(x, w) + b
    loss = tf.reduce_sum(tf.square(prediction - 10.0))
dw, db = tape.gradient(loss, [w, b])
print("loss =", loss)
print("dloss/dw =", dw.numpy().ravel(), " dloss/db =", db.numpy())

# Second derivative by nesting tapes.
t = tf.constant(5.0)
with tf.GradientTape() as outer:
    outer.watch(t)
    with tf.GradientTape() as inner:
        inner.watch(t)
        cube = t * t * t
    first = inner.gradient(cube, t)
print("d(t^3)/dt =", first.numpy(), " d2(t^3)/dt2 =", outer.gradient(first, t).numpy())

# A small linear regression trained eagerly with plain gradient descent.
tf.random.set_seed(0)
features = tf.random.normal([64, 3])
targets = tf.matmul(features, tf.constant([[1.5], [-2.0], [0.5]])) + 0.25
weights = tf.Variable(tf.zeros([3, 1]))
bias = tf.Variable(0.0)
for step in range(200):
    with tf.GradientTape() as tape:
        error = tf.matmul(features, weights) + bias - targets
        mse = tf.reduce_mean(error * error)
    gw, gb = tape.gradient(mse, [weights, bias])
    weights.assign_sub(0.1 * gw)
    bias.assign_sub(0.1 * gb)
print("learned weights:", weights.numpy().ravel().round(3), "bias:", round(float(bias), 3))
print("final mse:", float(mse))
