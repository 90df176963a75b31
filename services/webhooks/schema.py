"""The database schema the webhooks service owns: its migrations, applied by `ideasctl migrate`."""

from pathlib import Path

from libs.common.migrations import Schema

SCHEMA = Schema("webhooks", Path(__file__).parent / "migrations", outbox=True)
