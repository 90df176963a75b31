"""devenv's pure parts: URL handling, the AMQP login check and the leases on private servers."""

import os
import shlex
import struct
from pathlib import Path

import pytest
from devrun import amqp, leases, packages, servers
from devrun.common import DevenvError, process_alive, process_start_time
from devrun.targets import AmqpTarget, PgTarget, export_lines, is_local_host, resolve_urls


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("IMS_RUN_DIR", str(tmp_path / ".run"))
    return tmp_path / ".run"


def test_urls_default_to_the_documented_ones() -> None:
    """Unset or empty variables give the contract's defaults."""
    assert resolve_urls({"DATABASE_URL": ""}) == {
        "DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/ideas",
        "AMQP_URL": "amqp://guest:guest@127.0.0.1:5672/",
    }


def test_database_url_parts() -> None:
    """Host, port, user and database come from the URL; the admin URL swaps the database."""
    target = PgTarget.parse("postgresql://postgres@127.0.0.1:55432/ideas?sslmode=disable")
    assert (target.host, target.port, target.user, target.database) == (
        "127.0.0.1",
        55432,
        "postgres",
        "ideas",
    )
    assert target.with_database("postgres") == (
        "postgresql://postgres@127.0.0.1:55432/postgres?sslmode=disable"
    )


def test_database_url_port_defaults_to_5432() -> None:
    """No port in the URL means PostgreSQL's."""
    assert PgTarget.parse("postgres://u:p@db.example/app").port == 5432


@pytest.mark.parametrize(
    "url", ["mysql://root@127.0.0.1/ideas", "postgresql:///ideas", "postgresql://h:x/ideas"]
)
def test_unusable_database_urls_are_refused(url: str) -> None:
    """A wrong scheme, no host or a bad port is an error naming DATABASE_URL."""
    with pytest.raises(DevenvError, match="DATABASE_URL"):
        PgTarget.parse(url)


@pytest.mark.parametrize(
    ("url", "vhost"),
    [
        ("amqp://guest:guest@127.0.0.1:5672/", "/"),
        ("amqp://guest:guest@127.0.0.1:5672", "/"),
        ("amqp://guest:guest@127.0.0.1:5672/%2f", "/"),
        ("amqp://guest:guest@127.0.0.1:5672/ims-test", "ims-test"),
    ],
)
def test_amqp_vhost_is_taken_from_the_path(url: str, vhost: str) -> None:
    """The vhost is used as is; an empty path means the default vhost "/"."""
    assert AmqpTarget.parse(url).vhost == vhost


def test_amqp_url_credentials_default_to_guest() -> None:
    """No credentials in the URL means guest/guest, as the clients assume."""
    target = AmqpTarget.parse("amqp://127.0.0.1:55672/")
    assert (target.user, target.password, target.port) == ("guest", "guest", 55672)


def test_export_lines_survive_the_shell() -> None:
    """The printed lines are safe to eval, whatever the URL contains."""
    url = "postgresql://u:p'a s$@127.0.0.1/db"
    line = export_lines({"DATABASE_URL": url})
    assert line.startswith("export DATABASE_URL=")
    assert shlex.split(line.removeprefix("export "))[0] == f"DATABASE_URL={url}"


def test_only_loopback_hosts_get_private_servers() -> None:
    """A private server may only stand in for an address of this machine."""
    assert is_local_host("127.0.0.1")
    assert is_local_host("::1")
    assert not is_local_host("192.0.2.10")


class ScriptedBroker:
    """Stands in for a socket to a broker that answers with the given method frames."""

    def __init__(self, *frames: bytes) -> None:
        self.incoming = b"".join(frames)
        self.sent = b""

    def sendall(self, data: bytes) -> None:
        self.sent += data

    def recv(self, size: int) -> bytes:
        data, self.incoming = self.incoming[:size], self.incoming[size:]
        return data


START = amqp.method_frame(amqp.START, b"\x00\x09" + amqp.table({}) + amqp.longstr(b"PLAIN"))
TUNE = amqp.method_frame(amqp.TUNE, struct.pack(">HIH", 2047, 131072, 60))
OPEN_OK = amqp.method_frame(amqp.OPEN_OK, amqp.shortstr(""))
CLOSE_OK = amqp.method_frame(amqp.CLOSE_OK)


def close(code: int, text: str) -> bytes:
    arguments = struct.pack(">H", code) + amqp.shortstr(text) + struct.pack(">HH", 10, 11)
    return amqp.method_frame(amqp.CLOSE, arguments)


def test_amqp_login_goes_through_to_open_ok() -> None:
    """A broker that accepts the login and the vhost passes the check."""
    broker = ScriptedBroker(START, TUNE, OPEN_OK, CLOSE_OK)
    amqp.login(broker, "guest", "guest", "/")
    assert broker.sent.startswith(amqp.PROTOCOL_HEADER)
    assert b"\x00guest\x00guest" in broker.sent
    assert amqp.shortstr("/") + amqp.shortstr("") in broker.sent


def test_amqp_login_refusal_carries_the_reason() -> None:
    """Wrong credentials surface with the broker's own reply text."""
    broker = ScriptedBroker(START, close(403, "ACCESS_REFUSED - Login was refused"))
    with pytest.raises(amqp.AmqpError, match="403 ACCESS_REFUSED"):
        amqp.login(broker, "guest", "wrong", "/")


def test_amqp_unknown_vhost_is_refused() -> None:
    """A vhost the broker does not have fails the check, naming it."""
    broker = ScriptedBroker(START, TUNE, close(530, "NOT_ALLOWED - vhost nope not found"))
    with pytest.raises(amqp.AmqpError, match=r"vhost 'nope'.*530"):
        amqp.login(broker, "guest", "guest", "nope")


def test_something_else_on_the_port_is_not_a_broker() -> None:
    """A peer that hangs up (PostgreSQL, say) fails the check."""
    with pytest.raises(amqp.AmqpError, match="closed"):
        amqp.login(ScriptedBroker(), "guest", "guest", "/")


def test_a_lease_counts_while_its_process_runs(run_dir: Path) -> None:
    """The lease of a running process is live; manual leases always are."""
    assert leases.add(os.getpid())
    assert not leases.add(os.getpid())
    leases.add(None)
    assert set(leases.live()) == {str(os.getpid()), leases.MANUAL}


def test_a_lease_of_a_vanished_process_is_dropped(run_dir: Path) -> None:
    """A run killed outright leaves a lease that no longer counts, even if its pid is reused."""
    leases.add(os.getpid())
    (run_dir / "leases" / str(os.getpid())).write_text("1")  # our pid, another start time
    assert leases.live() == []
    assert not (run_dir / "leases" / str(os.getpid())).exists()


def test_release_stops_private_servers_only_after_the_last_lease(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run ending while another still uses the servers leaves them running."""
    stops: list[str] = []
    monkeypatch.setattr(servers, "stop_private_servers", lambda: stops.append("stop"))
    leases.add(os.getpid())
    leases.add(os.getppid())
    servers.release(os.getppid())
    assert stops == []
    servers.release(os.getpid())
    assert stops == ["stop"]


def test_process_identity_includes_its_start_time() -> None:
    """The same pid with another start time is another process."""
    start = process_start_time(os.getpid())
    assert start is not None
    assert process_alive(os.getpid(), start)
    assert not process_alive(os.getpid(), start + "0")


def test_services_stay_stopped_only_while_installing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A temporary policy-rc.d answers 101 during the install and is gone afterwards."""
    policy = tmp_path / "policy-rc.d"
    monkeypatch.setattr(packages, "POLICY_RC_D", policy)
    with packages.services_left_stopped():
        assert "exit 101" in policy.read_text()
        assert os.access(policy, os.X_OK)
    assert not policy.exists()


def test_an_existing_policy_rc_d_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A policy the machine already has stays as it is."""
    policy = tmp_path / "policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 0\n")
    monkeypatch.setattr(packages, "POLICY_RC_D", policy)
    with packages.services_left_stopped():
        pass
    assert policy.read_text() == "#!/bin/sh\nexit 0\n"


def test_without_root_the_error_names_the_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is installed without root; the message says what to install."""
    monkeypatch.setattr(packages, "is_root", lambda: False)
    with pytest.raises(DevenvError, match="apt-get install -y rabbitmq-server"):
        packages.apt_install(["rabbitmq-server"], "no RabbitMQ server found")
