"""When a worker counts as live, said once for the worker's sweeps (which share the runs out
among the live workers) and for /metrics (``tidegate_workers_live``): not stopped, and its last
heartbeat under three of its own beats old."""

LIVE_WORKER = (
    "stopped_at is null and heartbeat_at > now() - make_interval(secs => 3 * every_seconds)"
)
