from enum import StrEnum


class ClusterCreateKind(StrEnum):
    LIVY = "livy"
    STANDALONE = "standalone"

    def __str__(self) -> str:
        return str(self.value)
