from enum import StrEnum


class OperationResponseKind(StrEnum):
    CANCEL = "cancel"
    DRAIN = "drain"
    RESTART = "restart"
    SNAPSHOT = "snapshot"
    STOP = "stop"
    SUBMIT = "submit"
    UPDATE = "update"

    def __str__(self) -> str:
        return str(self.value)
