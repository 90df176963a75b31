"""RabbitMQ: check AMQP_URL, or run a private node under .run/rabbitmq.

The private node is isolated from any system node on the machine: its own node name, data,
logs, configuration (the system's /etc/rabbitmq would put it on the system's port), plugins
(none: a management plugin would clash on port 15672), Erlang cookie (its own $HOME) and its
own epmd on a free port, so that stopping it leaves no epmd daemon behind. `rabbitmq.json`
under .run/ records its processes, so that stopping touches this node and nothing else.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from . import amqp
from .common import (
    DevenvError,
    free_ports,
    log,
    process_alive,
    process_start_time,
    read_state,
    run_dir,
    settle,
    stop_group,
    tail,
    tcp_open,
    write_state,
)
from .packages import apt_install
from .targets import AmqpTarget, is_local_host, loopback_address

NAME = "rabbitmq"
NODENAME = "ims@localhost"
START_TIMEOUT_S = 120

CONFIG = """# Written by scripts/devrun/rabbitmq.py at every start of this private node.
# The default user and vhost are those of AMQP_URL; they are created on the first start.
default_user = {user}
default_pass = {password}
default_vhost = {vhost}
"""

# Processes we start and keep until the node is stopped (see stop_private).
_spawned: list[subprocess.Popen[bytes]] = []


def probe(target: AmqpTarget) -> tuple[str, str | None]:
    """('ready' | 'down' | 'refused', problem or None)."""
    if not tcp_open(target.host, target.port):
        return "down", None
    try:
        amqp.check(
            target.host, target.port, target.user, target.password, target.vhost, tls=target.tls
        )
    except (OSError, amqp.AmqpError) as err:
        where = f"{target.host}:{target.port}"
        return "refused", f"something answers at AMQP_URL ({where}), but an AMQP login fails: {err}"
    return "ready", None


def ensure(target: AmqpTarget, started: list[str]) -> None:
    """Make AMQP_URL accept a login, starting a private node if nothing answers."""
    if settle(lambda: probe(target), wait_s=10) == "ready":
        return
    recorded = read_state(NAME)
    if recorded is not None and node_alive(recorded):
        if recorded["port"] != target.port:
            raise DevenvError(
                f"the private RabbitMQ node runs on port {recorded['port']}, not {target.port}: "
                "stop it with scripts/devenv.py stop, or use its port"
            )
        log("the private RabbitMQ node is still starting: waiting for it")
    else:
        stop_private()  # what a node that died may have left behind: its epmd
        recorded = start_private(target)
        started.append(NAME)
    wait_ready(target, recorded)


# --- the private node ------------------------------------------------------------------------


def find_server() -> Path | None:
    # Not the Debian /usr/sbin wrapper: it switches to the rabbitmq account, moves to
    # /var/lib/rabbitmq and sends the output to /var/log; the script it wraps takes our settings.
    found = ["/usr/lib/rabbitmq/bin/rabbitmq-server"]
    found += sorted(glob.glob("/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-server"))
    found += [shutil.which("rabbitmq-server") or ""]
    return next((Path(path) for path in found if path and Path(path).exists()), None)


def find_epmd() -> Path | None:
    found = [shutil.which("epmd") or "", *sorted(glob.glob("/usr/lib/erlang/erts-*/bin/epmd"))]
    return next((Path(path) for path in found if path and Path(path).exists()), None)


def write_config(home: Path, target: AmqpTarget) -> None:
    for name in ("home", "mnesia", "log", "conf.d"):
        (home / name).mkdir(parents=True, exist_ok=True)
    (home / "rabbitmq.conf").write_text(
        CONFIG.format(user=target.user, password=target.password, vhost=target.vhost)
    )
    (home / "advanced.config").write_text("[].\n")
    (home / "enabled_plugins").write_text("[].\n")
    (home / "rabbitmq-env.conf").write_text("# the settings come from the environment\n")


def node_env(
    home: Path, target: AmqpTarget, epmd_port: int, dist_port: int, nodename: str = NODENAME
) -> dict[str, str]:
    # A developer's own RABBITMQ_* and ERL_* settings describe their node, not this one.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RABBITMQ_", "ERL_"))}
    env.update(
        HOME=str(home / "home"),  # the Erlang cookie is $HOME/.erlang.cookie
        ERL_EPMD_PORT=str(epmd_port),
        ERL_CRASH_DUMP=str(home / "erl_crash.dump"),
        RABBITMQ_NODENAME=nodename,
        RABBITMQ_NODE_IP_ADDRESS=loopback_address(target.host),
        RABBITMQ_NODE_PORT=str(target.port),
        # The default (AMQP port + 20000) is out of range for ports above 45535.
        RABBITMQ_DIST_PORT=str(dist_port),
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}",
        RABBITMQ_MNESIA_BASE=str(home / "mnesia"),
        RABBITMQ_LOG_BASE=str(home / "log"),
        RABBITMQ_PID_FILE=str(home / "rabbitmq.pid"),
        RABBITMQ_CONF_ENV_FILE=str(home / "rabbitmq-env.conf"),
        RABBITMQ_CONFIG_FILE=str(home / "rabbitmq.conf"),
        RABBITMQ_CONFIG_FILES=str(home / "conf.d"),
        RABBITMQ_ADVANCED_CONFIG_FILE=str(home / "advanced.config"),
        RABBITMQ_ENABLED_PLUGINS_FILE=str(home / "enabled_plugins"),
    )
    return env


def _spawn(cmd: list[Any], log_file: Path, env: dict[str, str], cwd: Path) -> int:
    # Its own session: a Ctrl-C at the terminal must not reach it; devenv stops it in order.
    with open(log_file, "ab") as out:
        process = subprocess.Popen(
            [str(part) for part in cmd],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    _spawned.append(process)
    return process.pid


def _binaries() -> tuple[Path, Path]:
    server, epmd = find_server(), find_epmd()
    if server is None or epmd is None:
        apt_install(["rabbitmq-server"], "no RabbitMQ server found")
        server, epmd = find_server(), find_epmd()
    if server is None or epmd is None:
        raise DevenvError("no RabbitMQ server (or no epmd) found after installing it")
    return server, epmd


def _start_epmd(epmd: Path, port: int, home: Path, env: dict[str, str]) -> int:
    pid = _spawn([epmd, "-port", port, "-address", "127.0.0.1"], home / "epmd.log", env, home)
    deadline = time.monotonic() + 10
    while not tcp_open("127.0.0.1", port):
        if time.monotonic() > deadline or not process_alive(pid):
            raise DevenvError(f"epmd did not start; see {home / 'epmd.log'}")
        time.sleep(0.1)
    return pid


def start_private(target: AmqpTarget) -> dict[str, Any]:
    where = f"{target.host}:{target.port}"
    if target.tls:
        raise DevenvError(f"nothing answers at AMQP_URL ({where}); a private node speaks amqp://")
    if not is_local_host(target.host):
        raise DevenvError(f"nothing answers at AMQP_URL ({where}), which is not on this machine")
    server, epmd = _binaries()
    home = run_dir() / "rabbitmq"
    write_config(home, target)
    epmd_port, dist_port = free_ports(
        2, avoid={target.port}, what="epmd and the Erlang distribution"
    )
    env = node_env(home, target, epmd_port, dist_port)
    log(f"starting a private RabbitMQ node {NODENAME} at {where} (data in {home})")
    epmd_pid = _start_epmd(epmd, epmd_port, home, env)
    state: dict[str, Any] = {"home": str(home), "host": target.host, "port": target.port}
    state |= {"nodename": NODENAME, "epmd_port": epmd_port, "dist_port": dist_port}
    state |= {"epmd_pid": epmd_pid, "epmd_start_time": process_start_time(epmd_pid)}
    write_state(NAME, state)  # before the node: even an interrupted start can be stopped
    pid = _spawn([server], home / "server.log", env, home)
    state |= {"pid": pid, "start_time": process_start_time(pid)}
    write_state(NAME, state)
    return state


def _log_tails(state: dict[str, Any]) -> str:
    home = Path(state["home"])
    logs = [home / "server.log", home / "log" / f"{NODENAME}.log"]
    return "\n".join(f"--- {path}\n{tail(path)}" for path in logs if path.exists())


def wait_ready(target: AmqpTarget, state: dict[str, Any]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        status, problem = probe(target)
        if status == "ready":
            return
        if not node_alive(state):
            raise DevenvError(
                f"the private RabbitMQ node stopped while starting:\n{_log_tails(state)}"
            )
        if time.monotonic() > deadline:
            detail = problem or "nothing listens yet"
            raise DevenvError(
                f"the private RabbitMQ node is not ready after {START_TIMEOUT_S}s: {detail}"
            )
        time.sleep(0.5)


def _beam_pid(state: dict[str, Any]) -> int | None:
    """The Erlang VM's pid, if it runs in the session we started (its wrapper may be gone)."""
    try:
        pid = int((Path(state["home"]) / "rabbitmq.pid").read_text().strip())
        return pid if os.getpgid(pid) == state.get("pid") else None
    except (OSError, ValueError):
        return None


def node_alive(state: dict[str, Any]) -> bool:
    if "pid" not in state:
        return False
    return process_alive(state["pid"], state.get("start_time")) or _beam_pid(state) is not None


def stop_private() -> None:
    """Stop the recorded node (SIGTERM is RabbitMQ's orderly shutdown), then its epmd."""
    state = read_state(NAME)
    if state is None:
        return
    if node_alive(state):
        log(f"stopping the private RabbitMQ node {state['nodename']}")
        stop_group(state["pid"], "the private RabbitMQ node", timeout=60)
    if process_alive(state["epmd_pid"], state.get("epmd_start_time")):
        stop_group(state["epmd_pid"], "the private epmd", timeout=5)


def describe() -> dict[str, Any] | None:
    state = read_state(NAME)
    return None if state is None else {**state, "running": node_alive(state)}
