from enum import StrEnum


class SnapshotSummaryState(StrEnum):
    CREATING = "creating"
    FAILED = "failed"
    READY = "ready"

    def __str__(self) -> str:
        return str(self.value)
