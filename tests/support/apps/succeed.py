"""Exits 0 without starting Spark (cheap): prints the env and args it got.

``--sleep N`` waits N seconds first, so a test can let it finish while the runner is down.
"""

import os
import sys
import time

args = sys.argv[1:]
if "--sleep" in args:
    time.sleep(float(args[args.index("--sleep") + 1]))
print(f"E2E_OK env={os.environ.get('TIDEGATE_E2E', '')} args={args}", flush=True)
