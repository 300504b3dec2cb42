from enum import StrEnum


class ListJobsStateType0(StrEnum):
    CANCELLED = "cancelled"
    DRAINED = "drained"
    DRAINING = "draining"
    FAILED = "failed"
    IDLE = "idle"
    RESTARTING = "restarting"
    RUNNING = "running"
    STANDBY = "standby"
    STOPPED = "stopped"
    STOPPING = "stopping"
    SUBMITTING = "submitting"
    SUCCEEDED = "succeeded"

    def __str__(self) -> str:
        return str(self.value)
