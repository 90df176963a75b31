"""Unit tests of libs.common: cursors, validation paths, settings, the request-id middleware."""

from __future__ import annotations

import base64
import os
import secrets

import pytest
from pydantic import Field, ValidationError

from libs.common.errors import ValidationFailed
from libs.common.pagination import decode_cursor, encode_cursor, page_info
from libs.common.settings import Settings, SettingsError, secret_problem
from libs.common.validation import Body, Query, loc_to_field, validate_json
from services.gateway.settings import GatewaySettings
from services.ideas.settings import IdeasSettings
from services.similar.settings import SimilarSettings
from services.webhooks.settings import WebhooksSettings

SECRET = ("s3cret",)
SCOPE = {"sort": "createdAt", "order": "desc", "status": "new"}


def test_cursor_round_trip() -> None:
    token = encode_cursor(SECRET, SCOPE, ["2024-01-01T00:00:00Z", "7b0c"])
    assert decode_cursor(SECRET, token, dict(reversed(SCOPE.items()))) == [
        "2024-01-01T00:00:00Z",
        "7b0c",
    ]


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-2] + ("AA" if not t.endswith("AA") else "BB"),  # signature
        lambda t: (
            base64.urlsafe_b64encode(b'{"s":"x","v":[1]}').decode().rstrip("=")
            + "."
            + t.split(".")[1]
        ),  # payload swapped
        lambda t: t.replace(".", ""),  # no separator
        lambda t: "garbage",
        lambda t: "",
        lambda t: "!!!.???",
    ],
)
def test_tampered_cursor_is_a_validation_error(mangle) -> None:  # type: ignore[no-untyped-def]
    token = encode_cursor(SECRET, SCOPE, [1, "a"])
    with pytest.raises(ValidationFailed) as err:
        decode_cursor(SECRET, mangle(token), SCOPE)
    assert err.value.field == "cursor" and err.value.status == 400


def test_cursor_of_another_scope_or_secret_is_refused() -> None:
    token = encode_cursor(SECRET, SCOPE, [1, "a"])
    for secret, scope in ((SECRET, {**SCOPE, "order": "asc"}), (SECRET, {}), (("other",), SCOPE)):
        with pytest.raises(ValidationFailed) as err:
            decode_cursor(secret, token, scope)
        assert err.value.field == "cursor"


def test_cursor_secret_rotation_signs_with_the_first_and_accepts_all() -> None:
    """CURSOR_SECRET "new,old": new cursors are signed with new, cursors clients hold from
    before (signed with old) still work; once old is dropped, they are refused."""
    first, second = SECRETS["CURSOR_SECRET"], SECRETS["INTERNAL_TOKEN"]
    old = encode_cursor((second,), SCOPE, [1, "a"])
    rolling = Settings.from_env({**SECRETS, "CURSOR_SECRET": f" {first} , {second} "})
    assert rolling.cursor_secrets == (first, second)
    assert decode_cursor(rolling.cursor_secrets, old, SCOPE) == [1, "a"]
    new = encode_cursor(rolling.cursor_secrets, SCOPE, [2, "b"])
    assert decode_cursor((first,), new, SCOPE) == [2, "b"]
    for keys, token in (((first,), old), ((second,), new)):
        with pytest.raises(ValidationFailed):
            decode_cursor(keys, token, SCOPE)


def test_internal_token_list_sends_the_first() -> None:
    new, old, cursor = (secrets.token_urlsafe(32) for _ in range(3))
    s = Settings.from_env({"INTERNAL_TOKEN": f"{new}, {old}", "CURSOR_SECRET": cursor})
    assert s.internal_token == new and s.internal_tokens == (new, old)
    assert s.cursor_secret == cursor and s.cursor_secrets == (cursor,)
    # every value of a list must be a real secret, not only the first
    with pytest.raises(SettingsError, match="INTERNAL_TOKEN"):
        Settings.from_env({"INTERNAL_TOKEN": f"{new},CHANGE_ME", "CURSOR_SECRET": cursor})


def test_page_info_has_no_cursor_on_the_last_page() -> None:
    assert page_info(25, False, "x") == {"limit": 25, "hasMore": False, "nextCursor": None}
    assert page_info(10, True, "c", total=3) == {
        "limit": 10,
        "hasMore": True,
        "nextCursor": "c",
        "total": 3,
    }


class Item(Body):
    title: str = Field(min_length=1)


class Batch(Body):
    ideas: list[Item] = Field(min_length=1, max_length=3)
    note: str | None = None


@pytest.mark.parametrize(
    "raw, field",
    [
        (b'{"ideas": [{"title": "a"}, {"title": 3}]}', "ideas[1].title"),
        (b'{"ideas": [{"title": "a"}, {"title": ""}]}', "ideas[1].title"),
        (b'{"ideas": [{"title": "a", "x": 1}]}', "ideas[0].x"),
        (b'{"ideas": []}', "ideas"),
        (b'{"ideas": [{"title": "a"}], "extra": true}', "extra"),
        (b'{"note": "n"}', "ideas"),
        (b'{"ideas": "no"}', "ideas"),
        (b"[]", "body"),
    ],
)
def test_validation_names_the_field(raw: bytes, field: str) -> None:
    with pytest.raises(ValidationFailed) as err:
        validate_json(raw, Batch)
    assert err.value.field == field and err.value.body()["error"]["code"] == "validation_error"


def test_strict_bodies_do_not_coerce() -> None:
    with pytest.raises(ValidationFailed):
        validate_json(b'{"ideas": [{"title": "a"}], "note": 5}', Batch)
    assert validate_json(b'{"ideas": [{"title": "a"}]}', Batch).ideas[0].title == "a"


def test_invalid_json_is_its_own_code() -> None:
    with pytest.raises(Exception) as err:
        validate_json(b'{"ideas": ', Batch)
    assert getattr(err.value, "code", None) == "invalid_json"


def test_loc_to_field() -> None:
    assert loc_to_field(("ideas", 3, "title")) == "ideas[3].title"
    assert loc_to_field(()) == "body"
    assert loc_to_field((0, "a")) == "[0].a"


class Q(Query):
    limit: int = Field(25, ge=1, le=100)


def test_query_model_rejects_unknown() -> None:
    with pytest.raises(ValidationError, match="nope"):
        Q.model_validate({"nope": "1"})
    assert Q.model_validate({"limit": "7"}).limit == 7


SECRETS = {"INTERNAL_TOKEN": secrets.token_urlsafe(32), "CURSOR_SECRET": secrets.token_urlsafe(32)}


@pytest.mark.parametrize(
    "kind, env, name",
    [
        (GatewaySettings, {"GATEWAY_PORT": "eighty"}, "GATEWAY_PORT"),
        (Settings, {"IDEAS_PORT": "0"}, "IDEAS_PORT"),
        (WebhooksSettings, {"WEBHOOK_TIMEOUT_S": "-1"}, "WEBHOOK_TIMEOUT_S"),
        (WebhooksSettings, {"WEBHOOK_ALLOW_HTTP": "maybe"}, "WEBHOOK_ALLOW_HTTP"),
        (Settings, {"IDEAS_URLS": "ftp://x"}, "IDEAS_URLS"),
        (WebhooksSettings, {"WEBHOOK_RETRY_SCHEDULE": "0,a"}, "WEBHOOK_RETRY_SCHEDULE"),
        (WebhooksSettings, {"WEBHOOK_RETRY_SCHEDULE": "0,-5"}, "WEBHOOK_RETRY_SCHEDULE"),
        (Settings, {"LOG_FORMAT": "xml"}, "LOG_FORMAT"),
        (GatewaySettings, {"UNAUTHENTICATED_RPM": "0"}, "UNAUTHENTICATED_RPM"),
        (GatewaySettings, {"TRUSTED_PROXIES": "10.0.0.0/8, ingress"}, "TRUSTED_PROXIES"),
        (Settings, {"HTTP_HEADER_TIMEOUT_S": "0"}, "HTTP_HEADER_TIMEOUT_S"),
        (Settings, {"HTTP_KEEPALIVE_TIMEOUT_S": "soon"}, "HTTP_KEEPALIVE_TIMEOUT_S"),
        (GatewaySettings, {"KEY_CACHE_SIZE": "0"}, "KEY_CACHE_SIZE"),
        (GatewaySettings, {"GATEWAY_METRICS_PORT": "x"}, "GATEWAY_METRICS_PORT"),
        (SimilarSettings, {"SIMILAR_EMBED_NICE": "20"}, "SIMILAR_EMBED_NICE"),
        (SimilarSettings, {"SIMILAR_EMBED_NICE": "-1"}, "SIMILAR_EMBED_NICE"),
        (SimilarSettings, {"SIMILAR_EMBED_WORKERS": "0"}, "SIMILAR_EMBED_WORKERS"),
        (SimilarSettings, {"SIMILAR_SEARCH_IDLE": "maybe"}, "SIMILAR_SEARCH_IDLE"),
        (SimilarSettings, {"SIMILAR_MODEL": "gpt"}, "SIMILAR_MODEL"),
        (SimilarSettings, {"EMBEDDER_PORT": "0"}, "EMBEDDER_PORT"),
        (SimilarSettings, {"SIMILAR_EMBED_CPU": "first"}, "SIMILAR_EMBED_CPU"),
        (SimilarSettings, {"SIMILAR_EMBED_CPU": "-1"}, "SIMILAR_EMBED_CPU"),
        (SimilarSettings, {"SIMILAR_EMBED_CPU": "4096"}, "SIMILAR_EMBED_CPU"),
        (IdeasSettings, {"DUPLICATE_SIMILARITY": "1.5"}, "DUPLICATE_SIMILARITY"),
    ],
)
def test_bad_settings_name_the_variable(
    kind: type[Settings], env: dict[str, str], name: str
) -> None:
    """Each process reads the common variables and its own (services/<s>/settings.py)."""
    with pytest.raises(SettingsError, match=name):
        kind.from_env({**SECRETS, **env})


def test_settings_defaults_and_overrides() -> None:
    s = GatewaySettings.from_env(SECRETS)
    assert s.gateway_port == 8080 and s.ideas_urls == ("http://127.0.0.1:8081",)
    assert s.unauthenticated_rpm == 60 and s.export_per_hour == 10
    assert (s.internal_token, s.cursor_secret) == (
        SECRETS["INTERNAL_TOKEN"],
        SECRETS["CURSOR_SECRET"],
    )
    s = WebhooksSettings.from_env(
        {**SECRETS, "IDEAS_URLS": "http://a:1/, http://b:2", "WEBHOOK_RETRY_SCHEDULE": "0,1,1"}
    )
    assert s.ideas_urls == ("http://a:1", "http://b:2")
    assert s.webhook_retry_schedule == (0.0, 1.0, 1.0)
    s = GatewaySettings.from_env(
        {
            **SECRETS,
            "TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.7,fd00::/8",
            "HTTP_KEEPALIVE_TIMEOUT_S": "20",
        }
    )
    assert s.trusted_proxies == ("10.0.0.0/8", "192.168.1.7", "fd00::/8")
    assert s.peer_idle_s == 10 and Settings.from_env(SECRETS).peer_idle_s == 30
    cpus = sorted(os.sched_getaffinity(0))
    similar = SimilarSettings.from_env(SECRETS)
    assert similar.similar_embed_cpu == (cpus[-1] if len(cpus) > 1 else None)
    assert similar.similar_model == "mpnet"
    assert (
        SimilarSettings.from_env({**SECRETS, "SIMILAR_EMBED_CPU": "none"}).similar_embed_cpu is None
    )
    assert SimilarSettings.from_env({**SECRETS, "SIMILAR_MODEL": "static"}).similar_model == (
        "static"
    )
    chosen = SimilarSettings.from_env({**SECRETS, "SIMILAR_EMBED_CPU": str(cpus[0])})
    assert chosen.similar_embed_cpu == cpus[0]


def test_embedder_cpu_where_processes_cannot_be_kept_to_cpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without CPU affinity (macOS), SIMILAR_EMBED_CPU's default keeps the embedder on any
    CPU and a CPU number is refused, naming the variable: the similar service still starts."""
    monkeypatch.delattr(os, "sched_getaffinity")
    assert SimilarSettings.from_env(SECRETS).similar_embed_cpu is None
    with pytest.raises(SettingsError, match="SIMILAR_EMBED_CPU"):
        SimilarSettings.from_env({**SECRETS, "SIMILAR_EMBED_CPU": "0"})


BAD_SECRETS = [
    ("", "not set"),
    ("x7Gq2-short", "too short"),
    ("Q" * 31 + "z", None),  # 32 characters, but two distinct
    ("CHANGE_ME", "too short"),
    ("CHANGE_ME-CHANGE_ME-CHANGE_ME-CHANGE_ME", "placeholder"),
    ("dev-internal-token-not-a-secret-k8s-dev", "placeholder"),
    ("<your secret here: 32 characters or more>", "placeholder"),
    ("ims-dev-cursor-secret-change-me-please!", "placeholder"),
    ("abababababababababababababababababab", "placeholder"),
]


@pytest.mark.parametrize("name", ["INTERNAL_TOKEN", "CURSOR_SECRET"])
@pytest.mark.parametrize("value, why", BAD_SECRETS)
def test_unusable_secrets_are_refused_by_name_without_quoting_them(
    name: str, value: str, why: str | None
) -> None:
    """Unset, under 32 characters or a placeholder: the error names the variable, not the value."""
    env = {**SECRETS}
    if value:
        env[name] = value
    else:
        del env[name]
    with pytest.raises(SettingsError, match=name) as caught:
        Settings.from_env(env)
    assert why is None or why in str(caught.value)
    assert not value or value not in str(caught.value)


def test_generated_secrets_are_accepted_and_the_admin_cli_needs_none() -> None:
    """What `make run` generates passes; a tool that uses no secret may run without them."""
    for _ in range(200):
        assert secret_problem("CURSOR_SECRET", secrets.token_urlsafe(32)) is None
        assert secret_problem("CURSOR_SECRET", secrets.token_hex(16)) is None
    assert Settings.from_env({}, require_secrets=False).internal_token == ""


def test_one_serializer_writes_date_times_money_and_dates_in_one_form() -> None:
    """render.dumps: compact; date-times UTC with six digits and Z; whole money as integers."""
    from datetime import date, datetime, timedelta, timezone
    from decimal import Decimal

    from libs.common.render import dumps

    plus_two = timezone(timedelta(hours=2))
    body = dumps(
        {
            "b": datetime(2024, 5, 1, 11, 30, tzinfo=plus_two),
            "a": date(2024, 5, 1),
            "arr": Decimal("50000.0"),
            "mrr": Decimal("1234.50"),
            "n": None,
        }
    )
    assert body == (
        b'{"b":"2024-05-01T09:30:00.000000Z","a":"2024-05-01","arr":50000,"mrr":1234.5,"n":null}'
    )
