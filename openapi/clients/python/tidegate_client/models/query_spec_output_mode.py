from enum import StrEnum


class QuerySpecOutputMode(StrEnum):
    APPEND = "append"
    COMPLETE = "complete"
    UPDATE = "update"

    def __str__(self) -> str:
        return str(self.value)
