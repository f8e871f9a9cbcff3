"""tf.keras.optimizers: update math against TF 2.21's numbers (eagerly and inside tf.function),
slots, iterations, learning rates and schedules, clipping, errors, and convergence."""
import warnings

import numpy as np
import pytest

import hybridtf as tf

K = tf.keras.optimizers
S = K.schedules

V0 = np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -1.5]], np.float32)
V1 = np.float32(0.75)
G0 = [np.array([[0.1, -0.2, 0.3], [0.0, 1.5, -0.7]], np.float32),
      np.array([[-0.4, 0.05, 0.3], [2.0, -1.0, 0.2]], np.float32),
      np.array([[0.25, 0.25, -0.6], [0.1, 0.0, 0.9]], np.float32),
      np.array([[0.3, -0.8, 0.1], [-0.5, 0.45, 0.05]], np.float32)]
G1 = [np.float32(x) for x in (0.5, -1.25, 0.3, 2.0)]

MAKERS = {
    "sgd": lambda: K.SGD(learning_rate=0.1),
    "sgd_momentum": lambda: K.SGD(learning_rate=0.1, momentum=0.9),
    "sgd_nesterov": lambda: K.SGD(learning_rate=0.1, momentum=0.9, nesterov=True),
    "adam": lambda: K.Adam(learning_rate=0.01),
    "adam_default": lambda: K.Adam(),
    "adam_amsgrad": lambda: K.Adam(learning_rate=0.01, amsgrad=True),
    "rmsprop": lambda: K.RMSprop(learning_rate=0.01),
    "rmsprop_centered_momentum": lambda: K.RMSprop(learning_rate=0.01, momentum=0.5,
                                                   centered=True),
    "adagrad": lambda: K.Adagrad(learning_rate=0.1),
    "adam_clipnorm": lambda: K.Adam(learning_rate=0.01, clipnorm=0.5),
    "sgd_clipvalue": lambda: K.SGD(learning_rate=0.1, clipvalue=0.2),
    "sgd_global_clipnorm": lambda: K.SGD(learning_rate=0.1, global_clipnorm=1.0),
    "sgd_weight_decay": lambda: K.SGD(learning_rate=0.1, weight_decay=0.1),
    "adam_schedule": lambda: K.Adam(learning_rate=S.ExponentialDecay(0.01, decay_steps=2,
                                                                     decay_rate=0.5)),
}

# The variables after the 4 steps of G0/G1, computed by TF 2.21's Keras optimizers.
TF_RESULTS = {
    "sgd": ([[0.975, -1.93, 2.99], [0.34000003, 0.15499999, -1.545]], 0.59499997),
    "sgd_momentum": ([[0.99651, -1.91227, 2.91953], [-0.010999978, -0.03985001, -1.48947]],
                     0.65979993),
    "sgd_nesterov": ([[0.971859, -1.851043, 2.917577],
                      [-0.11989997, -0.105865024, -1.535523]], 0.51382),
    "adam": ([[0.993175, -1.9833478, 2.9805868], [0.48308456, 0.23514082, -1.4910035]],
             0.7424874),
    "adam_default": ([[0.9993175, -1.9983348, 2.9980588], [0.49830845, 0.24851409, -1.4991003]],
                     0.74924874),
    "adam_amsgrad": ([[0.993175, -1.9833478, 2.9805868], [0.48308456, 0.23514137, -1.4910035]],
                     0.7424874),
    "rmsprop": ([[0.9642535, -1.9721382, 2.9673028], [0.4751656, 0.227822, -1.5045182]],
                0.7137667),
    "rmsprop_centered_momentum": ([[0.94927573, -1.9596672, 2.9280217],
                                   [0.44767043, 0.21055579, -1.4939903]], 0.7016554),
    "adagrad": ([[0.95731956, -1.9279804, 2.937077], [0.42024004, 0.1829115, -1.5132284]],
                0.6530397),
    "adam_clipnorm": ([[0.98695517, -1.9838886, 2.9846406], [0.48427537, 0.23132893, -1.4921927]],
                      0.7337752),
    "sgd_clipvalue": ([[0.97, -1.9850001, 2.97], [0.49, 0.23, -1.525]], 0.71000004),
    "sgd_global_clipnorm": ([[0.97529644, -1.9766728, 3.0179975],
                             [0.43708214, 0.1836658, -1.5464664]], 0.6563329),
    "sgd_weight_decay": ([[0.9353471, -1.8514365, 2.8726761], [0.32437804, 0.14761415, -1.486675]],
                         0.5647446),
    "adam_schedule": ([[0.99315715, -1.9863727, 2.9832473], [0.4905005, 0.23760751, -1.4892149]],
                      0.742728),
}


def run_steps(optimizer, apply):
    v0, v1 = tf.Variable(V0), tf.Variable(V1)
    for g0, g1 in zip(G0, G1):
        apply(optimizer, tf.constant(g0), tf.constant(g1), v0, v1)
    return v0, v1


def eager_apply(optimizer, g0, g1, v0, v1):
    optimizer.apply_gradients(zip([g0, g1], [v0, v1]))


@pytest.mark.parametrize("case", sorted(MAKERS))
def test_updates_match_tf(case):
    optimizer = MAKERS[case]()
    v0, v1 = run_steps(optimizer, eager_apply)
    expected0, expected1 = TF_RESULTS[case]
    np.testing.assert_allclose(v0.numpy(), np.array(expected0, np.float32), rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_allclose(v1.numpy(), expected1, rtol=1e-6)
    assert optimizer.iterations.numpy() == 4
    assert v0.dtype == tf.float32


@pytest.mark.parametrize("case", ["adam", "adam_amsgrad", "sgd_nesterov",
                                  "rmsprop_centered_momentum", "adagrad", "adam_schedule",
                                  "sgd_global_clipnorm"])
def test_updates_inside_tf_function_match_tf_and_run_every_call(case):
    optimizer = MAKERS[case]()
    v0, v1 = tf.Variable(V0), tf.Variable(V1)

    @tf.function
    def step(g0, g1):
        optimizer.apply_gradients(zip([g0, g1], [v0, v1]))

    history = []
    for g0, g1 in zip(G0, G1):
        step(tf.constant(g0), tf.constant(g1))
        history.append(v1.numpy())
    expected0, expected1 = TF_RESULTS[case]
    np.testing.assert_allclose(v0.numpy(), np.array(expected0, np.float32), rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_allclose(v1.numpy(), expected1, rtol=1e-6)
    assert len(set(history)) == 4          # the variable changed on every call
    assert optimizer.iterations.numpy() == 4
    # The traced step is plain updates of the variables, the slots and the step counter.
    graph = step.get_concrete_function(tf.constant(G0[0]), tf.constant(G1[0])).graph
    updated = {id(v) for v, _ in graph.updated_variables()}
    slots = [v for v in optimizer.variables if v is not optimizer.iterations and
             v.name.split("/")[-1] != "learning_rate:0"]
    assert updated == {id(v) for v in [v0, v1, optimizer.iterations] + slots}


def test_float64_variables_are_updated_in_float64():
    for make, expected in [
        (lambda: K.Adam(0.01), [[0.9955953378365034, -1.9853056467959869, 2.9800003137647577],
                                [0.49255869325569107, 0.2385548949586522, -1.4856028801630372]]),
        (lambda: K.RMSprop(0.01, centered=True),
         [[0.998351649447291, -1.9749081545154732, 2.9411763286609793],
          [0.46666667204135326, 0.23488541700948706, -1.4759664055058201]])]:
        optimizer, variable = make(), tf.Variable(V0.astype(np.float64))
        for g in G0[:2]:
            optimizer.apply_gradients([(tf.constant(g.astype(np.float64)), variable)])
        assert variable.dtype == tf.float64
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-6)
        assert optimizer.get_slot(variable, "velocity").dtype == tf.float64


# ---- slots, iterations, variables -------------------------------------------------------------
def test_slots_are_created_lazily_per_variable():
    optimizer = K.Adam(name="opt")
    a, b = tf.Variable(np.ones((2, 2), np.float32), name="a"), tf.Variable(1.0, name="b")
    assert [v.name for v in optimizer.variables] == ["opt/iteration:0", "opt/learning_rate:0"]
    assert optimizer.iterations.dtype == tf.int64 and optimizer.iterations.numpy() == 0
    optimizer.apply_gradients([(tf.ones((2, 2)), a)])
    assert [v.name for v in optimizer.variables] == [
        "opt/iteration:0", "opt/learning_rate:0", "opt/a_momentum:0", "opt/a_velocity:0"]
    optimizer.apply_gradients([(tf.ones((2, 2)), a), (tf.constant(1.0), b)])
    assert [v.name for v in optimizer.variables][4:] == ["opt/b_momentum:0", "opt/b_velocity:0"]
    assert all(not v.trainable for v in optimizer.variables)
    assert optimizer.get_slot(b, "momentum").shape == ()
    assert optimizer.get_slot(a, "velocity").shape == (2, 2)
    assert optimizer.get_slot_names() == ["momentum", "velocity"]
    # b's slots started from zero at its first step: m = (1 - beta_1) * g.
    np.testing.assert_allclose(optimizer.get_slot(b, "momentum").numpy(), 0.1, rtol=1e-6)
    with pytest.raises(KeyError, match="no slot 'nope'"):
        optimizer.get_slot(a, "nope")


def test_build_creates_slots_up_front_and_weights_round_trip():
    a = tf.Variable(np.ones(3, np.float32))
    optimizer = K.Adagrad(initial_accumulator_value=0.25)
    optimizer.build([a])
    np.testing.assert_allclose(optimizer.get_slot(a, "accumulator").numpy(), [0.25] * 3)
    optimizer.apply_gradients([(tf.ones(3), a)])
    state = optimizer.get_weights()
    fresh = K.Adagrad(initial_accumulator_value=0.25)
    fresh.build([a])
    fresh.set_weights(state)
    assert fresh.iterations.numpy() == 1
    np.testing.assert_allclose(fresh.get_slot(a, "accumulator").numpy(), [1.25] * 3)
    with pytest.raises(ValueError, match=r"expected 2 arrays .*got 3"):
        K.Adagrad().set_weights(state)


def test_default_names_are_unique_and_snake_case():
    first, second = K.RMSprop(), K.RMSprop()
    assert first.name.startswith("rm_sprop") and first.name != second.name


# ---- learning rate ----------------------------------------------------------------------------
def test_learning_rate_is_settable_and_matches_tf():
    optimizer = K.SGD(0.1, momentum=0.5)
    variable = tf.Variable([1.0, 2.0])
    optimizer.apply_gradients([(tf.constant([0.5, 0.5]), variable)])
    optimizer.learning_rate = 0.5
    optimizer.apply_gradients([(tf.constant([0.5, 0.5]), variable)])
    np.testing.assert_allclose(variable.numpy(), [0.6749999523162842, 1.6750000715255737])
    np.testing.assert_allclose(optimizer.learning_rate.numpy(), 0.5)
    optimizer.lr = tf.constant(0.25)          # TF 2's alias and a tensor value
    np.testing.assert_allclose(optimizer.lr.numpy(), 0.25)


def test_learning_rate_change_reaches_a_traced_step_without_retracing():
    optimizer = K.SGD(learning_rate=0.1)
    variable = tf.Variable(1.0)

    @tf.function
    def step():
        optimizer.apply_gradients([(tf.constant(1.0), variable)])

    step()
    optimizer.learning_rate = 0.5
    step()
    np.testing.assert_allclose(variable.numpy(), 1.0 - 0.1 - 0.5, rtol=1e-6)
    assert step.experimental_get_tracing_count() <= 2    # first trace + retrace after slots


def test_learning_rate_kinds():
    user_rate = tf.Variable(0.2)
    optimizer = K.SGD(learning_rate=user_rate)
    assert optimizer.learning_rate is user_rate
    assert len(optimizer.variables) == 1              # the user's variable is not owned
    variable = tf.Variable(1.0)
    optimizer.apply_gradients([(tf.constant(1.0), variable)])
    user_rate.assign(0.1)
    optimizer.apply_gradients([(tf.constant(1.0), variable)])
    np.testing.assert_allclose(variable.numpy(), 0.7, rtol=1e-6)
    callable_rate = K.SGD(learning_rate=lambda: 0.3)
    np.testing.assert_allclose(float(callable_rate.learning_rate), 0.3)
    np.testing.assert_allclose(K.SGD(learning_rate=1).learning_rate.numpy(), 1.0)
    np.testing.assert_allclose(K.Adam(learning_rate=tf.constant(0.05)).learning_rate.numpy(),
                               0.05)
    scheduled = K.SGD(learning_rate=S.ExponentialDecay(0.1, 1, 0.5))
    with pytest.raises(TypeError, match="not settable"):
        scheduled.learning_rate = 0.1
    with pytest.raises(ValueError, match="learning_rate=.abc."):
        K.SGD(learning_rate="abc")


def test_tf2_lr_argument_is_accepted_with_a_warning():
    with pytest.warns(UserWarning, match="`lr` argument is deprecated"):
        optimizer = K.Adam(lr=0.005)
    np.testing.assert_allclose(optimizer.learning_rate.numpy(), 0.005)
    with pytest.warns(UserWarning, match="`decay` is no longer supported"):
        K.SGD(decay=0.01)


SCHEDULES = {
    "exponential": (S.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5),
                    [0.1, 0.0933033, 0.07071068, 0.05, 0.03535534, 0.01767767, 0.00009765625]),
    "exponential_staircase": (S.ExponentialDecay(0.1, 10, 0.5, staircase=True),
                              [0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.00009765625]),
    "piecewise": (S.PiecewiseConstantDecay([5, 15], [1.0, 0.5, 0.1]),
                  [1., 1., 1., 0.5, 0.5, 0.1, 0.1]),
    "inverse_time": (S.InverseTimeDecay(0.1, decay_steps=10, decay_rate=0.5),
                     [0.1, 0.095238104, 0.08, 0.06666667, 0.057142857, 0.044444446, 0.016666668]),
    "inverse_time_staircase": (S.InverseTimeDecay(0.1, 10, 0.5, staircase=True),
                               [0.1, 0.1, 0.1, 0.06666667, 0.06666667, 0.05, 0.016666668]),
    "polynomial": (S.PolynomialDecay(0.1, decay_steps=20, end_learning_rate=0.01, power=2.0),
                   [0.1, 0.091225, 0.060625, 0.0325, 0.015625, 0.01, 0.01]),
    "polynomial_cycle": (S.PolynomialDecay(0.1, 20, end_learning_rate=0.01, power=0.5,
                                           cycle=True),
                         [0.1, 0.09772115, 0.08794229, 0.07363961, 0.055, 0.06511352, 0.01]),
    "cosine": (S.CosineDecay(0.1, decay_steps=20, alpha=0.1),
               [0.1, 0.09944598, 0.08681981, 0.054999996, 0.023180196, 0.010000001,
                0.010000001]),
    "cosine_warmup": (S.CosineDecay(0.0, decay_steps=20, warmup_target=0.1, warmup_steps=10),
                      [0., 0.010000001, 0.05, 0.1, 0.08535534, 0.014644662, 0.]),
    "cosine_restarts": (S.CosineDecayRestarts(0.1, first_decay_steps=5, t_mul=2.0, m_mul=0.5,
                                              alpha=0.1),
                        [0.1, 0.091405764, 0.055000003, 0.0325, 0.0325, 0.02125, 0.014375041]),
    "cosine_restarts_t1": (S.CosineDecayRestarts(0.1, first_decay_steps=5, t_mul=1.0,
                                                 m_mul=0.5),
                           [0.1, 0.090450846, 0.05, 0.025, 0.0125, 0.003125, 9.536743e-08]),
}
STEPS = [0, 1, 5, 10, 15, 25, 100]


@pytest.mark.parametrize("case", sorted(SCHEDULES))
def test_schedules_match_tf(case):
    schedule, expected = SCHEDULES[case]
    values = [schedule(tf.constant(step, tf.int64)).numpy() for step in STEPS]
    np.testing.assert_allclose(values, expected, rtol=2e-6, atol=1e-9)
    assert type(schedule).from_config(schedule.get_config()).get_config() == \
        schedule.get_config()


def test_schedule_is_evaluated_at_iterations_inside_tf_function():
    optimizer = K.SGD(learning_rate=S.PiecewiseConstantDecay([1], [1.0, 0.1]))
    variable = tf.Variable(0.0)
    step = tf.function(lambda: optimizer.apply_gradients([(tf.constant(1.0), variable)]))
    values = []
    for _ in range(4):
        step()
        values.append(variable.numpy())
    # steps 0 and 1 use 1.0, then 0.1
    np.testing.assert_allclose(values, [-1.0, -2.0, -2.1, -2.2], rtol=1e-6)


def test_schedule_argument_errors():
    with pytest.raises(ValueError, match="decay_steps. must be > 0"):
        S.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="boundaries should be 1 less"):
        S.PiecewiseConstantDecay([1, 2], [0.1, 0.2])


# ---- minimize, errors -------------------------------------------------------------------------
def test_minimize_with_a_callable_and_with_a_tape():
    variable = tf.Variable(3.0)
    optimizer = K.SGD(learning_rate=0.25)
    optimizer.minimize(lambda: variable * variable, [variable])
    np.testing.assert_allclose(variable.numpy(), 3.0 - 0.25 * 6.0)
    with tf.GradientTape() as tape:
        loss = variable * variable
    optimizer.minimize(loss, lambda: [variable], tape=tape)
    np.testing.assert_allclose(variable.numpy(), 1.5 - 0.25 * 3.0)
    with pytest.raises(ValueError, match="`tape` is required when a `Tensor` loss"):
        optimizer.minimize(variable * 2.0, [variable])


def test_none_gradients_are_skipped_with_a_warning():
    used, unused = tf.Variable(1.0, name="used"), tf.Variable(1.0, name="unused")
    optimizer = K.SGD(0.5)
    with pytest.warns(UserWarning, match=r"Gradients do not exist for variables \['unused'\]"):
        optimizer.apply_gradients([(tf.constant(1.0), used), (None, unused)])
    assert used.numpy() == 0.5 and unused.numpy() == 1.0
    with pytest.raises(ValueError, match=r"No gradients provided for any variable: \['used'"):
        optimizer.apply_gradients([(None, used), (None, unused)])


def test_bad_pairs_raise_clear_errors():
    variable = tf.Variable([1.0, 2.0], name="w")
    optimizer = K.Adam(name="adam_errors")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"gradient for variable w:0 has shape \(3,\) but the variable has "
                             r"shape \(2,\)"):
        optimizer.apply_gradients([(tf.constant([1.0, 2.0, 3.0]), variable)])
    with pytest.raises(TypeError, match="is a Tensor, not a tf.Variable"):
        optimizer.apply_gradients([(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0]))])
    with pytest.raises(TypeError, match="not a \\(gradient, variable\\) pair"):
        optimizer.apply_gradients([tf.constant(1.0)])
    with pytest.raises(ValueError, match="grads_and_vars is empty"):
        optimizer.apply_gradients([])
    with pytest.raises(TypeError, match="floating-point variables only"):
        optimizer.apply_gradients([(tf.constant(1), tf.Variable(1))])
    assert optimizer.iterations.numpy() == 0     # nothing was applied


def test_constructor_argument_errors():
    with pytest.raises(ValueError, match="Only one of `clipnorm`, `clipvalue` and "
                                         "`global_clipnorm`"):
        K.SGD(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(ValueError, match="`momentum` must be a float between"):
        K.SGD(momentum=1.5)
    with pytest.raises(ValueError, match="Argument\\(s\\) not recognized"):
        K.Adam(beta1=0.9)
    with pytest.raises(ValueError, match="`clipnorm` must be > 0"):
        K.Adam(clipnorm=-1.0)


def test_gradient_dtype_is_cast_to_the_variable_dtype():
    variable = tf.Variable(np.float32(1.0))
    K.SGD(0.5).apply_gradients([(tf.constant(1.0, tf.float64), variable)])
    assert variable.dtype == tf.float32 and variable.numpy() == 0.5


def test_constraints_are_applied_after_the_update():
    variable = tf.Variable([0.5, -0.5], constraint=lambda v: tf.clip_by_value(v, 0.0, 1.0))
    K.SGD(1.0).apply_gradients([(tf.constant([-1.0, 1.0]), variable)])
    np.testing.assert_allclose(variable.numpy(), [1.0, 0.0])


def test_weight_decay_exclusion():
    kept, excluded = tf.Variable(1.0, name="kernel"), tf.Variable(1.0, name="bias")
    optimizer = K.SGD(0.1, weight_decay=0.5)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    optimizer.apply_gradients([(tf.constant(0.0), kept), (tf.constant(0.0), excluded)])
    np.testing.assert_allclose([kept.numpy(), excluded.numpy()], [0.95, 1.0], rtol=1e-6)


# ---- configuration and lookup -----------------------------------------------------------------
def test_get_config_matches_tf_keys_and_round_trips():
    config = K.Adam(name="a").get_config()
    assert config == {"name": "a", "learning_rate": pytest.approx(0.001), "weight_decay": None,
                      "clipnorm": None, "global_clipnorm": None, "clipvalue": None,
                      "use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None,
                      "loss_scale_factor": None, "gradient_accumulation_steps": None,
                      "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07, "amsgrad": False}
    for make in [lambda: K.SGD(0.2, momentum=0.5, nesterov=True, clipvalue=1.0),
                 lambda: K.RMSprop(0.01, rho=0.8, centered=True),
                 lambda: K.Adagrad(0.3, initial_accumulator_value=0.5),
                 lambda: K.Adam(learning_rate=S.CosineDecay(0.1, 10))]:
        original = make()
        copy = type(original).from_config(original.get_config())
        assert copy.get_config() == original.get_config()
    restored = K.deserialize(K.serialize(K.Adam(learning_rate=S.InverseTimeDecay(0.1, 5, 0.5))))
    assert isinstance(restored._learning_rate, S.InverseTimeDecay)


def test_get_resolves_names_configs_and_instances():
    assert type(K.get("adam")) is K.Adam and type(K.get("SGD")) is K.SGD
    assert type(K.get("RMSprop")) is K.RMSprop and type(K.get("adagrad")) is K.Adagrad
    optimizer = K.SGD()
    assert K.get(optimizer) is optimizer
    configured = K.get({"class_name": "SGD", "config": {"learning_rate": 0.3, "momentum": 0.2}})
    assert configured.momentum == 0.2
    np.testing.assert_allclose(configured.learning_rate.numpy(), 0.3)
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier"):
        K.get("nope")
    assert issubclass(K.Adam, K.Optimizer)


# ---- convergence ------------------------------------------------------------------------------
@pytest.mark.parametrize("make, steps", [
    (lambda: K.SGD(0.2), 150), (lambda: K.SGD(0.05, momentum=0.9), 150),
    (lambda: K.Adam(0.1), 300), (lambda: K.RMSprop(0.02), 300),
    (lambda: K.Adagrad(0.8), 300)])
def test_linear_regression_converges(make, steps):
    """Fitting y = 3x + 2 with a Variable pair, in a tf.function step."""
    x = tf.constant(np.linspace(-1.0, 1.0, 16, dtype=np.float32))
    y = 3.0 * x + 2.0
    w, b = tf.Variable(0.0), tf.Variable(0.0)
    optimizer = make()

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = tf.keras.losses.MeanSquaredError()(y, w * x + b)
        grads = tape.gradient(loss, [w, b])
        optimizer.apply_gradients(zip(grads, [w, b]))
        return loss

    for _ in range(steps):
        loss = train_step()
    assert float(loss) < 1e-3
    np.testing.assert_allclose([w.numpy(), b.numpy()], [3.0, 2.0], atol=0.05)
    assert optimizer.iterations.numpy() == steps


def test_notebook_adam_step_with_lr_keyword():
    """The TF2 tutorial: Adam(lr=...), grads_and_vars= keyword, inside tf.function."""
    with pytest.warns(UserWarning):
        optimizer = K.Adam(lr=0.001)
    w = tf.Variable(np.zeros((4, 3), np.float32))
    x = tf.constant(np.eye(4, dtype=np.float32)[:, :4])
    labels = np.array([0, 1, 2, 0], np.int32)

    @tf.function
    def train_one_step(X, y):
        with tf.GradientTape() as tape:
            y_pred = tf.nn.softmax(tf.matmul(X, w))
            loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
                y_true=y, y_pred=y_pred))
        grads = tape.gradient(loss, [w])
        optimizer.apply_gradients(grads_and_vars=zip(grads, [w]))
        return loss

    first = float(train_one_step(x, labels))
    for _ in range(5):
        last = float(train_one_step(x, labels))
    np.testing.assert_allclose(first, np.log(3.0), rtol=1e-6)
    assert last < first
    # The first Adam step moves every weight with a nonzero gradient by about lr.
    assert np.isclose(np.abs(w.numpy()).max(), 6 * 0.001, rtol=0.05)


def test_no_warnings_on_a_plain_step():
    variable = tf.Variable(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        K.Adam().apply_gradients([(tf.constant(1.0), variable)])
