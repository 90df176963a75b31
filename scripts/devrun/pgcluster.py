"""The private PostgreSQL cluster under .run/pg, for when nothing answers at DATABASE_URL.

It uses trust authentication for the user of DATABASE_URL, listens on the URL's host and port
over TCP only, and keeps its data between runs. `postgres.json` under .run/ records it, so
that stopping touches this cluster and nothing else. When root, it runs as the `postgres`
account (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import glob
import hashlib
import os
import pwd
import re
import shutil
from pathlib import Path
from typing import Any

from .common import (
    DevenvError,
    is_root,
    log,
    process_alive,
    read_state,
    run_dir,
    run_tool,
    tail,
    write_state,
)
from .packages import apt_install
from .targets import PgTarget, is_local_host

NAME = "postgres"
ACCOUNT = "postgres"

SETTINGS = """# Written by scripts/devrun/pgcluster.py at every start of this private cluster.
listen_addresses = '{host}'
port = {port}
# TCP only: the distribution's socket directory may be missing or belong to another cluster.
unix_socket_directories = ''
# Five processes per replica, each with a pool, plus test runs with their own databases.
max_connections = 200
"""


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", str(path)))


def _is_bindir(path: Path) -> bool:
    return all((path / tool).exists() for tool in ("postgres", "initdb", "pg_ctl"))


def find_bindir(version: str | None = None) -> Path | None:
    """The newest server binaries, or those of `version` (that of an existing cluster)."""
    found = glob.glob("/usr/lib/postgresql/*/bin") + glob.glob("/usr/pgsql-*/bin")
    candidates = sorted((Path(path) for path in found), key=_version_key, reverse=True)
    if version:
        wanted = _version_key(Path(version))
        candidates.sort(key=lambda path: _version_key(path) != wanted)
    on_path = shutil.which("pg_ctl")
    candidates += [Path(on_path).parent] if on_path else []
    override = os.environ.get("PG_BINDIR")
    candidates = ([Path(override)] if override else []) + candidates
    return next((path for path in candidates if _is_bindir(path)), None)


def server_account() -> pwd.struct_passwd | None:
    """The account to run the cluster as: ourselves, or `postgres` when root (it refuses root)."""
    if not is_root():
        return None
    try:
        return pwd.getpwnam(ACCOUNT)
    except KeyError:
        pass
    log(f"creating the system account {ACCOUNT!r} to run the private PostgreSQL")
    useradd = ["useradd", "--system", "--user-group", "--no-create-home"]
    useradd += ["--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", ACCOUNT]
    if run_tool(useradd).returncode != 0:
        raise DevenvError(f"could not create the system account {ACCOUNT!r}")
    return pwd.getpwnam(ACCOUNT)


def as_account(account: pwd.struct_passwd | None) -> dict[str, Any]:
    """subprocess arguments that run a command as `account` (nothing when it is ourselves)."""
    if account is None:
        return {}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def _own_dir(path: Path, account: pwd.struct_passwd | None) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if account is not None:
        os.chown(path, account.pw_uid, account.pw_gid)
        path.chmod(0o700)


def _reachable(account: pwd.struct_passwd, path: Path) -> bool:
    check = ["test", "-w", path, "-a", "-x", path]
    return run_tool(check, capture_output=True, cwd="/", **as_account(account)).returncode == 0


def cluster_home(account: pwd.struct_passwd | None) -> Path:
    """`.run/pg`, or a directory outside the checkout that it links to.

    When root, the cluster runs as the postgres account, which cannot get into a checkout
    under a private directory such as /root; the cluster then lives under /var/tmp instead.
    """
    link = run_dir() / "pg"
    home = link.resolve() if link.is_symlink() else link
    _own_dir(home, account)
    if account is None or _reachable(account, home):
        return home
    if link.is_symlink() or any(home.iterdir()):
        raise DevenvError(f"the {account.pw_name} account cannot reach {home}")
    home.rmdir()
    digest = hashlib.sha256(str(run_dir()).encode()).hexdigest()[:12]
    outside = Path("/var/tmp") / f"ims-devrun-{digest}" / "pg"
    outside.parent.mkdir(parents=True, exist_ok=True)
    _own_dir(outside, account)
    link.symlink_to(outside)
    log(f"{account.pw_name} cannot reach {link}: the private cluster lives in {outside}")
    return outside


def _has_c_utf8() -> bool:
    try:
        result = run_tool(["locale", "-a"], capture_output=True)
    except OSError:
        return False
    return any(name.lower() in ("c.utf8", "c.utf-8") for name in result.stdout.split())


def init_cluster(
    bindir: Path, data: Path, target: PgTarget, account: pwd.struct_passwd | None
) -> None:
    if data.exists():
        shutil.rmtree(data)  # an initdb that did not finish: nothing in it to keep
    log(f"creating a private PostgreSQL cluster in {data}")
    locale = "C.UTF-8" if _has_c_utf8() else "C"
    initdb = [bindir / "initdb", "-D", data, "-U", target.user, "--auth=trust", "-E", "UTF8"]
    initdb.append(f"--locale={locale}")
    result = run_tool(initdb, cwd=data.parent, capture_output=True, **as_account(account))
    if result.returncode != 0:
        raise DevenvError(f"initdb failed:\n{result.stdout}{result.stderr}")
    with open(data / "postgresql.conf", "a") as conf:
        conf.write("\ninclude_if_exists = 'devrun.conf'\n")


def write_settings(data: Path, target: PgTarget, account: pwd.struct_passwd | None) -> None:
    path = data / "devrun.conf"
    path.write_text(SETTINGS.format(host=target.host, port=target.port))
    if account is not None:
        os.chown(path, account.pw_uid, account.pw_gid)


def _pg_ctl(state: dict[str, Any], *args: Any, **kwargs: Any) -> int:
    account = pwd.getpwnam(state["account"]) if state.get("account") else None
    data = Path(state["datadir"])
    cmd = [Path(state["bindir"]) / "pg_ctl", "-D", data, *args]
    try:
        return run_tool(cmd, cwd=data.parent, **as_account(account), **kwargs).returncode
    except OSError as err:  # binaries or data gone since: nothing of ours can be running
        log(f"cannot run pg_ctl: {err}")
        return 127


def _postmaster_pid(data: Path) -> int | None:
    try:
        return int((data / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def _running(state: dict[str, Any]) -> bool:
    # pg_ctl alone takes an unreaped (zombie) postmaster for a running one.
    pid = _postmaster_pid(Path(state["datadir"]))
    if pid is None or not process_alive(pid):
        return False
    return _pg_ctl(state, "status", capture_output=True) == 0


def _remove_stale_pid_file(data: Path) -> None:
    """Drop the lock file of a postmaster that died without removing it.

    PostgreSQL refuses to start while the pid in it exists, and where nothing reaps orphans
    (some containers' init) a killed postmaster stays as a zombie with that pid.
    """
    pid = _postmaster_pid(data)
    if pid is not None and not process_alive(pid):
        (data / "postmaster.pid").unlink(missing_ok=True)


def _server_binaries(version: str | None) -> Path:
    bindir = find_bindir(version)
    if bindir is None:
        apt_install(["postgresql"], "no PostgreSQL server binaries found")
        bindir = find_bindir(version)
    if bindir is None:
        raise DevenvError("no PostgreSQL server binaries found after installing them")
    return bindir


def start_private(target: PgTarget) -> None:
    where = f"{target.host}:{target.port}"
    if not is_local_host(target.host):
        raise DevenvError(f"nothing answers at DATABASE_URL ({where}), not on this machine")
    account = server_account()
    home = cluster_home(account)
    data = home / "data"
    version_file = data / "PG_VERSION"
    version = version_file.read_text().strip() if version_file.exists() else None
    bindir = _server_binaries(version)
    if version is None:
        init_cluster(bindir, data, target, account)
    log_file = home / "postgres.log"
    state: dict[str, Any] = {
        "datadir": str(data),
        "bindir": str(bindir),
        "log": str(log_file),
        "account": account.pw_name if account else None,
        "host": target.host,
        "port": target.port,
    }
    if _running(state):
        raise DevenvError(
            f"the private PostgreSQL in {data} runs, but not at {where} "
            f"(see {data / 'devrun.conf'}): stop it with scripts/devenv.py stop, or use its port"
        )
    _remove_stale_pid_file(data)
    write_settings(data, target, account)
    write_state(NAME, state)  # before starting: even an interrupted start can be stopped
    log(f"starting a private PostgreSQL at {where} ({bindir}, data in {data})")
    if _pg_ctl(state, "-s", "-l", log_file, "-w", "-t", "60", "start") != 0:
        raise DevenvError(
            f"the private PostgreSQL did not start; end of {log_file}:\n{tail(log_file)}"
        )


def stop_private() -> None:
    """Stop the recorded private cluster if it runs (fast shutdown, immediate as a last resort)."""
    state = read_state(NAME)
    if state is None or not _running(state):
        return
    log(f"stopping the private PostgreSQL ({state['datadir']})")
    if _pg_ctl(state, "-s", "-m", "fast", "-w", "-t", "30", "stop") != 0:
        _pg_ctl(state, "-s", "-m", "immediate", "-w", "-t", "30", "stop")


def describe() -> dict[str, Any] | None:
    state = read_state(NAME)
    return None if state is None else {**state, "running": _running(state)}
