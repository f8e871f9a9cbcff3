"""Fused recurrences over time: SimpleRNN, LSTM and GRU, forward and backprop through time.

Each forward kernel runs a whole sequence in one native loop.  The input projection
``x @ kernel + bias`` for every step is computed by the caller (one GEMM), so a kernel only
adds ``h @ recurrent_kernel`` (one product per step through ``product_gemm``, on ``ops.tile_gemm``'s
register tiles at these sizes: they read the weights in place, where BLAS would pack them again
at every step; LSTM's accumulated onto the projection in its gates buffer) and applies the
gates.  The batch rows are independent recurrences: a call splits them over the kernel threads,
each part running its rows' whole sequence (no waiting between steps); backward, the recurrent
kernel's gradient is then one product over all rows and steps.  Layout is batch-major:
projections [batch, time, gates * units], states [batch, units], the mask [batch, time] (bool;
False: the step is skipped).  Gates are in Keras's order: LSTM (i, f, c, o), GRU (z, r, h).

Masked steps keep the state; the output there repeats the previous output (zeros before the
first step) or, with ``zero_output``, is zeros.  With ``backwards`` the time axis is read from
the end; outputs are written in the order the steps run (Keras's ``go_backwards``).

The forward kernels also return what their backward kernels need (the states by step -- for
the LSTM, the state each step read, by time index -- and the gate activations); the backward
kernels return the gradients of the projection, the initial states and the recurrent weights.
"""
import numpy as np
from numba import types
from numba.extending import overload

from ops import threads
from ops.fast_exp import exp_parts_f32
from ops.fast_tanh import tanh as _tanh
from ops.kernel_cache import njit
from ops.linalg import matmul, product_gemm, transpose_into
from ops.nn.rows import copy_run

_jit = njit(error_model="numpy", nogil=True)

# float32 gates are computed in float32 arithmetic (a loop over a row then vectorizes 8 or 16
# wide): tanh is ``ops.fast_tanh``'s, sigmoid uses the exp of ``ops.fast_exp`` and is within 2
# units in the last place (float32) of the exact values for |v| < 85; below -85 it is the
# smallest normal float instead of a subnormal.  float64 gates use the library's exp and tanh.
_ZERO, _ONE = np.float32(0.0), np.float32(1.0)


@_jit
def _sigmoid_f32(v):
    scale, q = exp_parts_f32(-abs(v))
    e = scale * (_ONE + q)             # exp(-|v|)
    d = _ONE / (_ONE + e)
    return d if v >= _ZERO else e * d


def _sigmoid(v):
    """sigmoid(v), in v's float type (see the note on float32 above)."""


@overload(_sigmoid)
def _sigmoid_impl(v):
    if v == types.float32:
        return lambda v: _sigmoid_f32(v)
    return lambda v: 1.0 / (1.0 + np.exp(-v))


@_jit
def _sigmoid_into(a, b, out, start, stop):
    """out[j] = sigmoid(a[j] + b[j]) for j in [start, stop): one row, a loop that vectorizes."""
    for j in range(start, stop):
        out[j] = _sigmoid(a[j] + b[j])


@_jit
def _tanh_into(a, b, out, start, stop):
    """out[j] = tanh(a[j] + b[j]) for j in [start, stop)."""
    for j in range(start, stop):
        out[j] = _tanh(a[j] + b[j])


# Row copies are loops (``ops.nn.rows.copy_run``): Numba's array slice assignment
# (``dst[:] = src``) takes about a second to compile in a process with an empty kernel cache.
@_jit
def _copy(dst, src):
    """dst[:] = src, for 1-D arrays of one length."""
    copy_run(dst, 0, src, 0, src.shape[0])


@_jit
def _copy_rows(dst, src, lo, hi):
    """dst[lo:hi] = src[lo:hi], for C-contiguous 2-D arrays of one shape."""
    width = src.shape[1]
    copy_run(dst.reshape(dst.size), lo * width, src.reshape(src.size), lo * width,
             (hi - lo) * width)


@_jit
def _transposed(matrix):
    """matrix.T, C-contiguous: the backward recurrences' right operand (once per layer and
    step)."""
    out = np.empty((matrix.shape[1], matrix.shape[0]), matrix.dtype)
    transpose_into(matrix, out)
    return out


@_jit
def _time_index(step, steps, backwards):
    return steps - 1 - step if backwards else step


@_jit
def _write_output(out, s, b, h, prev_out, keep, zero_output):
    """out[b, s] for step s: the new state where the step ran, else the previous output."""
    units = h.shape[0]
    for j in range(units):
        if keep:
            out[b, s, j] = h[j]
        elif zero_output or s == 0:
            out[b, s, j] = 0.0
        else:
            out[b, s, j] = prev_out[j]


@_jit
def _output_grad(d_out, s, carry, keep, zero_output, into):
    """Adds the gradient reaching step s's output to ``into`` (the state's gradient) where the
    step ran; where it was masked, the output repeated the previous one, so the gradient is
    carried to step s - 1 (``carry``) instead."""
    batch, units = carry.shape
    for b in range(batch):
        for j in range(units):
            g = d_out[b, s, j] + carry[b, j]
            if keep[b]:
                into[b, j] += g
                carry[b, j] = 0.0
            elif zero_output:
                carry[b, j] = 0.0
            else:
                carry[b, j] = g


@_jit
def _backward_step(s, steps, backwards, mask, lo, keep, d_out, carry, zero_output, dh_part):
    """The start of step s of a backward recurrence over rows lo.. (as many as ``keep``): which
    rows ran it (into ``keep``), the gradient reaching its output added to ``dh_part``; returns
    its time index."""
    t = _time_index(s, steps, backwards)
    rows = keep.shape[0]
    for r in range(rows):
        keep[r] = mask[lo + r, t]
    _output_grad(d_out[lo:lo + rows], s, carry, keep, zero_output, dh_part)
    return t


@_jit
def _previous_states(h0, hs, backwards):
    """The state each step read (h0, then the state after the step before), placed at the
    step's time index: [batch, time, units]."""
    batch, steps, units = hs.shape
    prev = np.empty((batch, steps, units), hs.dtype)
    for s in range(steps):
        t = _time_index(s, steps, backwards)
        for b in range(batch):
            _copy(prev[b, t], h0[b] if s == 0 else hs[b, s - 1])
    return prev


def _recurrent_kernel_grad(h0, hs, d_pre, backwards):
    """The sum over steps of h_prev^T @ d_pre[:, t] (d_pre [batch, time, width] by time): one
    product over all rows and steps, on the kernel threads when it is large."""
    prev = _previous_states(h0, hs, backwards)
    batch, steps, units = prev.shape
    return matmul(prev.reshape(batch * steps, units),
                  d_pre.reshape(batch * steps, d_pre.shape[2]), transpose_a=True)


# A part of a recurrence split by batch rows runs at least this many multiply-adds of its
# recurrent products: below, waking a thread and the thinner products cost more than they save.
_PART_MULTIPLY_ADDS = 1 << 22


def _split_rows(run_rows, batch, multiply_adds_per_row):
    """run_rows(lo, hi) over parts of the batch rows on the kernel threads."""
    threads.split(run_rows, batch, -(-_PART_MULTIPLY_ADDS // max(multiply_adds_per_row, 1)))


# ---- SimpleRNN (tanh) --------------------------------------------------------------------------
@_jit
def _simple_rnn_forward_rows(xp, h0, rk, mask, backwards, zero_output, out, h, states, lo, hi):
    """``simple_rnn_forward`` for batch rows lo..hi, into the arrays it returns."""
    batch, steps, units = xp.shape
    rows = hi - lo
    _copy_rows(h, h0, lo, hi)
    z = np.empty((rows, units), xp.dtype)
    h_flat = h.reshape(h.size)
    for s in range(steps):
        t = _time_index(s, steps, backwards)
        product_gemm(False, False, rows, units, units, 1.0, h_flat[lo * units:], units,
                     rk.reshape(rk.size), units, 0.0, z.reshape(z.size), units)
        for r in range(rows):
            b = lo + r
            keep = mask[b, t]
            if keep:
                _tanh_into(xp[b, t], z[r], h[b], 0, units)
            _write_output(out, s, b, h[b], out[b, s - 1], keep, zero_output)
            _copy(states[b, s], h[b])


def simple_rnn_forward(xp, h0, rk, mask, backwards, zero_output):
    """h_t = tanh(xp_t + h_{t-1} @ rk).  Returns (outputs, last h, states by step).  All arrays
    C-contiguous; the batch rows are split over the kernel threads like the LSTM's."""
    batch, steps, units = xp.shape
    out = np.empty((batch, steps, units), xp.dtype)
    states = np.empty((batch, steps, units), xp.dtype)
    h = np.empty((batch, units), xp.dtype)
    _split_rows(lambda lo, hi: _simple_rnn_forward_rows(
        xp, h0, rk, mask, backwards, zero_output, out, h, states, lo, hi),
        batch, steps * units * units)
    return out, h, states


@_jit
def _simple_rnn_backward_rows(rk_t, mask, states, d_out, backwards, zero_output, d_xp, dh, lo,
                              hi):
    """The recurrence of ``simple_rnn_backward`` for batch rows lo..hi (see the LSTM's)."""
    batch, steps, units = states.shape
    rows = hi - lo
    carry = np.zeros((rows, units), states.dtype)
    da = np.zeros((rows, units), states.dtype)
    back = np.empty((rows, units), states.dtype)
    keep = np.empty(rows, np.bool_)
    dh_part = dh[lo:hi]
    for s in range(steps - 1, -1, -1):
        t = _backward_step(s, steps, backwards, mask, lo, keep, d_out, carry, zero_output,
                           dh_part)
        for r in range(rows):
            b = lo + r
            for j in range(units):
                if keep[r]:
                    h = states[b, s, j]
                    da[r, j] = dh[b, j] * (1.0 - h * h)
                    d_xp[b, t, j] = da[r, j]
                else:
                    da[r, j] = 0.0
        product_gemm(False, False, rows, units, units, 1.0, da.reshape(da.size), units,
                     rk_t.reshape(rk_t.size), units, 0.0, back.reshape(back.size), units)
        for r in range(rows):
            if keep[r]:
                _copy(dh[lo + r], back[r])


def simple_rnn_backward(h0, rk, mask, states, d_out, d_h, backwards, zero_output):
    """Backprop through time of ``simple_rnn_forward``: (d_xp, d_h0, d_rk)."""
    batch, steps, units = states.shape
    d_xp = np.zeros((batch, steps, units), states.dtype)
    dh = d_h.copy()
    rk_t = _transposed(rk)   # see lstm_backward
    _split_rows(lambda lo, hi: _simple_rnn_backward_rows(
        rk_t, mask, states, d_out, backwards, zero_output, d_xp, dh, lo, hi),
        batch, steps * units * units)
    return d_xp, dh, _recurrent_kernel_grad(h0, states, d_xp, backwards)


# ---- LSTM --------------------------------------------------------------------------------------
@_jit
def _lstm_cell(gb, cb, hb, units):
    """One row of one step, in place: the pre-activations gb (i, f, c, o) become the gate
    activations, cb the new cell state and hb the new output."""
    for j in range(units):
        i = _sigmoid(gb[j])
        f = _sigmoid(gb[units + j])
        g = _tanh(gb[2 * units + j])
        o = _sigmoid(gb[3 * units + j])
        gb[j] = i
        gb[units + j] = f
        gb[2 * units + j] = g
        gb[3 * units + j] = o
        c = f * cb[j] + i * g
        cb[j] = c
        hb[j] = o * _tanh(c)


@_jit
def _lstm_forward_rows(xp, h0, c0, rk, mask, backwards, zero_output, out, h, c, prev, cs, gates,
                       lo, hi):
    """``lstm_forward`` for batch rows lo..hi, into the arrays it returns (allocated by it)."""
    batch, steps, four = xp.shape
    units = four // 4
    _copy_rows(h, h0, lo, hi)
    _copy_rows(c, c0, lo, hi)
    h_flat = h.reshape(h.size)
    rk_flat = rk.reshape(rk.size)
    gates_flat = gates.reshape(gates.size)
    for s in range(steps):
        t = _time_index(s, steps, backwards)
        for b in range(lo, hi):
            _copy(gates[b, s], xp[b, t])
            _copy(prev[b, t], h[b])
        # gates[lo:hi, s] += h[lo:hi] @ rk: rows of gates[:, s] lie steps * four apart
        product_gemm(False, False, hi - lo, four, units, 1.0, h_flat[lo * units:], units,
                     rk_flat, four, 1.0, gates_flat[(lo * steps + s) * four:], steps * four)
        for b in range(lo, hi):
            keep = mask[b, t]
            if keep:
                _lstm_cell(gates[b, s], c[b], h[b], units)
            else:
                gates[b, s] = 0.0
            _write_output(out, s, b, h[b], out[b, s - 1], keep, zero_output)
            _copy(cs[b, s], c[b])


def lstm_forward(xp, h0, c0, rk, mask, backwards, zero_output):
    """Keras's LSTM cell over the sequence: gates (i, f, c, o) = xp_t + h @ rk; c = f * c +
    i * tanh(.); h = o * tanh(c).  Returns (outputs, last h, last c, the h each step read by
    time index, c by step, gate activations by step).  All arrays C-contiguous.  The batch rows
    are independent recurrences: they are split over the kernel threads, each part one native
    loop over time."""
    batch, steps, four = xp.shape
    units = four // 4
    out = np.empty((batch, steps, units), xp.dtype)
    prev = np.empty((batch, steps, units), xp.dtype)
    cs = np.empty((batch, steps, units), xp.dtype)
    gates = np.empty((batch, steps, four), xp.dtype)
    h = np.empty((batch, units), xp.dtype)
    c = np.empty((batch, units), xp.dtype)
    _split_rows(lambda lo, hi: _lstm_forward_rows(
        xp, h0, c0, rk, mask, backwards, zero_output, out, h, c, prev, cs, gates, lo, hi),
        batch, steps * units * four)
    return out, h, c, prev, cs, gates


@_jit
def _lstm_backward_rows(c0, rk_t, mask, cs, gates, d_out, backwards, zero_output, d_xp, dh,
                        dc, lo, hi):
    """The recurrence of ``lstm_backward`` for batch rows lo..hi: fills d_xp's rows and turns
    dh, dc (the last states' gradients there) into the initial states' gradients.  rk_t: the
    recurrent kernel transposed, C-contiguous."""
    batch, steps, units = cs.shape
    four = 4 * units
    rows = hi - lo
    carry = np.zeros((rows, units), cs.dtype)
    back = np.empty((rows, units), cs.dtype)   # d_xp[lo:hi, t] @ rk^T
    tcs = np.empty(units, cs.dtype)            # tanh(c) of one row
    keep = np.empty(rows, np.bool_)
    rk_t_flat = rk_t.reshape(rk_t.size)
    d_xp_flat = d_xp.reshape(d_xp.size)
    back_flat = back.reshape(back.size)
    dh_part = dh[lo:hi]
    for s in range(steps - 1, -1, -1):
        t = _backward_step(s, steps, backwards, mask, lo, keep, d_out, carry, zero_output,
                           dh_part)
        for r in range(rows):
            b = lo + r
            dzb = d_xp[b, t]   # the step's pre-activation gradient
            if not keep[r]:
                dzb[:] = 0.0
                continue
            gb, csb, dhb, dcb = gates[b, s], cs[b, s], dh[b], dc[b]
            cpb = c0[b] if s == 0 else cs[b, s - 1]
            for j in range(units):
                tcs[j] = _tanh(csb[j])
            for j in range(units):
                i = gb[j]
                f = gb[units + j]
                g = gb[2 * units + j]
                o = gb[3 * units + j]
                tc = tcs[j]
                dct = dcb[j] + dhb[j] * o * (_ONE - tc * tc)
                dzb[j] = dct * g * i * (_ONE - i)
                dzb[units + j] = dct * cpb[j] * f * (_ONE - f)
                dzb[2 * units + j] = dct * i * (_ONE - g * g)
                dzb[3 * units + j] = dhb[j] * tc * o * (_ONE - o)
                dcb[j] = dct * f
        # back = d_xp[lo:hi, t] @ rk^T: rows of d_xp[:, t] lie steps * four apart
        product_gemm(False, False, rows, units, four, 1.0, d_xp_flat[(lo * steps + t) * four:],
                     steps * four, rk_t_flat, units, 0.0, back_flat, units)
        for r in range(rows):
            if keep[r]:
                _copy(dh[lo + r], back[r])


def lstm_backward(c0, rk, mask, prev, cs, gates, d_out, d_h, d_c, backwards, zero_output):
    """Backprop through time of ``lstm_forward`` (``prev``: the h each step read, by time
    index): (d_xp, d_h0, d_c0, d_rk).  All arrays C-contiguous.  The recurrence is split by
    batch rows like the forward; the recurrent kernel's gradient is then one product over all
    rows and steps."""
    batch, steps, units = prev.shape
    four = 4 * units
    d_xp = np.empty((batch, steps, four), prev.dtype)
    dh = d_h.copy()
    dc = d_c.copy()
    # the step products run fastest on an untransposed right operand (ops.tile_gemm)
    rk_t = _transposed(rk)
    _split_rows(lambda lo, hi: _lstm_backward_rows(
        c0, rk_t, mask, cs, gates, d_out, backwards, zero_output, d_xp, dh, dc, lo, hi),
        batch, steps * units * four)
    rows = batch * steps
    return d_xp, dh, dc, matmul(prev.reshape(rows, units), d_xp.reshape(rows, four),
                                transpose_a=True)


# ---- GRU ---------------------------------------------------------------------------------------
@_jit
def _gru_forward_rows(xp, h0, rk_zr, rk_h, rb, mask, backwards, zero_output, reset_after, out,
                      h, hs, gates, cand, lo, hi):
    """``gru_forward`` for batch rows lo..hi, into the arrays it returns (allocated by it)."""
    batch, steps, three = xp.shape
    units = three // 3
    rows = hi - lo
    _copy_rows(h, h0, lo, hi)
    zr = np.empty((rows, 2 * units), xp.dtype)    # h @ rk_zr
    rec = np.empty((rows, units), xp.dtype)       # h @ rk_h, or (r * h) @ rk_h
    rh = np.empty((rows, units), xp.dtype)        # r * h
    pre = np.empty(units, xp.dtype)               # the candidate's pre-activation, one row
    h_flat = h.reshape(h.size)
    for s in range(steps):
        t = _time_index(s, steps, backwards)
        product_gemm(False, False, rows, 2 * units, units, 1.0, h_flat[lo * units:], units,
                     rk_zr.reshape(rk_zr.size), 2 * units, 0.0, zr.reshape(zr.size), 2 * units)
        for r in range(rows):
            b = lo + r
            zrb, gb = zr[r], gates[b, s]
            for j in range(2 * units):
                zrb[j] += rb[j]
            _sigmoid_into(zrb, xp[b, t], gb, 0, 2 * units)     # z, r
            for j in range(units):
                rh[r, j] = gb[units + j] * h[b, j]
        if reset_after:
            product_gemm(False, False, rows, units, units, 1.0, h_flat[lo * units:], units,
                         rk_h.reshape(rk_h.size), units, 0.0, rec.reshape(rec.size), units)
        else:
            product_gemm(False, False, rows, units, units, 1.0, rh.reshape(rh.size), units,
                         rk_h.reshape(rk_h.size), units, 0.0, rec.reshape(rec.size), units)
        for r in range(rows):
            b = lo + r
            keep = mask[b, t]
            if keep:
                xb, gb, hb, recb = xp[b, t], gates[b, s], h[b], rec[r]
                if reset_after:
                    for j in range(units):
                        recb[j] += rb[2 * units + j]
                        cand[b, s, j] = recb[j]
                    for j in range(units):
                        pre[j] = gb[units + j] * recb[j]
                else:
                    _copy(pre, recb)
                _tanh_into(xb[2 * units:], pre, gb[2 * units:], 0, units)   # candidate
                for j in range(units):
                    z = gb[j]
                    hb[j] = z * hb[j] + (1.0 - z) * gb[2 * units + j]
            _write_output(out, s, b, h[b], out[b, s - 1], keep, zero_output)
            _copy(hs[b, s], h[b])


def gru_forward(xp, h0, rk, rb, mask, backwards, zero_output, reset_after):
    """Keras's GRU cell over the sequence, gates (z, r, h).  With ``reset_after`` (Keras's
    default) the reset gate multiplies ``h @ rk_h + rb_h`` (``rb``: the recurrent bias);
    without, it multiplies h before ``@ rk_h`` (and ``rb`` is unused).  h = z * h_prev +
    (1 - z) * hh.  Returns (outputs, last h, h by step, gate activations by step, the
    recurrent part of the candidate by step: ``h @ rk_h + rb_h`` with ``reset_after``).  All
    arrays C-contiguous; the batch rows are split over the kernel threads like the LSTM's."""
    batch, steps, three = xp.shape
    units = three // 3
    out = np.empty((batch, steps, units), xp.dtype)
    hs = np.empty((batch, steps, units), xp.dtype)
    gates = np.zeros((batch, steps, three), xp.dtype)
    cand = np.zeros((batch, steps, units), xp.dtype)
    h = np.empty((batch, units), xp.dtype)
    if not reset_after:
        rb = np.zeros_like(rb)    # only the reset-after form has a recurrent bias
    rk_zr = np.ascontiguousarray(rk[:, :2 * units])
    rk_h = np.ascontiguousarray(rk[:, 2 * units:])
    _split_rows(lambda lo, hi: _gru_forward_rows(
        xp, h0, rk_zr, rk_h, rb, mask, backwards, zero_output, reset_after, out, h, hs, gates,
        cand, lo, hi), batch, steps * units * three)
    return out, h, hs, gates, cand


@_jit
def _gru_backward_rows(rk_zr_t, rk_h_t, mask, hs, gates, cand, prev, d_out, backwards,
                       zero_output, reset_after, d_xp, dh, d_hh_t, rh_t, lo, hi):
    """The recurrence of ``gru_backward`` for batch rows lo..hi: fills d_xp, d_hh_t (the
    candidate's recurrent part's gradient by time) and, without ``reset_after``, rh_t (r *
    h_prev by time) in those rows, and turns dh into the initial state's gradient there.
    rk_zr_t, rk_h_t: the recurrent kernel's parts transposed, C-contiguous."""
    batch, steps, units = hs.shape
    rows = hi - lo
    carry = np.zeros((rows, units), hs.dtype)
    d_zr = np.zeros((rows, 2 * units), hs.dtype)   # pre-activation grads of z and r
    d_hh = np.zeros((rows, units), hs.dtype)
    direct = np.zeros((rows, units), hs.dtype)     # h_prev's grad through z * h_prev
    d_rh = np.zeros((rows, units), hs.dtype)
    back = np.empty((rows, units), hs.dtype)
    keep = np.empty(rows, np.bool_)
    dh_part = dh[lo:hi]
    for s in range(steps - 1, -1, -1):
        t = _backward_step(s, steps, backwards, mask, lo, keep, d_out, carry, zero_output,
                           dh_part)
        if not reset_after:
            # the candidate's pre-activation reaches r * h_prev through rk_h
            for r in range(rows):
                b = lo + r
                for j in range(units):
                    hh = gates[b, s, 2 * units + j]
                    z = gates[b, s, j]
                    d_hh[r, j] = dh[b, j] * (1.0 - z) * (1.0 - hh * hh) if keep[r] else 0.0
                    rh_t[b, t, j] = gates[b, s, units + j] * prev[b, t, j]
            product_gemm(False, False, rows, units, units, 1.0, d_hh.reshape(d_hh.size), units,
                         rk_h_t.reshape(rk_h_t.size), units, 0.0, d_rh.reshape(d_rh.size), units)
        for r in range(rows):
            b = lo + r
            if not keep[r]:
                d_zr[r] = 0.0
                d_hh[r] = 0.0
                continue
            for j in range(units):
                z = gates[b, s, j]
                rg = gates[b, s, units + j]
                hh = gates[b, s, 2 * units + j]
                g = dh[b, j]
                da_h = g * (1.0 - z) * (1.0 - hh * hh)
                d_zr[r, j] = g * (prev[b, t, j] - hh) * z * (1.0 - z)
                direct[r, j] = g * z
                d_xp[b, t, 2 * units + j] = da_h
                if reset_after:
                    d_zr[r, units + j] = da_h * cand[b, s, j] * rg * (1.0 - rg)
                    d_hh[r, j] = da_h * rg
                else:
                    d_zr[r, units + j] = d_rh[r, j] * prev[b, t, j] * rg * (1.0 - rg)
                    direct[r, j] += d_rh[r, j] * rg
                d_xp[b, t, j] = d_zr[r, j]
                d_xp[b, t, units + j] = d_zr[r, units + j]
                d_hh_t[b, t, j] = d_hh[r, j]
        product_gemm(False, False, rows, units, 2 * units, 1.0, d_zr.reshape(d_zr.size), 2 * units,
                     rk_zr_t.reshape(rk_zr_t.size), units, 0.0, back.reshape(back.size), units)
        if reset_after:
            product_gemm(False, False, rows, units, units, 1.0, d_hh.reshape(d_hh.size), units,
                         rk_h_t.reshape(rk_h_t.size), units, 1.0, back.reshape(back.size), units)
        for r in range(rows):
            if keep[r]:
                for j in range(units):
                    dh[lo + r, j] = back[r, j] + direct[r, j]


def gru_backward(h0, rk, mask, hs, gates, cand, d_out, d_h, backwards, zero_output,
                 reset_after):
    """Backprop through time of ``gru_forward``: (d_xp, d_h0, d_rk, d_rb).  All arrays
    C-contiguous; the recurrence is split by batch rows, the kernel's gradient is one product
    per part of the kernel."""
    batch, steps, units = hs.shape
    three = 3 * units
    d_xp = np.zeros((batch, steps, three), hs.dtype)
    prev = _previous_states(h0, hs, backwards)
    # By time: the gradient of the candidate's recurrent part, and what rk_h multiplied
    # (h_prev with reset_after, r * h_prev without).
    d_hh_t = np.zeros((batch, steps, units), hs.dtype)
    rh_t = prev if reset_after else np.zeros((batch, steps, units), hs.dtype)
    dh = d_h.copy()
    rk_zr_t = _transposed(rk[:, :2 * units])   # see lstm_backward
    rk_h_t = _transposed(rk[:, 2 * units:])
    _split_rows(lambda lo, hi: _gru_backward_rows(
        rk_zr_t, rk_h_t, mask, hs, gates, cand, prev, d_out, backwards, zero_output,
        reset_after, d_xp, dh, d_hh_t, rh_t, lo, hi), batch, steps * units * three)
    d_rk = np.empty((units, three), hs.dtype)
    rows = batch * steps
    d_rk[:, :2 * units] = matmul(prev.reshape(rows, units),
                                 np.ascontiguousarray(d_xp[:, :, :2 * units]).reshape(
                                     rows, 2 * units), transpose_a=True)
    d_rk[:, 2 * units:] = matmul(rh_t.reshape(rows, units), d_hh_t.reshape(rows, units),
                                 transpose_a=True)
    d_rb = np.zeros(three, hs.dtype)
    if reset_after:   # the recurrent bias has the gradient of what it is added to
        d_rb[:2 * units] = d_xp[:, :, :2 * units].sum(axis=(0, 1))
        d_rb[2 * units:] = d_hh_t.sum(axis=(0, 1))
    return d_xp, dh, d_rk, d_rb
