from enum import StrEnum


class QueryOutcomeOutcome(StrEnum):
    DROPPED = "dropped"
    INITIALIZE = "initialize"
    RESUME = "resume"

    def __str__(self) -> str:
        return str(self.value)
