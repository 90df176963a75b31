"""The database schema the similar service owns: its migrations, applied by `ideasctl migrate`."""

from pathlib import Path

from libs.common.migrations import Schema

# SIMILAR is a keyword of SQL (`SIMILAR TO`): every statement quotes the schema's name,
# `"similar".ideas` (a sequence's name inside nextval's text needs no quotes).
# No outbox: the service publishes no event; its consumer applies each idea's newest state, so
# it keeps no record of handled events either (docs/similar.md).
SCHEMA = Schema("similar", Path(__file__).parent / "migrations")
