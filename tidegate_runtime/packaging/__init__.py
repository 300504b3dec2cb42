"""Spark's own Python zips made quick to import: bytecode in them, once per install."""
