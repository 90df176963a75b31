"""One chunk of seeded ideas and every row that hangs off them, as COPY text lines."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from services.ideas.store import DECIDED, fold_title, rice_priority, rice_score

from . import seed_data as d

N = "\\N"
IDEA_COLS = (
    "workspace_id, id, number, title, summary, status, source, category, idea_type, url, url_key,"
    " title_key, destination, destination_issue_id, destination_issue_url, work_item_status,"
    " vote_count, public_vote_count, request_count, signal_count, rice_reach, rice_impact,"
    " rice_confidence, rice_effort, rice_score, rice_priority, rice_source, validation_score,"
    " validation_evidence_count, decision_reason, decided_at, closure_category,"
    " decision_owner_name, decision_owner_email, decision_deadline, total_customer_arr,"
    " customer_count, last_activity_at, last_signal_at, unique_source_count, average_sentiment,"
    " shipped_at, product_id, roadmap_stage_id, actionable, author_name, author_id, raw_input,"
    " created_at, updated_at, decision_owner_id"
)


def line(values: Iterable[Any]) -> str:
    return "\t".join([N if v is None else str(v) for v in values]) + "\n"


def _weighted(pairs: tuple[tuple[Any, int], ...]) -> tuple[list[Any], list[int]]:
    return [v for v, _ in pairs], [w for _, w in pairs]


class IdeaRows:
    """Generates ideas [first, first + k) with their votes, decisions, signals and the rest."""

    def __init__(self, seeder: Any, start: datetime, first: int) -> None:
        self.s, self.rng, self.ws, self.first = seeder, seeder.rng, seeder.ws, first
        self.now = seeder.now
        self.t: dict[str, list[str]] = {
            k: []
            for k in (
                "ideas",
                "votes",
                "decisions",
                "signals",
                "evidence",
                "participants",
                "meetings",
                "tickets",
                "tags",
                "links",
                "plinks",
            )
        }
        self.statuses = _weighted(d.STATUSES)
        self.sources = _weighted(d.SOURCES)
        self.categories = _weighted(d.CATEGORIES)

    def add(self, j: int, created: datetime) -> None:
        rng, s = self.rng, self.s
        idea = s.uid()
        status = rng.choices(*self.statuses)[0]
        source = rng.choices(*self.sources)[0]
        obj = rng.choice(d.OBJECTS)
        title = f"{rng.choice(d.VERBS)} {obj} {rng.choice(d.QUALIFIERS)}".strip()
        summary = rng.choice(d.SUMMARIES) if rng.random() < 0.8 else None
        age = (self.now - created).total_seconds()
        activity = created + timedelta(seconds=rng.random() * age)
        votes = self.votes(idea, created, age)
        sig_count, last_sig, platforms, avg_sent = self.signals(idea, created, age, source)
        rice = self.rice()
        decided_at = shipped_at = closure = reason = owner = deadline = None
        cols: dict[str, Any] | None = None
        if status in DECIDED or status == "deleted":
            decided_at = created + timedelta(seconds=rng.random() * age)
            closure = DECIDED.get(status)
            reason = f"{closure or 'removed'}: reviewed in planning" if closure else None
            shipped_at = decided_at if status == "shipped" else None
            self.decision(idea, "new", status, closure, reason, decided_at)
        elif status in ("planned", "in_progress", "under_review"):
            self.decision(idea, "new", status, None, None, activity)
        if status not in ("new", "captured") and rng.random() < 0.7:
            owner = rng.choice(s.members)
            cols = s.owners[owner[1]]  # members.owner_columns: as PATCH decisionOwnerId sets
            deadline = created + timedelta(days=rng.randint(7, 90))
        dest = (
            rng.choice(d.DESTINATIONS)
            if status in ("planned", "in_progress", "shipped") and rng.random() < 0.6
            else None
        )
        issue = f"{dest.upper()}-{self.first + j}" if dest else None
        arr, ncust = self.links(idea, created)
        evidence = self.extras(idea, created, age, owner)
        self.t["ideas"].append(
            line(
                (
                    self.ws,
                    idea,
                    self.first + j,
                    title,
                    summary,
                    status,
                    source,
                    rng.choices(*self.categories)[0],
                    rng.choice(("request", "problem", "suggestion")),
                    None,
                    None,
                    fold_title(title),
                    dest,
                    issue,
                    f"https://{dest}.example.com/issue/{issue}" if dest else None,
                    ("done" if status == "shipped" else rng.choice(d.WORK_STATUSES))
                    if dest
                    else None,
                    votes,
                    rng.randint(0, 5) if rng.random() < 0.2 else 0,
                    rng.randint(0, 3),
                    sig_count,
                    *rice,
                    rng.uniform(0, 100) if rng.random() < 0.4 else None,
                    evidence,
                    reason,
                    decided_at,
                    closure,
                    cols["decision_owner_name"] if cols else None,
                    cols["decision_owner_email"] if cols else None,
                    deadline,
                    arr,
                    ncust,
                    max(activity, last_sig or activity),
                    last_sig,
                    platforms,
                    avg_sent,
                    shipped_at,
                    rng.choice(s.products) if rng.random() < 0.7 else None,
                    rng.choice(s.stages) if status in ("planned", "in_progress") else None,
                    True,
                    self.s.person()[0] if source != "api" else None,
                    None,
                    summary or title,
                    created,
                    activity,
                    cols["decision_owner_id"] if cols else None,
                )
            )
        )

    def votes(self, idea: Any, created: datetime, age: float) -> int:
        if self.rng.random() > 0.4:
            return 0
        total = 0
        for v in range(self.rng.choice((1, 1, 2, 3, 5, 8))):
            value = 1 if self.rng.random() < 0.9 else -1
            total += value
            when = created + timedelta(seconds=self.rng.random() * age)
            self.t["votes"].append(line((self.ws, idea, f"user-{v}", value, when)))
        return total

    def signals(
        self, idea: Any, created: datetime, age: float, source: str
    ) -> tuple[int, Any, int, Any]:
        rng = self.rng
        if rng.random() > 0.3:
            return 0, None, 0, None
        last, platforms, scores = None, set(), []
        for _ in range(rng.randint(1, 3)):
            when = created + timedelta(seconds=rng.random() * age)
            platform = source if rng.random() < 0.5 else rng.choice(d.SOURCES)[0]
            label, score = rng.choice(d.SENTIMENTS)
            score = max(-1.0, min(1.0, score + rng.uniform(-0.3, 0.3)))
            name, email = self.s.person()
            self.t["signals"].append(
                line(
                    (
                        self.ws,
                        self.s.uid(),
                        idea,
                        platform,
                        f"u{rng.randint(1, 9999)}",
                        name,
                        email,
                        "Another customer asked about this.",
                        rng.uniform(0.75, 1.0),
                        label,
                        score,
                        when,
                        when,
                    )
                )
            )
            last = when if last is None or when > last else last
            platforms.add(platform)
            scores.append(score)
        return len(scores), last, len(platforms), sum(scores) / len(scores)

    def rice(self) -> tuple[Any, ...]:
        if self.rng.random() > 0.35:
            return (None,) * 7
        rng = self.rng
        r, i, c, e = (
            float(rng.randint(10, 5000)),
            float(rng.choice((0.25, 0.5, 1, 2, 3))),
            rng.choice((0.5, 0.8, 1.0)),
            float(rng.randint(1, 20)),
        )
        score = rice_score(r, i, c, e)
        return r, i, c, e, score, rice_priority(score), rng.choice(("manual", "ai"))

    def decision(
        self, idea: Any, prev: str, new: str, closure: Any, reason: Any, when: datetime
    ) -> None:
        name, email = self.rng.choice(self.s.members)
        self.t["decisions"].append(
            line(
                (
                    self.ws,
                    self.s.uid(),
                    idea,
                    "status_changed",
                    closure,
                    reason,
                    prev,
                    new,
                    email,
                    name,
                    "dashboard",
                    when,
                )
            )
        )

    def links(self, idea: Any, created: datetime) -> tuple[Any, int]:
        if not self.s.customer_arr or self.rng.random() > 0.25:
            return None, 0
        chosen = {
            self.rng.randrange(len(self.s.customer_arr)) for _ in range(self.rng.randint(1, 3))
        }
        total = None
        for n in sorted(chosen):
            cid, arr, _ = self.s.customer_arr[n]
            self.t["links"].append(line((self.ws, idea, cid, created)))
            if arr is not None:
                total = (total or 0.0) + arr
        return total, len(chosen)

    def extras(self, idea: Any, created: datetime, age: float, owner: Any) -> int | None:
        """Tags, evidence, participants, meetings and tickets; returns the evidence count."""
        rng, s = self.rng, self.s
        for tag in {rng.choice(s.tags) for _ in range(rng.choice((0, 0, 1, 1, 2)))}:
            self.t["tags"].append(line((self.ws, idea, tag)))
        n_ev = rng.choice((0, 0, 0, 0, 1, 2)) if rng.random() < 0.5 else 0
        for k in range(n_ev):
            kind = rng.choice(d.EVIDENCE_TYPES)
            self.t["evidence"].append(
                line(
                    (
                        self.ws,
                        s.uid(),
                        idea,
                        kind,
                        f"{kind.replace('_', ' ').title()} {k + 1}",
                        f"https://docs.example.com/{idea}/{k}",
                        "Supporting material from a customer.",
                        created + timedelta(seconds=rng.random() * age),
                    )
                )
            )
        if owner is not None and rng.random() < 0.3:
            for role in ("owner", "approver", "reviewer"):
                name, email = owner if role == "owner" else rng.choice(s.members)
                decision = rng.choice(("approved", "rejected", "pending"))
                self.t["participants"].append(
                    line(
                        (
                            self.ws,
                            s.uid(),
                            idea,
                            name,
                            email,
                            role,
                            decision,
                            None if decision == "pending" else created + timedelta(days=1),
                        )
                    )
                )
        if rng.random() < 0.05:
            self.t["meetings"].append(
                line(
                    (
                        self.ws,
                        s.uid(),
                        idea,
                        "Customer call",
                        created + timedelta(days=2),
                        "{" + ",".join(f'"{s.person()[0]}"' for _ in range(2)) + "}",
                        "We discussed this request at length.",
                        rng.choice(("mentioned", "extracted")),
                        f"https://meet.example.com/t/{idea}",
                    )
                )
            )
        if rng.random() < 0.08:
            name, email = s.person()
            platform = rng.choice(d.TICKET_PLATFORMS)
            self.t["tickets"].append(
                line(
                    (
                        self.ws,
                        s.uid(),
                        idea,
                        platform,
                        str(rng.randint(10000, 99999)),
                        "Feature request from support",
                        rng.choice(("open", "pending", "solved")),
                        rng.choice(("low", "normal", "high")),
                        name,
                        email,
                        f"https://{platform}.example.com/tickets/{idea}",
                        created,
                    )
                )
            )
        return n_ev or None

    def flush(self) -> None:
        c, t = self.s.copy, self.t
        c("ideas.ideas", IDEA_COLS, t["ideas"])
        c("ideas.votes", "workspace_id, idea_id, voter, value, created_at", t["votes"])
        c(
            "ideas.decisions",
            "workspace_id, id, idea_id, event_type, closure_category, reason,"
            " previous_status, new_status, actor_email, actor_name, source, created_at",
            t["decisions"],
        )
        c(
            "ideas.signals",
            "workspace_id, id, idea_id, platform, user_id, user_name, user_email,"
            " content, similarity, sentiment, sentiment_score, detected_at, created_at",
            t["signals"],
        )
        c(
            "ideas.evidence",
            "workspace_id, id, idea_id, type, title, url, content, created_at",
            t["evidence"],
        )
        c(
            "ideas.participants",
            "workspace_id, id, idea_id, name, email, role, decision, decided_at",
            t["participants"],
        )
        c(
            "ideas.meetings",
            "workspace_id, id, idea_id, title, meeting_date, participants,"
            " excerpt, relation, transcript_url",
            t["meetings"],
        )
        c(
            "ideas.support_tickets",
            "workspace_id, id, idea_id, platform, external_id, subject,"
            " status, priority, customer_name, customer_email, url, created_at",
            t["tickets"],
        )
        c("ideas.idea_tags", "workspace_id, idea_id, tag_id", t["tags"])
        if t["links"]:
            c("customers.idea_links", "workspace_id, idea_id, customer_id, linked_at", t["links"])
        if self.s.has_projection:
            c("ideas.customer_links", "workspace_id, idea_id, customer_id, linked_at", t["links"])
