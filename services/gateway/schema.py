"""The database schema the gateway service owns: its migrations, applied by `ideasctl migrate`."""

from pathlib import Path

from libs.common.migrations import Schema

SCHEMA = Schema("gateway", Path(__file__).parent / "migrations")
