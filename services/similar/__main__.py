"""`ims-similar`: the similar service's search API (docs/similar.md).

It serves the similar-ideas routes (`GET /ideas/{id}/similar`, `POST /ideas/similar`), which
the gateway and the MCP process send to `SIMILAR_URLS`, and the internal route the ideas
service's automation rule asks; it keeps the indexes they search. It runs in Linux's idle
scheduling class (`SIMILAR_SEARCH_IDLE`, on by default): the kernel gives it only the CPU the
other requests' processes leave, and takes the CPU back from it the moment one of them wakes.
"""

import os

# numpy's BLAS on one thread: the searches run in a pool of their own (docs/similar.md).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from libs.common.logging import configure_logging  # noqa: E402
from libs.common.settings import load_or_exit  # noqa: E402
from libs.common.web import run  # noqa: E402

from .app import PROCESS, create_similar_app  # noqa: E402
from .embedding import place_model_process  # noqa: E402
from .settings import SimilarSettings  # noqa: E402


def main() -> None:
    settings = load_or_exit(PROCESS, SimilarSettings)
    configure_logging(settings.log_format, settings.log_level, PROCESS)
    # Before any thread starts: every thread of the process inherits the class.
    place_model_process(0, None, idle=settings.similar_search_idle)
    run(create_similar_app(settings), settings.service_host, settings.similar_port)


if __name__ == "__main__":
    main()
