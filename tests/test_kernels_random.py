"""ops.random: Philox known answers, determinism, stream independence, distribution sanity."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ops import random as R

U = np.uint64

# Random123's published known-answer vectors for Philox-4x32-10: (counter, key, output)
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_philox_known_answers(ctr, key, want):
    got = R.philox4x32(*(U(c) for c in ctr), U(key[0]), U(key[1]))
    assert tuple(int(v) for v in got) == want


def test_stream_layout():
    # block b of stream (seed, counter) is Philox of (b_lo, b_hi, ctr_lo, ctr_hi) under the seed
    seed, counter = 0x0123456789ABCDEF >> 1, (7 << 32) | 5
    words = R.random_words(3, U(seed & 0xFFFFFFFF), U(seed >> 32), U(5), U(7))
    for b in range(3):
        want = R.philox4x32(U(b), U(0), U(5), U(7), U(seed & 0xFFFFFFFF), U(seed >> 32))
        np.testing.assert_array_equal(words[4 * b:4 * b + 4], np.array(want, np.uint64))
    u = R.uniform((12,), np.float32, seed, counter)
    np.testing.assert_array_equal(u, (words >> U(8)).astype(np.float64) / 2.0 ** 24)


GENERATORS = [
    lambda shape, dt, s, c: R.uniform(shape, dt, s, c),
    lambda shape, dt, s, c: R.normal(shape, dt, s, c),
    lambda shape, dt, s, c: R.truncated_normal(shape, dt, s, c),
]


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=3), st.sampled_from([np.float32, np.float64]),
       st.integers(0, 2 ** 63 - 1), st.integers(0, 2 ** 63 - 1), st.integers(0, 2))
def test_deterministic_shape_dtype(shape, dtype, seed, counter, which):
    gen = GENERATORS[which]
    a = gen(shape, dtype, seed, counter)
    b = gen(shape, dtype, seed, counter)
    assert a.shape == tuple(shape) and a.dtype == dtype
    np.testing.assert_array_equal(a, b)
    if which == 0:
        assert ((a >= 0) & (a < 1)).all()
    if which == 2:
        assert (np.abs(a) <= 2).all()


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=3), st.sampled_from([np.int32, np.int64]),
       st.integers(-2 ** 31, 2 ** 31 - 2), st.integers(1, 2 ** 31), st.integers(0, 2 ** 63 - 1))
def test_uniform_int_range(shape, dtype, lo, span, seed):
    hi = min(lo + span, 2 ** 31 - 1)
    a = R.uniform_int(shape, dtype, lo, hi, seed, 3)
    assert a.dtype == dtype and a.shape == tuple(shape)
    assert ((a >= lo) & (a < hi)).all()
    np.testing.assert_array_equal(a, R.uniform_int(shape, dtype, lo, hi, seed, 3))


def test_prefix_stable_and_counters_independent():
    a = R.uniform((1000,), np.float64, 42, 0)
    # element i does not depend on the total size
    np.testing.assert_array_equal(R.uniform((10,), np.float64, 42, 0), a[:10])
    b = R.uniform((1000,), np.float64, 42, 1)
    c = R.uniform((1000,), np.float64, 43, 0)
    assert not np.any(a == b) and not np.any(a == c)
    for other in (b, c):
        assert abs(np.corrcoef(a, other)[0, 1]) < 0.15


DRAWS = [
    lambda n: R.uniform((n,), np.float32, 42, 3),
    lambda n: R.uniform((n,), np.float64, 42, 3),
    lambda n: R.normal((n,), np.float32, 42, 3),
    lambda n: R.normal((n,), np.float64, 42, 3),
    lambda n: R.truncated_normal((n,), np.float32, 42, 3),
    lambda n: R.uniform_int((n,), np.int64, -5, 1000, 42, 3),
]


@pytest.mark.parametrize("draw", DRAWS)
def test_a_draw_split_over_threads_equals_the_unsplit_one(draw, monkeypatch):
    """A large draw (a model's initial weights) runs in parts on the kernel threads; element i
    is the stream's element i whatever the parts, partial last block included."""
    n = 1001
    whole = draw(n)                          # at the real part size: one part
    monkeypatch.setattr(R, "_BLOCKS_PER_PART", 7)
    parts = []
    split = R.threads.split
    monkeypatch.setattr(R.threads, "split",
                        lambda part, count, least: parts.append(count // least) or
                        split(part, count, least))
    monkeypatch.setattr(R.threads, "free_cores", lambda: 2)   # two parts, even on a busy machine
    saved = R.threads.get_num_threads()
    try:
        R.threads.set_num_threads(2)
        np.testing.assert_array_equal(draw(n), whole)
    finally:
        R.threads.set_num_threads(saved)
    assert parts and parts[0] >= 2   # it was big enough to split


# (the draw, the per-block function the CUDA kernels call, elements per block)
BLOCK_FUNCTIONS = [
    (lambda n: R.uniform((n,), np.float32, 42, 3), R.uniform_f32_block, 4),
    (lambda n: R.uniform((n,), np.float64, 42, 3), R.uniform_f64_block, 2),
    (lambda n: R.normal((n,), np.float64, 42, 3), R.normal_2_block, 2),
    (lambda n: R.normal((n,), np.float32, 42, 3), R.normal_4_block, 4),
]


@pytest.mark.parametrize("draw,block,per_block", BLOCK_FUNCTIONS)
def test_the_chunked_cpu_kernels_give_each_blocks_elements(draw, block, per_block):
    """The CPU kernels compute a chunk of blocks' words at a time; across chunk boundaries
    and a partial last block, element i is what block i // per_block gives (the GPU's way)."""
    n = per_block * (2 * R._CHUNK + 37) + 1
    key = R.key(42, 3)
    want = np.concatenate([np.array(block(b, *key)) for b in range(-(-n // per_block))])[:n]
    got = draw(n)
    np.testing.assert_array_equal(got, want.astype(got.dtype))


def test_chunked_integer_draws_give_each_blocks_elements():
    n = 2 * (2 * R._CHUNK + 37) + 1
    lo, span = R.int_range(-5, 1000)
    want = np.concatenate([np.array(R.uniform_int_block(b, lo, span, *R.key(42, 3)), np.uint64)
                           for b in range(-(-n // 2))])[:n]
    np.testing.assert_array_equal(R.uniform_int((n,), np.int64, -5, 1000, 42, 3),
                                  want.view(np.int64))


def test_consecutive_counters_uncorrelated():
    xs = np.stack([R.normal((20000,), np.float64, 1, c) for c in range(4)])
    corr = np.corrcoef(xs)
    assert np.abs(corr - np.eye(4)).max() < 0.05


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_distributions(dtype):
    n = 200000
    u = R.uniform((n,), dtype, 7, 11)
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - np.sqrt(1 / 12)) < 0.01
    hist = np.bincount((u * 10).astype(int), minlength=10)
    assert hist.min() > 0.09 * n and hist.max() < 0.11 * n
    z = R.normal((n,), dtype, 7, 12)
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.01
    assert abs(np.mean(z ** 3)) < 0.05 and abs(np.mean(z ** 4) - 3) < 0.15
    t = R.truncated_normal((n,), dtype, 7, 13)
    assert np.abs(t).max() <= 2 and abs(t.mean()) < 0.02
    assert abs(t.std() - 0.8796) < 0.02  # stddev of N(0, 1) truncated to [-2, 2]


def test_uniform_int_is_uniform_and_covers_extremes():
    a = R.uniform_int((120000,), np.int64, -5, 7, 1, 2)
    counts = np.bincount(a + 5, minlength=12)
    assert counts.min() > 9000 and counts.max() < 11000
    full = R.uniform_int((1000,), np.int64, -2 ** 63, 2 ** 63 - 1, 1, 2)
    assert (full < 0).any() and (full > 0).any()
    one = R.uniform_int((5,), np.int32, 3, 4, 1, 2)
    np.testing.assert_array_equal(one, 3)


def test_rejects_out_of_range_seed_and_empty_range():
    with pytest.raises(ValueError):
        R.uniform((2,), np.float32, -1, 0)
    with pytest.raises(ValueError):
        R.uniform((2,), np.float32, 0, 2 ** 63)
    with pytest.raises(ValueError):
        R.uniform_int((2,), np.int32, 5, 5, 0, 0)
