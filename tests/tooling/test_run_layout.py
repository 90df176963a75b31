"""Ports, URL lists and shared secrets of the processes `make run` starts."""

import stat
from pathlib import Path

import pytest
from devrun import layout
from devrun.common import DevenvError

VENV_BIN = Path("/venv/bin")


def by_name(environ: dict[str, str]) -> dict[str, layout.Process]:
    return {process.name: process for process in layout.plan(environ, VENV_BIN)}


def test_one_replica_uses_the_base_ports() -> None:
    """Without REPLICAS each process runs once, on its documented default port."""
    ports = {name: process.port for name, process in by_name({}).items()}
    assert ports == {
        "gateway-0": 8080,
        "ideas-0": 8081,
        "customers-0": 8082,
        "webhooks-0": 8083,
        "analytics-0": 8084,
        "mcp-0": 8085,
        "similar-0": 8087,
        "similar-embedder-0": 8086,
    }


def test_two_replicas_use_base_plus_ten() -> None:
    """Replica i listens on base + 10 * i."""
    ports = {name: process.port for name, process in by_name({"REPLICAS": "2"}).items()}
    assert ports == {
        "gateway-0": 8080,
        "ideas-0": 8081,
        "customers-0": 8082,
        "webhooks-0": 8083,
        "analytics-0": 8084,
        "gateway-1": 8090,
        "ideas-1": 8091,
        "customers-1": 8092,
        "webhooks-1": 8093,
        "analytics-1": 8094,
        "mcp-0": 8085,
        "mcp-1": 8095,
        "similar-0": 8087,
        "similar-1": 8097,
        "similar-embedder-0": 8086,
        "similar-embedder-1": 8096,
    }


def test_gateway_metrics_listen_on_their_own_port() -> None:
    """Each gateway replica serves /metrics on GATEWAY_METRICS_PORT + 10 * i, on SERVICE_HOST."""
    processes = by_name({"REPLICAS": "2", "SERVICE_HOST": "0.0.0.0"})
    assert processes["gateway-0"].metrics == ("0.0.0.0", 8089)
    assert processes["gateway-1"].metrics == ("0.0.0.0", 8099)
    assert processes["gateway-1"].env["GATEWAY_METRICS_PORT"] == "8099"
    assert processes["ideas-0"].metrics is None and "GATEWAY_METRICS_PORT" not in (
        processes["ideas-0"].env
    )
    moved = by_name({"GATEWAY_METRICS_PORT": "9185"})
    assert moved["gateway-0"].metrics == ("127.0.0.1", 9185)


def test_a_metrics_port_clashing_with_a_process_is_refused() -> None:
    """The gateway's metrics port counts among the ports that must not clash."""
    with pytest.raises(DevenvError, match="port 8081"):
        layout.plan({"GATEWAY_METRICS_PORT": "8081"}, VENV_BIN)


def test_base_ports_come_from_the_environment() -> None:
    """A moved base port moves every replica of that process."""
    processes = by_name({"REPLICAS": "2", "GATEWAY_PORT": "9000", "IDEAS_PORT": "9001"})
    assert (processes["gateway-1"].port, processes["ideas-1"].port) == (9010, 9011)


def test_every_process_gets_every_url_list() -> None:
    """All processes know every replica of every internal service."""
    processes = layout.plan({"REPLICAS": "2"}, VENV_BIN)
    expected = {
        "IDEAS_URLS": "http://127.0.0.1:8081,http://127.0.0.1:8091",
        "CUSTOMERS_URLS": "http://127.0.0.1:8082,http://127.0.0.1:8092",
        "WEBHOOKS_URLS": "http://127.0.0.1:8083,http://127.0.0.1:8093",
        "ANALYTICS_URLS": "http://127.0.0.1:8084,http://127.0.0.1:8094",
        "MCP_URLS": "http://127.0.0.1:8085,http://127.0.0.1:8095",
        "SIMILAR_URLS": "http://127.0.0.1:8087,http://127.0.0.1:8097",
    }
    for process in processes:
        assert {name: process.env[name] for name in expected} == expected


def test_each_replica_gets_its_own_port_variable() -> None:
    """A replica's port reaches it through its service's usual port variable."""
    processes = by_name({"REPLICAS": "2"})
    assert processes["ideas-1"].env["IDEAS_PORT"] == "8091"
    assert processes["gateway-1"].env["GATEWAY_PORT"] == "8090"
    assert "GATEWAY_PORT" not in processes["ideas-1"].env


def test_entry_points_come_from_the_venv() -> None:
    """Each process runs its console entry point from VENV_BIN."""
    processes = by_name({})
    assert processes["gateway-0"].argv == ("/venv/bin/ims-gateway",)
    assert processes["analytics-0"].argv == ("/venv/bin/ims-analytics",)
    assert processes["mcp-0"].argv == ("/venv/bin/ims-mcp",)
    assert processes["similar-0"].argv == ("/venv/bin/ims-similar",)
    assert processes["similar-embedder-0"].argv == ("/venv/bin/ims-similar-embedder",)
    assert processes["similar-embedder-0"].env["EMBEDDER_PORT"] == "8086"


def test_url_list_already_set_is_kept() -> None:
    """An explicit IDEAS_URLS (services elsewhere) is passed on unchanged."""
    processes = layout.plan({"IDEAS_URLS": "http://ideas.internal:80"}, VENV_BIN)
    assert {process.env["IDEAS_URLS"] for process in processes} == {"http://ideas.internal:80"}


def test_wildcard_listeners_are_reached_on_loopback() -> None:
    """SERVICE_HOST=0.0.0.0 binds everywhere, but the URL lists and checks use 127.0.0.1."""
    processes = by_name({"SERVICE_HOST": "0.0.0.0", "GATEWAY_HOST": "::"})
    assert processes["ideas-0"].bind_host == "0.0.0.0"
    assert processes["ideas-0"].env["IDEAS_URLS"] == "http://127.0.0.1:8081"
    assert processes["ideas-0"].ready_url == "http://127.0.0.1:8081/readyz"
    assert processes["gateway-0"].ready_url == "http://[::1]:8080/readyz"


def test_base_url_is_the_first_gateway() -> None:
    """The printed base URL is GATEWAY_HOST:GATEWAY_PORT."""
    assert layout.base_url({"GATEWAY_HOST": "127.0.0.2", "GATEWAY_PORT": "9999"}) == (
        "http://127.0.0.2:9999"
    )


def test_clashing_ports_are_refused() -> None:
    """A base port on another process's replica port is an error, not a crash loop."""
    with pytest.raises(DevenvError, match="port 8090"):
        layout.plan({"REPLICAS": "2", "IDEAS_PORT": "8090"}, VENV_BIN)


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_replicas_must_be_a_positive_number(value: str) -> None:
    """REPLICAS=0 or nonsense fails fast, naming the variable."""
    with pytest.raises(DevenvError, match="REPLICAS"):
        layout.plan({"REPLICAS": value}, VENV_BIN)


KEPT = "kept-Qm7v2Lx9Zr4Tn8Wb3Hc6Jd1Fs5Gk0Py"


@pytest.mark.parametrize("name", ["INTERNAL_TOKEN", "CURSOR_SECRET"])
def test_unusable_secrets_are_refused_before_anything_starts(tmp_path: Path, name: str) -> None:
    """A short or placeholder secret, set or kept, stops `make run` at once, naming it."""
    path = tmp_path / "secrets.env"
    with pytest.raises(DevenvError, match=f"{name} is too short.*environment"):
        layout.load_secrets(path, {name: "short"})
    path.write_text(f"{name}=CHANGE_ME-CHANGE_ME-CHANGE_ME-CHANGE_ME\n")
    with pytest.raises(DevenvError, match=f"{name} is a placeholder.*fix or delete"):
        layout.load_secrets(path, {})


def test_secrets_are_generated_once_into_a_private_file(tmp_path: Path) -> None:
    """Missing secrets are generated into a mode-600 file and reused on the next run."""
    path = tmp_path / ".run" / "secrets.env"
    first = layout.load_secrets(path, {})
    assert set(first) == {"INTERNAL_TOKEN", "CURSOR_SECRET"}
    assert all(len(value) >= 32 for value in first.values())
    assert first["INTERNAL_TOKEN"] != first["CURSOR_SECRET"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert layout.load_secrets(path, {}) == first


def test_secrets_from_the_environment_win(tmp_path: Path) -> None:
    """Secrets set in the environment are used as they are and not written anywhere."""
    path = tmp_path / "secrets.env"
    environ = {
        "INTERNAL_TOKEN": "token-from-env-" + "k" * 18 + "0123456789",
        "CURSOR_SECRET": "cursor-from-env-" + "q" * 17 + "0123456789",
    }
    assert layout.load_secrets(path, environ) == environ
    assert not path.exists()


def test_only_the_missing_secret_is_added(tmp_path: Path) -> None:
    """A file holding one secret keeps it and gains the other."""
    path = tmp_path / "secrets.env"
    path.write_text(f"INTERNAL_TOKEN={KEPT}\n")
    secrets = layout.load_secrets(path, {})
    assert secrets["INTERNAL_TOKEN"] == KEPT
    assert layout.read_env_file(path) == secrets


def test_a_readable_secrets_file_is_made_private(tmp_path: Path) -> None:
    """A secrets file left readable by others is tightened to 600."""
    path = tmp_path / "secrets.env"
    path.write_text(f"INTERNAL_TOKEN={KEPT}\nCURSOR_SECRET={KEPT}x\n")
    path.chmod(0o644)
    layout.load_secrets(path, {})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
