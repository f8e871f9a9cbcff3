"""Fused recurrences over a whole sequence (used by the Keras recurrent layers).

Each function takes the input projection of every step, ``inputs @ kernel + bias`` of shape
[batch, time, gates * units] (one matmul, computed by the caller), runs the recurrence in one
native loop, and returns the output sequence and the last state(s).  ``mask`` ([batch, time],
bool; None: every step) skips steps: the state is kept and the output repeats the previous one
(zeros with ``zero_output_for_mask``).  ``go_backwards`` reads the sequence from its end and
returns the outputs in that order.
"""
from hybridtf.api import array_ops, math_ops
from hybridtf.eager.execute import as_tensor, execute
from hybridtf.registry import recurrent as R


def _mask(mask, projected):
    if mask is None:
        batch, steps = projected.shape[0], projected.shape[1]
        if batch is None or steps is None:
            return array_ops.ones_like(projected[:, :, 0], dtype="bool")
        return array_ops.ones((batch, steps), dtype="bool")
    mask = as_tensor(mask)
    return mask if mask.dtype.is_bool else math_ops.cast(mask, "bool")


def _attrs(go_backwards, zero_output_for_mask):
    return {"go_backwards": bool(go_backwards), "zero_output_for_mask": bool(zero_output_for_mask)}


def simple_rnn_sequence(inputs, initial_state, recurrent_kernel, mask=None, go_backwards=False,
                        zero_output_for_mask=False):
    """h_t = tanh(inputs_t + h_{t-1} @ recurrent_kernel); returns (outputs, last state)."""
    x = as_tensor(inputs)
    out, h, _ = execute(R.SIMPLE_RNN_SEQUENCE, [x, as_tensor(initial_state),
                                                as_tensor(recurrent_kernel), _mask(mask, x)],
                        _attrs(go_backwards, zero_output_for_mask))
    return out, h


def lstm_sequence(inputs, initial_h, initial_c, recurrent_kernel, mask=None, go_backwards=False,
                  zero_output_for_mask=False):
    """Keras's LSTM recurrence (gates i, f, c, o; sigmoid and tanh); returns (outputs, last h,
    last c)."""
    x = as_tensor(inputs)
    out, h, c, *_ = execute(R.LSTM_SEQUENCE, [x, as_tensor(initial_h), as_tensor(initial_c),
                                              as_tensor(recurrent_kernel), _mask(mask, x)],
                            _attrs(go_backwards, zero_output_for_mask))
    return out, h, c


def gru_sequence(inputs, initial_state, recurrent_kernel, recurrent_bias=None, mask=None,
                 go_backwards=False, zero_output_for_mask=False, reset_after=True):
    """Keras's GRU recurrence (gates z, r, h; sigmoid and tanh); returns (outputs, last state).
    With ``reset_after`` (Keras's default) the reset gate applies to ``h @ recurrent_kernel +
    recurrent_bias``; without, to h before the product (``recurrent_bias`` must then be None)."""
    x = as_tensor(inputs)
    rk = as_tensor(recurrent_kernel)
    if recurrent_bias is None:
        if reset_after:
            raise ValueError("gru_sequence: reset_after=True needs the recurrent_bias.")
        recurrent_bias = array_ops.zeros(rk.shape[1:], dtype=rk.dtype)
    elif not reset_after:
        raise ValueError("gru_sequence: reset_after=False has no recurrent bias; pass "
                         "recurrent_bias=None and add the bias to the inputs.")
    attrs = _attrs(go_backwards, zero_output_for_mask)
    attrs["reset_after"] = bool(reset_after)
    out, h, *_ = execute(R.GRU_SEQUENCE, [x, as_tensor(initial_state), rk,
                                          as_tensor(recurrent_bias), _mask(mask, x)], attrs)
    return out, h
