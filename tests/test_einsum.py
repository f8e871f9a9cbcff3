"""tf.einsum against np.einsum on random equations (ellipses, broadcasting, repeated labels,
implicit outputs, several operands), its gradients against finite differences, and how it is
lowered: contractions to matmul (BLAS), the rest to fusable elementwise ops."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hybridtf as tf
from gradcheck import check_gradients
from run_modes import in_all_modes

IAE = tf.errors.InvalidArgumentError
LETTERS = "abcdE"


@st.composite
def einsum_case(draw, max_operands=3):
    """(equation, operand shapes): letters with one size each, repeated letters within an
    operand, '...' broadcasting, and an implicit or explicit output."""
    sizes = {label: draw(st.integers(0 if label == "E" else 1, 3)) for label in LETTERS}
    count = draw(st.integers(1, max_operands))
    terms = [draw(st.lists(st.sampled_from(LETTERS), max_size=3)) for _ in range(count)]
    use_ellipsis = draw(st.booleans())
    broadcast = [()] * count
    if use_ellipsis:
        broadcast, _ = draw(hnp.mutually_broadcastable_shapes(
            num_shapes=count, min_dims=0, max_dims=2, min_side=1, max_side=3))
    subscripts, shapes = [], []
    for term, extra in zip(terms, broadcast):
        at = draw(st.integers(0, len(term))) if use_ellipsis else None
        letters = "".join(term)
        named = [sizes[label] for label in term]
        if at is None:
            subscripts.append(letters)
            shapes.append(tuple(named))
        else:
            subscripts.append(letters[:at] + "..." + letters[at:])
            shapes.append(tuple(named[:at]) + tuple(extra) + tuple(named[at:]))
    equation = ",".join(subscripts)
    if draw(st.booleans()):   # explicit output: distinct letters in any order
        used = sorted({label for t in terms for label in t})
        out = draw(st.permutations(used))[:draw(st.integers(0, len(used)))]
        out = "".join(out)
        if use_ellipsis:
            at = draw(st.integers(0, len(out)))
            out = out[:at] + "..." + out[at:]
        equation += "->" + out
    return equation, shapes


def _operands(draw, shapes, dtype=np.float64):
    if np.dtype(dtype).kind == "f":
        elements = st.floats(-2, 2)
    else:
        elements = st.integers(-3, 3)
    return [draw(hnp.arrays(dtype, shape, elements=elements)) for shape in shapes]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@given(case=einsum_case(), data=st.data())
def test_einsum_matches_numpy(dtype, case, data):
    equation, shapes = case
    operands = _operands(data.draw, shapes, dtype)
    out = tf.einsum(equation, *operands)
    expected = np.einsum(equation, *operands)
    assert out.dtype == tf.as_dtype(dtype)
    assert tuple(out.shape) == expected.shape
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4 if dtype == np.float32
                                   else 1e-12, atol=1e-4 if dtype == np.float32 else 1e-12)
    else:
        np.testing.assert_array_equal(out.numpy(), expected.astype(dtype))


@given(case=einsum_case(), data=st.data())
def test_einsum_gradients(case, data):
    equation, shapes = case
    operands = _operands(data.draw, shapes)
    check_gradients(lambda *xs: tf.einsum(equation, *xs),
                    lambda *xs: np.einsum(equation, *xs), operands)


@given(case=einsum_case(max_operands=2), data=st.data())
def test_einsum_with_unknown_sizes_inside_a_function(case, data):
    # Every dimension unknown while tracing: groups of labels cannot be merged by reshapes, so
    # the contraction keeps them apart as batch dimensions.
    equation, shapes = case
    operands = _operands(data.draw, shapes)
    signature = [[tf.TensorSpec([None] * len(s), tf.float64) for s in shapes]]
    fn = tf.function(lambda xs: tf.einsum(equation, *xs), input_signature=signature)
    out = fn([tf.constant(x) for x in operands])
    np.testing.assert_allclose(out.numpy(), np.einsum(equation, *operands), rtol=1e-12,
                               atol=1e-12)


def test_einsum_common_forms():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
    q, k = rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 6, 5))
    s = rng.normal(size=(3, 3))
    for equation, operands in [("ij,jk->ik", (a, b)), ("ij,jk", (a, b)), ("ii", (s,)),
                               ("ii->i", (s,)), ("ji", (a,)), ("bhqd,bhkd->bhqk", (q, k)),
                               ("i,i->", (b[0], b[0])), ("i,j->ij", (b[0], a[0])),
                               ("ij,jk,kl->il", (a, b, rng.normal(size=(4, 2)))),
                               (" i j , j k -> i k ", (a, b))]:
        np.testing.assert_allclose(tf.einsum(equation, *operands).numpy(),
                                   np.einsum(equation.replace(" ", ""), *operands), rtol=1e-12)
    np.testing.assert_allclose(tf.linalg.einsum("ij,jk", a, b).numpy(), a @ b, rtol=1e-12)
    # NumPy and Python values take the dtype of the first tensor operand
    out = tf.einsum("ij,jk->ik", tf.constant(a, tf.float32), b)
    assert out.dtype == tf.float32


def _op_names(fn, *arrays):
    graph = tf.function(fn).get_concrete_function(*[tf.constant(a) for a in arrays]).graph
    return [node.op.name for node in graph.nodes]


def test_contractions_are_matrix_products_and_the_rest_elementwise():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    batched = np.ones((5, 2, 3)), np.ones((5, 3, 4))
    assert "matmul" in _op_names(lambda x, y: tf.einsum("ij,jk->ik", x, y), a, b)
    assert "matmul" in _op_names(lambda x, y: tf.einsum("bij,bjk->bik", x, y), *batched)
    assert "matmul" in _op_names(lambda x, y: tf.einsum("bij,bkj->bki", x, y), *batched[:1],
                                 np.ones((5, 4, 3)))
    outer = _op_names(lambda x, y: tf.einsum("i,j->ij", x, y), np.ones(3), np.ones(4))
    assert "matmul" not in outer and "multiply" in outer
    dots = _op_names(lambda x, y: tf.einsum("bi,bi->b", x, y), np.ones((5, 3)), np.ones((5, 3)))
    assert "matmul" not in dots and "multiply" in dots and "reduce_sum" in dots


def test_einsum_with_unknown_batch_size_inside_a_function():
    @tf.function(input_signature=[tf.TensorSpec([None, 3, 4], tf.float64),
                                  tf.TensorSpec([4, 2], tf.float64)])
    def f(x, w):
        return tf.einsum("bij,jk->bik", x, w)

    x, w = np.arange(24.0).reshape(2, 3, 4), np.arange(8.0).reshape(4, 2)
    np.testing.assert_allclose(f(tf.constant(x), tf.constant(w)).numpy(), x @ w)


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 2)]),
    ("ii->i", [(3, 3)]), ("bi,bi->b", [(4, 3), (4, 3)]), ("i,j->ij", [(2,), (3,)])])
def test_einsum_in_functions_matches_eager(equation, shapes):
    arrays = [np.arange(np.prod(s), dtype=np.float64).reshape(s) for s in shapes]
    if len(arrays) == 1:
        in_all_modes(lambda x: tf.einsum(equation, x), *arrays)
    else:
        in_all_modes(lambda x, y: tf.einsum(equation, x, y), *arrays)


def test_einsum_errors():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    with pytest.raises(ValueError, match="einsum: equation 'ij,jk' names 2 operand"):
        tf.einsum("ij,jk", a)
    with pytest.raises(ValueError, match="einsum: subscripts have incorrect format"):
        tf.einsum("ij,1k->ik", a, b)
    with pytest.raises(ValueError, match="more than one '->'"):
        tf.einsum("ij->ij->", a)
    with pytest.raises(ValueError, match="label 'k' more than once"):
        tf.einsum("ij,jk->ikk", a, b)
    with pytest.raises(ValueError, match="label 'z', which no input has"):
        tf.einsum("ij,jk->iz", a, b)
    with pytest.raises(IAE, match=r"einsum: operand 0 has rank 2 \(shape \[2,3\]\) but its "
                                  r"subscripts 'ijk'"):
        tf.einsum("ijk", a)
    with pytest.raises(IAE, match="einsum: label 'j' has size 3 in one place but 4"):
        tf.einsum("ij,jk->ik", a, b.T)
    with pytest.raises(IAE, match="einsum: a broadcasting dimension has size 2 in one place "
                                  "but 4"):
        tf.einsum("...i,...i->...", np.ones((2, 3)), np.ones((4, 3)))
    with pytest.raises(IAE, match="1 broadcasting dimension.*no ellipsis"):
        tf.einsum("...ij,...jk->ik", np.ones((5, 2, 3)), b)
    with pytest.raises(IAE, match="einsum: all operands must have one dtype"):
        tf.einsum("ij,jk->ik", tf.ones([2, 3]), tf.ones([3, 4], tf.float64))
    with pytest.raises(TypeError, match="einsum: operand 0 has dtype bool"):
        tf.einsum("ij->ji", np.ones((2, 3), bool))
    with pytest.raises(TypeError, match="einsum: equation must be a string"):
        tf.einsum(tf.constant(1.0), a)
    with pytest.raises(ValueError, match="einsum: no operands"):
        tf.einsum("ij")
