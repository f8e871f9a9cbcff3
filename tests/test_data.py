"""tf.data: sources, transformations, structure and cardinality, checked against hand-computed
values and the examples of TF's API documentation."""
import collections

import numpy as np
import pytest

import hybridtf as tf
from ops import shuffle as shuffle_kernels

Dataset = tf.data.Dataset


def values(ds):
    return list(ds.as_numpy_iterator())


def ints(ds):
    return [int(v) for v in ds.as_numpy_iterator()]


# ---- sources -------------------------------------------------------------------------------------
def test_from_tensor_slices_of_a_list_a_tuple_and_a_dict():
    ds = Dataset.from_tensor_slices([1, 2, 3])
    assert ds.element_spec == tf.TensorSpec([], tf.int32)
    assert ints(ds) == [1, 2, 3]

    ds = Dataset.from_tensor_slices(([1, 2], [[3.0, 4.0], [5.0, 6.0]]))
    assert ds.element_spec == (tf.TensorSpec([], tf.int32), tf.TensorSpec([2], tf.float32))
    (a0, b0), (a1, b1) = values(ds)
    assert (a0, a1) == (1, 2)
    np.testing.assert_array_equal(b1, [5.0, 6.0])

    ds = Dataset.from_tensor_slices({"a": np.array([1, 2], np.int64), "b": ["x", "yz"]})
    assert ds.element_spec == {"a": tf.TensorSpec([], tf.int64), "b": tf.TensorSpec([], tf.string)}
    assert values(ds) == [{"a": 1, "b": b"x"}, {"a": 2, "b": b"yz"}]


def test_from_tensor_slices_of_tensors_and_namedtuples():
    Point = collections.namedtuple("Point", "x y")
    ds = Dataset.from_tensor_slices(Point(tf.constant([1.0, 2.0]), np.array([3, 4])))
    first = next(iter(ds))
    assert isinstance(first, Point)
    assert float(first.x) == 1.0 and int(first.y) == 3


def test_from_tensor_slices_keeps_the_values_it_was_given():
    array = np.arange(4)
    ds = Dataset.from_tensor_slices(array)
    array[:] = 0
    assert ints(ds) == [0, 1, 2, 3]


def test_from_tensor_slices_rejects_bad_input():
    with pytest.raises(ValueError, match="same size in their first dimension"):
        Dataset.from_tensor_slices(([1, 2], [3]))
    with pytest.raises(ValueError, match="rank >= 1"):
        Dataset.from_tensor_slices(5)
    with pytest.raises(TypeError, match="None cannot be an element"):
        Dataset.from_tensor_slices((None, [1]))


def test_from_tensors_is_one_element():
    ds = Dataset.from_tensors(([1, 2], "x"))
    assert ds.element_spec == (tf.TensorSpec([2], tf.int32), tf.TensorSpec([], tf.string))
    assert len(ds) == 1
    (a, b), = values(ds)
    np.testing.assert_array_equal(a, [1, 2])
    assert b == b"x"


def test_range_as_in_tf_docs():
    assert ints(Dataset.range(5)) == [0, 1, 2, 3, 4]
    assert ints(Dataset.range(2, 5)) == [2, 3, 4]
    assert ints(Dataset.range(1, 5, 2)) == [1, 3]
    assert ints(Dataset.range(1, 5, -2)) == []
    assert ints(Dataset.range(5, 1)) == []
    assert ints(Dataset.range(5, 1, -2)) == [5, 3]
    assert Dataset.range(3).element_spec == tf.TensorSpec([], tf.int64)
    ds = Dataset.range(2, 5, output_type=tf.int32)
    assert ds.element_spec.dtype == tf.int32 and ints(ds) == [2, 3, 4]
    assert values(Dataset.range(1, 5, 2, output_type=tf.float32)) == [1.0, 3.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-zero"):
        Dataset.range(1, 5, 0)


def test_zip_positional_tuple_and_dict():
    a, b = Dataset.range(1, 4), Dataset.range(4, 7)
    assert values(Dataset.zip(a, b)) == [(1, 4), (2, 5), (3, 6)]
    assert values(Dataset.zip((a, b))) == [(1, 4), (2, 5), (3, 6)]
    assert values(Dataset.zip({"a": a, "b": Dataset.range(4, 5)})) == [{"a": 1, "b": 4}]
    nested = Dataset.zip((a, (b, Dataset.range(7, 100))))
    assert values(nested)[0] == (1, (4, 7))
    assert nested.cardinality() == 3
    with pytest.raises(TypeError, match="structure of `Dataset` objects"):
        Dataset.zip((a, 1))


def test_zip_of_a_shuffled_and_a_generated_dataset():
    gen = Dataset.from_generator(lambda: iter(range(10)),
                                 output_signature=tf.TensorSpec([], tf.int64))
    pairs = values(Dataset.zip(Dataset.range(10).shuffle(10, seed=1), gen))
    assert sorted(p[0] for p in pairs) == list(range(10))
    assert [p[1] for p in pairs] == list(range(10))


def test_concatenate():
    ds = Dataset.range(1, 4).concatenate(Dataset.range(4, 8))
    assert ints(ds) == [1, 2, 3, 4, 5, 6, 7]
    assert ds.cardinality() == 7
    wider = Dataset.from_tensor_slices([[1, 2]]).concatenate(
        Dataset.from_tensor_slices([[3, 4, 5]]))
    assert wider.element_spec == tf.TensorSpec([None], tf.int32)
    with pytest.raises(TypeError, match="Incompatible dataset elements"):
        Dataset.range(3).concatenate(Dataset.from_tensor_slices([1.0]))


def test_from_generator_with_output_signature_and_args():
    def gen(n):
        for i in range(int(n)):
            yield i, [i] * 2
    ds = Dataset.from_generator(gen, args=(3,), output_signature=(
        tf.TensorSpec([], tf.int32), tf.TensorSpec([2], tf.float32)))
    got = values(ds)
    assert [int(a) for a, _ in got] == [0, 1, 2]
    assert got[2][1].dtype == np.float32 and list(got[2][1]) == [2.0, 2.0]
    assert ds.cardinality() == tf.data.UNKNOWN_CARDINALITY
    assert len(values(ds)) == 3   # a new pass calls the generator again


def test_from_generator_checks_what_it_yields():
    def gen():
        yield np.array([1, 2])
        yield np.array([3, 4, 5])
    ds = Dataset.from_generator(gen, output_signature=tf.TensorSpec([2], tf.int64))
    it = iter(ds)
    np.testing.assert_array_equal(next(it).numpy(), [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"yielded an element of shape \(3,\) where an element of shape "
                             r"\(2,\) was expected"):
        next(it)
    ds = Dataset.from_generator(lambda: iter([(1, 2)]),
                                output_signature=tf.TensorSpec([], tf.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        values(ds)
    ds = Dataset.from_generator(lambda: iter([1]), output_signature=(
        tf.TensorSpec([], tf.int32), tf.TensorSpec([], tf.int32)))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="did not match the expected structure"):
        values(ds)
    ds = Dataset.from_generator(lambda: iter(["text"]),
                                output_signature=tf.TensorSpec([], tf.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="could not be converted"):
        values(ds)
    with pytest.raises(TypeError, match="output_signature"):
        Dataset.from_generator(gen)


def test_from_generator_with_output_types_and_shapes():
    ds = Dataset.from_generator(lambda: iter([[1, 2], [3]]), output_types=tf.int64,
                                output_shapes=[None])
    assert ds.element_spec == tf.TensorSpec([None], tf.int64)
    assert [list(v) for v in values(ds)] == [[1, 2], [3]]


def test_strings_are_bytes():
    ds = Dataset.from_tensor_slices(["a", "bc"])
    assert ds.element_spec == tf.TensorSpec([], tf.string)
    assert values(ds) == [b"a", b"bc"]
    batch, = values(ds.batch(2))
    assert list(batch) == [b"a", b"bc"]
    assert next(iter(ds)).dtype == tf.string


# ---- batching ------------------------------------------------------------------------------------
def test_batch_partial_and_dropped_remainder():
    ds = Dataset.range(8).batch(3)
    assert ds.element_spec == tf.TensorSpec([None], tf.int64)
    assert [list(b) for b in values(ds)] == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert ds.cardinality() == 3
    dropped = Dataset.range(8).batch(3, drop_remainder=True)
    assert dropped.element_spec == tf.TensorSpec([3], tf.int64)
    assert [list(b) for b in values(dropped)] == [[0, 1, 2], [3, 4, 5]]
    assert dropped.cardinality() == 2
    with pytest.raises(tf.errors.InvalidArgumentError, match="greater than zero"):
        Dataset.range(3).batch(0)


def test_batch_of_structures_and_of_generated_elements():
    ds = Dataset.from_tensor_slices({"x": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
                                     "y": [0, 1, 0]}).batch(2)
    assert ds.element_spec == {"x": tf.TensorSpec([None, 2], tf.float32),
                               "y": tf.TensorSpec([None], tf.int32)}
    first, second = values(ds)
    np.testing.assert_array_equal(first["x"], [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(second["y"], [0])
    gen = Dataset.from_generator(lambda: iter([[1], [2, 3]]),
                                 output_signature=tf.TensorSpec([None], tf.int32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Cannot batch tensors with different shapes in component 0\. "
                             r"First element had shape \[1\] and element 1 had shape \[2\]"):
        values(gen.batch(2))


def test_unbatch():
    ds = Dataset.from_tensor_slices({"a": [[1, 2], [3, 4]], "b": [[5, 6], [7, 8]]}).unbatch()
    assert ds.element_spec == {"a": tf.TensorSpec([], tf.int32), "b": tf.TensorSpec([], tf.int32)}
    assert values(ds) == [{"a": 1, "b": 5}, {"a": 2, "b": 6}, {"a": 3, "b": 7},
                          {"a": 4, "b": 8}]
    assert ds.cardinality() == 4
    assert Dataset.range(10).batch(3).unbatch().cardinality() == tf.data.UNKNOWN_CARDINALITY
    assert ints(Dataset.range(10).batch(3).unbatch()) == list(range(10))
    with pytest.raises(ValueError, match="rank >= 1"):
        Dataset.range(3).unbatch()


def test_padded_batch_as_in_tf_docs():
    def gen():
        for n in range(1, 5):
            yield np.full([n], n, np.int64)
    ds = Dataset.from_generator(gen, output_signature=tf.TensorSpec([None], tf.int64))
    padded = ds.padded_batch(2)
    assert padded.element_spec == tf.TensorSpec([None, None], tf.int64)
    first, second = values(padded)
    np.testing.assert_array_equal(first, [[1, 0], [2, 2]])
    np.testing.assert_array_equal(second, [[3, 3, 3, 0], [4, 4, 4, 4]])
    fixed = ds.padded_batch(2, padded_shapes=5, padding_values=np.int64(-1))
    assert fixed.element_spec == tf.TensorSpec([None, 5], tf.int64)
    np.testing.assert_array_equal(values(fixed)[0], [[1, -1, -1, -1, -1], [2, 2, -1, -1, -1]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="smaller size"):
        values(ds.padded_batch(2, padded_shapes=[2]))


def test_padded_batch_of_tuples_and_strings():
    ds = Dataset.from_generator(
        lambda: iter([([1], "a"), ([2, 3], "b")]),
        output_signature=(tf.TensorSpec([None], tf.int32), tf.TensorSpec([], tf.string)))
    (numbers, words), = values(ds.padded_batch(2, padded_shapes=([3], []),
                                               padding_values=(-1, "")))
    np.testing.assert_array_equal(numbers, [[1, -1, -1], [2, 3, -1]])
    assert list(words) == [b"a", b"b"]
    with pytest.raises(ValueError, match="not compatible with the shape"):
        Dataset.from_tensor_slices([[1, 2, 3]]).padded_batch(1, padded_shapes=[2])
    with pytest.raises(TypeError, match="dtype"):
        ds.padded_batch(2, padding_values=(tf.constant(1.0), ""))


def test_window_as_in_tf_docs():
    def windows(ds):
        return [[int(v) for v in w.as_numpy_iterator()] for w in ds]
    assert windows(Dataset.range(7).window(3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert windows(Dataset.range(7).window(3, shift=2, drop_remainder=True)) == [
        [0, 1, 2], [2, 3, 4], [4, 5, 6]]
    assert windows(Dataset.range(7).window(3, shift=1, drop_remainder=True)) == [
        [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]]
    assert windows(Dataset.range(7).window(3, shift=1, stride=2, drop_remainder=True)) == [
        [0, 2, 4], [1, 3, 5], [2, 4, 6]]
    assert windows(Dataset.range(7).window(2, shift=3)) == [[0, 1], [3, 4], [6]]
    ds = Dataset.range(7).window(3)
    assert ds.element_spec == tf.data.DatasetSpec(tf.TensorSpec([], tf.int64))
    assert repr(ds.element_spec) == ("DatasetSpec(TensorSpec(shape=(), dtype=tf.int64, "
                                     "name=None), TensorShape([]))")
    assert ds.cardinality() == 3
    assert Dataset.range(10).window(3, 2, drop_remainder=True).cardinality() == 4
    pairs = Dataset.from_tensor_slices(([1, 2, 3], [4, 5, 6])).window(2)
    assert [tuple(ints(c) for c in w) for w in pairs] == [([1, 2], [4, 5]), ([3], [6])]


def test_flat_map_of_windows_and_of_slices():
    ds = Dataset.range(7).window(3, 2, 1, True).flat_map(lambda w: w.batch(3))
    assert ds.element_spec == tf.TensorSpec([None], tf.int64)
    assert [list(b) for b in values(ds)] == [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    ds = Dataset.from_tensor_slices([[1, 2, 3], [4, 5, 6]]).flat_map(Dataset.from_tensor_slices)
    assert ds.element_spec == tf.TensorSpec([], tf.int32)
    assert ints(ds) == [1, 2, 3, 4, 5, 6]
    with pytest.raises(TypeError, match="must return a Dataset"):
        Dataset.range(3).flat_map(lambda x: x)


# ---- shuffle -------------------------------------------------------------------------------------
def _draws(seed, counter):
    words = shuffle_kernels.draw_words(0, 1000, seed, counter)
    return iter(words.tolist())


def _buffer_shuffle(items, buffer_size, seed, counter):
    """The buffer shuffle written out by hand: fill, then swap a random slot per input."""
    draws = _draws(seed, counter)
    buffer, out = [], []
    for item in items:
        if len(buffer) < buffer_size:
            buffer.append(item)
            continue
        slot = (next(draws) * buffer_size) >> 32
        out.append(buffer[slot])
        buffer[slot] = item
    while buffer:
        slot = (next(draws) * len(buffer)) >> 32
        out.append(buffer[slot])
        buffer[slot] = buffer[-1]
        buffer.pop()
    return out


def test_shuffle_kernel_matches_the_buffer_algorithm():
    shuffler = shuffle_kernels.IndexShuffler(4, 123, 7)
    got = list(shuffler.push(np.arange(10)))
    got += list(shuffler.push(np.arange(10, 13), finish=True))
    assert got == _buffer_shuffle(list(range(13)), 4, 123, 7)


def test_shuffle_of_rows_and_of_other_elements_give_the_same_order():
    rows = ints(Dataset.range(30).shuffle(8, seed=4))
    generated = Dataset.from_generator(lambda: iter(range(30)),
                                       output_signature=tf.TensorSpec([], tf.int64))
    assert ints(generated.shuffle(8, seed=4)) == rows
    assert sorted(rows) == list(range(30))


def test_shuffle_draws_only_from_its_buffer():
    buffer_size = 5
    for seed in range(20):
        order = ints(Dataset.range(40).shuffle(buffer_size, seed=seed))
        assert sorted(order) == list(range(40))
        # output k is one of the first k + buffer_size inputs
        assert all(value < k + buffer_size for k, value in enumerate(order))
    assert ints(Dataset.range(10).shuffle(1)) == list(range(10))


def test_shuffle_is_uniform_over_its_buffer():
    # The first output of shuffle(4) over 0..3 is each element with probability 1/4.
    firsts = [ints(Dataset.range(4).shuffle(4, seed=s))[0] for s in range(400)]
    counts = np.bincount(firsts, minlength=4)
    assert counts.min() > 60 and counts.max() < 140, counts


def test_shuffle_seeds_and_reshuffling():
    ds = Dataset.range(20).shuffle(20, seed=3)
    first, second = ints(ds), ints(ds)
    assert first != second                       # each pass is reshuffled
    assert ints(Dataset.range(20).shuffle(20, seed=3)) == first   # the seed fixes the passes
    fixed = Dataset.range(20).shuffle(20, seed=3, reshuffle_each_iteration=False)
    assert ints(fixed) == ints(fixed)
    tf.random.set_seed(11)
    a = ints(Dataset.range(20).shuffle(20))
    tf.random.set_seed(11)
    b = ints(Dataset.range(20).shuffle(20))
    assert a == b
    tf.random.set_seed(None)
    with pytest.raises(tf.errors.InvalidArgumentError, match="buffer_size"):
        Dataset.range(3).shuffle(0)


def test_shuffle_then_repeat_reshuffles_each_repetition():
    order = ints(Dataset.range(10).shuffle(10, seed=2).repeat(3))
    passes = [order[i:i + 10] for i in range(0, 30, 10)]
    assert all(sorted(p) == list(range(10)) for p in passes)
    assert len({tuple(p) for p in passes}) > 1


def test_shuffle_batch_gathers_whole_rows():
    x = np.arange(12).reshape(6, 2)
    ds = Dataset.from_tensor_slices((x, np.arange(6))).shuffle(6, seed=0).batch(4)
    batches = values(ds)
    assert [len(b[1]) for b in batches] == [4, 2]
    for features, labels in batches:
        np.testing.assert_array_equal(features, x[labels])   # rows stay paired


# ---- map and filter ------------------------------------------------------------------------------
def test_map_unpacks_tuples_and_is_traced_once():
    calls = []

    def f(x, y):
        calls.append(1)
        return [x + 1, y]
    ds = Dataset.from_tensor_slices(([1, 2], [3, 4])).map(f, num_parallel_calls=tf.data.AUTOTUNE)
    assert len(calls) == 1
    assert ds.element_spec == (tf.TensorSpec([], tf.int32), tf.TensorSpec([], tf.int32))
    assert values(ds) == [(2, 3), (3, 4)]
    assert len(calls) == 1


def test_map_passes_dicts_whole_and_infers_shapes():
    ds = Dataset.from_tensor_slices({"a": [1, 2]}).map(lambda d: d["a"] * 2)
    assert ints(ds) == [2, 4]
    batched = Dataset.range(5).batch(2).map(lambda x: (tf.cast(x, tf.float32) * 2.0, x[0]))
    assert batched.element_spec == (tf.TensorSpec([None], tf.float32),
                                    tf.TensorSpec([], tf.int64))
    first = values(batched)[0]
    np.testing.assert_array_equal(first[0], [0.0, 2.0])


def test_map_function_with_python_control_flow_on_tensors():
    def clip(x):
        if x > 2:
            x = x * 0
        return x
    assert ints(Dataset.range(5).map(clip)) == [0, 1, 2, 0, 0]


def test_map_random_ops_draw_per_element():
    ds = Dataset.range(3).map(lambda x: tf.random.uniform([2], seed=1))
    first, second, third = values(ds)
    assert not np.array_equal(first, second) and not np.array_equal(second, third)


def test_map_errors():
    with pytest.raises(TypeError, match="returned None"):
        Dataset.range(3).map(lambda x: None)
    with pytest.raises(TypeError, match="callable"):
        Dataset.range(3).map(3)


def test_filter():
    assert ints(Dataset.range(10).filter(lambda x: x % 3 == 0)) == [0, 3, 6, 9]
    ds = Dataset.from_tensor_slices(([1, 2, 3], [4, 5, 6])).filter(lambda a, b: a + b > 6)
    assert values(ds) == [(2, 5), (3, 6)]
    assert ds.cardinality() == tf.data.UNKNOWN_CARDINALITY
    with pytest.raises(ValueError, match="must return a `tf.bool` scalar tensor"):
        Dataset.range(3).filter(lambda x: x)


# ---- counting transformations --------------------------------------------------------------------
def test_repeat_take_skip():
    assert ints(Dataset.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert ints(Dataset.range(3).repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert ints(Dataset.range(0).repeat()) == []
    assert ints(Dataset.range(10).skip(3).take(4)) == [3, 4, 5, 6]
    assert ints(Dataset.range(4).take(-1)) == [0, 1, 2, 3]
    assert ints(Dataset.range(4).skip(-1)) == []
    assert ints(Dataset.range(4).take(0)) == []
    gen = Dataset.from_generator(lambda: iter(range(5)),
                                 output_signature=tf.TensorSpec([], tf.int64))
    assert ints(gen.skip(2).take(2)) == [2, 3]
    assert ints(gen.repeat(2)) == [0, 1, 2, 3, 4] * 2


def test_enumerate():
    ds = Dataset.from_tensor_slices([7, 8, 9]).enumerate(start=5)
    assert ds.element_spec == (tf.TensorSpec([], tf.int64), tf.TensorSpec([], tf.int32))
    assert values(ds) == [(5, 7), (6, 8), (7, 9)]
    shuffled = values(Dataset.range(5).shuffle(5, seed=1).enumerate())
    assert [i for i, _ in shuffled] == [0, 1, 2, 3, 4]


def test_cache_replays_the_first_complete_pass(tmp_path):
    calls = []

    def gen():
        calls.append(1)
        yield from range(3)
    ds = Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64)).cache()
    assert ints(ds) == [0, 1, 2] and ints(ds) == [0, 1, 2]
    assert len(calls) == 1
    partial = Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64)).cache()
    calls.clear()
    assert ints(partial.take(1)) == [0]
    assert ints(partial) == [0, 1, 2]
    assert len(calls) == 2   # a pass left early is not kept
    frozen = Dataset.range(10).shuffle(10, seed=5).cache()
    assert ints(frozen) == ints(frozen)

    path = str(tmp_path / "cache")
    on_disk = Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64))
    calls.clear()
    assert ints(on_disk.cache(path)) == [0, 1, 2]
    assert ints(on_disk.cache(path)) == [0, 1, 2]   # a new dataset reads the file
    assert len(calls) == 1


def test_prefetch_keeps_order_and_raises_errors_in_place():
    assert ints(Dataset.range(50).prefetch(2)) == list(range(50))
    assert ints(Dataset.range(50).prefetch(tf.data.AUTOTUNE)) == list(range(50))
    assert ints(Dataset.range(5).prefetch(0)) == list(range(5))

    def gen():
        yield 1
        raise RuntimeError("broken source")
    ds = Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64)).prefetch(2)
    it = iter(ds)
    assert int(next(it)) == 1
    with pytest.raises(RuntimeError, match="broken source"):
        next(it)


def test_prefetch_pass_left_early_stops_its_producer():
    produced = []

    def gen():
        try:
            for i in range(1000):
                produced.append(i)
                yield i
        finally:
            produced.append("closed")
    ds = Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64)).prefetch(2)
    for x in ds:
        if int(x) == 3:
            break
    import time
    deadline = time.time() + 5
    while "closed" not in produced and time.time() < deadline:
        time.sleep(0.01)
    assert "closed" in produced and len(produced) < 50


# ---- structure, cardinality, len -----------------------------------------------------------------
def test_cardinality_constants_and_len():
    assert tf.data.INFINITE_CARDINALITY == -1 and tf.data.UNKNOWN_CARDINALITY == -2
    assert tf.data.experimental.INFINITE_CARDINALITY == -1
    ds = Dataset.range(10)
    assert ds.cardinality().dtype == tf.int64 and int(ds.cardinality()) == 10
    assert int(tf.data.experimental.cardinality(ds.repeat())) == -1
    assert int(ds.filter(lambda x: x > 3).cardinality()) == -2
    assert len(ds.batch(3)) == 4
    assert int(ds.repeat().take(3).cardinality()) == 3
    assert int(ds.skip(20).cardinality()) == 0
    assert int(Dataset.zip(ds, ds.repeat()).cardinality()) == 10
    unknown = ds.filter(lambda x: x > 3)
    assert [int(d.cardinality()) for d in (
        unknown.repeat(), unknown.repeat(2), ds.repeat(0), unknown.concatenate(ds.repeat()),
        unknown.take(3), ds.repeat().filter(lambda x: x > 3))] == [-1, -2, 0, -1, -2, -2]
    with pytest.raises(TypeError, match="The dataset is infinite."):
        len(ds.repeat())
    with pytest.raises(TypeError, match="The dataset length is unknown."):
        len(ds.filter(lambda x: x > 3))
    assert bool(ds.repeat())


def test_repr_and_as_numpy_iterator():
    assert repr(Dataset.range(5)) == ("<_RangeDataset element_spec=TensorSpec(shape=(), "
                                      "dtype=tf.int64, name=None)>")
    assert repr(Dataset.range(5).batch(2)).startswith("<_BatchDataset element_spec=")
    items = list(Dataset.from_tensor_slices(([1, 2], ["a", "b"])).as_numpy_iterator())
    assert items == [(1, b"a"), (2, b"b")]
    assert isinstance(items[0][0], np.int32)
    with pytest.raises(TypeError, match="DatasetSpec"):
        Dataset.range(3).window(2).as_numpy_iterator()


def test_reduce_as_in_tf_docs():
    assert int(Dataset.range(5).reduce(np.int64(0), lambda x, _: x + 1)) == 5
    assert int(Dataset.range(5).reduce(np.int64(0), lambda x, y: x + y)) == 10
    total, count = Dataset.from_tensor_slices([1.0, 2.0, 4.0]).reduce(
        (0.0, 0), lambda state, x: (state[0] + x, state[1] + 1))
    assert float(total) == 7.0 and int(count) == 3


def test_apply():
    ds = Dataset.range(10).apply(lambda d: d.filter(lambda x: x < 3))
    assert ints(ds) == [0, 1, 2]


def test_a_damaged_cache_file_is_read_again_with_a_warning(tmp_path):
    path = str(tmp_path / "cache")
    with open(path + ".cache", "wb") as f:
        f.write(b"not a cache")
    with pytest.warns(UserWarning, match="is damaged"):
        assert ints(Dataset.range(3).cache(path)) == [0, 1, 2]
    assert ints(Dataset.range(3).cache(path)) == [0, 1, 2]   # rewritten: no warning now


def test_interleave_as_in_tf_docs():
    ds = Dataset.range(1, 6).interleave(lambda x: Dataset.from_tensors(x).repeat(6),
                                        cycle_length=2, block_length=4)
    assert ints(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4,
                        5, 5, 5, 5, 5, 5]
    assert ds.element_spec == tf.TensorSpec([], tf.int64)
    lines = Dataset.from_tensor_slices([[1, 2, 3], [4, 5, 6]]).interleave(
        Dataset.from_tensor_slices, cycle_length=2)
    assert ints(lines) == [1, 4, 2, 5, 3, 6]


def test_take_while_shard_and_get_single_element():
    assert ints(Dataset.range(10).take_while(lambda x: x < 4)) == [0, 1, 2, 3]
    assert ints(Dataset.range(10).shard(3, 1)) == [1, 4, 7]
    assert int(Dataset.range(10).shard(3, 1).cardinality()) == 3
    gen = Dataset.from_generator(lambda: iter(range(10)),
                                 output_signature=tf.TensorSpec([], tf.int64))
    assert ints(gen.shard(4, 3)) == [3, 7]
    assert ints(Dataset.range(10).repeat(2).shard(3, 0)) == [0, 3, 6, 9, 2, 5, 8]
    with pytest.raises(tf.errors.InvalidArgumentError, match="index"):
        Dataset.range(3).shard(2, 2)
    assert int(Dataset.range(5).filter(lambda x: x == 3).get_single_element()) == 3
    with pytest.raises(tf.errors.InvalidArgumentError, match="more than one element"):
        Dataset.range(2).get_single_element()
    with pytest.raises(tf.errors.InvalidArgumentError, match="Dataset was empty"):
        Dataset.range(0).get_single_element()
