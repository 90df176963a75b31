"""`ims-customers`: the customers service process."""

from libs.common.logging import configure_logging
from libs.common.settings import load_or_exit
from libs.common.web import run

from .app import create_customers_app
from .settings import CustomersSettings


def main() -> None:
    settings = load_or_exit("customers", CustomersSettings)
    configure_logging(settings.log_format, settings.log_level, "customers")
    run(create_customers_app(settings), settings.service_host, settings.customers_port)


if __name__ == "__main__":
    main()
