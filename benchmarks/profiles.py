"""How long the suite measures: the full run, ``--quick`` for development, ``smoke`` for tests."""
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Profile:
    name: str
    warmup_calls: int      # untimed calls after the agreement check, before calibration
    min_sample_s: float    # one sample repeats the call until it lasts at least this long
    rounds: int            # alternating rounds; each round takes one sample of every variant
    min_rounds: int        # samples every variant gets, even a slow one
    max_variant_s: float   # past this much sampled time a variant stops after min_rounds
    check_steps: int       # train steps (W3, W4) compared between frameworks before timing
    c1_repeats: int        # fresh-process pairs (cold, then warm) per C1 variant
    c1_timeout_s: float
    m1_steps: int          # W3 steps in M1 ...
    m1_mark: int           # ... and the step from which growth is measured
    m1_timeout_s: float
    r1_calls: int          # calls of R1's loop, each a new trace
    r1_timeout_s: float
    all_process_variants: bool = True  # False: C1 and M1 leave out their informational variants
    c2_warmup: bool = True  # C2 times the first step after `python -m hybridtf.warmup` too

    def as_dict(self):
        return asdict(self)


FULL = Profile("full", warmup_calls=3, min_sample_s=0.05, rounds=15, min_rounds=5,
               max_variant_s=20.0, check_steps=3, c1_repeats=3, c1_timeout_s=600.0,
               m1_steps=1000, m1_mark=100, m1_timeout_s=600.0, r1_calls=200,
               r1_timeout_s=600.0)

QUICK = Profile("quick", warmup_calls=1, min_sample_s=0.01, rounds=5, min_rounds=3,
                max_variant_s=0.4, check_steps=2, c1_repeats=1, c1_timeout_s=120.0,
                m1_steps=60, m1_mark=10, m1_timeout_s=120.0, r1_calls=100, r1_timeout_s=120.0,
                all_process_variants=False)

# For the test suite: every code path once, as little time as possible.
SMOKE = Profile("smoke", warmup_calls=1, min_sample_s=0.001, rounds=2, min_rounds=2,
                max_variant_s=0.2, check_steps=2, c1_repeats=1, c1_timeout_s=300.0,
                m1_steps=12, m1_mark=4, m1_timeout_s=300.0, r1_calls=3, r1_timeout_s=300.0,
                all_process_variants=False, c2_warmup=False)

PROFILES = {p.name: p for p in (FULL, QUICK, SMOKE)}


def get(profile):
    """A Profile from a Profile or its name."""
    if isinstance(profile, Profile):
        return profile
    try:
        return PROFILES[profile]
    except KeyError:
        known = sorted(PROFILES)
        raise ValueError(f"unknown profile {profile!r}; expected one of {known}") from None
