"""The dry run, before anything stops, where declarations are not enough: the new
version's app run against a scratch copy of the state it would resume.
tidegate_runtime/driver/dry_run.py is the part that runs inside that driver. The room:
``attempts.py`` drives the steps below, ``scratch_copy.py`` makes the scratch copy, ``driver.py``
submits and awaits a dry run's own driver, ``verdict.py`` reads what Spark said. A pre-warmed
update runs the same dry run inside its standby's driver (app/worker/standby/ready.py).

The declared checks (app/resume_points/compat.py) cannot see a change inside the app with the same
declarations (``avg`` for ``sum``, a session window for a tumbling one, another grouping key).
Spark sees it when it plans the first batch on the old checkpoint. So, before an update stops
the old run (and before a submit from a snapshot starts the new one):

1. ``dry_run_prepare``: each resumed query's checkpoint is copied into a scratch directory
   (the same materialisation as a new run's, from the snapshot or from the live run's
   committed prefix), and one empty batch is planned in each copy that holds state:
   ``offsets/N+1`` = ``offsets/N``. Spark runs a planned batch on restart even without data;
   it loads state version N+1, which the copy holds, and checks the state schemas and the
   operator metadata (see tidegate_runtime/driver/dry_run.py for what was observed on Spark 4.3).
2. ``dry_run_submit``: the new version's app is submitted on its cluster with
   ``spark.tidegate.dry_run=true`` under the tag ``tidegate-dryrun-<operation>``: no run
   has that tag, and a worker resuming after a crash finds the driver by it
   (``backend.find``) instead of submitting a second one.
3. ``dry_run``: the driver is awaited (bounded; killed past the timeout) and its result file
   read. A refusal fails the operation with the query, the operator and what differs; the
   old run was never touched.

A driver that failed for Spark infrastructure reasons, not because of the state
(``verdict.infrastructure_error``: ``verdict.TRANSIENT_SIGNATURES``, e.g. "Python worker failed
to connect back" on a loaded machine), proves nothing either way: the three steps run again
from a fresh scratch copy, as their own steps (``dry_run_prepare_2``, ``dry_run_submit_2``,
``dry_run_2``; the driver tagged ``tidegate-dryrun-<operation>-2``), up to
``verdict.ATTEMPTS`` in all. After the last one the operation fails saying so (nothing was
stopped; retrying is safe), not that the state is incompatible.

Skipped with ``dry_run: false`` on the request, and when no resumed query has state.
"""
