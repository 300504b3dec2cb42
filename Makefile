# tidegate: `make run` starts everything on one machine; `make test` installs and tests.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export SPARK_LOCAL_IP ?= 127.0.0.1

.PHONY: run test install lint typecheck openapi openapi-check unit e2e clean clients clients-check test-tools

$(STAMP): pyproject.toml jvm/deps.toml
	@command -v java >/dev/null || { echo "Java 17 is required (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@java -version 2>&1 | grep -qE 'version "(17|21)' || { echo "Java 17+ is required"; java -version; exit 1; }
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m tidegate_runtime.packaging.pyspark_zip  # bytecode in pyspark.zip: each query starts faster
	$(PY) -m app.devtools.jvm_deps fetch  # pinned jars (Kafka connector and broker, S3A), checked
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/tidegate run

lint: $(STAMP)
	$(VENV)/bin/ruff check app tidegate_runtime tests migrations bench pipelines
	$(VENV)/bin/ruff format --check app tidegate_runtime tests migrations bench pipelines

typecheck: $(STAMP)
	$(VENV)/bin/mypy

openapi: $(STAMP)
	$(PY) -m app.api.openapi_dump openapi/openapi.json

openapi-check: $(STAMP)
	$(PY) -m app.api.openapi_dump --check openapi/openapi.json

# ---- generated API clients (openapi/clients, from openapi/openapi.json) ---------------------
# Pinned generators, installed once ($(VENV)/tools, openapi/clients/typescript/node_modules);
# clients-check regenerates into a temp dir and fails when the committed clients drift.
clients: $(STAMP)
	VENV=$(VENV) scripts/gen-clients.sh

clients-check: $(STAMP)
	VENV=$(VENV) scripts/gen-clients.sh --check
# ---------------------------------------------------------------------------------------------

# ---- proof under load, faults and bad input (bench/; tests marked chaos, fuzz and e2e) -------
# `make test` runs the chaos, fuzz and security suites at smoke size (plain pytest collection),
# with one seeded real-SIGKILL scenario (submit, seed 1414) and one with two API processes and
# two workers, the one running an update by snapshot SIGKILLed (seed 1414).
# `make chaos` runs them in full: every worker step boundary of submit/stop/cancel/restart,
# snapshot, drain and update (by snapshot, by drain, stateless); a real SIGKILL from outside
# at random instants (fresh seed, printed; TIDEGATE_CHAOS_SEED=N repeats it) during every
# operation kind, with a 100 ms one-driver-per-run sampler; two APIs and two workers, the one
# running an update (by snapshot, by drain) SIGKILLed after a random step; PostgreSQL crashed
# during an update by drain and by snapshot; three PostgreSQL crashes under API load, three
# driver kills, 150 schemathesis examples per operation; and every end-to-end scenario on both
# backends (CI runs each on one, tests/support/backends.py::CI_BACKEND; the RocksDB one, a million
# events at this size, under make bench); the end-to-end tests, or their later steps, that CI
# leaves to another test proving the same feature (tests/support/sizes.py::under_chaos and
# `if FULL:` blocks; the skip reason or a comment there names the CI test). Add -s to see seeds, kills
# and samples.
# `make bench` runs every benchmark at its default (modest) size; each prints medians and
# ratios to a baseline measured in the same run and writes bench/results/<name>.json; and the
# RocksDB lifecycle on a million events, every one checked against its ground truth.
.PHONY: bench chaos
chaos: $(STAMP)
	TIDEGATE_SUITE=full $(PY) -m pytest -q -rs -m "chaos or fuzz or e2e" \
		--ignore tests/operations/test_lifecycle_rocksdb.py

bench: $(STAMP)
	$(PY) bench/api.py
	$(PY) bench/reaction.py
	$(PY) bench/startpoints.py
	$(PY) bench/upgrade.py
	$(PY) bench/kafka_upgrade.py
	$(PY) bench/metrics.py
	$(PY) bench/fleet.py
	$(PY) bench/statesize.py
	$(PY) bench/query_start.py
	TIDEGATE_SUITE=full $(PY) -m pytest -q -s tests/operations/test_lifecycle_rocksdb.py
	@for extra in bench/snapshots.py bench/drain.py; do \
		if [ -f $$extra ]; then echo "== $$extra"; $(PY) $$extra || exit 1; fi; \
	done
# ---------------------------------------------------------------------------------------------

# Prometheus and Chromium for the tests that drive them (Debian packages, as root); skipped elsewhere.
test-tools:
	@scripts/install-test-tools.sh

unit: $(STAMP)
	$(PY) -m pytest -m "not (e2e or spark or chaos)" -q

# The Spark tests and the others side by side, one core each (scripts/test-both-halves.sh).
test: $(STAMP) test-tools lint typecheck openapi-check clients-check
	PY=$(PY) scripts/test-both-halves.sh

clean:
	rm -rf $(VENV) .tidegate
