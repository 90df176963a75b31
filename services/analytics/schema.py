"""The database schema the analytics service owns: its migrations, applied by `ideasctl migrate`."""

from pathlib import Path

from libs.common.migrations import Schema

SCHEMA = Schema("analytics", Path(__file__).parent / "migrations")
