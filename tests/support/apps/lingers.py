"""The windowed job, whose code then keeps its process alive after its queries ended: a
non-daemon thread, as a job's own helper (a metrics pusher, a pool) can leave behind. Stopped
by tidegate, its runtime stops the queries and the Spark session and says it is fenced; the
process does not exit by itself, so the worker must kill what is left of it."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

# The repository, after the py-files: pipelines.* from here, tidegate_runtime from the zip.
sys.path.append(str(Path(__file__).resolve().parents[3]))

from pipelines.windowed_counts import main


def _forever() -> None:
    while True:
        time.sleep(1)


if __name__ == "__main__":
    threading.Thread(target=_forever, name="left-behind", daemon=False).start()
    main(sys.argv[1:])
