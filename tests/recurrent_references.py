"""NumPy references of the recurrent layers: loops over time with Keras's mask semantics."""
import numpy as np


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _run(step, xp, states, mask, go_backwards, zero_output):
    """A NumPy loop over time with Keras's mask semantics; ``step(xp_t, states)`` gives the
    new states, whose first is the output."""
    batch, steps = xp.shape[:2]
    order = range(steps - 1, -1, -1) if go_backwards else range(steps)
    outputs, prev = [], np.zeros_like(states[0])
    for t in order:
        new = step(xp[:, t], states)
        keep = mask[:, t][:, None]
        states = [np.where(keep, n, s) for n, s in zip(new, states)]
        out = np.where(keep, new[0], 0.0 if zero_output else prev)
        outputs.append(out)
        prev = out
    return [np.stack(outputs, 1)] + states


def simple_rnn_reference(xp, h0, rk, mask, go_backwards=False, zero_output=False):
    return _run(lambda x, s: [np.tanh(x + s[0] @ rk)], xp, [h0], mask, go_backwards,
                zero_output)


def lstm_reference(xp, h0, c0, rk, mask, go_backwards=False, zero_output=False):
    def step(x, s):
        h, c = s
        z = x + h @ rk
        i, f, g, o = np.split(z, 4, axis=-1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        return [_sigmoid(o) * np.tanh(c), c]
    return _run(step, xp, [h0, c0], mask, go_backwards, zero_output)


def gru_reference(xp, h0, rk, rb, mask, go_backwards=False, zero_output=False,
                  reset_after=True):
    units = h0.shape[1]

    def step(x, s):
        h, = s
        xz, xr, xh = np.split(x, 3, axis=-1)
        if reset_after:
            inner = h @ rk + rb
            z = _sigmoid(xz + inner[:, :units])
            r = _sigmoid(xr + inner[:, units:2 * units])
            hh = np.tanh(xh + r * inner[:, 2 * units:])
        else:
            z = _sigmoid(xz + h @ rk[:, :units])
            r = _sigmoid(xr + h @ rk[:, units:2 * units])
            hh = np.tanh(xh + (r * h) @ rk[:, 2 * units:])
        return [z * h + (1 - z) * hh]
    return _run(step, xp, [h0], mask, go_backwards, zero_output)
