"""The ideas service's settings: the common core (libs/common/settings.py) and the automation
API's meaning rule's threshold."""

from __future__ import annotations

from typing import cast

from aiohttp import web

from libs.common import web as common_web
from libs.common.settings import Fraction, Settings, var

# The automation API's meaning rule's threshold, a similarity as `POST /ideas/similar` answers
# it (the similar service's), chosen on the labeled set's tuning part (docs/similar.md).
DUPLICATE_SIMILARITY = 0.50


class IdeasSettings(Settings):
    duplicate_similarity: Fraction = var(
        DUPLICATE_SIMILARITY,
        "the automation API's duplicate rule by meaning: the similarity (0 to 1) "
        "`POST /ideas/similar` answers for the most similar idea, at or above which a new idea "
        "is a duplicate (the Signal records it); chosen on the labeled set's tuning part "
        "([docs/similar.md](docs/similar.md#duplicate_similarity-the-automation-apis-meaning-rule))",
    )


# The app's settings key, typed as this service's: the ideas app is given IdeasSettings.
SETTINGS = cast("web.AppKey[IdeasSettings]", common_web.SETTINGS)
