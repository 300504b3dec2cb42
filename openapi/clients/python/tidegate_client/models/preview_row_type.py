from enum import StrEnum


class PreviewRowType(StrEnum):
    OFFSET = "OFFSET"
    OLDEST = "OLDEST"
    TIMESTAMP = "TIMESTAMP"
    UPCOMING = "UPCOMING"

    def __str__(self) -> str:
        return str(self.value)
