"""`ims-gateway`: the public listener."""

from libs.common.logging import configure_logging
from libs.common.settings import load_or_exit
from libs.common.web import run

from .app import create_gateway
from .settings import GatewaySettings


def main() -> None:
    settings = load_or_exit("gateway", GatewaySettings)
    configure_logging(settings.log_format, settings.log_level, "gateway")
    run(
        create_gateway(settings),
        settings.gateway_host,
        settings.gateway_port,
        metrics_port=settings.gateway_metrics_port,
    )


if __name__ == "__main__":
    main()
