#!/usr/bin/env python3
"""Run every process of the service in the foreground: the `make run` flow.

  supervise.py [--setup] [--lease PID] [--demo-json FILE]

--setup (what scripts/run.sh passes) first makes PostgreSQL and RabbitMQ answer (as
`devenv.py ensure` does), runs `ideasctl migrate`, then `ideasctl demo` unless DEMO=0 (its
JSON is kept in .run/demo.json). Then REPLICAS of each HTTP process start from VENV_BIN
(default .venv/bin), each line of their output prefixed with the process name. Once every
GET /readyz answers 200 it prints the base URL and the demo key. Ctrl-C or SIGTERM stops
every process, then the private servers started for this run (unless another run still
uses them), and it exits 0.

Without --setup the servers and the database are taken as ready; --lease PID names the
process whose servers lease to release on the way out, --demo-json the demo output to show.
Ports, secrets and the restart policy: docs/running.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

from devrun import layout, servers
from devrun.common import ROOT, DevenvError, run_dir
from devrun.supervisor import Output, Supervisor, banner, busy_ports


def venv_bin() -> Path:
    return Path(os.environ.get("VENV_BIN") or ROOT / ".venv" / "bin").absolute()


def run_ctl(output: Output, env: dict[str, str], *args: str) -> dict[str, Any]:
    """Run `ideasctl ARGS` and return the JSON object it prints (its stderr passes through)."""
    ctl = venv_bin() / "ideasctl"
    output.note(f"ideasctl {' '.join(args)}")
    try:
        result = subprocess.run(
            [str(ctl), *args], check=False, env=env, stdout=subprocess.PIPE, text=True
        )
    except OSError as err:
        raise DevenvError(f"cannot run {ctl}: {err} (is the project installed there?)") from err
    if result.returncode != 0:
        raise DevenvError(f"ideasctl {' '.join(args)} failed with exit status {result.returncode}")
    try:
        value = json.loads(result.stdout)
    except ValueError as err:
        raise DevenvError(
            f"ideasctl {' '.join(args)} printed no JSON: {result.stdout[:200]!r}"
        ) from err
    if not isinstance(value, dict):
        raise DevenvError(f"ideasctl {' '.join(args)} printed {value!r}, not a JSON object")
    return value


def write_private_json(path: Path, value: dict[str, Any]) -> None:
    # It holds a working API key: readable by its owner only.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(value, out, indent=2)
        out.write("\n")


def prepare_database(output: Output, env: dict[str, str]) -> dict[str, Any] | None:
    """Migrate, then create the demo workspace unless DEMO=0; the demo's JSON."""
    applied = run_ctl(output, env, "migrate").get("applied") or []
    output.note(f"migrations applied: {', '.join(map(str, applied)) or 'none, already up to date'}")
    if env.get("DEMO", "1") == "0":
        return None
    demo = run_ctl(output, env, "demo")
    write_private_json(run_dir() / "demo.json", demo)
    output.note(f"demo workspace {demo.get('workspaceId')} (kept in {run_dir() / 'demo.json'})")
    return demo


def _interrupted(*_: object) -> NoReturn:
    raise KeyboardInterrupt


def release(lease: int) -> None:
    # Nothing may cut the stop of the private servers short.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    servers.release(lease)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--setup", action="store_true", help="servers, migrations, demo first")
    parser.add_argument("--lease", type=int, help="release this servers lease when done")
    parser.add_argument("--demo-json", type=Path, help="show the demo key from this file")
    return parser.parse_args(argv)


def check_entry_points(processes: list[layout.Process]) -> None:
    # Checked up front: behind setpriv a missing program would look like a crash loop.
    missing = sorted({p.argv[0] for p in processes if not os.access(p.argv[0], os.X_OK)})
    if missing:
        raise DevenvError(
            f"not found: {', '.join(missing)} (is the project installed in VENV_BIN?)"
        )


def run(args: argparse.Namespace, output: Output, processes: list[layout.Process]) -> int:
    check_entry_points(processes)
    busy = busy_ports(processes)
    if busy:
        raise DevenvError(f"already in use: {', '.join(busy)}; is another `make run` running?")
    env = dict(os.environ)
    if args.setup:
        env.update(servers.ensure(args.lease))
    env.update(layout.load_secrets(run_dir() / "secrets.env", env))
    if args.setup:
        demo = prepare_database(output, env)
    else:
        demo = json.loads(args.demo_json.read_text()) if args.demo_json else None
    ready_lines = banner(layout.base_url(env), demo)
    return asyncio.run(Supervisor(processes, env, output, ready_lines).run())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.setup and args.lease is None:
        args.lease = os.getpid()
    # Until the event loop takes the signals over, SIGTERM interrupts the set-up as Ctrl-C does.
    signal.signal(signal.SIGTERM, _interrupted)
    output = Output(sys.stdout.buffer, [])
    try:
        processes = layout.plan(os.environ, venv_bin())
        output = Output(sys.stdout.buffer, [process.name for process in processes])
        return run(args, output, processes)
    except DevenvError as err:
        output.note(f"error: {err}")
        return 1
    except KeyboardInterrupt:
        output.note("interrupted")
        return 130
    finally:
        if args.lease is not None:
            release(args.lease)


if __name__ == "__main__":
    sys.exit(main())
