# The in-process API fixtures of tests/api, reused (function-scoped: no second instance of
# anything expensive).
from tests.api.conftest import client, cluster, settings, token_for  # noqa: F401
