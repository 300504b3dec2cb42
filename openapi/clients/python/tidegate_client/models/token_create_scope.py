from enum import StrEnum


class TokenCreateScope(StrEnum):
    ADMIN = "admin"
    OPERATE = "operate"
    READ = "read"

    def __str__(self) -> str:
        return str(self.value)
