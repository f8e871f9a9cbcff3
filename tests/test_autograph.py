"""AutoGraph: Python control flow in tf.function bodies becomes cond / while_loop."""
import numpy as np
import pytest

import hybridtf as tf
from hybridtf import autograph
from hybridtf.autograph import operators

try:
    from hybridtf.api import control_flow_ops as _cf
    HAVE_PRIMITIVES = hasattr(_cf, "cond") and hasattr(_cf, "while_loop")
except ImportError:  # pragma: no cover - until control_flow_ops lands
    HAVE_PRIMITIVES = False

needs_primitives = pytest.mark.skipif(
    not HAVE_PRIMITIVES, reason="hybridtf.api.control_flow_ops.cond / while_loop not available")


def graph_ops(fn, *args):
    """The op names of the graph traced for ``fn(*args)`` (nested graphs not included)."""
    return [node.op.name for node in fn.get_concrete_function(*args).graph.nodes]


# ---- the seed's examples ---------------------------------------------------------------------
def square_if_positive(x):
    if x > 0:
        x = x * x
    else:
        x = 0
    return x


@needs_primitives
def test_square_if_positive():
    f = tf.function(square_if_positive)
    a = f(tf.constant(2))
    b = f(tf.constant(-2))
    assert a.dtype == tf.int32 and a.numpy() == 4
    assert b.dtype == tf.int32 and b.numpy() == 0
    assert f.experimental_get_tracing_count() == 1
    assert f.python_function is square_if_positive


def test_square_if_positive_eager_to_graph():
    g = tf.autograph.to_graph(square_if_positive)
    assert g(tf.constant(2)).numpy() == 4
    assert g(tf.constant(-2)) == 0
    assert g(3) == 9 and g(-1) == 0


def test_to_code_square_if_positive():
    code = tf.autograph.to_code(square_if_positive)
    assert code.startswith("def tf__square_if_positive(x):")
    assert "ag__.if_stmt(x > 0" in code
    assert "def if_true__" in code and "def if_false__" in code
    f = tf.function(square_if_positive)
    assert tf.autograph.to_code(f.python_function) == code
    assert tf.autograph.to_code(f) == code


def tanh_loop(x):
    while tf.reduce_sum(x) > 1:
        x = tf.tanh(x)
    return x


def _tanh_eager(values):
    x = tf.constant(values)
    while tf.reduce_sum(x) > 1:
        x = tf.tanh(x)
    return x.numpy()


VALUES = [0.2, 0.25, 0.06, 0.9, 0.93]


@needs_primitives
def test_tanh_while_loop_matches_eager():
    f = tf.function(tanh_loop)
    out = f(tf.constant(VALUES))
    np.testing.assert_allclose(out.numpy(), _tanh_eager(VALUES), rtol=1e-5)
    assert "ag__.while_stmt(" in tf.autograph.to_code(f.python_function)
    # a different value reuses the graph: the loop is in it, not unrolled
    out2 = f(tf.constant([0.5, 0.5, 0.5, 0.5, 0.5]))
    np.testing.assert_allclose(out2.numpy(), _tanh_eager([0.5] * 5), rtol=1e-5)
    assert f.experimental_get_tracing_count() == 1


def test_tanh_while_loop_eager_to_graph():
    out = tf.autograph.to_graph(tanh_loop)(tf.constant(VALUES))
    np.testing.assert_allclose(out.numpy(), _tanh_eager(VALUES), rtol=1e-6)


def fizzbuzz(n):
    for i in tf.range(1, n + 1):
        print('Tracing for loop')
        if i % 15 == 0:
            print('Tracing fizzbuzz branch')
            tf.print('fizzbuzz')
        elif i % 3 == 0:
            print('Tracing fizz branch')
            tf.print('fizz')
        elif i % 5 == 0:
            print('Tracing buzz branch')
            tf.print('buzz')
        else:
            print('Tracing default branch')
            tf.print(i)


def _expected_fizzbuzz(n):
    out = []
    for i in range(1, n + 1):
        out.append("fizzbuzz" if i % 15 == 0 else "fizz" if i % 3 == 0 else
                   "buzz" if i % 5 == 0 else str(i))
    return out


@needs_primitives
def test_fizzbuzz(capsys):
    f = tf.function(fizzbuzz)
    f(tf.constant(5))
    captured = capsys.readouterr()
    assert captured.err.split() == ["1", "2", "fizz", "4", "buzz"]
    assert "Tracing fizzbuzz branch" in captured.out and "Tracing default branch" in captured.out
    f(tf.constant(20))
    captured = capsys.readouterr()
    assert captured.err.split() == _expected_fizzbuzz(20)
    assert captured.out == ""       # no retracing: Python prints do not run again
    assert f.experimental_get_tracing_count() == 1


def test_fizzbuzz_eager_to_graph(capsys):
    tf.autograph.to_graph(fizzbuzz)(tf.constant(15))
    assert capsys.readouterr().err.split() == _expected_fizzbuzz(15)


def train_one_step():
    pass


traces = []


def train(num_steps):
    traces.append(num_steps)
    for _ in tf.range(num_steps):
        train_one_step()


@needs_primitives
def test_train_retraces_for_python_ints_not_tensors():
    f = tf.function(train)
    del traces[:]
    f(num_steps=10)
    f(num_steps=20)
    assert traces == [10, 20]
    f(num_steps=tf.constant(10))
    f(num_steps=tf.constant(20))
    assert len(traces) == 3 and isinstance(traces[2], tf.Tensor)
    assert f.experimental_get_tracing_count() == 3


# ---- Python control flow on Python values is left alone ---------------------------------------
@needs_primitives
def test_python_loop_over_list_unrolls():
    @tf.function
    def f(x):
        for v in [1.0, 2.0, 3.0]:
            x = x * v
        return x
    assert f(tf.constant(2.0)).numpy() == 12.0
    ops = graph_ops(f, tf.constant(2.0))
    assert not any("while" in op.lower() for op in ops)
    assert len(ops) >= 3


@needs_primitives
def test_python_range_unrolls_and_python_if_not_converted():
    traced = []

    @tf.function
    def f(x, training):
        if training:
            traced.append("train")
            x = x * 2.0
        else:
            traced.append("eval")
            x = x - 1.0
        for i in range(3):
            x = x + i
        return x
    assert f(tf.constant(1.0), True).numpy() == 5.0
    assert traced == ["train"]
    assert f(tf.constant(1.0), False).numpy() == 3.0
    assert traced == ["train", "eval"]
    ops = graph_ops(f, tf.constant(1.0), True)
    assert not any("cond" in op.lower() or "while" in op.lower() for op in ops)


@needs_primitives
def test_loop_over_python_list_of_pairs():
    @tf.function
    def f(data):
        loss = tf.constant(0)
        for x, y in data:
            loss += tf.abs(y - x)
        return loss
    assert f([(1, 3), (4, 1), (2, 2)]).numpy() == 5


# ---- tensor conditions in graphs ----------------------------------------------------------------
@needs_primitives
def test_tensor_if_builds_cond():
    @tf.function
    def f(x):
        if tf.reduce_sum(x) > 0:
            y = x * 2.0
        else:
            y = -x
        return y
    np.testing.assert_allclose(f(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(f(tf.constant([-1.0, -2.0])).numpy(), [1.0, 2.0])
    assert f.experimental_get_tracing_count() == 1
    assert any("cond" in op.lower() for op in graph_ops(f, tf.constant([1.0, 2.0])))


@needs_primitives
def test_if_without_else_and_elif():
    @tf.function
    def f(x):
        y = tf.constant(0)
        if x > 10:
            y = tf.constant(3)
        elif x > 5:
            y = tf.constant(2)
        elif x > 0:
            y = y + 1
        return y
    assert [f(tf.constant(v)).numpy() for v in (20, 7, 1, -4)] == [3, 2, 1, 0]
    assert f.experimental_get_tracing_count() == 1


@needs_primitives
def test_temporary_in_one_branch_is_fine():
    @tf.function
    def f(x):
        if x > 0:
            t = x * 3
            x = t + 1
        return x
    assert f(tf.constant(2)).numpy() == 7
    assert f(tf.constant(-2)).numpy() == -2


@needs_primitives
def test_for_over_tensor_rows():
    @tf.function
    def f(m):
        total = tf.zeros([2])
        for row in m:
            total = total + row
        return total
    m = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_allclose(f(m).numpy(), [9.0, 12.0])
    assert tf.autograph.to_graph(f.python_function)(m).numpy().tolist() == [9.0, 12.0]


@needs_primitives
def test_range_with_delta_and_tensor_start():
    @tf.function
    def f(start, limit):
        s = tf.constant(0)
        for i in tf.range(start, limit, 3):
            s = s + i
        return s
    assert f(tf.constant(1), tf.constant(11)).numpy() == 1 + 4 + 7 + 10
    assert f(tf.constant(5), tf.constant(3)).numpy() == 0

    @tf.function
    def g(n):
        s = 0
        for i in range(n):
            s += i
        return s
    assert g(tf.constant(5)).numpy() == 10


# ---- break / continue / return ----------------------------------------------------------------
def loop_break(n):
    s = tf.constant(0)
    for i in tf.range(n):
        if i >= 4:
            break
        s += i
    return s


def loop_continue(n):
    s = tf.constant(0)
    for i in tf.range(n):
        if i % 2 == 0:
            continue
        s += i
    return s


def while_break_continue(x):
    i = tf.constant(0)
    s = tf.constant(0)
    while i < x:
        i += 1
        if i % 3 == 0:
            continue
        if s > 20:
            break
        s += i
    return s


def _py_while_break_continue(x):
    i = s = 0
    while i < x:
        i += 1
        if i % 3 == 0:
            continue
        if s > 20:
            break
        s += i
    return s


def early_return(x):
    if x > 0:
        return x * 2
    return -x


def return_in_python_loop(x):
    for v in [1, 2, 3, 4]:
        if v == 3:
            return x + v
        x = x * 2
    return x


def nested_loops(n):
    total = tf.constant(0)
    for i in tf.range(n):
        j = tf.constant(0)
        while j < i:
            if j == 2:
                break
            total += 1
            j += 1
    return total


def _nested_py(n):
    total = 0
    for i in range(n):
        j = 0
        while j < i:
            if j == 2:
                break
            total += 1
            j += 1
    return total


CASES = [
    (loop_break, [10, 2], lambda n: sum(range(min(n, 4)))),
    (loop_continue, [10, 1], lambda n: sum(i for i in range(n) if i % 2)),
    (while_break_continue, [5, 30], _py_while_break_continue),
    (early_return, [3, -3], lambda x: x * 2 if x > 0 else -x),
    (return_in_python_loop, [1, 5], lambda x: x * 4 + 3),
    (nested_loops, [0, 2, 6], _nested_py),
]


@pytest.mark.parametrize("fn,inputs,expected", CASES, ids=[c[0].__name__ for c in CASES])
def test_jumps_eager(fn, inputs, expected):
    converted = tf.autograph.to_graph(fn)
    for v in inputs:
        assert int(converted(tf.constant(v))) == expected(v)


@needs_primitives
@pytest.mark.parametrize("fn,inputs,expected", CASES, ids=[c[0].__name__ for c in CASES])
def test_jumps_traced(fn, inputs, expected):
    f = tf.function(fn)
    for v in inputs:
        assert int(f(tf.constant(v)).numpy()) == expected(v)
    assert f.experimental_get_tracing_count() == 1


def test_break_continue_in_python_loops_keep_semantics():
    def f(xs):
        out = []
        for x in xs:
            if x == 0:
                continue
            if x < 0:
                break
            out.append(x)
        else:
            out.append("no break")
        return out
    g = tf.autograph.to_graph(f)
    assert g([1, 0, 2, -1, 3]) == [1, 2]
    assert g([1, 0, 2]) == [1, 2, "no break"]


def test_while_else_and_return_none():
    def f(n):
        i = 0
        while i < n:
            if i == 7:
                return "seven"
            i += 1
        else:
            i = -i
        if n > 100:
            return None
        return i
    g = tf.autograph.to_graph(f)
    assert g(3) == -3 and g(10) == "seven" and g(200) == "seven"


# ---- errors ------------------------------------------------------------------------------------
@needs_primitives
def test_variable_defined_in_one_branch_only():
    @tf.function
    def f(x):
        if x > 0:
            y = x + 1
        return y
    with pytest.raises(ValueError, match="'y' must also be initialized in the else branch"):
        f(tf.constant(1))

    @tf.function
    def g(x):
        if x > 0:
            pass
        else:
            y = x + 1
        return y
    with pytest.raises(ValueError, match="'y' must also be initialized in the if branch"):
        g(tf.constant(1))


@needs_primitives
def test_variable_used_before_assignment_in_loop():
    @tf.function
    def f(n):
        for i in tf.range(n):
            y = y + i   # noqa: F821, F841
        return n
    with pytest.raises(ValueError, match="'y' is used before assignment in the loop"):
        f(tf.constant(3))


@needs_primitives
def test_branches_with_different_dtypes_name_the_variable():
    @tf.function
    def f(x):
        if x > 0:
            y = tf.constant(1.0)
        else:
            y = tf.constant(1)
        return y
    with pytest.raises(TypeError, match="'y'"):
        f(tf.constant(1))


@needs_primitives
def test_loop_changing_dtype_names_the_variable():
    @tf.function
    def f(n):
        s = tf.constant(0)
        for i in tf.range(n):
            s = tf.cast(s, tf.float32) + 1.0
        return s
    with pytest.raises(Exception, match="'s'"):
        f(tf.constant(3))


def test_undefined_python_branch_variable_errors_on_use():
    def f(flag):
        if flag:
            y = 1
        return y
    g = tf.autograph.to_graph(f)
    assert g(True) == 1
    with pytest.raises(UnboundLocalError, match="'y'"):
        g(False) + 1


# ---- conversion mechanics ----------------------------------------------------------------------
SCALE = 3


def test_closures_and_globals_are_preserved():
    offset = tf.constant(10)

    def f(x):
        if x > 0:
            x = x * SCALE + offset
        return x
    g = tf.autograph.to_graph(f)
    assert g.__globals__ is f.__globals__
    assert int(g(tf.constant(2))) == 16
    offset = tf.constant(100)   # the closure cell is shared  # noqa: F841
    assert int(g(tf.constant(2))) == 106


@needs_primitives
def test_nested_function_definitions_are_converted():
    @tf.function
    def f(x):
        def inner(v):
            if v > 0:
                v = v * 10
            return v
        return inner(x) + 1
    assert "ag__.if_stmt" in tf.autograph.to_code(f.python_function)
    assert f(tf.constant(2)).numpy() == 21
    assert f(tf.constant(-2)).numpy() == -1


@needs_primitives
def test_called_functions_are_converted_while_tracing():
    def helper(v):
        if v > 0:
            return v
        return -v

    def accumulate(x, n):
        total = tf.zeros_like(x)
        for _ in tf.range(n):
            total += helper(x)
        return total

    class Scaler:
        def scale(self, x):
            if tf.reduce_sum(x) > 0:
                x = x * 2.0
            return x

    scaler = Scaler()

    @tf.function
    def f(x, n):
        return accumulate(x, n), scaler.scale(x), max(1, 2), [abs(v) for v in (1, -2)]

    total, scaled, biggest, absolutes = f(tf.constant(-1.5), tf.constant(3))
    assert float(total) == 4.5 and float(scaled) == -1.5
    assert biggest == 2 and absolutes == [1, 2]
    total, scaled, _, _ = f(tf.constant(2.0), tf.constant(2))
    assert float(total) == 4.0 and float(scaled) == 4.0
    assert f.experimental_get_tracing_count() == 1
    assert "ag__.converted_call(accumulate, (x, n), {})" in tf.autograph.to_code(f)

    @tf.function(autograph=False)
    def unconverted(x):
        return helper(x)
    with pytest.raises(TypeError):
        unconverted(tf.constant(1))


def test_keras_style_call_is_converted_in_context():
    def call(x):
        if x > 0:
            return x
        return -x

    def layer_like(x):   # framework code calling a user's `call`, as a Keras layer does
        return autograph.convert_in_context(call)(x)

    assert float(tf.function(lambda x: layer_like(x))(tf.constant(-2.0))) == 2.0
    with pytest.raises(TypeError):
        tf.function(lambda x: layer_like(x), autograph=False)(tf.constant(-2.0))


def test_lambda_and_builtins_fall_back_silently():
    f = tf.function(lambda x: x * 2)
    assert f(tf.constant(3)).numpy() == 6
    with pytest.raises(autograph.ConversionError):
        autograph.convert(lambda x: x)
    with pytest.raises(autograph.ConversionError):
        autograph.convert(len)


@needs_primitives
def test_autograph_false_is_not_converted():
    @tf.function(autograph=False)
    def f(x):
        if x > 0:
            x = x * x
        return x
    with pytest.raises(TypeError):
        f(tf.constant(1))


@needs_primitives
def test_methods_are_converted():
    class Model:
        def __init__(self):
            self.scale = tf.constant(2.0)

        @tf.function
        def __call__(self, x):
            if tf.reduce_sum(x) > 0:
                x = x * self.scale
            return x
    m = Model()
    np.testing.assert_allclose(m(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(m(tf.constant([-1.0, -2.0])).numpy(), [-1.0, -2.0])


def test_to_code_shows_operator_calls():
    code = tf.autograph.to_code(fizzbuzz)
    assert "ag__.for_stmt(ag__.iter_call(tf.range, 1, n + 1)" in code
    assert code.count("ag__.if_stmt(") == 3
    code = tf.autograph.to_code(while_break_continue)
    assert "ag__.while_stmt(" in code and "break__" in code and "continue__" in code
    code = tf.autograph.to_code(early_return)
    assert "do_return" in code and "return ag__.retval(retval_)" in code
    compile(code, "<to_code>", "exec")


def test_operators_python_paths():
    assert operators.if_stmt(True, lambda a: (a + 1,), lambda a: (a - 1,), (1,), ("a",)) == (2,)
    assert operators.if_stmt(tf.constant(False), lambda a: (a + 1,), lambda a: (a - 1,),
                             (1,), ("a",)) == (0,)
    assert operators.while_stmt(lambda i: i < 5, lambda i: (i + 1,), (0,), ("i",)) == (5,)
    assert operators.for_stmt([1, 2, 3], None, lambda x, s: (s + x,), (0,), ("s",)) == (6,)
    assert operators.ld({"a": 1}, ("a", "b"))[1].symbol_name == "b"
    assert operators.retval(operators.UndefinedReturnValue()) is None


COUNTER = 0


def test_global_and_nonlocal_declarations():
    def bump(x):
        global COUNTER
        if x > 0:
            COUNTER += x
        return COUNTER
    g = tf.autograph.to_graph(bump)
    assert g(2) == COUNTER == 2

    calls = 0

    def count(n):
        nonlocal calls
        for _ in range(n):
            calls += 1
        return calls
    assert tf.autograph.to_graph(count)(3) == 3 and calls == 3


def test_generators_are_not_converted():
    def gen(n):
        for i in range(n):
            yield i
    with pytest.raises(autograph.ConversionError):
        autograph.convert(gen)
    assert list(tf.function(gen).python_function(2)) == [0, 1]


@needs_primitives
def test_return_inside_tensor_loops():
    @tf.function
    def first_above(n):
        for i in tf.range(n):
            if i > 2:
                return i * 10
        return n

    @tf.function
    def doubling(x, n):
        i = 0
        while i < n:
            i += 1
            if tf.reduce_sum(x) > 100.0:
                return x, i
            x = x * 2.0
        return -x, i

    @tf.function
    def first_over(x):
        for v in [1.0, 2.0, 3.0]:   # unrolled, with a return under a tensor condition
            if x < v:
                return v
        return 0.0

    assert int(first_above(tf.constant(10))) == 30 and int(first_above(tf.constant(2))) == 2
    x, i = doubling(tf.constant([1.0, 2.0]), tf.constant(10))
    np.testing.assert_array_equal(x.numpy(), [64.0, 128.0])
    assert int(i) == 7
    x, i = doubling(tf.constant([1.0, 2.0]), tf.constant(3))
    np.testing.assert_array_equal(x.numpy(), [-8.0, -16.0])
    assert int(i) == 3
    assert float(first_over(tf.constant(1.5))) == 2.0 and float(first_over(tf.constant(5.0))) == 0
    assert first_above.experimental_get_tracing_count() == 1


@needs_primitives
def test_return_on_only_some_paths_is_a_clear_error():
    @tf.function
    def f(x):
        if x > 0:
            return x
    with pytest.raises(ValueError, match="must be matched by a return"):
        f(tf.constant(1.0))


@needs_primitives
def test_variable_first_assigned_in_tensor_loop_and_used_after():
    @tf.function
    def f(n):
        for i in tf.range(n):
            last = i * 2
        return last
    with pytest.raises(ValueError, match="'last' must be defined before the loop"):
        f(tf.constant(3))


@needs_primitives
def test_break_under_a_tensor_condition_in_a_python_loop():
    def first_over(x):
        total = tf.constant(0.0)
        for v in [1.0, 2.0, 3.0, 4.0]:
            if total > x:
                break
            total += v
        return total

    traced = tf.function(first_over)
    for limit, expected in ((2.5, 3.0), (100.0, 10.0), (0.5, 1.0)):
        assert float(traced(tf.constant(limit))) == expected
        assert float(first_over(tf.constant(limit))) == expected
    assert traced.experimental_get_tracing_count() == 1


@needs_primitives
def test_loop_target_keeps_its_last_value_after_a_tensor_loop():
    @tf.function
    def last_index(n):
        total = 0
        for i in tf.range(n):
            total += i
        return total, i

    @tf.function
    def last_row(m):
        for row in m:
            pass
        return row

    total, i = last_index(tf.constant(5))
    assert int(total) == 10 and int(i) == 4
    np.testing.assert_array_equal(last_row(tf.constant([[1.0, 2.0], [3.0, 4.0]])).numpy(),
                                  [3.0, 4.0])


@needs_primitives
def test_break_under_a_tensor_condition_stops_the_loop():
    # The break flag is carried out of the `if` that sets it, so no further iteration runs.
    for decorated in (False, True):
        runs = tf.Variable(0)

        def count_until(n):
            total = tf.constant(0)
            for i in tf.range(n):
                runs.assign_add(1)
                if i >= 2:
                    break
                total += i
            return total
        fn = tf.function(count_until) if decorated else tf.autograph.to_graph(count_until)
        assert int(fn(tf.constant(10))) == 1
        assert int(runs.numpy()) == 3


@needs_primitives
def test_name_bound_by_with_is_defined_in_a_tensor_loop():
    w = tf.Variable(2.0)

    @tf.function
    def descend(steps):
        for _ in tf.range(steps):
            with tf.GradientTape() as tape:
                loss = w * w
            w.assign_sub(0.25 * tape.gradient(loss, w))
        return w.read_value()
    assert float(descend(tf.constant(2))) == pytest.approx(0.5)


@needs_primitives
def test_nested_tensor_loops_keep_the_inner_target_to_themselves():
    @tf.function
    def triangle(n):
        total = 0
        for i in tf.range(n):
            for j in tf.range(i):
                total += j
        return total
    assert int(triangle(tf.constant(4))) == 0 + (0) + (0 + 1) + (0 + 1 + 2)
