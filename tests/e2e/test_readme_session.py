"""The README's curl session, run as written against a running system with a demo workspace:
each answer prints on its own line, and every claim its comments make holds."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import orjson

from tests.ideas.test_ideas_seed import ctl
from tests.support.processes import ROOT, System


def session() -> str:
    """The shell block under the README's "A session", with the key and the URL it reads
    from `make run`'s files given as variables instead."""
    readme = (ROOT / "README.md").read_text()
    part = readme[readme.index("## A session") :]
    block = re.search(r"```sh\n(.*?)```", part, re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    assert lines[0].startswith("KEY=") and lines[1].startswith("API=")
    return "\n".join(["set -eu", 'KEY="$DEMO_KEY"', 'API="$DEMO_API"', *lines[2:]]) + "\n"


def printing_commands(script: str) -> int:
    """How many commands print an answer: the curl calls whose output is not captured."""
    return sum(
        1
        for line in script.splitlines()
        if re.match(r"\s*(sleep \d+; )?curl -s ", line) and "$(" not in line
    )


async def test_the_readme_session_prints_each_answer_on_its_own_line(system: System) -> None:
    demo = await ctl(system, "demo", "--ideas", "60", "--customers", "5")
    script = session()
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        script,
        env={
            "DEMO_KEY": demo["key"],
            "DEMO_API": system.base_url + "/api/v1",
            "PATH": "/usr/bin:/bin",
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    answers: list[Any] = []
    for line in lines:
        if line.startswith("{"):
            answers.append(orjson.loads(line))  # one whole JSON answer a line, never two
    # every printed answer but the CSV export is one JSON line
    assert len(answers) == printing_commands(script) - 1, out.decode()
    csv = [line for line in lines if line and not line.startswith("{")]
    assert csv[0].startswith("id,ideaServiceId,title") and len(csv) == 6  # header + limit=5

    workspace, _top, vote, tagged, listed = answers[:5]
    assert workspace["data"]["name"] == "Demo" and vote["data"]["voteCount"] == 1
    idea = vote["data"]["ideaId"]
    assert [t["name"] for t in tagged["data"]["tags"]] == ["theming"]  # tags: [theming]
    assert [i["id"] for i in listed["data"]] == [idea] and listed["pagination"]["total"] == 1
    stages = next(
        a
        for a in answers
        if isinstance(a.get("data"), list) and a["data"] and "slug" in a["data"][0]
    )
    assert [s["slug"] for s in stages["data"]] == ["now", "beta", "next", "later"]
    assert stages["data"][1]["ideaCount"] == 1
    review = next(
        a
        for a in answers
        if a.get("data", {}) and "inboxMode" in a["data"] and a["data"]["inboxMode"] == "review"
    )
    assert review["data"]["name"] == "Demo"
    similar = next(
        a
        for a in answers
        if isinstance(a.get("data"), list) and a["data"] and "similarity" in a["data"][0]
    )
    assert similar["data"][0]["idea"]["id"] == idea  # dark mode first
    detail = [
        a
        for a in answers
        if isinstance(a.get("data"), dict)
        and a["data"].get("id") == idea
        and "totalCustomerARR" in a["data"]
    ]
    assert detail[-1]["data"]["totalCustomerARR"] == 120000
    assert answers[-1]["valid"] is True
