"""Date ranges and time buckets of the dated reports (docs/analytics.md).

A range defaults to the 90 days before `end`, and `end` to now; `start` after `end` or a range
longer than two calendar years is a validation error. Buckets start at midnight UTC on the
first day of their period (weeks on Monday, as ISO), oldest first, and every bucket between the
range's first and last is present, empty ones with zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from libs.common.errors import ValidationFailed

Period = Literal["day", "week", "month"]
DEFAULT_SPAN = timedelta(days=90)


@dataclass(frozen=True)
class Range:
    start: datetime
    end: datetime


def _plus_years(moment: datetime, years: int) -> datetime:
    if moment.year + years > 9999:
        return datetime.max.replace(tzinfo=UTC)
    try:
        return moment.replace(year=moment.year + years)
    except ValueError:  # 29 February into a year without one
        return moment.replace(year=moment.year + years, day=28)


_EARLIEST = datetime(1, 1, 1, tzinfo=UTC)


def resolve(
    start: datetime | None,
    end: datetime | None,
    *,
    now: datetime | None = None,
    max_years: int | None = 2,
) -> Range:
    """The effective range; `start` defaults to 90 days before the (effective) end."""
    end = end or now or datetime.now(UTC)
    # Buckets step a month past the end, and the default start lies 90 days before it: keep
    # both inside the calendar (years 1 to 9999) rather than fail on overflow.
    if end.year >= 9999 or (start is not None and start.year >= 9999):
        raise ValidationFailed(
            "Dates must be before the year 9999", field="end" if end.year >= 9999 else "start"
        )
    if start is None:
        if end < _EARLIEST + DEFAULT_SPAN:
            raise ValidationFailed("end is too early for the default 90-day range", field="end")
        start = end - DEFAULT_SPAN
    if start > end:
        raise ValidationFailed("start must not be after end", field="start")
    if max_years is not None and end > _plus_years(start, max_years):
        raise ValidationFailed(
            f"The range from start to end exceeds {max_years} years", field="end"
        )
    return Range(start, end)


def bucket_start(moment: datetime | date, period: Period) -> date:
    """The first day of the bucket holding `moment` (a UTC datetime or a date)."""
    day = moment.astimezone(UTC).date() if isinstance(moment, datetime) else moment
    if period == "day":
        return day
    if period == "week":
        return day - timedelta(days=day.weekday())
    return day.replace(day=1)


def next_bucket(day: date, period: Period) -> date:
    if period == "day":
        return day + timedelta(days=1)
    if period == "week":
        return day + timedelta(days=7)
    return date(day.year + day.month // 12, day.month % 12 + 1, 1)


def buckets(rng: Range, period: Period) -> list[date]:
    """Every bucket start from the one holding `start` to the one holding `end`."""
    out: list[date] = []
    day, last = bucket_start(rng.start, period), bucket_start(rng.end, period)
    while day <= last:
        out.append(day)
        day = next_bucket(day, period)
    return out
