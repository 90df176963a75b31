"""Sentiment of a signal's text (docs/ideas.md, Signals): VADER, a lexicon and rule analyzer
made for short social and review text, run in-process with no network.

The score is VADER's `compound` (-1..1). The label's threshold was chosen on the tuning part of
tests/data/signal_sentiment.tsv (the best label accuracy there, ties to the value closest to
VADER's own 0.05); tests/ideas/test_signal_sentiment.py checks both that choice and the
held-out figures.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

# |compound| at or above it: positive or negative; below: neutral.
LABEL_THRESHOLD = 0.41
# Texts longer than this are scored in a worker thread: about 3 us a character on a busy
# 2-core machine, so the event loop is never held for more than ~1.5 ms by one signal.
INLINE_CHARS = 500


@lru_cache(maxsize=1)
def _analyzer() -> SentimentIntensityAnalyzer:
    return SentimentIntensityAnalyzer()


def label(score: float, threshold: float = LABEL_THRESHOLD) -> str:
    if score >= threshold:
        return "positive"
    if score <= -threshold:
        return "negative"
    return "neutral"


def score(text: str) -> float:
    return float(_analyzer().polarity_scores(text)["compound"])


async def analyze(text: str) -> tuple[str, float]:
    """The label and the score of `text`."""
    if len(text) <= INLINE_CHARS:
        value = score(text)
    else:
        value = await asyncio.get_running_loop().run_in_executor(None, score, text)
    return label(value), value
