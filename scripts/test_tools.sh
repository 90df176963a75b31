#!/bin/sh
# The tools `make test` needs beyond the virtualenv, installed when missing:
#   - Redocly CLI, pinned in tools/openapi-lint (package.json + package-lock.json), by `npm ci`,
#     again only when the lock file changed (it lints the served OpenAPI document);
#   - Debian's chromium, for the /docs page test in a headless browser (as root, by apt-get).
# See docs/running.md.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
lint="$root/tools/openapi-lint"
stamp="$lint/node_modules/.installed"

if ! command -v npm >/dev/null 2>&1; then
    echo "test_tools: node and npm (Node.js 20.19 or later) are needed to lint the OpenAPI document" >&2
    exit 1
fi
if [ ! -f "$stamp" ] || [ "$lint/package-lock.json" -nt "$stamp" ]; then
    (cd "$lint" && npm ci --no-audit --no-fund --loglevel=error)
    touch "$stamp"
fi

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "test_tools: chromium is missing; as root: apt-get install chromium" >&2
        exit 1
    fi
fi
