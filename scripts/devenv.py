#!/usr/bin/env python3
"""Make PostgreSQL and RabbitMQ answer for `make run` and `make test`.

  devenv.py ensure [--lease PID]  both servers answer at DATABASE_URL / AMQP_URL and the
                                  database exists; prints `export ...` lines (also .run/env)
  devenv.py release --lease PID   drop that lease; the last one stops the private servers
  devenv.py exec [--] CMD ...     ensure, run CMD with the URLs exported, release; exits
                                  with CMD's status (the `make test` set-up)
  devenv.py stop                  stop the private servers, whoever still uses them
  devenv.py status                what is recorded under .run/, as JSON

Servers already answering at the URLs (the system's, say) are used as they are and never
stopped. Only when nothing answers on this machine are private ones started under .run/,
after installing the distribution packages when root and they are missing. Progress goes to
stderr. Standard library only: this runs before the project's dependencies are installed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys

from devrun import servers
from devrun.common import DevenvError, log
from devrun.targets import export_lines


def run_with_servers(command: list[str]) -> int:
    """Ensure, run `command` with the URLs in its environment, release; its exit status."""
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise DevenvError("exec needs a command")
    urls = servers.ensure(os.getpid())
    try:
        # The terminal sends Ctrl-C to the command too: outlive it, to release the lease.
        signal.signal(signal.SIGINT, lambda *_: None)
        try:
            process = subprocess.Popen(command, env={**os.environ, **urls})
        except OSError as err:
            log(f"cannot run {command[0]}: {err}")
            return 127
        signal.signal(signal.SIGTERM, lambda *_: process.terminate())
        status = process.wait()
    finally:
        servers.release(os.getpid())
    return 128 - status if status < 0 else status


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ensure = sub.add_parser("ensure", help="make both servers answer")
    ensure.add_argument("--lease", type=int, help="pid of the process using the servers")
    release = sub.add_parser("release", help="drop a lease")
    release.add_argument("--lease", type=int, required=True)
    run = sub.add_parser("exec", help="ensure, run a command, release")
    run.add_argument("cmd", nargs=argparse.REMAINDER)
    sub.add_parser("stop", help="stop the private servers")
    sub.add_parser("status", help="show the private servers and leases")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.command == "ensure":
            sys.stdout.write(export_lines(servers.ensure(args.lease)))
        elif args.command == "release":
            servers.release(args.lease)
        elif args.command == "exec":
            return run_with_servers(args.cmd)
        elif args.command == "stop":
            servers.stop()
        else:
            print(json.dumps(servers.status(), indent=2))
    except DevenvError as err:
        log(f"error: {err}")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
