"""`ims-ideas-similar`: the ideas service's search process (docs/similar.md).

It serves the similar-ideas routes (`GET /ideas/{id}/similar`, `POST /ideas/similar`), which
the gateway sends to `SIMILAR_URLS`, and keeps the indexes they search. It is a process of its
own so that it can run in Linux's idle scheduling class (`SIMILAR_SEARCH_IDLE`, on by
default): the kernel then gives it only the CPU the other requests' processes leave, and takes
the CPU back from it the moment one of them wakes. A search shares no event loop with them
either. The ideas process keeps the routes that write, the embedder and the automation API's
duplicate rule.
"""

import os

# numpy's BLAS on one thread: the searches run in a pool of their own (docs/similar.md).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from libs.common.logging import configure_logging  # noqa: E402
from libs.common.settings import load_or_exit  # noqa: E402
from libs.common.web import run  # noqa: E402

from .app import SIMILAR_PROCESS, create_similar_app  # noqa: E402
from .embedding import place_model_process  # noqa: E402
from .settings import IdeasSettings  # noqa: E402


def main() -> None:
    settings = load_or_exit(SIMILAR_PROCESS, IdeasSettings)
    configure_logging(settings.log_format, settings.log_level, SIMILAR_PROCESS)
    # Before any thread starts: every thread of the process inherits the class.
    place_model_process(0, None, idle=settings.similar_search_idle)
    run(create_similar_app(settings), settings.service_host, settings.similar_port)


if __name__ == "__main__":
    main()
