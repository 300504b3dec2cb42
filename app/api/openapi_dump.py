"""Write (or check) openapi/openapi.json from the app, so the committed spec never drifts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sqlalchemy import create_engine

from app.api.main import create_app


def render() -> str:
    # The schema needs no database: an engine connects only when first used.
    app = create_app(engine=create_engine("postgresql+psycopg://openapi.invalid/none"))
    return json.dumps(app.openapi(), indent=2, sort_keys=False) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    target = Path(next(a for a in argv if not a.startswith("--")))
    text = render()
    if check:
        if not target.exists() or target.read_text() != text:
            print(f"{target} is stale: run 'make openapi' and commit it", file=sys.stderr)
            return 1
        return 0
    target.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
