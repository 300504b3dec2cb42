from enum import StrEnum


class StartpointResponseState(StrEnum):
    APPLIED = "applied"
    PENDING = "pending"

    def __str__(self) -> str:
        return str(self.value)
