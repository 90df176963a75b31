"""`ideasctl`: the admin CLI. Each command prints one JSON object; errors go to stderr, exit 1."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import orjson
import psycopg2
import psycopg2.extras

from libs.common.settings import SettingsError
from services.gateway.settings import GatewaySettings as Settings

from . import admin, customers_commands, ideas_commands, similar_commands
from .database import connect
from .migrate import migrate

COMMAND_GROUPS = (ideas_commands, customers_commands, similar_commands)

psycopg2.extras.register_uuid()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ideasctl", description="Idea Management Service admin CLI")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="apply database migrations (idempotent)")

    ws = sub.add_parser("workspace", help="workspaces").add_subparsers(dest="action", required=True)
    wc = ws.add_parser("create")
    wc.add_argument("--name", required=True)
    wc.add_argument("--plan", default="starter")
    wc.add_argument("--rate-limit", type=int, dest="rate_limit")
    wc.add_argument("--inbox-mode", default="direct", dest="inbox_mode")

    key = sub.add_parser("key", help="API keys").add_subparsers(dest="action", required=True)
    kc = key.add_parser("create")
    kc.add_argument("--workspace", required=True)
    kc.add_argument("--name", default="API key")
    kc.add_argument("--scopes", default="all")
    kc.add_argument("--kind", default="production")
    kr = key.add_parser("revoke")
    kr.add_argument("--id", required=True)

    for group in COMMAND_GROUPS:
        group.add_parsers(sub)
    return p


def run(argv: list[str], settings: Settings) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    if args.command == "migrate":
        return {"applied": migrate(settings.database_url)}
    handlers: dict[tuple[str, str | None], Callable[[Any], dict[str, Any]]] = {
        ("workspace", "create"): lambda c: admin.create_workspace(
            c, args.name, args.plan, args.rate_limit, args.inbox_mode
        ),
        ("key", "create"): lambda c: admin.create_key(
            c, args.workspace, args.name, args.scopes, args.kind
        ),
        ("key", "revoke"): lambda c: admin.revoke_key(c, args.id),
    }
    handler = handlers.get((args.command, getattr(args, "action", None)))
    if handler is None:
        for group in COMMAND_GROUPS:
            result = group.run(args, settings)
            if result is not None:
                return result
        raise admin.AdminError(f"'{args.command}' is not a command")
    with connect(settings) as conn:
        return handler(conn)


def main(argv: list[str] | None = None) -> None:
    try:
        settings = Settings.from_env(require_secrets=False)  # it signs and serves nothing
        result = run(sys.argv[1:] if argv is None else argv, settings)
    except (admin.AdminError, SettingsError, psycopg2.Error) as err:
        print(f"ideasctl: {err}".strip(), file=sys.stderr)
        sys.exit(1)
    sys.stdout.write(orjson.dumps(result).decode() + "\n")


if __name__ == "__main__":
    main()
