"""Which processes `make run` starts, on which ports, with which environment.

REPLICAS=N runs N of each HTTP process. Replica i of a process listens on its base port
(GATEWAY_PORT, IDEAS_PORT, ...) + 10 * i, so with the defaults and REPLICAS=2:

    gateway-0 8080  ideas-0 8081  customers-0 8082  webhooks-0 8083  analytics-0 8084  mcp-0 8085
    gateway-1 8090  ideas-1 8091  customers-1 8092  webhooks-1 8093  analytics-1 8094  mcp-1 8095
    similar-0 8087 (the similar service's search API, ims-similar)  similar-1 8097
    similar-embedder-0 8086 (its embedder: probes and metrics only)  similar-embedder-1 8096

The gateway also serves its metrics on an internal listener (GATEWAY_METRICS_PORT, 8089, on
SERVICE_HOST), replica i on 8089 + 10 * i.

Every process gets the full IDEAS_URLS, CUSTOMERS_URLS, WEBHOOKS_URLS, ANALYTICS_URLS,
MCP_URLS and SIMILAR_URLS lists (one base URL per replica; a list already in the environment is kept as it is) and the
same INTERNAL_TOKEN and CURSOR_SECRET (see load_secrets).
"""

from __future__ import annotations

import os
import secrets
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .common import DevenvError

REPLICA_PORT_STEP = 10
SECRET_NAMES = ("INTERNAL_TOKEN", "CURSOR_SECRET")


@dataclass(frozen=True)
class Service:
    name: str
    entry_point: str
    port_var: str
    default_port: int
    urls_var: str | None  # how the others find it; None for the gateway, which nothing calls
    metrics_port_var: str | None = None  # an internal listener for /metrics (the gateway's)
    default_metrics_port: int = 0


SERVICES = (
    Service("gateway", "ims-gateway", "GATEWAY_PORT", 8080, None, "GATEWAY_METRICS_PORT", 8089),
    Service("ideas", "ims-ideas", "IDEAS_PORT", 8081, "IDEAS_URLS"),
    Service("customers", "ims-customers", "CUSTOMERS_PORT", 8082, "CUSTOMERS_URLS"),
    Service("webhooks", "ims-webhooks", "WEBHOOKS_PORT", 8083, "WEBHOOKS_URLS"),
    Service("analytics", "ims-analytics", "ANALYTICS_PORT", 8084, "ANALYTICS_URLS"),
    Service("mcp", "ims-mcp", "MCP_PORT", 8085, "MCP_URLS"),
    Service("similar", "ims-similar", "SIMILAR_PORT", 8087, "SIMILAR_URLS"),
    # No one calls it: its port serves its probes and metrics.
    Service("similar-embedder", "ims-similar-embedder", "EMBEDDER_PORT", 8086, None),
)


@dataclass(frozen=True)
class Process:
    name: str  # "ideas-1"
    argv: tuple[str, ...]
    bind_host: str
    port: int
    env: dict[str, str] = field(hash=False)  # set on top of the supervisor's environment
    metrics: tuple[str, int] | None = None  # (host, port) of its internal metrics listener

    @property
    def ready_url(self) -> str:
        return f"http://{url_host(self.bind_host)}:{self.port}/readyz"

    def listeners(self) -> list[tuple[str, int]]:
        """Every (host, port) the process listens on."""
        return [(self.bind_host, self.port)] + ([self.metrics] if self.metrics else [])


def _int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name) or str(default)
    try:
        return int(raw)
    except ValueError as err:
        raise DevenvError(f"{name} must be a whole number, got {raw!r}") from err


def replicas(environ: Mapping[str, str]) -> int:
    count = _int(environ, "REPLICAS", 1)
    if count < 1:
        raise DevenvError(f"REPLICAS must be at least 1, got {count}")
    return count


def url_host(bind_host: str) -> str:
    """The host to reach a listener bound to `bind_host` (a wildcard is reached on loopback)."""
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(bind_host, bind_host)
    return f"[{host}]" if ":" in host else host


def bind_host(service: Service, environ: Mapping[str, str]) -> str:
    if service.name == "gateway":
        return environ.get("GATEWAY_HOST") or "127.0.0.1"
    return environ.get("SERVICE_HOST") or "127.0.0.1"


def port_of(service: Service, replica: int, environ: Mapping[str, str]) -> int:
    return _int(environ, service.port_var, service.default_port) + REPLICA_PORT_STEP * replica


def base_url(environ: Mapping[str, str], replica: int = 0) -> str:
    gateway = SERVICES[0]
    host = url_host(bind_host(gateway, environ))
    return f"http://{host}:{port_of(gateway, replica, environ)}"


def url_lists(environ: Mapping[str, str]) -> dict[str, str]:
    """IDEAS_URLS and the like: every replica's base URL, comma-separated."""
    count = replicas(environ)
    lists = {}
    for service in SERVICES:
        if service.urls_var is None:
            continue
        host = url_host(bind_host(service, environ))
        urls = [f"http://{host}:{port_of(service, i, environ)}" for i in range(count)]
        lists[service.urls_var] = environ.get(service.urls_var) or ",".join(urls)
    return lists


def plan(environ: Mapping[str, str], venv_bin: Path) -> list[Process]:
    """Every process to run, replica by replica, each with the variables it needs set."""
    shared = url_lists(environ)
    processes = []
    for replica in range(replicas(environ)):
        for service in SERVICES:
            port = port_of(service, replica, environ)
            env = {**shared, service.port_var: str(port)}
            argv = (str(venv_bin / service.entry_point),)
            host = bind_host(service, environ)
            metrics = None
            if service.metrics_port_var is not None:
                metrics_port = (
                    _int(environ, service.metrics_port_var, service.default_metrics_port)
                    + REPLICA_PORT_STEP * replica
                )
                env[service.metrics_port_var] = str(metrics_port)
                metrics = (environ.get("SERVICE_HOST") or "127.0.0.1", metrics_port)
            processes.append(Process(f"{service.name}-{replica}", argv, host, port, env, metrics))
    _check_ports(processes)
    return processes


def _check_ports(processes: list[Process]) -> None:
    seen: dict[int, str] = {}
    for process in processes:
        for _, port in process.listeners():
            if not 0 < port < 65536:
                raise DevenvError(f"{process.name} would listen on port {port}, out of range")
            if port in seen:
                raise DevenvError(
                    f"{process.name} and {seen[port]} would both listen on port "
                    f"{port}: the base ports must differ and replicas use base + 10 * i"
                )
            seen[port] = process.name


def read_env_file(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        name, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep and not name.startswith("#"):
            values[name.strip()] = "".join(shlex.split(value))
    return values


def _write_private(path: Path, values: Mapping[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(
            "# Shared by every process of `make run`; kept so that restarts keep cursors valid.\n"
        )
        out.writelines(f"{name}={shlex.quote(value)}\n" for name, value in values.items())
    os.chmod(tmp, 0o600)  # O_CREAT's mode does not apply to a file left by an interrupted write
    tmp.replace(path)


def load_secrets(path: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """INTERNAL_TOKEN and CURSOR_SECRET: the environment's, else those kept in `path` (mode 600),
    generated there once when missing. Each must pass the rule the processes apply at start
    (at least 32 characters, no placeholder): refused here, by name, before anything starts,
    rather than as a crash loop of every process."""
    # The processes' own rule; the project is installed in the virtualenv this runs from.
    from libs.common.settings import secret_problem

    stored = read_env_file(path) if path.exists() else {}
    missing = [name for name in SECRET_NAMES if not environ.get(name) and not stored.get(name)]
    if missing:
        stored.update({name: secrets.token_urlsafe(32) for name in missing})
        _write_private(path, stored)
    elif path.exists() and path.stat().st_mode & 0o077:
        path.chmod(0o600)
    values = {name: environ.get(name) or stored[name] for name in SECRET_NAMES}
    for name, value in values.items():
        problem = secret_problem(name, value)
        if problem is not None:
            where = (
                "in the environment" if environ.get(name) else f"kept in {path} (fix or delete it)"
            )
            raise DevenvError(f"{problem} ({name} {where})")
    return values
