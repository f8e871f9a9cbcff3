"""Fused recurrences: one op runs a SimpleRNN, LSTM or GRU over a whole sequence.

Inputs are the input projection of every step (``x @ kernel + bias``, computed outside with one
matmul), the initial state(s), the recurrent kernel (and GRU's recurrent bias) and a bool mask
[batch, time]; attributes ``go_backwards``, ``zero_output_for_mask`` (and GRU's
``reset_after``).  Besides the output sequence and the last state(s), each op outputs what its
backprop through time needs (states and gate activations by step); the gradient rule passes
them to the op's ``*_grad`` op, which runs the whole backward recurrence in one kernel.  The
``*_grad`` ops have no gradient of their own (no second-order gradients through a fused
recurrence).
"""
from ops import recurrent as kernels

from hybridtf.registry import OpDef, Spec, checks, register
from hybridtf.registry.public_ops import array_ops as A
from hybridtf.registry.public_ops import execute as EX

FLOATS = ("float32", "float64")


def _dims_match(expected, got):
    return len(expected) == len(got) and all(
        None in (e, g) or e == g for e, g in zip(expected, got))


def _check_inputs(name, specs, names, expected_shapes):
    """Checks ranks, sizes and dtypes; ``expected_shapes`` gives each input's shape in terms of
    the sizes found so far (None: any)."""
    float_specs = [s for s, n in zip(specs, names) if n != "mask"]
    checks.allowed_dtype(name, float_specs[0].dtype, FLOATS, names[0])
    for spec, what in zip(specs, names):
        if what == "mask":
            if spec.dtype.kind != "b":
                checks.fail(name, f"mask must be bool, got {checks.dtype_name(spec.dtype)}.")
        elif spec.dtype != float_specs[0].dtype:
            checks.fail(name, f"{what} has dtype {checks.dtype_name(spec.dtype)} but "
                        f"{names[0]} has {checks.dtype_name(float_specs[0].dtype)}; all "
                        "float inputs must have one dtype.")
    for spec, what, shape in zip(specs, names, expected_shapes):
        if not _dims_match(shape, spec.shape):
            described = ", ".join(f"{n} {checks.fmt_shape(s.shape)}" for s, n in zip(specs, names))
            checks.fail(name, f"{what} must have shape {checks.fmt_shape(shape)}; got {described}.")


def _sequence_sizes(name, projected, gates):
    if len(projected.shape) != 3:
        checks.fail(name, f"the input projection must be [batch, time, {gates} * units], got "
                    f"shape {checks.fmt_shape(projected.shape)}.")
    batch, steps, width = projected.shape
    if width is not None and width % gates:
        checks.fail(name, f"the input projection's last dimension ({width}) must be {gates} * "
                    f"units; got shape {checks.fmt_shape(projected.shape)}.")
    return batch, steps, None if width is None else width // gates


def _attrs(attrs):
    return bool(attrs["go_backwards"]), bool(attrs["zero_output_for_mask"])


def _cpu(kernel, attrs_of):
    """The CPU kernel: contiguous arrays (the kernels multiply states by ``np.dot``), then the
    attributes."""
    return lambda arrays, attrs: kernel(*[checks.contiguous(a) for a in arrays],
                                        *attrs_of(attrs))


def _or_zeros(grad, like):
    return A.zeros_like(like) if grad is None else grad


# ---- SimpleRNN ---------------------------------------------------------------------------------
_SIMPLE_NAMES = ("inputs", "initial_state", "recurrent_kernel", "mask")


def _simple_infer(specs, attrs):
    x = specs[0]
    batch, steps, units = _sequence_sizes("simple_rnn_sequence", x, 1)
    _check_inputs("simple_rnn_sequence", specs, _SIMPLE_NAMES,
                  [x.shape, (batch, units), (units, units), (batch, steps)])
    seq = Spec((batch, steps, units), x.dtype)
    return [seq, Spec((batch, units), x.dtype), seq]


def _simple_grad(record, grads):
    x, h0, rk, mask = record.inputs
    out, h, states = record.outputs
    d_x, d_h0, d_rk = EX.execute(SIMPLE_RNN_SEQUENCE_GRAD, [
        h0, rk, mask, states, _or_zeros(grads[0], out), _or_zeros(grads[1], h)], record.attrs)
    return d_x, d_h0, d_rk, None


SIMPLE_RNN_SEQUENCE = register(OpDef(
    "simple_rnn_sequence", "opaque",
    {"cpu": _cpu(kernels.simple_rnn_forward, _attrs)},
    _simple_infer, _simple_grad, num_outputs=3))


def _simple_grad_infer(specs, attrs):
    h0, rk, mask, states, d_out, d_h = specs
    batch, steps, units = _sequence_sizes("simple_rnn_sequence_grad", states, 1)
    _check_inputs("simple_rnn_sequence_grad", specs,
                  ("initial_state", "recurrent_kernel", "mask", "states", "output_grad",
                   "state_grad"),
                  [(batch, units), (units, units), (batch, steps), states.shape, states.shape,
                   (batch, units)])
    return [Spec(states.shape, states.dtype), Spec(h0.shape, h0.dtype), Spec(rk.shape, rk.dtype)]


SIMPLE_RNN_SEQUENCE_GRAD = register(OpDef(
    "simple_rnn_sequence_grad", "opaque",
    {"cpu": _cpu(kernels.simple_rnn_backward, _attrs)},
    _simple_grad_infer, num_outputs=3))


# ---- LSTM --------------------------------------------------------------------------------------
_LSTM_NAMES = ("inputs", "initial_h", "initial_c", "recurrent_kernel", "mask")


def _lstm_infer(specs, attrs):
    x = specs[0]
    batch, steps, units = _sequence_sizes("lstm_sequence", x, 4)
    _check_inputs("lstm_sequence", specs, _LSTM_NAMES,
                  [x.shape, (batch, units), (batch, units),
                   (units, None if units is None else 4 * units), (batch, steps)])
    seq = Spec((batch, steps, units), x.dtype)
    state = Spec((batch, units), x.dtype)
    return [seq, state, state, seq, seq, Spec(x.shape, x.dtype)]


def _lstm_grad(record, grads):
    x, h0, c0, rk, mask = record.inputs
    out, h, c, prev, cs, gates = record.outputs
    d_x, d_h0, d_c0, d_rk = EX.execute(LSTM_SEQUENCE_GRAD, [
        c0, rk, mask, prev, cs, gates, _or_zeros(grads[0], out), _or_zeros(grads[1], h),
        _or_zeros(grads[2], c)], record.attrs)
    return d_x, d_h0, d_c0, d_rk, None


LSTM_SEQUENCE = register(OpDef(
    "lstm_sequence", "opaque",
    {"cpu": _cpu(kernels.lstm_forward, _attrs)},
    _lstm_infer, _lstm_grad, num_outputs=6))


def _lstm_grad_infer(specs, attrs):
    c0, rk, mask, prev, cs, gates, d_out, d_h, d_c = specs
    batch, steps, units = _sequence_sizes("lstm_sequence_grad", prev, 1)
    four = None if units is None else 4 * units
    _check_inputs("lstm_sequence_grad", specs,
                  ("initial_c", "recurrent_kernel", "mask", "previous_h", "c_by_step",
                   "gates", "output_grad", "h_grad", "c_grad"),
                  [(batch, units), (units, four), (batch, steps), prev.shape, prev.shape,
                   (batch, steps, four), prev.shape, (batch, units), (batch, units)])
    state = Spec(c0.shape, prev.dtype)
    return [Spec(gates.shape, prev.dtype), state, state, Spec(rk.shape, prev.dtype)]


LSTM_SEQUENCE_GRAD = register(OpDef(
    "lstm_sequence_grad", "opaque",
    {"cpu": _cpu(kernels.lstm_backward, _attrs)},
    _lstm_grad_infer, num_outputs=4))


# ---- GRU ---------------------------------------------------------------------------------------
_GRU_NAMES = ("inputs", "initial_state", "recurrent_kernel", "recurrent_bias", "mask")


def _gru_infer(specs, attrs):
    x = specs[0]
    batch, steps, units = _sequence_sizes("gru_sequence", x, 3)
    three = None if units is None else 3 * units
    _check_inputs("gru_sequence", specs, _GRU_NAMES,
                  [x.shape, (batch, units), (units, three), (three,), (batch, steps)])
    seq = Spec((batch, steps, units), x.dtype)
    return [seq, Spec((batch, units), x.dtype), seq, Spec(x.shape, x.dtype), seq]


def _gru_attrs(attrs):
    return _attrs(attrs) + (bool(attrs["reset_after"]),)


def _gru_grad(record, grads):
    x, h0, rk, rb, mask = record.inputs
    out, h, hs, gates, candidate = record.outputs
    d_x, d_h0, d_rk, d_rb = EX.execute(GRU_SEQUENCE_GRAD, [
        h0, rk, mask, hs, gates, candidate, _or_zeros(grads[0], out),
        _or_zeros(grads[1], h)], record.attrs)
    return d_x, d_h0, d_rk, d_rb, None


GRU_SEQUENCE = register(OpDef(
    "gru_sequence", "opaque",
    {"cpu": _cpu(kernels.gru_forward, _gru_attrs)},
    _gru_infer, _gru_grad, num_outputs=5))


def _gru_grad_infer(specs, attrs):
    h0, rk, mask, hs, gates, candidate, d_out, d_h = specs
    batch, steps, units = _sequence_sizes("gru_sequence_grad", hs, 1)
    three = None if units is None else 3 * units
    _check_inputs("gru_sequence_grad", specs,
                  ("initial_state", "recurrent_kernel", "mask", "h_by_step", "gates",
                   "candidate", "output_grad", "state_grad"),
                  [(batch, units), (units, three), (batch, steps), hs.shape,
                   (batch, steps, three), hs.shape, hs.shape, (batch, units)])
    return [Spec(gates.shape, hs.dtype), Spec(h0.shape, hs.dtype), Spec(rk.shape, hs.dtype),
            Spec((three,), hs.dtype)]


GRU_SEQUENCE_GRAD = register(OpDef(
    "gru_sequence_grad", "opaque",
    {"cpu": _cpu(kernels.gru_backward, _gru_attrs)},
    _gru_grad_infer, num_outputs=4))
