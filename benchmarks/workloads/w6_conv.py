"""W6: the seed's conv timing, Conv2D(100, 3) forward (valid padding, bias) on 1x200x200x100."""
from functools import partial

import numpy as np

from benchmarks import data, numpy_nn
from benchmarks.devices import CPU, placement, tf_placement
from benchmarks.frameworks import decorate, require
from benchmarks.harness import Prepared
from benchmarks.workloads.base import Impl, Workload, on_gpu

IMAGE = (1, 200, 200, 100)
KERNEL = (3, 3, 100, 100)


def inputs():
    """Image, kernel (HWIO) and bias. A random image, not the seed's zeros, so that the
    agreement check means something."""
    return (data.uniform("W6.image", IMAGE), data.glorot_uniform("W6.kernel", KERNEL),
            data.uniform("W6.bias", KERNEL[-1:], -0.1, 0.1))


def build_numpy(np_module, profile):
    image, kernel, bias = inputs()
    return Prepared(lambda: numpy_nn.conv2d(image, kernel, "VALID") + bias)


def build_tf(tf, profile, decorated, device=CPU):
    """TensorFlow and hybridtf: the layer's variables and its forward pass."""
    require(tf, "constant", "Variable", "nn.conv2d")
    image, kernel, bias = inputs()
    place = tf_placement(tf, device)
    with place.scope():
        kernel, bias = tf.Variable(kernel), tf.Variable(bias)
        image = tf.constant(image)

    def conv(x):
        return tf.nn.conv2d(x, kernel, strides=1, padding="VALID") + bias
    fn = decorate(tf, conv, decorated)
    return Prepared(place.timed(lambda: fn(image)))


def build_jax(jax, profile, device=CPU):
    put = placement("jax", jax, device).put
    image, kernel, bias = (put(a) for a in inputs())

    @jax.jit
    def conv(x, k, b):
        return jax.lax.conv_general_dilated(
            x, k, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")) + b
    return Prepared(lambda: conv(image, kernel, bias).block_until_ready())


def build_torch(torch, profile, device=CPU):
    image, kernel, bias = inputs()
    place = placement("torch", torch, device)
    # PyTorch's own layout (NCHW, OIHW), converted once outside the timed call.
    image = place.put(np.ascontiguousarray(image.transpose(0, 3, 1, 2)))
    kernel = place.put(np.ascontiguousarray(kernel.transpose(3, 2, 0, 1)))
    bias = place.put(bias)
    conv = torch.nn.functional.conv2d
    return Prepared(place.timed(lambda: conv(image, kernel, bias)),
                    check=lambda: conv(image, kernel, bias).cpu().numpy().transpose(0, 2, 3, 1))


WORKLOAD = Workload(
    id="W6",
    title="Conv2D(100, 3) forward",
    shapes="1x200x200x100 float32",
    tolerance=1e-4,
    impls=(
        Impl("numpy", "eager", build_numpy),
        Impl("tensorflow", "eager", partial(build_tf, decorated=False)),
        Impl("tensorflow", "function", partial(build_tf, decorated=True)),
        Impl("jax", "jit", build_jax),
        Impl("torch", "eager", build_torch),
        Impl("hybridtf", "eager", partial(build_tf, decorated=False)),
        Impl("hybridtf", "function", partial(build_tf, decorated=True)),
    ),
)

GPU_WORKLOAD = on_gpu(WORKLOAD)
