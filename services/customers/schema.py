"""The database schema the customers service owns: its migrations, applied by `ideasctl migrate`."""

from pathlib import Path

from libs.common.migrations import Schema

SCHEMA = Schema("customers", Path(__file__).parent / "migrations", outbox=True)
