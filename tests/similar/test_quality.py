"""The quality of similar ideas on the labeled set (tests/data/similar_labeled.json, its split
in tests/support/similar_set.py, docs/similar.md), through the gateway, in a fresh workspace
holding every idea of the set:

- each paraphrase asked with `POST /ideas/similar`: top-1 and top-5 by part (tuning,
  held-out), beside a keyword baseline (Jaccard of words) on the same texts in the same run;
- the automation API's duplicate rule: each paraphrase and each request without a duplicate
  posted to `POST /automation/ideas`; precision and recall by part;
- `DUPLICATE_SIMILARITY` against the tuning part alone: the best F0.5 of the rule's
  thresholds, from the similarities the searches answered;
- one number: a duplicate's Signal records the similarity `POST /ideas/similar` answers for
  the same text and idea.

The bars are asserted on the held-out part, which no choice of model, parameter or threshold
looked at (docs/similar.md states the figures)."""

from __future__ import annotations

import asyncio
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from services.ideas.settings import DUPLICATE_SIMILARITY
from tests.support.api import Api
from tests.support.similar_set import DATA, HELD_OUT_IDEAS, Part, part

I = "/api/v1/ideas"
A = "/api/v1/automation/ideas"
# What each model reaches on the held-out part at least (docs/similar.md has the figures):
# top-1 and top-5 of the paraphrases, their gaps over the keyword baseline, and the duplicate
# rule's precision and recall at its threshold. The aim for later: top-1 >= 0.90, top-5 >=
# 0.98, the rule's precision >= 0.90 at recall >= 0.70.
BARS = {
    # the default (all-mpnet-base-v2 int8, at DUPLICATE_SIMILARITY 0.50): 0.880, 0.964,
    # +0.510, +0.412, 0.871, 0.635
    "mpnet": {
        "top1": 0.86,
        "top5": 0.94,
        "gap1": 0.45,
        "gap5": 0.35,
        "precision": 0.85,
        "recall": 0.58,
    },
    # static, its 50 nearest scored by the transformer: 0.833, 0.932, +0.427, +0.385,
    # 0.892, 0.604
    "static": {
        "top1": 0.80,
        "top5": 0.90,
        "gap1": 0.35,
        "gap5": 0.30,
        "precision": 0.85,
        "recall": 0.55,
    },
    # the transformer alone: 0.844, 0.943, +0.438, +0.396, 0.881, 0.615
    "minilm": {
        "top1": 0.80,
        "top5": 0.90,
        "gap1": 0.35,
        "gap5": 0.30,
        "precision": 0.85,
        "recall": 0.55,
    },
}
# The thresholds DUPLICATE_SIMILARITY is chosen among, on the tuning part (F0.5: a false
# duplicate hides a request in another idea, a missed one can still be merged later).
THRESHOLDS = [round(0.30 + 0.02 * i, 2) for i in range(26)]


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


IDEA_WORDS = {i["key"]: words(f"{i['title']} {i['summary']}") for i in DATA["ideas"]}


def keyword_ranking(query: str) -> list[str]:
    """The baseline: ideas by the Jaccard overlap of their words with the query's (ties in
    the set's order, as bench/similar_models.py ranks them)."""
    q = words(query)
    return sorted(IDEA_WORDS, key=lambda k: -len(q & IDEA_WORDS[k]) / len(q | IDEA_WORDS[k]))


async def gather(limit: int, calls: list[Any]) -> list[Any]:
    """The awaitables, at most `limit` at once (searches only read: their order is free)."""
    gate = asyncio.Semaphore(limit)

    async def one(call: Any) -> Any:
        async with gate:
            return await call

    return await asyncio.gather(*(one(c) for c in calls))


async def load(api: Api) -> dict[str, str]:
    """Every idea of the set in the workspace (both parts: each is searched among all); their
    keys by id, once each is found by its own text."""
    ideas = DATA["ideas"]
    key_of: dict[str, str] = {}
    for start in range(0, len(ideas), 100):
        chunk = ideas[start : start + 100]
        r = await api.post(
            f"{I}/batch",
            json={"ideas": [{"title": i["title"], "summary": i["summary"]} for i in chunk]},
        )
        assert r.status == 200, r.body
        key_of.update(
            {idea["id"]: src["key"] for idea, src in zip(r.data["ideas"], chunk, strict=True)}
        )
    waiting = dict(zip(key_of, ideas, strict=True))
    deadline = asyncio.get_running_loop().time() + 60
    while waiting:
        items = list(waiting.items())
        answers = await gather(
            4,
            [
                api.post(f"{I}/similar", json={"title": s["title"], "summary": s["summary"]})
                for _, s in items
            ],
        )
        for (idea_id, _), r in zip(items, answers, strict=True):
            assert r.status == 200, r.body
            if r.data and r.data[0]["idea"]["id"] == idea_id:
                del waiting[idea_id]
        assert asyncio.get_running_loop().time() < deadline, f"{len(waiting)} ideas not indexed"
        if waiting:
            await asyncio.sleep(0.5)
    return key_of


@dataclass
class Figures:
    n: int = 0
    top1: int = 0
    top5: int = 0
    kw1: int = 0
    kw5: int = 0
    # (similarity of the first answer, whether it is the right idea) of each paraphrase, and
    # the first answer's similarity of each request without a duplicate
    first: list[tuple[float, bool]] = field(default_factory=list)
    negatives: list[float] = field(default_factory=list)
    # the automation rule: right duplicates, wrong ones (another idea, or no duplicate at all)
    right: int = 0
    wrong: int = 0

    def rate(self, x: int) -> float:
        return x / self.n

    @property
    def precision(self) -> float:
        return self.right / max(self.right + self.wrong, 1)

    @property
    def recall(self) -> float:
        return self.right / self.n


def f05(precision: float, recall: float) -> float:
    return 1.25 * precision * recall / max(0.25 * precision + recall, 1e-9)


def rule_at(fig: Figures, threshold: float) -> tuple[float, float, float]:
    """Precision, recall and F0.5 of a duplicate rule at `threshold` on the searches' first
    answers (the rule's own similarity: one number)."""
    right = sum(1 for s, ok in fig.first if s >= threshold and ok)
    wrong = sum(1 for s, ok in fig.first if s >= threshold and not ok)
    wrong += sum(1 for s in fig.negatives if s >= threshold)
    precision, recall = right / max(right + wrong, 1), right / fig.n
    return precision, recall, f05(precision, recall)


async def rank(api: Api, key_of: dict[str, str], p: Part) -> Figures:
    fig = Figures(n=len(p.queries))
    texts = [q["text"] for q in p.queries + p.negatives]
    answers = await gather(
        4, [api.post(f"{I}/similar", json={"title": t, "limit": 5}) for t in texts]
    )
    assert all(r.status == 200 for r in answers), [r.body for r in answers if r.status != 200]
    for q, r in zip(p.queries, answers[: len(p.queries)], strict=True):
        ranked = [key_of[o["idea"]["id"]] for o in r.data]
        fig.top1 += ranked[0] == q["match"]
        fig.top5 += q["match"] in ranked
        fig.first.append((r.data[0]["similarity"], ranked[0] == q["match"]))
        kw = keyword_ranking(q["text"])
        fig.kw1 += kw[0] == q["match"]
        fig.kw5 += q["match"] in kw[:5]
    fig.negatives = [r.data[0]["similarity"] for r in answers[len(p.queries) :]]
    return fig


async def automation_rule(api: Api, key_of: dict[str, str], p: Part, fig: Figures) -> None:
    """The rule as it runs: each request posted to the automation API; a skipped paraphrase
    is right when its Signal is on the paraphrase's idea, a skipped negative is wrong. A
    request the rule creates is deleted at once (long before the embedder could make it a
    candidate for another: its batch waits 0.2 s), so four go at a time."""
    id_of = {key: idea_id for idea_id, key in key_of.items()}

    async def one(q: dict[str, Any]) -> bool | None:
        """Right, wrong, or None: created."""
        r = await api.post(A, json={"title": q["text"]})
        if r.status == 201:
            assert (await api.delete(f"{I}/{r.json['id']}")).status in (200, 204)
            return None
        assert r.status == 200 and r.json["status"] == "skipped", r.body
        match = q.get("match")
        if match is None:
            return False
        signals = (await api.get(f"{I}/{id_of[match]}/signals", params={"limit": 100})).data
        return any(s["content"] == q["text"] for s in signals)

    outcomes = await gather(4, [one(q) for q in p.queries + p.negatives])
    fig.right += sum(1 for o in outcomes if o is True)
    fig.wrong += sum(1 for o in outcomes if o is False)


async def labeled_set_holds(api: Api, model: str, threshold: float = DUPLICATE_SIMILARITY) -> None:
    """Both parts ranked; the rule's threshold (the system's `DUPLICATE_SIMILARITY`, each
    model's own) against the tuning part's first answers; the rule itself through the
    automation API on the held-out part; the bars on the held-out part."""
    bar = BARS[model]
    clock = asyncio.get_running_loop().time
    started = clock()
    key_of = await load(api)
    loaded = clock()
    tuning = await rank(api, key_of, part("tuning"))
    held = await rank(api, key_of, part("held-out"))
    ranked = clock()
    await automation_rule(api, key_of, part("held-out"), held)
    print(
        f"\n{model}: loaded in {loaded - started:.1f} s, ranked in {ranked - loaded:.1f} s,"
        f" the automation rule in {clock() - ranked:.1f} s"
    )
    for name, fig in (("tuning", tuning), ("held-out", held)):
        p, r, _ = rule_at(fig, threshold)
        print(
            f"\n{model} {name} ({fig.n} paraphrases, {len(fig.negatives)} negatives):"
            f" meaning top-1 {fig.rate(fig.top1):.3f} top-5 {fig.rate(fig.top5):.3f};"
            f" keywords top-1 {fig.rate(fig.kw1):.3f} top-5 {fig.rate(fig.kw5):.3f};"
            f" searches' first answers at {threshold}: precision {p:.3f} recall {r:.3f}"
        )
    print(
        f"{model} held-out, the automation rule at {threshold}:"
        f" precision {held.precision:.3f} recall {held.recall:.3f}"
    )
    table = {t: rule_at(tuning, t) for t in THRESHOLDS}
    best = max(table, key=lambda t: table[t][2])
    print(
        f"{model} tuning, the rule by threshold (precision/recall/F0.5): "
        + " ".join(f"{t}:{p:.3f}/{r:.3f}/{f:.3f}" for t, (p, r, f) in table.items())
    )
    # threshold is the tuning part's best F0.5 (within the noise of a step).
    assert table[threshold][2] >= table[best][2] - 0.01, (best, table[best])
    assert held.rate(held.top1) >= bar["top1"] and held.rate(held.top5) >= bar["top5"]
    assert held.rate(held.top1 - held.kw1) >= bar["gap1"]
    assert held.rate(held.top5 - held.kw5) >= bar["gap5"]
    assert held.precision >= bar["precision"] and held.recall >= bar["recall"]


async def test_labeled_set_held_out_part(api: Api) -> None:
    """The default model (`mpnet`), on the shared system; the static model
    on a system of its own (test_static_model.py)."""
    await labeled_set_holds(api, "mpnet")


async def signal_records_the_search_similarity(
    api: Api, threshold: float = DUPLICATE_SIMILARITY
) -> None:
    """A duplicate by meaning records on its Signal the similarity `POST /ideas/similar`
    answers for the same text and idea (within 0.01), and it is the idea that search puts
    first."""
    keys = ["dark-mode", "pdf-export", "sso", "keyboard", "offline", "ec-save-cart"]
    by_key = {i["key"]: i for i in DATA["ideas"]}
    ideas = {}
    for key in keys:
        src = by_key[key]
        r = await api.post(I, json={"title": src["title"], "summary": src["summary"]})
        assert r.status == 200, r.body
        ideas[r.data["id"]] = key
    texts = [q["text"] for q in DATA["queries"] if q["match"] in keys]
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        r = await api.post(f"{I}/similar", json={"title": "anything", "limit": 50})
        if len(r.data) == len(keys):
            break
        assert asyncio.get_running_loop().time() < deadline, r.data
        await asyncio.sleep(0.2)
    compared = 0
    for text in texts:
        r = await api.post(f"{I}/similar", json={"title": text, "limit": 1})
        found = r.data[0]
        created = await api.post(A, json={"title": text})
        if created.status == 201:
            assert found["similarity"] < threshold, (text, found)
            assert (await api.delete(f"{I}/{created.json['id']}")).status in (200, 204)
            continue
        assert created.json["status"] == "skipped", created.body
        assert found["similarity"] >= threshold, (text, found)
        signals = (await api.get(f"{I}/{found['idea']['id']}/signals")).data
        mine = [s for s in signals if s["content"] == text]
        assert mine, f"{text!r}: the Signal is not on the idea the search puts first"
        signal = mine[0]
        assert abs(signal["similarity"] - found["similarity"]) <= 0.01, (text, signal, found)
        compared += 1
    assert compared >= len(texts) // 2, f"only {compared} of {len(texts)} were duplicates"


async def test_a_signal_records_the_similarity_the_search_answers(api: Api) -> None:
    """One number (the default model): the automation rule asks the similar service the same
    search `POST /ideas/similar` makes, through the gateway both."""
    await signal_records_the_search_similarity(api)


def test_the_set_and_its_split() -> None:
    """The set as docs/similar.md describes it: at least 100 ideas of 8 kinds, 300
    paraphrases in five voices, requests without a duplicate, every text once; and the split
    by its fixed rule, the held-out part at least 40% of the ideas, of the paraphrases and of
    the requests, none of the first version's (the choices were made on it) among them."""
    ideas, queries, negatives = DATA["ideas"], DATA["queries"], DATA["negatives"]
    keys = [i["key"] for i in ideas]
    assert len(set(keys)) == len(keys) >= 100
    assert len({i["kind"] for i in ideas}) >= 8
    assert len(queries) >= 300 and {q["voice"] for q in queries} == {
        "plain",
        "terse",
        "rant",
        "non-native",
        "long",
    }
    assert all(q["match"] in keys for q in queries)
    assert all(n["near"] is None or n["near"] in keys for n in negatives)
    texts = [q["text"] for q in queries + negatives]
    assert len(set(texts)) == len(texts)
    held, tuning = part("held-out"), part("tuning")
    assert len(held.queries) + len(tuning.queries) == len(queries)
    assert len(held.negatives) + len(tuning.negatives) == len(negatives)
    assert len(HELD_OUT_IDEAS) >= 0.4 * len(ideas)
    assert len(held.queries) >= 0.4 * len(queries)
    assert len(held.negatives) >= 0.4 * len(negatives)
    first = {i["key"] for i in ideas if i["since"] == 1}
    assert len(first) == 50 and not first & HELD_OUT_IDEAS
    assert HELD_OUT_IDEAS == {
        i["key"]
        for i in ideas
        if i["since"] == 2 and hashlib.sha256(i["key"].encode()).digest()[0] < 0xB0
    }
