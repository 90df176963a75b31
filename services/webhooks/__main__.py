"""`ims-webhooks`: the webhooks service process."""

from libs.common.logging import configure_logging
from libs.common.settings import load_or_exit
from libs.common.web import run

from .app import create_webhooks_app
from .settings import WebhooksSettings


def main() -> None:
    settings = load_or_exit("webhooks", WebhooksSettings)
    configure_logging(settings.log_format, settings.log_level, "webhooks")
    run(create_webhooks_app(settings), settings.service_host, settings.webhooks_port)


if __name__ == "__main__":
    main()
