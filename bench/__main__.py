"""`make bench`: run each area's benchmark; each writes bench/results/<area>.json and .md.

`python -m bench` runs all; `python -m bench reference ideas` runs those named.
Each module `bench.<area>` offers `async def main() -> dict`.
"""

from __future__ import annotations

import asyncio
import importlib
import sys

AREAS = (
    "ideas",
    "comments",
    "signals",
    "customers",
    "users",
    "webhooks",
    "analytics",
    "mcp",
    "render",
    "reference",
    "similar",
    "similar_models",
)


def main() -> None:
    wanted = sys.argv[1:] or list(AREAS)
    for area in wanted:
        try:
            module = importlib.import_module(f"bench.{area}")
        except ModuleNotFoundError as err:
            if err.name != f"bench.{area}":
                raise
            print(f"bench: no benchmark for {area} yet", file=sys.stderr)
            continue
        print(f"== {area}", flush=True)
        asyncio.run(module.main())


if __name__ == "__main__":
    main()
