"""`ims-analytics`: the analytics service process."""

from libs.common.logging import configure_logging
from libs.common.settings import load_or_exit
from libs.common.web import run

from .app import create_analytics_app
from .settings import AnalyticsSettings


def main() -> None:
    settings = load_or_exit("analytics", AnalyticsSettings)
    configure_logging(settings.log_format, settings.log_level, "analytics")
    run(create_analytics_app(settings), settings.service_host, settings.analytics_port)


if __name__ == "__main__":
    main()
