"""A client generated from the served document works end to end: every answer parses."""

from __future__ import annotations

import csv
import importlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.api import Workspace
from tests.support.clients import PACKAGE, generate_client, temporary_directory
from tests.support.processes import System


@pytest.fixture(scope="session")
def generated(system: System) -> Iterator[ModuleType]:
    """The client, generated once per run from the document the gateway serves."""
    import urllib.request

    with urllib.request.urlopen(system.base_url + "/api/v1/openapi.json", timeout=10) as r:
        document = json.loads(r.read())
    with temporary_directory() as tmp:
        yield generate_client(document, Path(tmp))


def _mod(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.{name}")


def _parsed(response: Any, status: int, model: type) -> Any:
    """The answer has the status and parsed into the model the document names."""
    assert response.status_code == status, response.content[:500]
    assert isinstance(response.parsed, model), type(response.parsed)
    return response.parsed


async def test_generated_client_runs_the_main_scenario(
    generated: ModuleType, ws: Workspace, system: System
) -> None:
    """Create, page with cursors, patch, vote, link a customer, export, subscribe."""
    m = _mod("models")
    ideas = _mod("api.ideas")
    for name in ("create_idea", "list_ideas", "update_idea", "vote_idea", "get_idea"):
        _mod(f"api.ideas.{name}")
    customers = {n: _mod(f"api.customers.{n}") for n in ("create_customer", "link_customer")}
    export = {n: _mod(f"api.export.{n}") for n in ("export_ideas", "export_customers")}
    create_webhook = _mod("api.webhooks.create_webhook")
    client = generated.AuthenticatedClient(base_url=system.base_url, token=ws.key)

    async with client as c:
        created = []
        for n in range(3):
            r = await ideas.create_idea.asyncio_detailed(
                client=c,
                body=m.CreateIdeaRequest(title=f"Generated client idea {n}", category="feature"),
            )
            created.append(_parsed(r, 200, m.IdeaResponse).data)
        assert created[0].status == m.IdeaStatus.NEW

        first = _parsed(await ideas.list_ideas.asyncio_detailed(client=c, limit=2), 200, m.IdeaPage)
        assert first.pagination.has_more and first.pagination.total == 3
        second = _parsed(
            await ideas.list_ideas.asyncio_detailed(
                client=c, limit=2, cursor=first.pagination.next_cursor
            ),
            200,
            m.IdeaPage,
        )
        assert second.pagination.has_more is False and second.pagination.next_cursor is None
        seen = [i.id for i in first.data + second.data]
        assert sorted(seen) == sorted(i.id for i in created)

        idea = created[0]
        detail = _parsed(
            await ideas.update_idea.asyncio_detailed(
                idea.id,
                client=c,
                body=m.UpdateIdeaRequest(
                    status=m.IdeaStatus.PLANNED,
                    rice_reach=500,
                    rice_impact=2,
                    rice_confidence=0.8,
                    rice_effort=4,
                ),
            ),
            200,
            m.IdeaDetailResponse,
        ).data
        assert detail.status == m.IdeaStatus.PLANNED and detail.rice.score == 200

        vote = _parsed(
            await ideas.vote_idea.asyncio_detailed(
                idea.id, client=c, body=m.VoteRequest(voter="user:1")
            ),
            200,
            m.VoteResultResponse,
        ).data
        assert vote.vote_count == 1

        customer = _parsed(
            await customers["create_customer"].asyncio_detailed(
                client=c, body=m.CreateCustomerRequest(name="Globex", arr=120000)
            ),
            200,
            m.CustomerResponse,
        ).data
        link = _parsed(
            await customers["link_customer"].asyncio_detailed(
                idea.id, client=c, body=m.LinkCustomerRequest(customer_id=customer.id)
            ),
            200,
            m.CustomerLinkResponse,
        ).data
        assert (link.idea_id, link.customer_id) == (idea.id, customer.id)

        fmt = m.ExportIdeasFormat
        as_csv = _parsed(
            await export["export_ideas"].asyncio_detailed(client=c, format_=fmt.CSV), 200, str
        )
        rows = list(csv.DictReader(io.StringIO(as_csv)))
        assert sorted(r["id"] for r in rows) == sorted(str(i.id) for i in created)
        as_json = _parsed(
            await export["export_ideas"].asyncio_detailed(client=c, format_=fmt.JSON), 200, str
        )
        records = [m.IdeaExportRecord.from_dict(r) for r in json.loads(as_json)]
        assert {r.id for r in records} == {i.id for i in created}
        customers_csv = _parsed(
            await export["export_customers"].asyncio_detailed(
                client=c, format_=m.ExportCustomersFormat.CSV
            ),
            200,
            str,
        )
        assert "Globex" in customers_csv

        hook = _parsed(
            await create_webhook.asyncio_detailed(
                client=c,
                body=m.CreateWebhookRequest(
                    target_url="https://hooks.example.com/ims",
                    events=[m.WebhookEventType.IDEA_CREATED, m.WebhookEventType.CUSTOMER_UPDATED],
                    name="generated",
                ),
            ),
            200,
            m.WebhookSubscriptionResult,
        ).data
        assert hook.secret.startswith("whsec_") and hook.is_active

        missing = await ideas.get_idea.asyncio_detailed(
            "00000000-0000-4000-8000-000000000000", client=c
        )
        assert _parsed(missing, 404, m.Error).error.code == "not_found"
