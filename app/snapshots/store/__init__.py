"""The snapshot store: content-addressed blobs and manifests on a local directory or an
object store (``blobs.py``, its restore side ``restoring.py``; ``remote.py`` for URLs such as
``s3://``), checkpoint files opened without following links (``safe_files.py``), and the store
and its lock as the worker takes them (``access.py``). It knows nothing of the catalogue (the
``snapshots`` table, one level up)."""
