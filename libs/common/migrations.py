"""Versioned plain-SQL migrations, one folder per service schema, applied under an advisory lock.

Files are `services/<service>/migrations/NNNN_name.sql`; each is applied once, in its own
transaction, and recorded in `public.ims_schema_migrations` as `<service>/NNNN_name`. The shared
SQL of `libs/common/migrations` comes first (`common/...`), then each service's. Concurrent
starts are safe: the advisory lock serializes them and the second finds nothing left to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import psycopg2

ROOT = Path(__file__).resolve().parents[2]
_LOCK_ID = 0x1D_EA5  # any constant shared by every migrator of this database
# Order matters: the analytics role is granted read access to schemas that exist by then.
SERVICES = ("gateway", "ideas", "customers", "webhooks", "analytics")
OUTBOX_SCHEMAS = ("ideas", "customers", "webhooks")


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str


def pending_sources() -> list[Migration]:
    """Every migration of the project in the order it must be applied."""
    here = Path(__file__).parent / "migrations"
    # Shared SQL every service's queries use (the date-time form of libs/common/render.py).
    out = [Migration("common/0001_render", (here / "render.sql").read_text())]
    template = (here / "outbox.sql").read_text()
    for service in SERVICES:
        out.append(Migration(f"{service}/0000_schema", f"CREATE SCHEMA IF NOT EXISTS {service};"))
        if service in OUTBOX_SCHEMAS:
            out.append(Migration(f"{service}/0000_outbox", template.format(schema=service)))
        folder = ROOT / "services" / service / "migrations"
        for path in sorted(folder.glob("*.sql")) if folder.is_dir() else []:
            out.append(Migration(f"{service}/{path.stem}", path.read_text()))
    return out


def ensure_database(dsn: str) -> None:
    """Create the database named in `dsn` when it does not exist yet."""
    params = psycopg2.extensions.parse_dsn(dsn)
    name = params.get("dbname", "postgres")
    admin = dict(params, dbname="postgres")
    conn = psycopg2.connect(**admin)
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if cur.fetchone() is None:
                try:
                    cur.execute(f'CREATE DATABASE "{name}"')
                except psycopg2.errors.DuplicateDatabase:
                    pass  # created concurrently by another starter
    finally:
        conn.close()


def migrate(dsn: str) -> list[str]:
    """Apply what is not applied yet; return the names applied now."""
    ensure_database(dsn)
    conn = psycopg2.connect(dsn)
    applied_now: list[str] = []
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(%s)", (_LOCK_ID,))
            try:
                cur.execute(
                    "CREATE TABLE IF NOT EXISTS public.ims_schema_migrations ("
                    " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
                )
                cur.execute("SELECT name FROM public.ims_schema_migrations")
                done = {r[0] for r in cur.fetchall()}
                for m in pending_sources():
                    if m.name in done:
                        continue
                    cur.execute("BEGIN")
                    try:
                        cur.execute(m.sql)
                        cur.execute("INSERT INTO public.ims_schema_migrations (name) VALUES (%s)",
                                    (m.name,))
                    except Exception:
                        cur.execute("ROLLBACK")
                        raise
                    cur.execute("COMMIT")
                    applied_now.append(m.name)
            finally:
                cur.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_ID,))
    finally:
        conn.close()
    return applied_now
