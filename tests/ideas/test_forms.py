"""The Idea and IdeaDetail forms are generated from the public models (services/ideas/forms.py):
the model and the table of columns must agree, the migrated database holds the generated text,
and a changed text is applied again by the next migration. The request bodies' fields map to
columns once (services/ideas/store.py WRITES)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import psycopg2
import pytest

from libs.api.ideas.requests import CreateIdeaRequest, UpdateIdeaRequest
from libs.api.ideas.schemas import Idea, IdeaDetail, RiceScores
from libs.common.migrations import Schema, migrate, pending_sources
from services.ideas import forms
from services.ideas.schema import SCHEMA
from services.ideas.store import HANDLED, WRITES
from tests.support.processes import drop_database, url_dsn_for


def test_every_field_of_the_models_has_its_column_and_every_column_its_field() -> None:
    forms.sql()  # raises FormError on a disagreement
    assert list(forms.IDEA) == list(Idea.model_fields)
    detail_own = [n for n in IdeaDetail.model_fields if n not in Idea.model_fields]
    assert list(forms.DETAIL) == detail_own


def test_a_field_without_a_column_stops_the_generation() -> None:
    class Wider(Idea):
        probeOnlyField: int
        """A field added to the model alone"""

    with pytest.raises(forms.FormError, match=r"fields without a column \['probeOnlyField'\]"):
        forms._form("idea_form", dict(Wider.model_fields), forms.IDEA, "Idea")


def test_a_column_without_a_field_stops_the_generation() -> None:
    table = {**forms.IDEA, "probeOnlyField": "probe_only_column"}
    with pytest.raises(forms.FormError, match=r"columns without a field \['probeOnlyField'\]"):
        forms._form("idea_form", dict(Idea.model_fields), table, "Idea")


def test_a_nested_model_is_checked_as_well() -> None:
    rice = forms.IDEA["rice"]
    assert isinstance(rice, forms.Nested)
    members = {k: v for k, v in rice.members.items() if k != "priority"}
    with pytest.raises(forms.FormError, match=r"Idea.rice: fields without a column \['priority'\]"):
        forms._form("rice_form", dict(RiceScores.model_fields), members, "Idea.rice")


def test_the_forms_keep_the_models_order_and_kinds() -> None:
    text = forms.sql()
    names = [a.split(" ")[0].strip('"') for a in forms.idea_form().attributes]
    assert names == list(Idea.model_fields)
    assert "public.ims_json_ts(i.created_at)" in text  # a date-time member
    assert "trim_scale(i.total_customer_arr)" in text  # money
    assert '"evidenceCount" integer' in text  # the column's type where the model's differs


def test_the_migrated_database_has_the_generated_forms(database_url: str) -> None:
    generated = pending_sources([SCHEMA])[-1]
    assert generated.name.startswith("ideas/generated-")
    conn = psycopg2.connect(database_url)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT name FROM public.ims_schema_migrations WHERE name LIKE 'ideas/generated-%'"
            )
            assert [r[0] for r in cur.fetchall()] == [generated.name]
            cur.execute(
                "SELECT a.attname FROM pg_attribute a JOIN pg_type t ON t.typrelid = a.attrelid"
                " WHERE t.typname = 'idea_form'"
                " AND t.typnamespace = 'ideas'::regnamespace AND a.attnum > 0"
                " ORDER BY a.attnum"
            )
            assert [r[0] for r in cur.fetchall()] == list(Idea.model_fields)
    finally:
        conn.close()


@pytest.fixture
def scratch_url() -> Iterator[str]:
    url = url_dsn_for(f"ims_forms_{secrets.token_hex(4)}")
    yield url
    drop_database(url)


def test_a_changed_text_is_applied_again_and_an_unchanged_one_is_not(
    scratch_url: str, tmp_path: Path
) -> None:
    text = {"v": 1}

    def generated() -> str:
        return (
            "DROP FUNCTION IF EXISTS formtest.version();"
            f" CREATE FUNCTION formtest.version() RETURNS int LANGUAGE sql AS $$ SELECT {text['v']} $$;"
        )

    schema = Schema("formtest", tmp_path, generated=generated)

    def version() -> tuple[int, list[str]]:
        conn = psycopg2.connect(scratch_url)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT formtest.version()")
                v = cur.fetchone()[0]
                cur.execute(
                    "SELECT name FROM public.ims_schema_migrations"
                    " WHERE name LIKE 'formtest/generated-%'"
                )
                return v, [r[0] for r in cur.fetchall()]
        finally:
            conn.close()

    first = migrate(scratch_url, [schema])
    assert first[-1].startswith("formtest/generated-")
    assert version() == (1, [first[-1]])
    assert migrate(scratch_url, [schema]) == []  # nothing changed: nothing applied
    text["v"] = 2
    second = migrate(scratch_url, [schema])
    assert len(second) == 1 and second[0] != first[-1]
    assert version() == (2, [second[0]])  # the record of the earlier text is replaced
    text["v"] = 1  # back to the first text (a rollback of the code): applied again
    assert migrate(scratch_url, [schema]) == [first[-1]]
    assert version() == (1, [first[-1]])


def test_every_field_of_the_request_bodies_is_a_column_or_handled_by_name() -> None:
    for body in (CreateIdeaRequest, UpdateIdeaRequest):
        loose = [n for n in body.model_fields if n not in WRITES and n not in HANDLED]
        assert not loose, f"{body.__name__}: {loose} neither in store.WRITES nor store.HANDLED"
    assert not set(WRITES) & HANDLED
