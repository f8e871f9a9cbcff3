"""``tf.keras.optimizers.schedules``: learning rates that change with the training step.

An optimizer given a schedule calls it with its ``iterations`` variable at every step, so the
schedule is written with tensor ops: it works eagerly and inside a ``tf.function``, where the
step is read at run time.
"""
import math

from hybridtf.api import math_ops
from hybridtf.api.control_flow_ops import cond
from hybridtf.framework.constant_op import convert_to_tensor


class LearningRateSchedule:
    """Base class of learning-rate schedules: ``schedule(step)`` returns the learning rate.

    Subclasses define ``__call__(step)`` and ``get_config()``.
    """

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  "override `__call__(self, step)`.")

    def get_config(self):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  "override `get_config()` in order to be serializable.")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _positive_steps(argument, value):
    if not value > 0:
        raise ValueError(f"Argument `{argument}` must be > 0. Received: {argument}={value}")
    return value


def _rate_and_step(initial_learning_rate, step):
    """The initial rate as a tensor (float32 for a Python float) and the step in its dtype."""
    rate = convert_to_tensor(initial_learning_rate)
    return rate, math_ops.cast(step, rate.dtype)


class _StepDecay(LearningRateSchedule):
    """A rate decayed by ``decay_rate`` as a function of ``step / decay_steps`` (floored with
    ``staircase``)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name=None):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive_steps("decay_steps", decay_steps)
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name or type(self).__name__

    def __call__(self, step):
        rate, step = _rate_and_step(self.initial_learning_rate, step)
        p = step / math_ops.cast(self.decay_steps, rate.dtype)
        if self.staircase:
            p = math_ops.floor(p)
        return self._decayed(rate, math_ops.cast(self.decay_rate, rate.dtype), p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_StepDecay):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``; with ``staircase`` the
    exponent is floored, so the rate drops every ``decay_steps`` steps."""

    @staticmethod
    def _decayed(rate, decay_rate, p):
        return rate * math_ops.pow(decay_rate, p)


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while ``step <= boundaries[0]``, ``values[1]`` while
    ``step <= boundaries[1]``, ..., and ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of "
                             f"values. Received: boundaries={boundaries} of length "
                             f"{len(boundaries)}, and values={values} of length {len(values)}.")
        self.boundaries = boundaries
        self.values = values
        self.name = name

    def __call__(self, step):
        step = convert_to_tensor(step.value() if getattr(step, "_is_variable", False) else step)
        values = [convert_to_tensor(v) for v in self.values]
        bounds = [math_ops.cast(b, step.dtype) for b in self.boundaries]
        dtype = values[0].dtype
        # One indicator per interval, so exactly one value is selected for any step.
        result = math_ops.cast(step <= bounds[0], dtype) * values[0]
        result = result + math_ops.cast(step > bounds[-1], dtype) * values[-1]
        for low, high, value in zip(bounds[:-1], bounds[1:], values[1:-1]):
            inside = math_ops.logical_and(step > low, step <= high)
            result = result + math_ops.cast(inside, dtype) * value
        return result

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """From ``initial_learning_rate`` to ``end_learning_rate`` over ``decay_steps`` along
    ``(1 - step / decay_steps) ** power``; then constant, or with ``cycle`` restarting with a
    longer period."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                 cycle=False, name="PolynomialDecay"):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive_steps("decay_steps", decay_steps)
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step):
        rate, step = _rate_and_step(self.initial_learning_rate, step)
        dtype = rate.dtype
        end = math_ops.cast(self.end_learning_rate, dtype)
        decay_steps = math_ops.cast(self.decay_steps, dtype)
        if self.cycle:
            periods = math_ops.where(math_ops.equal(step, 0.0),
                                     math_ops.cast(1.0, dtype),
                                     math_ops.ceil(step / decay_steps))
            decay_steps = decay_steps * periods
        else:
            step = math_ops.minimum(step, decay_steps)
        fraction = step / decay_steps
        return (rate - end) * math_ops.pow(1.0 - fraction, math_ops.cast(self.power, dtype)) + end

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class InverseTimeDecay(_StepDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (the quotient floored
    with ``staircase``)."""

    @staticmethod
    def _decayed(rate, decay_rate, p):
        return rate / (1.0 + decay_rate * p)


def _cosine_decayed(rate, step, decay_steps, alpha):
    fraction = step / decay_steps
    cosine = 0.5 * (1.0 + math_ops.cos(math.pi * fraction))
    return rate * ((1.0 - alpha) * cosine + alpha)


class CosineDecay(LearningRateSchedule):
    """Half a cosine from the initial rate down to ``alpha`` times it over ``decay_steps``.

    With ``warmup_target``, the rate first rises linearly from ``initial_learning_rate`` to
    ``warmup_target`` over ``warmup_steps`` steps, then decays from ``warmup_target``.
    """

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay",
                 warmup_target=None, warmup_steps=0):
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive_steps("decay_steps", decay_steps)
        self.alpha = alpha
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        rate, step = _rate_and_step(self.initial_learning_rate, step)
        dtype = rate.dtype
        decay_steps = math_ops.cast(self.decay_steps, dtype)
        if self.warmup_target is None:
            step = math_ops.minimum(step, decay_steps)
            return _cosine_decayed(rate, step, decay_steps, self.alpha)
        target = math_ops.cast(self.warmup_target, dtype)
        warmup_steps = math_ops.cast(self.warmup_steps, dtype)
        step = math_ops.minimum(step, decay_steps + warmup_steps)
        return cond(step < warmup_steps,
                    lambda: (target - rate) * (step / warmup_steps) + rate,
                    lambda: _cosine_decayed(target, step - warmup_steps, decay_steps,
                                            self.alpha))

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR): the first period lasts ``first_decay_steps``,
    each next one ``t_mul`` times longer and starting ``m_mul`` times lower."""

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0,
                 alpha=0.0, name="SGDRDecay"):
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = _positive_steps("first_decay_steps", first_decay_steps)
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step):
        rate, step = _rate_and_step(self.initial_learning_rate, step)
        dtype = rate.dtype
        fraction = step / math_ops.cast(self.first_decay_steps, dtype)
        t_mul = math_ops.cast(self._t_mul, dtype)
        if self._t_mul == 1.0:
            restart = math_ops.floor(fraction)
            fraction = fraction - restart
        else:
            # Periods grow geometrically: find which one ``fraction`` falls in.
            restart = math_ops.floor(math_ops.log(1.0 - fraction * (1.0 - t_mul)) /
                                     math_ops.log(t_mul))
            elapsed = (1.0 - math_ops.pow(t_mul, restart)) / (1.0 - t_mul)
            fraction = (fraction - elapsed) / math_ops.pow(t_mul, restart)
        m_factor = math_ops.pow(math_ops.cast(self._m_mul, dtype), restart)
        cosine = 0.5 * m_factor * (1.0 + math_ops.cos(math.pi * fraction))
        return rate * ((1.0 - self.alpha) * cosine + self.alpha)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self._t_mul,
                "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


_SCHEDULES = {cls.__name__: cls for cls in (
    ExponentialDecay, PiecewiseConstantDecay, PolynomialDecay, InverseTimeDecay, CosineDecay,
    CosineDecayRestarts)}


def serialize(learning_rate_schedule):
    """``{"class_name": ..., "config": ...}`` describing a schedule."""
    if not isinstance(learning_rate_schedule, LearningRateSchedule):
        raise ValueError(f"Cannot serialize {learning_rate_schedule!r}: not a "
                         "LearningRateSchedule.")
    return {"class_name": type(learning_rate_schedule).__name__,
            "config": learning_rate_schedule.get_config()}


def deserialize(config, custom_objects=None):
    """The schedule ``serialize`` described."""
    lookup = dict(_SCHEDULES, **(custom_objects or {}))
    cls = lookup.get(config.get("class_name")) if isinstance(config, dict) else None
    if cls is None:
        raise ValueError(f"Could not interpret learning rate schedule: {config!r}; known "
                         f"schedules: {', '.join(sorted(_SCHEDULES))}.")
    return cls.from_config(dict(config.get("config", {})))
