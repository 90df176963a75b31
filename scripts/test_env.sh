#!/bin/sh
# The `make test` set-up: PostgreSQL and RabbitMQ answer at DATABASE_URL / AMQP_URL (private
# ones under .run/ when nothing answers), then COMMAND runs with both exported, and private
# servers started for it are stopped again. Exits with COMMAND's status.
#
#   scripts/test_env.sh .venv/bin/python -m pytest [ARGS...]
#
# Without a command it only sets up and prints `export ...` lines for `eval`; private servers
# then stay up until `scripts/devenv.py stop`. See docs/running.md.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
VENV_BIN=${VENV_BIN:-$(dirname "$here")/.venv/bin}
if [ -x "$VENV_BIN/python" ]; then python=$VENV_BIN/python; else python=python3; fi
if [ "$#" -eq 0 ]; then
    exec "$python" "$here/devenv.py" ensure
fi
exec "$python" "$here/devenv.py" exec -- "$@"
