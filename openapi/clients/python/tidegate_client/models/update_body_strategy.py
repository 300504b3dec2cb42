from enum import StrEnum


class UpdateBodyStrategy(StrEnum):
    DRAIN = "drain"
    SNAPSHOT = "snapshot"
    STATELESS = "stateless"

    def __str__(self) -> str:
        return str(self.value)
