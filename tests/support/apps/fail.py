"""Fails at start with a clear error, before any SparkSession exists."""

raise RuntimeError("tidegate-e2e: failing at start on purpose")
