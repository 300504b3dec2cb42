"""The end-to-end fixtures live in ``tests/e2e/fixtures.py`` (a plugin of ``tests/conftest.py``,
shared with the chaos and security suites); the helpers are re-exported here for the tests
that import them from this module."""

from tests.e2e.fixtures import (  # noqa: F401
    APPS,
    RUNNER_AUTH,
    RUNNER_TOKEN,
    SPARK_TEST_CONF,
    app_path,
    processes_mentioning,
    runner_cluster,
    serve_runner,
    unique_tag,
    wait_for,
)
