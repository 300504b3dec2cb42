"""tidegate's in-job runtime: what a managed PySpark pipeline imports.

It runs inside Spark drivers and executors, so it imports only the standard library, pyspark
and pyarrow (tests/runtime/test_imports.py holds it to that). The worker ships it with every
submission as a zip (app/worker/core/runtime_bundle.py): a cluster needs no tidegate install.

Its parts, each importing only those listed before it (packaging/ imports none of them;
tests/runtime/test_imports.py holds it):

- ``contract.py``: what the worker, the API and the driver agree on, written once;
- ``checkpoints/``: a query's checkpoint read and edited, locally or in object storage;
- ``sources/``: what queries read (the event log, Kafka) and where a reader stands in it;
- ``driver/``: the driver's control loop, ``Runtime``, and what it does on each directive;
- ``packaging/``: Spark's own Python zips made quick to import.

A pipeline imports the stable public paths beside them: ``control`` (``Runtime``),
``source``, ``eventlog`` and ``produce``.
"""
