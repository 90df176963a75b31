#!/bin/sh
# `make run`, once the virtualenv exists: PostgreSQL and RabbitMQ (private ones under .run/
# when nothing answers at DATABASE_URL / AMQP_URL), migrations, the demo workspace (DEMO=0
# skips it), then every process in the foreground until Ctrl-C or SIGTERM stops them all.
# VENV_BIN is the virtualenv's bin directory (default: .venv/bin). See docs/running.md.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
VENV_BIN=${VENV_BIN:-$(dirname "$here")/.venv/bin}
export VENV_BIN
if [ -x "$VENV_BIN/python" ]; then python=$VENV_BIN/python; else python=python3; fi
# exec: the supervisor takes this shell's place, so the signals reach it directly.
exec "$python" "$here/supervise.py" --setup "$@"
