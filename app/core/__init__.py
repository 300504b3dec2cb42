"""Plumbing below every domain: settings, database, errors, request-scoped dependencies,
column types, path parameters, pagination, redaction, logging. Imports no domain."""
