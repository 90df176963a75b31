"""`ims-ideas`: the ideas service process."""

from libs.common.logging import configure_logging
from libs.common.settings import load_or_exit
from libs.common.web import run

from .app import create_ideas_app
from .settings import IdeasSettings


def main() -> None:
    settings = load_or_exit("ideas", IdeasSettings)
    configure_logging(settings.log_format, settings.log_level, "ideas")
    run(create_ideas_app(settings), settings.service_host, settings.ideas_port)


if __name__ == "__main__":
    main()
