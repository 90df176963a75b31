"""The quality of similar ideas on a labeled set of product feedback (tests/data/
similar_labeled.json, docs/similar.md), through the gateway: paraphrases that share few words
with their idea are found first, where a keyword baseline measured on the same set misses
many; and the automation API's meaning rule, at its default threshold, has the precision and
recall docs/similar.md states."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from services.ideas.settings import DUPLICATE_SIMILARITY
from tests.support.api import Api

I = "/api/v1/ideas"
A = "/api/v1/automation/ideas"
DATA = json.loads((Path(__file__).parents[1] / "data" / "similar_labeled.json").read_text())
# What each model must reach on the set (docs/similar.md states what they reach): top-1 and
# top-5 of the paraphrases, their gaps over the keyword baseline, and the automation rule's
# precision and recall at DUPLICATE_SIMILARITY (the transformer decides the rule with either
# model: with the static one, among the static model's nearest ideas).
BARS = {
    "static": {
        "top1": 0.80,
        "top5": 0.95,
        "gap1": 0.15,
        "gap5": 0.1,
        "precision": 0.9,
        "recall": 0.7,
    },
    "minilm": {
        "top1": 0.90,
        "top5": 0.95,
        "gap1": 0.2,
        "gap5": 0.1,
        "precision": 0.9,
        "recall": 0.7,
    },
}


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def keyword_ranking(query: str, ideas: list[dict[str, Any]]) -> list[str]:
    """The baseline: ideas by the Jaccard overlap of their words with the query's."""
    q = words(query)

    def score(idea: dict[str, Any]) -> float:
        d = words(f"{idea['title']} {idea['summary']}")
        return len(q & d) / len(q | d)

    return [i["key"] for i in sorted(ideas, key=score, reverse=True)]


async def load(api: Api) -> dict[str, str]:
    """The labeled ideas in the workspace; their ids by key once all are searchable."""
    ideas = DATA["ideas"]
    r = await api.post(
        f"{I}/batch",
        json={"ideas": [{"title": i["title"], "summary": i["summary"]} for i in ideas]},
    )
    assert r.status == 200, r.body
    by_id = {idea["id"]: src["key"] for idea, src in zip(r.data["ideas"], ideas)}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while True:
        r = await api.post(f"{I}/similar", json={"title": "anything", "limit": 50})
        if len(r.data) == len(ideas):
            return by_id
        assert loop.time() < deadline, f"only {len(r.data)} ideas indexed"
        await asyncio.sleep(0.2)


async def test_paraphrases_found_first_and_keywords_miss_them(api: Api) -> None:
    await paraphrases_found_first(api, "static")


async def test_duplicate_threshold_precision_and_recall(api: Api) -> None:
    await duplicate_threshold_holds(api, "static")


async def paraphrases_found_first(api: Api, model: str) -> None:
    bar = BARS[model]
    by_id = await load(api)
    queries = DATA["queries"]
    top1 = top5 = kw1 = kw5 = 0
    for q in queries:
        r = await api.post(f"{I}/similar", json={"title": q["text"], "limit": 5})
        ranked = [by_id[o["idea"]["id"]] for o in r.data]
        top1 += ranked[0] == q["match"]
        top5 += q["match"] in ranked
        kw = keyword_ranking(q["text"], DATA["ideas"])
        kw1 += kw[0] == q["match"]
        kw5 += q["match"] in kw[:5]
    n = len(queries)
    print(
        f"\n{model}: meaning top-1 {top1 / n:.3f} top-5 {top5 / n:.3f}; "
        f"keywords top-1 {kw1 / n:.3f} top-5 {kw5 / n:.3f} ({n} paraphrases)"
    )
    assert top1 / n >= bar["top1"] and top5 / n >= bar["top5"]
    assert (top1 - kw1) / n >= bar["gap1"] and (top5 - kw5) / n >= bar["gap5"]


async def duplicate_threshold_holds(api: Api, model: str) -> None:
    """The automation rule itself at its default DUPLICATE_SIMILARITY: each paraphrase and
    each request without a duplicate is posted to the automation API; a skipped one is right
    when its Signal is on the paraphrase's idea. Of the requests the rule calls duplicates,
    the share that are (and of the right idea), and the share of the paraphrases it catches,
    reach the model's bars. A request the rule creates is deleted at once, so it is no
    candidate for the next."""
    bar = BARS[model]
    by_id = await load(api)
    id_of = {key: idea_id for idea_id, key in by_id.items()}
    hits = wrong = 0
    for q in DATA["queries"] + DATA["negatives"]:
        r = await api.post(A, json={"title": q["text"]})
        if r.status == 201:
            assert (await api.delete(f"{I}/{r.json['id']}")).status in (200, 204)
            continue
        assert r.status == 200 and r.json["status"] == "skipped", r.body
        match = q.get("match")
        signals = (
            []
            if match is None
            else (await api.get(f"{I}/{id_of[match]}/signals", params={"limit": 100})).data
        )
        if any(s["content"] == q["text"] for s in signals):
            hits += 1
        else:
            wrong += 1
    precision = hits / max(hits + wrong, 1)
    recall = hits / len(DATA["queries"])
    print(
        f"\n{model} rule at {DUPLICATE_SIMILARITY}: precision {precision:.3f} recall {recall:.3f}"
    )
    assert precision >= bar["precision"] and recall >= bar["recall"]
