"""Settings from the environment: defaults, parsing, and refusals that name the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from thoughtline.config import MAX_RETENTION_DAYS, Settings, SettingsError


def test_defaults_are_the_embedded_local_setup() -> None:
    settings = Settings.from_env({})
    assert (settings.data_dir, settings.host, settings.port) == (Path("./data"), "127.0.0.1", 8000)
    assert (settings.journal, settings.retention_days, settings.library) == ("wal", 0, True)
    assert settings.token_problem == "MCP_API_TOKEN is not set"
    assert not settings.github_enabled


def test_values_are_parsed_and_normalised() -> None:
    settings = Settings.from_env(
        {
            "MCP_API_TOKEN": "k" * 32,
            "ALLOWED_GITHUB_LOGIN": " Alice, BOB ,,",
            "ALLOWED_HOSTNAMES": "Thoughts.Example.com",
            "THOUGHTLINE_PUBLIC_URL": "https://thoughts.example.com/",
            "THOUGHTLINE_JOURNAL": "TRUNCATE",
            "THOUGHT_RETENTION_DAYS": "30",
            "THOUGHTLINE_LIBRARY": "off",
            "GITHUB_CLIENT_ID": "id",
            "GITHUB_CLIENT_SECRET": "secret",
            "GITHUB_BASE_URL": "https://ghe.example.com/",
        }
    )
    assert settings.token_problem is None
    assert settings.allowed_github_logins == ("alice", "bob")
    assert settings.allowed_hostnames == ("thoughts.example.com",)
    assert settings.public_url == "https://thoughts.example.com"
    assert (settings.journal, settings.retention_days, settings.library) == ("truncate", 30, False)
    assert settings.related  # on unless THOUGHTLINE_RELATED=off
    assert not Settings.from_env({"THOUGHTLINE_RELATED": " OFF "}).related
    assert settings.github_enabled
    assert settings.github_base_url == "https://ghe.example.com"


def test_secrets_stay_out_of_repr() -> None:
    text = repr(Settings.from_env({"MCP_API_TOKEN": "s" * 40, "GITHUB_CLIENT_SECRET": "hush-hush"}))
    assert "s" * 40 not in text
    assert "hush-hush" not in text


def test_a_set_but_short_token_is_refused_naming_the_fix() -> None:
    with pytest.raises(SettingsError, match="MCP_API_TOKEN is 5 characters; it needs at least 32") as refused:
        Settings.from_env({"MCP_API_TOKEN": "short"})
    assert "thoughtline token" in str(refused.value)


def test_an_unset_token_closes_the_bearer_door_and_says_why() -> None:
    assert Settings.from_env({}).token_problem == "MCP_API_TOKEN is not set"
    assert Settings(api_token="short").token_problem is not None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("THOUGHTLINE_JOURNAL", "delete"),
        ("THOUGHTLINE_LIBRARY", "maybe"),
        ("THOUGHTLINE_RELATED", "sometimes"),
        ("THOUGHTLINE_PUBLIC_URL", "thoughts.example.com"),
        ("THOUGHTLINE_PUBLIC_URL", "https://thoughts.example.com:https"),
        ("PORT", "eighty"),
        # int() reads these as numbers; a setting is the digits 0-9 alone.
        ("PORT", "\u0668\u0660\u0668\u0660"),
        ("THOUGHTLINE_MAX_OPEN_STORES", "1_000"),
        ("THOUGHTLINE_MAX_OPEN_STORES", "+64"),
        ("THOUGHT_RETENTION_DAYS", "-1"),
        ("THOUGHTLINE_MAX_BODY_BYTES", "10"),
        # Past these a value reached a fixed-width number (a SQLite integer, a C int, a float) and
        # failed every store open or the start itself, after passing validation.
        ("THOUGHT_RETENTION_DAYS", "999999999999"),
        ("THOUGHTLINE_MALLOC_ARENAS", "1" + "0" * 30),
        ("THOUGHTLINE_HEADER_TIMEOUT_SECONDS", "1" + "0" * 400),
        ("THOUGHTLINE_BODY_TIMEOUT_SECONDS", "1" + "0" * 400),
        ("THOUGHTLINE_REGISTRATIONS_PER_HOUR", "1" + "0" * 400),
        ("THOUGHTLINE_LOG_LEVEL", "bogus"),
    ],
)
def test_unusable_values_are_refused_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        Settings.from_env({name: value})


def test_a_retention_beyond_a_century_is_refused_with_the_allowed_range() -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"THOUGHT_RETENTION_DAYS": "999999999999"})
    assert str(refused.value) == (
        "THOUGHT_RETENTION_DAYS=999999999999 is above 36500; set it from 0 to 36500 days "
        "(100 years; 0 keeps thoughts forever)."
    )
    assert Settings.from_env({"THOUGHT_RETENTION_DAYS": "36500"}).retention_days == MAX_RETENTION_DAYS


@pytest.mark.parametrize(
    "value",
    ["https://thoughts.example.com/tl", "https://thoughts.example.com/?a=1", "https://u@thoughts.example.com"],
)
def test_a_public_url_with_a_path_is_refused_at_start_with_the_origin_to_use(value: str) -> None:
    # Tokens are bound to origin + /mcp: a path prefix made every OAuth token fail after sign-in.
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"THOUGHTLINE_PUBLIC_URL": value})
    assert "origin only" in str(refused.value)
    assert "https://thoughts.example.com " in str(refused.value)


def test_the_public_url_is_kept_as_a_lower_case_origin() -> None:
    settings = Settings.from_env({"THOUGHTLINE_PUBLIC_URL": " HTTPS://Thoughts.Example.com:8443/ "})
    assert settings.public_url == "https://thoughts.example.com:8443"


@pytest.mark.parametrize("value", ["bogus", "trace"])
def test_an_unknown_log_level_is_refused_naming_the_levels_it_can_be(value: str) -> None:
    # It used to pass here and crash `serve` with a traceback from logging.basicConfig.
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"THOUGHTLINE_LOG_LEVEL": value})
    assert str(refused.value) == (
        f"THOUGHTLINE_LOG_LEVEL={value!r} is not a log level; set it to one of "
        "debug, info, warning, error, critical (default info)."
    )
    assert Settings.from_env({"THOUGHTLINE_LOG_LEVEL": " Warning "}).log_level == "warning"
