"""tidegate's in-job runtime: what a managed PySpark pipeline imports.

It runs inside Spark drivers and executors, so it imports only the standard library, pyspark
and pyarrow (tests/runtime/test_imports.py holds it to that). The worker ships it with every
submission as a zip (app/worker/core/runtime_bundle.py): a cluster needs no tidegate install.
"""
