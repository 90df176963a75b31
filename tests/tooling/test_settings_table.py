"""The README's configuration table is the settings' declarations (scripts/settings_table.py),
and each declaration says everything once: its name, type, default and a one-line doc."""

from __future__ import annotations

import re

import settings_table

from libs.common.settings import Settings


def test_the_readme_table_is_made_from_the_declarations() -> None:
    """Fails when a variable is declared, removed or changed without
    `python scripts/settings_table.py --write`."""
    assert settings_table.in_readme(settings_table.README.read_text()) == settings_table.table()


def test_every_process_declares_its_variables_with_a_doc_and_a_default() -> None:
    kinds = [Settings, *(kind for _, kind in settings_table.PROCESSES)]
    for kind in kinds:
        for name, (field_name, field) in kind.variables().items():
            assert re.fullmatch(r"[A-Z][A-Z0-9_]*", name), (kind.__name__, name)
            assert field.description and "\n" not in field.description, (kind.__name__, name)
            assert not field.is_required(), (kind.__name__, field_name)


def test_a_variable_two_processes_read_has_one_default() -> None:
    """EXPORT_WRITE_TIMEOUT_S is the gateway's and the analytics process's: one default."""
    seen: dict[str, object] = {}
    for _, kind in settings_table.PROCESSES:
        for name, (_, field) in kind.variables().items():
            assert seen.setdefault(name, field.default) == field.default, name
