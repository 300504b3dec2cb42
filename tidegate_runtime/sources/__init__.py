"""What queries read (the event log, Kafka) and where a reader stands in it (positions)."""
