"""Developer tooling: the one-machine stack, a local Spark standalone cluster, the
event-log CLI. Never imported by the API server, the worker or the in-driver runtime."""
