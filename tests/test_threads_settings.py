"""The thread lifecycle settings: defaults, decimals, and refusals that name the variable."""

from __future__ import annotations

import pytest

from thoughtline.config import Settings, SettingsError


def test_the_periods_default_to_14_and_45_days() -> None:
    settings = Settings.from_env({})
    assert (settings.thread_dormant_days, settings.thread_closed_days) == (14.0, 45.0)


def test_the_periods_accept_decimals() -> None:
    settings = Settings.from_env({"THOUGHTLINE_THREAD_DORMANT_DAYS": "0.5", "THOUGHTLINE_THREAD_CLOSED_DAYS": " 2.25 "})
    assert (settings.thread_dormant_days, settings.thread_closed_days) == (0.5, 2.25)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"THOUGHTLINE_THREAD_DORMANT_DAYS": "two weeks"}, "THOUGHTLINE_THREAD_DORMANT_DAYS"),
        ({"THOUGHTLINE_THREAD_DORMANT_DAYS": "0"}, "THOUGHTLINE_THREAD_DORMANT_DAYS"),
        ({"THOUGHTLINE_THREAD_CLOSED_DAYS": "-3"}, "THOUGHTLINE_THREAD_CLOSED_DAYS"),
        ({"THOUGHTLINE_THREAD_CLOSED_DAYS": "inf"}, "THOUGHTLINE_THREAD_CLOSED_DAYS"),
        ({"THOUGHTLINE_THREAD_CLOSED_DAYS": "nan"}, "THOUGHTLINE_THREAD_CLOSED_DAYS"),
        ({"THOUGHTLINE_THREAD_DORMANT_DAYS": "30", "THOUGHTLINE_THREAD_CLOSED_DAYS": "20"}, "CLOSED_DAYS=20"),
    ],
)
def test_unusable_periods_are_refused_naming_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        Settings.from_env(env)
