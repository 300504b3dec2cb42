from datetime import timedelta

import pytest

from app.core.durations import normalise_trigger, parse_duration, parse_trigger


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("50s", timedelta(seconds=50)),
        ("100ms", timedelta(milliseconds=100)),
        ("250us", timedelta(microseconds=250)),
        ("1m", timedelta(minutes=1)),
        ("1min", timedelta(minutes=1)),
        ("1h", timedelta(hours=1)),
        ("1d", timedelta(days=1)),
    ],
)
def test_pstl_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("bad", ["1 s", "s", "1.5s", "-1s", "1w", ""])
def test_bad_durations(bad: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(bad)


def test_triggers() -> None:
    assert parse_trigger("15 SECONDS") == 15_000
    assert parse_trigger("1 minute") == 60_000
    assert parse_trigger("2 HOURS") == 7_200_000
    assert parse_trigger("100 MILLISECONDS") == 100
    assert normalise_trigger("5 minutes") == "5 MINUTES"
    for bad in ["15SECONDS", "0 SECONDS", "1 DAY", "fast"]:
        with pytest.raises(ValueError):
            parse_trigger(bad)
