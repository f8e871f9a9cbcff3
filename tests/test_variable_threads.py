"""Variable updates from several threads: every read-modify-write is atomic per variable (TF's
``use_locking``), and a value once read never changes, even while another thread's compiled
step overwrites the variable in place.  Copy-on-write is decided from what the variable knows
has been handed out, and from the views of its array a compiled call still reads."""
import sys
import threading

import numpy as np
import pytest

import hybridtf as tf
from hybridtf import keras

THREADS = [4, 8]


@pytest.fixture(autouse=True)
def frequent_thread_switches():
    """Threads switch every 10 us instead of every 5 ms, so that interleavings that lose an
    update show up within a few hundred calls."""
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(saved)


def _in_threads(n_threads, work):
    """Runs ``work(thread_index)`` on ``n_threads`` threads started together; re-raises the
    first error a thread raised."""
    barrier = threading.Barrier(n_threads)
    errors = []

    def target(index):
        try:
            barrier.wait()
            work(index)
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread
            errors.append(error)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def _repeat(calls, fn):
    def work(_):
        for _ in range(calls):
            fn()
    return work


@pytest.mark.parametrize("n_threads", THREADS)
def test_a_decorated_assign_add_counts_every_call(n_threads):
    v = tf.Variable(0.0)
    step = tf.function(lambda: v.assign_add(1.0))
    step()
    v.assign(0.0)
    _in_threads(n_threads, _repeat(1000, step))
    assert v.numpy() == 1000 * n_threads


@pytest.mark.parametrize("n_threads", THREADS)
def test_eager_assign_add_and_assign_sub_count_every_call(n_threads):
    up, down = tf.Variable(0.0), tf.Variable(np.zeros(3, np.int64))

    def work(_):
        for _ in range(1000):
            up.assign_add(1.0)
            down.assign_sub([1, 2, 3])

    _in_threads(n_threads, work)
    assert up.numpy() == 1000 * n_threads
    np.testing.assert_array_equal(down.numpy(), -1000 * n_threads * np.array([1, 2, 3]))


@pytest.mark.parametrize("n_threads", THREADS)
def test_a_large_vector_updated_in_place_counts_every_call(n_threads):
    v = tf.Variable(np.zeros(200_000, np.float32))
    ones = tf.ones(200_000)

    @tf.function
    def step():          # returns nothing: the update may write the array in place
        v.assign_add(ones)

    step()
    assert "_claim_in_place" in step.get_concrete_function().kernel_source
    v.assign(np.zeros(200_000, np.float32))
    _in_threads(n_threads, _repeat(40, step))
    np.testing.assert_array_equal(v.numpy(), np.full(200_000, 40 * n_threads, np.float32))


def _model_and_data():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.set_weights([np.arange(6, dtype=np.float32).reshape(3, 2),
                       np.array([0.5, -0.5], np.float32)])
    x = tf.constant(np.random.default_rng(0).uniform(-1, 1, (5, 3)).astype(np.float32))
    return model, x


def _train(model, optimizer, x, counter):
    """One step whose gradients do not depend on the weights (the loss is linear in them):
    N steps then give the same weights in any order, as long as none is lost."""
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    counter.assign_add(1)
    return loss


def _sequential_reference(steps):
    model, x = _model_and_data()
    optimizer = keras.optimizers.SGD(0.01, momentum=0.9)
    counter = tf.Variable(0, dtype=tf.int64)
    for _ in range(steps):
        _train(model, optimizer, x, counter)
    return [w.numpy() for w in model.trainable_variables]


@pytest.mark.parametrize("n_threads", THREADS)
@pytest.mark.parametrize("decorated", [True, False], ids=["tf_function", "eager"])
def test_a_shared_model_trains_every_step(n_threads, decorated):
    model, x = _model_and_data()
    # Momentum: the update of each weight reads and writes its slot too, so a step that
    # interleaves with another on the same weight gives different numbers.
    optimizer = keras.optimizers.SGD(0.01, momentum=0.9)
    counter = tf.Variable(0, dtype=tf.int64)
    step = tf.function(_train) if decorated else _train
    steps = 50
    _in_threads(n_threads, _repeat(steps, lambda: step(model, optimizer, x, counter)))
    assert optimizer.iterations.numpy() == steps * n_threads
    assert counter.numpy() == steps * n_threads
    for got, want in zip(model.trainable_variables, _sequential_reference(steps * n_threads)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("n_threads", [2, 4])
def test_values_read_while_another_thread_updates_in_place_never_change(n_threads):
    """Eager reads, and a decorated function returning the variable, taken while other threads
    run a compiled step that overwrites the variable in place: each value read is whole (never
    half-updated) and keeps its numbers afterwards."""
    v = tf.Variable(np.zeros(200_000, np.float32))

    @tf.function
    def step():
        v.assign(v + 1.0)

    read_in_graph = tf.function(lambda: v.read_value())
    step()
    read_in_graph()
    assert "_claim_in_place" in step.get_concrete_function().kernel_source
    stop = threading.Event()
    held = []

    def work(index):
        if index > 0:
            while not stop.is_set():
                step()
            return
        try:
            for i in range(200):
                value = (v.value(), v.numpy, lambda: np.asarray(v), read_in_graph)[i % 4]
                value = value() if callable(value) else value
                array = np.asarray(value)
                first = array[0]
                assert (array == first).all(), "a read saw a half-updated value"
                held.append((value, first))
        finally:
            stop.set()

    _in_threads(n_threads, work)
    for value, first in held:
        assert (np.asarray(value) == first).all(), "a value changed after it was read"


# ---- copy-on-write decided from what the variable knows ---------------------------------------
SHAPE = (400, 500)   # 200k elements: the update below is written in place when it may be


def _in_place_step(v):
    @tf.function
    def step():
        v.assign(v * 2.0 + 1.0)
    step()
    assert "_claim_in_place" in step.get_concrete_function().kernel_source
    return step


def _start():
    return np.random.default_rng(1).uniform(-1, 1, SHAPE).astype(np.float32)


def test_steps_with_no_reads_between_them_write_in_place():
    v = tf.Variable(_start())
    step = _in_place_step(v)
    step()   # the array the constructor handed out (initial_value) was copied once
    array = id(v._value)
    for _ in range(3):
        step()
        assert id(v._value) == array   # written in place: nothing else refers to it


def test_a_variable_made_from_a_tensor_is_written_in_place_from_the_first_step():
    """The initial tensor stays the initial value; the variable's own copy is overwritten."""
    start = _start()
    v = tf.Variable(tf.constant(start))
    array = id(v._value)
    step = _in_place_step(v)    # the first step
    assert id(v._value) == array
    step()
    np.testing.assert_array_equal(v.initial_value.numpy(), start)
    np.testing.assert_allclose(v.numpy(), (start * 2 + 1) * 2 + 1, rtol=1e-6)


def test_keras_weights_and_adam_slots_are_written_in_place_from_the_first_step():
    """Initializers and slots hand the variable a new array: no copy, at creation or at the first
    update."""
    model = keras.Sequential([keras.Input((300,)), keras.layers.Dense(256), keras.layers.Dense(3)])
    optimizer = keras.optimizers.Adam(0.01)
    kernel = model.trainable_variables[0]
    initial = np.array(kernel._value)   # not a read, which would hand the array out
    optimizer.build(model.trainable_variables)
    slots = [optimizer.get_slot(kernel, name) for name in ("momentum", "velocity")]
    arrays = [id(w._value) for w in [kernel] + slots]
    x = tf.constant(np.random.default_rng(9).uniform(-1, 1, (8, 300)).astype(np.float32))

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    step()
    assert [id(w._value) for w in [kernel] + slots] == arrays
    assert not np.array_equal(kernel.numpy(), initial)
    assert np.abs(slots[0].numpy()).max() > 0
    for slot in slots:   # the slots' own arrays were their initial values: made again
        np.testing.assert_array_equal(slot.initial_value.numpy(), np.zeros(kernel.shape))


def test_a_variable_takes_a_fresh_array_as_its_own():
    from hybridtf.framework.variables import FreshArray
    array = _start()
    made = []
    v = tf.Variable(FreshArray(array, lambda: made.append(1) or tf.constant(_start())),
                    trainable=False)
    assert v._value is array and not made
    step = _in_place_step(v)   # the first step
    step()
    assert v._value is array   # overwritten in place from the first step
    np.testing.assert_allclose(v.numpy(), (_start() * 2 + 1) * 2 + 1, rtol=1e-6)
    np.testing.assert_array_equal(v.initial_value.numpy(), _start())
    assert v.initial_value is v.initial_value and made == [1]


@pytest.mark.parametrize("use_bias", [True, False])
def test_a_keras_train_step_writes_its_large_weights_in_place(use_bias):
    """The normal training loop: the 300x256 kernel and its Adam slots are updated in place
    (without a bias the loss comes from steps that read the kernel: checked per call), with
    the numbers of the same steps run eagerly."""
    def build():
        model = keras.Sequential([keras.Input((300,)),
                                  keras.layers.Dense(256, use_bias=use_bias),
                                  keras.layers.Dense(3)])
        model.set_weights([np.random.default_rng(i).uniform(-0.1, 0.1, w.shape.as_list())
                           .astype(np.float32) for i, w in enumerate(model.weights)])
        return model, keras.optimizers.Adam(0.01)

    x = tf.constant(np.random.default_rng(9).uniform(-1, 1, (8, 300)).astype(np.float32))
    y = tf.zeros((8, 3))

    def train(model, optimizer):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    model, optimizer = build()
    step = tf.function(train)
    step(model, optimizer)
    step(model, optimizer)
    kernel = model.trainable_variables[0]
    slots = [optimizer.get_slot(kernel, name) for name in ("momentum", "velocity")]
    arrays = [id(w._value) for w in [kernel] + slots]
    for _ in range(3):
        step(model, optimizer)
    assert [id(w._value) for w in [kernel] + slots] == arrays

    eager_model, eager_optimizer = build()
    for _ in range(5):
        train(eager_model, eager_optimizer)
    for got, want in zip(model.weights, eager_model.weights):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-6)


def _captured_read(v):
    """A value read eagerly and captured by a decorated function, which is then called."""
    snapshot = v.value()
    tf.function(lambda: snapshot + 0.0)()
    return snapshot


HAND_OUTS = {
    "value": lambda v: v.value(),
    "read_value": lambda v: v.read_value(),
    "numpy": lambda v: v.numpy(),
    "asarray": lambda v: np.asarray(v),
    "asarray_view": lambda v: np.asarray(v)[1:],
    "initial_value": lambda v: v.initial_value,
    "graph_returning_the_variable": lambda v: tf.function(lambda: v.read_value())(),
    "graph_returning_a_view": lambda v: tf.function(lambda: tf.reshape(v, [-1]))(),
    "graph_capturing_a_read": _captured_read,
}


@pytest.mark.parametrize("hand_out", HAND_OUTS.values(), ids=HAND_OUTS.keys())
def test_a_value_handed_out_keeps_its_numbers(hand_out):
    v = tf.Variable(_start())
    step = _in_place_step(v)
    expected = v.numpy().copy()
    for _ in range(2):
        held = hand_out(v)
        kept = np.array(held)
        for _ in range(2):
            step()
            expected = expected * np.float32(2) + np.float32(1)
        np.testing.assert_array_equal(np.asarray(held), kept)
        np.testing.assert_array_equal(v.numpy(), expected)


def test_an_assigned_tensor_or_array_keeps_its_numbers():
    v = tf.Variable(_start())
    step = _in_place_step(v)
    tensor, array = tf.constant(_start() + 5.0), _start() + 7.0
    for given in (tensor, array):
        kept = np.array(given)
        v.assign(given)
        step()
        step()
        np.testing.assert_array_equal(np.asarray(given), kept)
        np.testing.assert_allclose(v.numpy(), (kept * 2 + 1) * 2 + 1)
    array[:] = 0.0   # the caller's array is theirs: the variable took a copy
    np.testing.assert_allclose(v.numpy(), (kept * 2 + 1) * 2 + 1)


def test_a_returned_view_of_the_new_value_is_not_overwritten_by_the_next_call():
    v = tf.Variable(_start())

    @tf.function
    def step():
        new = v * 2.0 + 1.0
        v.assign(new)
        return tf.reshape(new, [-1])

    step()
    first = step()
    kept = first.numpy().copy()
    second = step()
    np.testing.assert_array_equal(first.numpy(), kept)
    np.testing.assert_allclose(second.numpy(), kept * 2 + 1, rtol=1e-6)


def test_a_view_of_the_old_value_read_after_the_update_keeps_its_numbers():
    v = tf.Variable(_start())

    @tf.function
    def step():
        old = tf.reshape(v, [-1])          # a view of the variable's array
        v.assign(v * 2.0 + 1.0)
        return tf.reduce_sum(old * old)    # read after the loop that updates v

    assert "_shares(" in step.get_concrete_function().kernel_source
    for _ in range(3):
        old = v.numpy().astype(np.float64)
        np.testing.assert_allclose(step().numpy(), (old * old).sum(), rtol=1e-4)
        np.testing.assert_allclose(v.numpy(), old * 2 + 1, rtol=1e-6)


def test_a_call_that_fails_after_an_in_place_write_lets_readers_go_on():
    v = tf.Variable(np.zeros(200_000, np.float32))

    @tf.function
    def step(index):
        new = v + 1.0
        v.assign(new)
        return tf.gather(new, index)   # runs after the in-place loop; fails out of range

    step(tf.constant([0]))
    step(tf.constant([0]))   # the array is now the variable's own: the next call claims it
    with pytest.raises(tf.errors.InvalidArgumentError):
        step(tf.constant([200_000]))
    seen = []
    reader = threading.Thread(target=lambda: seen.append(v.numpy()[0]))
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "a read waited for a failed call forever"
    assert seen == [3.0]


def test_calls_that_update_what_the_other_reads_run_together_without_deadlock():
    a = tf.Variable(np.zeros(200_000, np.float32))
    b = tf.Variable(np.zeros(200_000, np.float32))

    @tf.function
    def grow_a():
        a.assign(a + 1.0)
        return tf.reduce_max(b)

    @tf.function
    def grow_b():
        b.assign(b + 1.0)
        return tf.reduce_max(a)

    grow_a(), grow_b()
    a.assign(np.zeros(200_000, np.float32))
    b.assign(np.zeros(200_000, np.float32))

    def work(index):
        for _ in range(40):
            (grow_a, grow_b)[index % 2]()
            (a, b)[index % 2].numpy()

    worker = threading.Thread(target=_in_threads, args=(4, work))
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "deadlock"
    np.testing.assert_array_equal(a.numpy(), np.full(200_000, 80, np.float32))
    np.testing.assert_array_equal(b.numpy(), np.full(200_000, 80, np.float32))
