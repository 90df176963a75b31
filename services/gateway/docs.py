"""`GET /docs`: the API reference page, Swagger UI rendered from the served OpenAPI document.

Swagger UI's scripts, styles and icons ship inside the `swagger-ui-py` package and are served
from `/docs/static/`, so the page works without internet access. Its "Authorize" button takes a
bearer key and "Try it out" sends real calls to this gateway. The page sets a Content Security
Policy that allows no other origin, so nothing it loads or sends leaves for another host.
"""

from __future__ import annotations

import json

from aiohttp import web
from swagger_ui.core import ApplicationDocument

DOCS_PATH = "/docs"
TITLE = "Idea Management Service API"
# No script, style, image or connection to another origin. The page's one inline script
# starts Swagger UI; Swagger UI sets inline styles and draws some icons as data: URLs.
CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
SWAGGER_UI_OPTIONS = {
    # The layout without the top bar, whose box would fetch a document from any URL.
    "layout": "BaseLayout",
    # Swagger UI would otherwise ask a public validator about the document.
    "validatorUrl": None,
    "docExpansion": "list",
    "defaultModelsExpandDepth": 0,
    "tryItOutEnabled": False,
    "persistAuthorization": False,
}


def setup_docs(app: web.Application, openapi_path: str) -> None:
    """Serve the page at `/docs` (and `/docs/`), its assets under `/docs/static/`."""
    doc = ApplicationDocument(
        app,
        app_type="aiohttp",
        url_prefix=DOCS_PATH,
        title=TITLE,
        config_rel_url=openapi_path,
        parameters={k: json.dumps(v) for k, v in SWAGGER_UI_OPTIONS.items()},
    )
    # The document lives at its own path, not under the page's prefix.
    doc.parameters["url"] = json.dumps(openapi_path)
    handler = doc.match_handler()
    assert handler is not None
    handler(doc)
    app.on_response_prepare.append(_page_headers)


async def _page_headers(request: web.Request, response: web.StreamResponse) -> None:
    if request.path in (DOCS_PATH, DOCS_PATH + "/"):
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
