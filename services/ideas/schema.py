"""The database schema the ideas service owns: its migrations, applied by `ideasctl migrate`."""

from pathlib import Path

from libs.common.migrations import Schema

SCHEMA = Schema("ideas", Path(__file__).parent / "migrations", outbox=True)
