"""The database schema the ideas service owns: its migrations, applied by `ideasctl migrate`,
and the JSON forms of an idea generated from its public model (forms.py)."""

from pathlib import Path

from libs.common.migrations import Schema

from . import forms

SCHEMA = Schema("ideas", Path(__file__).parent / "migrations", outbox=True, generated=forms.sql)
