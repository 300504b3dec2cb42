from enum import StrEnum


class SourceKindDrain(StrEnum):
    BOUNDED = "bounded"
    NATIVE = "native"
    UNSUPPORTED = "unsupported"

    def __str__(self) -> str:
        return str(self.value)
