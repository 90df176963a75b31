"""The automation create's duplicate rule by meaning holds no database connection while it
waits on the model (docs/ideas.md, "Automation duplicates"): a workspace's bursts of creates
leave another workspace's reads their speed, and a create the quota refuses costs no model work.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import psycopg2

from tests.similar.test_similar import until
from tests.support.api import Resp, Workspace
from tests.support.noisy import assert_victim_unharmed, victim_beside_noise
from tests.support.processes import System

A = "/api/v1/automation/ideas"

# Requests that the static model puts near the seeded ideas (a candidate each, so the
# transformer is asked), none with the title of another.
SEEDS = [
    "Dark mode for the dashboard",
    "Export reports to PDF",
    "Slack notifications for new ideas",
    "Single sign-on with Okta",
    "Bulk edit of idea statuses",
    "Keyboard shortcuts in the idea list",
]
ASKS = [
    "A dark theme for the dashboard at night",
    "Download the reports as PDF files",
    "Notify our Slack channel about every new idea",
    "Log in through Okta single sign-on",
    "Change the status of many ideas at once",
    "Shortcuts on the keyboard for the list of ideas",
]
# A summary on the same subject: more tokens for the transformer to read, as real requests have.
SUMMARY = (
    "Our team asked for this again in the weekly review. {ask}: it would save every one of us"
    " time, the customers who wrote in about it would see we listened, and the support team"
    " would stop answering the same question. {ask}, please, as soon as it can be planned."
)


async def model_texts(system: System, http: Any) -> float:
    """Texts the ideas process has embedded for its duplicate checks (either source)."""
    async with http.get(system.metrics_url("ideas") + "/metrics") as r:
        text = await r.text()
    found = re.findall(r'ims_similar_search_texts_total\{source="\w+"\} (\S+)', text)
    return sum(float(n) for n in found)


async def test_victim_reads_unharmed_beside_bursts_of_automation_creates(
    new_workspace: Any,
) -> None:
    """Bursts of 60 concurrent automation creates, each asking the transformer, from an
    enterprise workspace; another workspace's GET /ideas/{id} keeps a p99 under 1 s and never
    sees a 5xx. (With the check inside the creating transaction, the creates held every pooled
    connection idle in transaction while the model worked, and the reads waited for seconds.)"""
    noisy: Workspace = await new_workspace(rate_limit=None)
    victim: Workspace = await new_workspace()
    for title in SEEDS:
        assert (await noisy.api.post(A, json={"title": title})).status == 201
    mine = (await victim.api.post("/api/v1/ideas", json={"title": "Victim's idea"})).data["id"]

    async def seeds_found() -> bool:  # embedded: each request of the noise has a candidate
        r = await noisy.api.post("/api/v1/ideas/similar", json={"title": SEEDS[-1], "limit": 1})
        return bool(r.data) and r.data[0]["idea"]["title"] == SEEDS[-1]

    await until(seeds_found, within=10)
    # The transformer's worker started (the first check pays for its start, not the noise).
    r = await noisy.api.post(A, json={"title": f"{ASKS[0]} {uuid.uuid4().hex[:6]}"})
    assert r.status in (200, 201), r.body
    run = uuid.uuid4().hex[:6]

    async def noise(i: int) -> Resp:
        ask = ASKS[i % len(ASKS)]
        body = {"title": f"{ask} ({run} {i})", "summary": SUMMARY.format(ask=ask)}
        return await noisy.api.post(A, json=body, check=False)

    async def read() -> Resp:
        return await victim.api.get(f"/api/v1/ideas/{mine}", check=False)

    report = await victim_beside_noise(noise, read)
    assert_victim_unharmed(report)
    # The noise itself was served, created or skipped, or told to come back: 429 by the
    # gateway's share of the workspace, 503 by the model's queue.
    assert set(report.noise_statuses) <= {200, 201, 429, 503}, report.summary()
    assert report.noise_statuses[200] + report.noise_statuses[201] >= 40, report.summary()


async def test_a_create_refused_by_the_quota_costs_no_model_work(
    new_workspace: Any, system: System, http: Any
) -> None:
    """Past the quota, a request that only the meaning rule could match is refused (403
    limit_exceeded) without a text embedded; the url and title rules still skip duplicates."""
    ws: Workspace = await new_workspace(plan="starter", rate_limit=10_000)
    assert (await ws.api.post(A, json={"title": SEEDS[0]})).status == 201
    conn = psycopg2.connect(system.database_url)
    with conn, conn.cursor() as cur:
        cur.execute("UPDATE ideas.automation_usage SET n = 30 WHERE workspace_id = %s", (ws.id,))
    conn.close()
    before = await model_texts(system, http)
    r = await ws.api.post(A, json={"title": f"{ASKS[1]} {uuid.uuid4().hex[:6]}"})
    assert r.status == 403 and r.json["error"]["code"] == "limit_exceeded", r.body
    assert await model_texts(system, http) == before
    r = await ws.api.post(A, json={"title": SEEDS[0].upper()})  # the title rule
    assert r.status == 200 and r.json["status"] == "skipped", r.body
    assert await model_texts(system, http) == before
