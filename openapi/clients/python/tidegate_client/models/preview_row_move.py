from enum import StrEnum


class PreviewRowMove(StrEnum):
    NONE = "none"
    REPLAY = "replay"
    SKIP = "skip"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return str(self.value)
