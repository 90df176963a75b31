"""`ims-mcp`: the MCP process (Model Context Protocol tools over the REST API)."""

from libs.common.logging import configure_logging
from libs.common.web import run

from .app import create_mcp_app
from .settings import McpSettings


def main() -> None:
    settings = McpSettings.from_env()
    configure_logging(settings.log_format, settings.log_level, "mcp")
    run(create_mcp_app(settings), settings.service_host, settings.mcp_port)


if __name__ == "__main__":
    main()
