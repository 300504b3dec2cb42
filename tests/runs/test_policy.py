import random
from datetime import timedelta

from app.runs.policy import RestartPolicy


def test_pstl_table_with_no_randomness() -> None:
    policy = RestartPolicy()
    assert [policy.delay(n).total_seconds() for n in range(5)] == [1, 2, 4, 8, 16]
    assert policy.delay(40) == timedelta(hours=1)  # capped by max_backoff
    assert policy.delay(10_000) == timedelta(hours=1)  # no overflow


def test_random_factor_stretches_within_bounds() -> None:
    policy = RestartPolicy(random_factor=0.1)
    rng = random.Random(7)
    for n in range(5):
        base = 2**n
        d = policy.delay(n, rng).total_seconds()
        assert base <= d < base * 1.1


def test_max_attempts() -> None:
    assert RestartPolicy(max_attempts=2).may_restart(2)
    assert not RestartPolicy(max_attempts=2).may_restart(3)
    assert RestartPolicy().may_restart(10**9)
    assert not RestartPolicy(enabled=False).may_restart(1)


def test_from_json_uses_pstl_formats() -> None:
    p = RestartPolicy.from_json(
        {"min_backoff": "100ms", "max_backoff": "1d", "stable_period": "5m"}
    )
    assert p.min_backoff == timedelta(milliseconds=100) and p.max_backoff == timedelta(days=1)
    assert p.stable_period == timedelta(minutes=5)
