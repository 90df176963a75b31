"""Configuration: environment variables read once into one frozen, typed object.

Each variable is declared once, as a field of a pydantic-settings model: its name (the field's,
in capitals, or its `validation_alias`), its type and bounds, its default and a one-line doc
(`description`). This module holds the core every process reads (`Settings`) and the kinds of
value (`Port`, `Seconds`, `Urls`, ...); each service's own variables live beside it, in
`services/<s>/settings.py`, a subclass. The README's configuration table is generated from the
declarations (`scripts/settings_table.py`).

A bad value fails the process at start, naming the variable. A blank value is no value (the
default), unless the field says `blank` (an empty ANALYTICS_DB_ROLE means no role). Every
variable has a default that works on a laptop (docs/running.md), except the two shared
secrets: a process refuses to start when `INTERNAL_TOKEN` or `CURSOR_SECRET` is unset, shorter
than 32 characters or a placeholder (docs/api.md). `make run` and `make test` generate both.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Self, TypeVar
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

SECRET_NAMES = ("INTERNAL_TOKEN", "CURSOR_SECRET")
MIN_SECRET_LENGTH = 32
# What example and development values say of themselves (compared with case, spaces and
# punctuation folded away): CHANGE_ME, not-a-secret, <your secret here>, ...
PLACEHOLDER_WORDS = (
    "changeme",
    "placeholder",
    "notasecret",
    "replaceme",
    "yoursecret",
    "secrethere",
    "example",
    "dummy",
    "insecure",
    "xxxxxxxx",
)
# Fewer distinct characters than this is a pattern, not a random value ("aaaa...", "abab...").
MIN_DISTINCT_CHARACTERS = 5


class SettingsError(ValueError):
    """An environment variable holds a value the service cannot use."""


def var(
    default: Any,
    doc: str,
    *,
    env: str | None = None,
    shown: str | None = None,
    kind: str | None = None,
    blank: bool = False,
    **bounds: Any,
) -> Any:
    """One variable: its default, its one-line doc, and where needed its name (`env`, when it is
    not the field's in capitals), the default and the kind of value as the README shows them
    (`shown`, `kind`: where the type does not say it), whether a blank value is a value
    (`blank`), and what else pydantic's `Field` takes (bounds beyond its type's, `repr=False`,
    `validate_default`)."""
    extra: dict[str, Any] = {}
    if shown is not None:
        extra["shown"] = shown
    if kind is not None:
        extra["kind"] = kind
    if blank:
        extra["blank"] = True
    return Field(
        default,
        description=doc,
        validation_alias=env,
        json_schema_extra=extra or None,
        **bounds,
    )


def env_name(name: str, field: FieldInfo) -> str:
    """The variable that sets the field `name`."""
    return field.validation_alias if isinstance(field.validation_alias, str) else name.upper()


def _comma_list(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return value


def _http_urls(value: Any) -> Any:
    urls = _comma_list(value)
    if isinstance(value, str):
        urls = tuple(u.rstrip("/") for u in urls)
        for url in urls:
            if urlsplit(url).scheme not in ("http", "https"):
                raise ValueError(f"must list http(s) URLs, got {url!r}")
    return urls


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


# The kinds of value. A number is parsed as Python does, its bounds are checked; a flag is
# 1/0, true/false, yes/no or on/off; a list is comma-separated.
Port = Annotated[int, Field(ge=1)]
AnyPort = Annotated[int, Field(ge=0)]  # 0: the system picks one (tests)
Count = Annotated[int, Field(ge=1)]
Size = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]  # also milliseconds and days
Fraction = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]  # in (0, 1]
Flag = bool
Words = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_comma_list)]
Urls = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_http_urls)]
Lowered = Annotated[str, BeforeValidator(_lower)]


class _Environment(EnvSettingsSource):
    """The variables of one mapping (the process environment, or a test's), values stripped and
    blank ones dropped unless their field says `blank`."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self._given = env
        super().__init__(settings_cls, case_sensitive=False)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        keep = {
            env_name(name, f).lower()
            for name, f in self.settings_cls.model_fields.items()
            if isinstance(f.json_schema_extra, dict) and f.json_schema_extra.get("blank")
        }
        out: dict[str, str | None] = {}
        for key, value in self._given.items():
            value = value.strip()
            if value or key.lower() in keep:
                out[key.lower()] = value
        return out


def secret_problem(name: str, value: str) -> str | None:
    """Why `value` cannot serve as the shared secret `name`, or None. Never quotes the value."""
    hint = "generate one with: python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
    if not value:
        return f"{name} is not set; {hint}"
    if len(value) < MIN_SECRET_LENGTH:
        return (
            f"{name} is too short ({len(value)} characters, at least {MIN_SECRET_LENGTH} "
            f"needed); {hint}"
        )
    folded = re.sub(r"[^a-z0-9]", "", value.lower())
    if (
        any(word in folded for word in PLACEHOLDER_WORDS)
        or len(set(value)) < MIN_DISTINCT_CHARACTERS
    ):
        return f"{name} is a placeholder, not a secret; {hint}"
    return None


class Settings(BaseSettings):
    """What every process reads: the database, the broker, the secrets, logging, the HTTP
    server, and the addresses of the services (the gateway forwards to each, and peers call
    the ideas service). Each process's own variables live in its `services/<s>/settings.py`,
    a subclass that declares its fields and its database timeouts in `DB_TIMEOUTS`."""

    # Values come from `from_env` alone (the process environment or the mapping given), never
    # from a variable read behind its back.
    model_config = SettingsConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    # (statement_timeout, idle_in_transaction_session_timeout) in seconds of the process's
    # database sessions, unless DB_STATEMENT_TIMEOUT_S / DB_IDLE_TX_TIMEOUT_S say otherwise:
    # what its longest legitimate statement and transaction need, with room (docs/running.md).
    DB_TIMEOUTS: ClassVar[tuple[float, float]] = (30.0, 30.0)

    database_url: str = var(
        "postgresql://postgres@127.0.0.1:5432/ideas", "PostgreSQL; created if absent"
    )
    amqp_url: str = var("amqp://guest:guest@127.0.0.1:5672/", "RabbitMQ")
    amqp_prefix: str = var("ims", "prefix of the exchange and queue names")
    service_host: str = var("127.0.0.1", "bind address of the internal services")
    ideas_port: Port = var(8081, "the ideas service's internal listener")
    customers_port: Port = var(8082, "the customers service's internal listener")
    webhooks_port: Port = var(8083, "the webhooks service's internal listener")
    analytics_port: Port = var(8084, "the analytics service's internal listener")
    mcp_port: Port = var(8085, "the mcp service's internal listener")
    similar_port: Port = var(
        8087,
        "the similar service's search API, `ims-similar` (the similar-ideas routes, "
        "`/healthz`, `/readyz`, `/metrics`)",
    )
    ideas_urls: Urls = var(
        (), "comma-separated base URLs of the ideas service's replicas", shown="the local port"
    )
    customers_urls: Urls = var(
        (), "comma-separated base URLs of the customers service's replicas", shown="the local port"
    )
    webhooks_urls: Urls = var(
        (), "comma-separated base URLs of the webhooks service's replicas", shown="the local port"
    )
    analytics_urls: Urls = var(
        (), "comma-separated base URLs of the analytics service's replicas", shown="the local port"
    )
    mcp_urls: Urls = var(
        (), "comma-separated base URLs of the mcp service's replicas", shown="the local port"
    )
    similar_urls: Urls = var(
        (),
        "comma-separated base URLs of the similar service's replicas",
        shown="the local port",
    )
    # INTERNAL_TOKEN and CURSOR_SECRET: the first value is used, all are accepted (rotation).
    internal_tokens: Words = var(
        (),
        "shared secret between gateway and services, 32+ random characters; a comma-separated "
        "list while rotating (SECURITY.md)",
        env="INTERNAL_TOKEN",
        repr=False,
        shown="required",
    )
    cursor_secrets: Words = var(
        (),
        "signs pagination cursors, 32+ random characters; a comma-separated list while rotating",
        env="CURSOR_SECRET",
        repr=False,
        shown="required",
    )
    demo: Flag = var(True, "`make run` seeds the demo workspace")
    log_format: Literal["json", "console"] = var("json", "`console` for humans")
    log_level: Lowered = var("info", "the least level logged (`debug`, `info`, `warning`, ...)")
    db_pool_min: Size = var(1, "database connections per process, at least")
    db_pool_max: Count = var(10, "database connections per process, at most")
    db_pool_timeout_s: Seconds = var(
        30.0,
        "how long a request waits for a free pooled connection when every one is in use; then "
        "503 `service_unavailable` with `Retry-After: 1` (every process)",
    )
    shutdown_timeout_s: Seconds = var(15.0, "graceful shutdown budget on SIGTERM")
    http_keepalive_timeout_s: Seconds = var(
        75.0, "every listener closes a kept-alive connection idle this long"
    )
    http_header_timeout_s: Seconds = var(
        10.0,
        "every listener closes a connection whose request head is not complete this long "
        "after its first byte",
    )
    relay_interval_s: Seconds = var(
        0.5, "how often the outbox relay looks for events a notification missed"
    )
    db_statement_timeout_s: Seconds | None = var(
        None,
        "`statement_timeout` of the process's sessions "
        "([docs/running.md](docs/running.md#database-timeouts))",
        shown="per process",
    )
    db_idle_tx_timeout_s: Seconds | None = var(
        None,
        "`idle_in_transaction_session_timeout` of the process's sessions "
        "([docs/running.md](docs/running.md#database-timeouts))",
        shown="per process",
    )
    retention_days: Seconds = var(
        30.0,
        "webhook deliveries, their attempts and handled-event ids older than this are deleted",
    )
    retention_interval_s: Seconds = var(3600.0, "how often each process sweeps its tables")
    # A stretch in which the event loop ran nothing else, at least this long, is logged
    # (`event_loop_blocked`); every stretch is counted in `ims_event_loop_lag_seconds`.
    loop_blocked_log_ms: Seconds = var(
        100.0,
        "an event loop held at least this long is logged (`event_loop_blocked`); every process "
        "reports its loop's lateness as `ims_event_loop_lag_seconds` "
        "([docs/running.md](docs/running.md#event-loop-lag))",
    )

    @model_validator(mode="before")
    @classmethod
    def _local_urls(cls, data: Any) -> Any:
        """A service's URLs default to its local port, as given or by default."""
        if isinstance(data, dict):
            for service in ("ideas", "customers", "webhooks", "analytics", "mcp", "similar"):
                if not data.get(f"{service}_urls"):
                    port = data.get(f"{service}_port", cls.model_fields[f"{service}_port"].default)
                    data[f"{service}_urls"] = (f"http://127.0.0.1:{port}",)
        return data

    @property
    def internal_token(self) -> str:
        """The token this process sends; it accepts every one of `internal_tokens`."""
        return self.internal_tokens[0] if self.internal_tokens else ""

    @property
    def cursor_secret(self) -> str:
        """The secret new cursors are signed with; every one of `cursor_secrets` verifies."""
        return self.cursor_secrets[0] if self.cursor_secrets else ""

    @property
    def peer_idle_s(self) -> float:
        """How long a client of our own services reuses an idle connection: well inside their
        keep-alive timeout (the same HTTP_KEEPALIVE_TIMEOUT_S), so that a service never closes
        one just as it is reused; at most 30 s."""
        return min(30.0, self.http_keepalive_timeout_s / 2)

    @property
    def service_urls(self) -> dict[str, tuple[str, ...]]:
        """Each service's replicas, by the name the route table gives the service."""
        return {
            "ideas": self.ideas_urls,
            "customers": self.customers_urls,
            "webhooks": self.webhooks_urls,
            "analytics": self.analytics_urls,
            "mcp": self.mcp_urls,
            "similar": self.similar_urls,
        }

    def default_db_timeouts(self) -> tuple[float, float]:
        """The process's database timeouts when no variable sets them: `DB_TIMEOUTS`."""
        return self.DB_TIMEOUTS

    def db_timeouts(self) -> tuple[float, float]:
        """(statement_timeout, idle_in_transaction_session_timeout) of the process's sessions."""
        statement, idle = self.default_db_timeouts()
        return (self.db_statement_timeout_s or statement, self.db_idle_tx_timeout_s or idle)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, require_secrets: bool = True
    ) -> Self:
        """The settings of `env` (default: the process environment).

        `require_secrets=False` is for tools that use neither secret (the admin CLI); every
        process that serves or signs anything requires both."""
        values = _Environment(cls, os.environ if env is None else env)()
        try:
            settings = cls(**values)
        except ValidationError as err:
            raise SettingsError("; ".join(_problems(cls, err))) from None
        if require_secrets:
            for name, given in (
                ("INTERNAL_TOKEN", settings.internal_tokens),
                ("CURSOR_SECRET", settings.cursor_secrets),
            ):
                for value in given or ("",):
                    problem = secret_problem(name, value)
                    if problem is not None:
                        raise SettingsError(problem)
        return settings

    @classmethod
    def default(cls, name: str) -> Any:
        """The declared default of the field `name`."""
        return cls.model_fields[name].default

    @classmethod
    def variables(cls) -> dict[str, tuple[str, FieldInfo]]:
        """Each variable this class reads: its field's name and declaration, by its name."""
        return {env_name(name, f): (name, f) for name, f in cls.model_fields.items()}


def _problems(kind: type[Settings], err: ValidationError) -> list[str]:
    """Each error as `NAME: what is wrong, got 'value'` (the secrets are never validated by
    pydantic, so no secret is quoted)."""
    out = []
    for e in err.errors():
        loc = e["loc"]
        field = kind.model_fields.get(str(loc[0])) if loc else None
        name = env_name(str(loc[0]), field) if field is not None else ""
        message = e["msg"].removeprefix("Value error, ")
        if not name:
            out.append(message)
        elif e["type"] in ("value_error", "assertion_error"):
            out.append(f"{name} {message}")
        else:
            out.append(f"{name}: {message}, got {e['input']!r}")
    return out


S = TypeVar("S", bound=Settings)


def load_or_exit(process: str, kind: type[S]) -> S:
    """A process's settings; a bad value ends the process with a message naming the variable
    (exit status 2) instead of a traceback."""
    try:
        return kind.from_env()
    except SettingsError as err:
        print(f"ims-{process}: configuration error: {err}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
