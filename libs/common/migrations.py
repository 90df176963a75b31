"""Versioned plain-SQL migrations, one folder per service schema, applied under an advisory lock.

Each service declares its schema (`services/<service>/schema.py`: the name, its folder of
`NNNN_name.sql` files, whether it has an outbox, and the SQL it generates from code); the admin
CLI lists them in the order they apply (`services/ctl/migrate.py`). Each file is applied once, in
its own transaction, and recorded in `public.ims_schema_migrations` as `<service>/NNNN_name`.
The shared SQL of `libs/common/migrations` comes first (`common/...`), then each schema's.
Concurrent starts are safe: the advisory lock serializes them and the second finds nothing left
to do.

A schema's generated SQL (`Schema.generated`, e.g. the ideas service's JSON forms made from its
public models) comes after its files, recorded as `<service>/generated-<digest of the text>`:
applied on a new database after everything it reads exists, and again (in the same
transaction that replaces the record of the earlier text) whenever the code makes another text,
a rollback to an earlier one included. It must therefore be written to run again over itself
(`DROP ... IF EXISTS`, then `CREATE`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg2

_LOCK_ID = 0x1D_EA5  # any constant shared by every migrator of this database


@dataclass(frozen=True)
class Schema:
    """A service's schema: `folder` holds its `NNNN_name.sql` files; `outbox`, whether it
    publishes events (libs/common/migrations/outbox.sql made for it); `generated`, the SQL its
    code makes, applied after the files whenever its text changes."""

    name: str
    folder: Path
    outbox: bool = False
    generated: Callable[[], str] | None = None


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str
    # A generated migration: the prefix of the names its earlier texts were recorded under.
    replaces: str | None = None


def generated_migration(service: str, sql: str) -> Migration:
    digest = hashlib.sha256(sql.encode()).hexdigest()[:16]
    prefix = f"{service}/generated-"
    return Migration(f"{prefix}{digest}", sql, replaces=prefix)


def pending_sources(schemas: Sequence[Schema]) -> list[Migration]:
    """Every migration of `schemas` in the order it must be applied."""
    here = Path(__file__).parent / "migrations"
    # Shared SQL every service's queries use (the date-time form of libs/common/render.py).
    out = [Migration("common/0001_render", (here / "render.sql").read_text())]
    template = (here / "outbox.sql").read_text()
    headers = (here / "outbox_headers.sql").read_text()
    for schema in schemas:
        service = schema.name
        out.append(Migration(f"{service}/0000_schema", f'CREATE SCHEMA IF NOT EXISTS "{service}";'))
        if schema.outbox:
            out.append(Migration(f"{service}/0000_outbox", template.format(schema=service)))
            out.append(Migration(f"{service}/0000_outbox_headers", headers.format(schema=service)))
        folder = schema.folder
        for path in sorted(folder.glob("*.sql")) if folder.is_dir() else []:
            out.append(Migration(f"{service}/{path.stem}", path.read_text()))
        if schema.generated is not None:
            out.append(generated_migration(service, schema.generated()))
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


def migrate(dsn: str, schemas: Sequence[Schema]) -> list[str]:
    """Apply what is not applied yet of `schemas`, in their order; return the names applied
    now."""
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
                for m in pending_sources(schemas):
                    if m.name in done:
                        continue
                    cur.execute("BEGIN")
                    try:
                        cur.execute(m.sql)
                        if m.replaces is not None:
                            cur.execute(
                                "DELETE FROM public.ims_schema_migrations"
                                " WHERE starts_with(name, %s)",
                                (m.replaces,),
                            )
                        cur.execute(
                            "INSERT INTO public.ims_schema_migrations (name) VALUES (%s)", (m.name,)
                        )
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
