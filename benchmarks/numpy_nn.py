"""NumPy reference layers with hand-written gradients, for the W3, W4 and W6 reference results.

Layout is TensorFlow's: NHWC activations, HWIO conv kernels, (in, out) dense kernels.
"""
import numpy as np


def _same_padding(size):
    total = size - 1  # stride 1: output size equals input size
    return total // 2, total - total // 2


def conv2d(x, kernel, padding):
    """``tf.nn.conv2d(x, kernel, strides=1, padding)`` as one matmul per kernel tap."""
    kh, kw, c, o = kernel.shape
    if padding == "SAME":
        x = np.pad(x, ((0, 0), _same_padding(kh), _same_padding(kw), (0, 0)))
    n, h, w, _ = x.shape
    oh, ow = h - kh + 1, w - kw + 1
    out = np.zeros((n * oh * ow, o), dtype=np.float32)
    for i in range(kh):
        for j in range(kw):
            out += x[:, i:i + oh, j:j + ow, :].reshape(-1, c) @ kernel[i, j]
    return out.reshape(n, oh, ow, o)


def conv2d_backward(x, kernel, dout, padding, need_dx=True):
    """Gradients of ``conv2d`` w.r.t. its kernel and (optionally) its input."""
    kh, kw, c, o = kernel.shape
    pads = (_same_padding(kh), _same_padding(kw)) if padding == "SAME" else ((0, 0), (0, 0))
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    n, oh, ow, _ = dout.shape
    dout2 = dout.reshape(-1, o)
    dkernel = np.empty_like(kernel)
    dxp = np.zeros_like(xp) if need_dx else None
    for i in range(kh):
        for j in range(kw):
            dkernel[i, j] = xp[:, i:i + oh, j:j + ow, :].reshape(-1, c).T @ dout2
            if need_dx:
                dxp[:, i:i + oh, j:j + ow, :] += (dout2 @ kernel[i, j].T).reshape(n, oh, ow, c)
    if not need_dx:
        return dkernel, None
    (top, _), (left, _) = pads
    return dkernel, dxp[:, top:top + x.shape[1], left:left + x.shape[2], :]


def max_pool2(x):
    """2x2 max pool, stride 2, VALID; also returns the argmax (first maximum, as TF routes it)."""
    n, h, w, c = x.shape
    windows = x.reshape(n, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 5, 2, 4)
    windows = windows.reshape(n, h // 2, w // 2, c, 4)
    index = windows.argmax(axis=-1)
    return np.take_along_axis(windows, index[..., None], axis=-1)[..., 0], index


def max_pool2_backward(dout, index, x_shape):
    n, h, w, c = x_shape
    dwindows = np.zeros(dout.shape + (4,), dtype=dout.dtype)
    np.put_along_axis(dwindows, index[..., None], dout[..., None], axis=-1)
    return dwindows.reshape(n, h // 2, w // 2, c, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(x_shape)


def sparse_softmax_cross_entropy(labels, logits):
    """Per-example losses and d(sum of losses)/d(logits)."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_sum = np.log(np.exp(shifted).sum(axis=1))
    rows = np.arange(logits.shape[0])
    losses = log_sum - shifted[rows, labels]
    dlogits = np.exp(shifted - log_sum[:, None])
    dlogits[rows, labels] -= 1.0
    return losses, dlogits


def softmax(logits):
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def softmax_backward(probs, dprobs):
    return probs * (dprobs - (dprobs * probs).sum(axis=1, keepdims=True))
