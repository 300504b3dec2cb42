"""Whether a bootstrap secret (TIDEGATE_ADMIN_TOKEN, TIDEGATE_RUNNER_TOKEN) is one anyone could
guess. zxcvbn estimates the guesses a cracker needs (repeats, sequences, keyboard rows, dates
and dictionary words count for little; random characters for a lot), told this project's own
words, with separators taken out (``tidegate-admin-token`` otherwise scores its dashes as
random). A hex digest of a dictionary word is as guessable as the word: refused too."""

from __future__ import annotations

import hashlib
import re
from functools import cache

from zxcvbn import zxcvbn
from zxcvbn.frequency_lists import FREQUENCY_LISTS

MIN_LENGTH = 32
MIN_GUESSES_LOG10 = 20  # ~66 bits; random 32-hex or 32-urlsafe tokens score 26 and above
MAKE_TOKEN_HINT = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
# Placeholders from docs, compose files and tutorials: never a real secret, whatever the length.
PLACEHOLDERS = ("change-me", "changeme", "change_me", "replace-me", "example", "default")
# What a person naming a tidegate secret reaches for first (zxcvbn's user inputs).
PROJECT_WORDS = (
    "tidegate", "tide", "gate", "admin", "administrator", "token", "secret", "password",
    "bearer", "production", "prod", "staging", "stage", "test", "cluster", "spark",
    "streaming", "stream", "kafka", "livy", "runner", "api", "root", "master", "key",
)  # fmt: skip
_SEPARATORS = re.compile(r"[-_.:/+=\s]")
# A hex digest's length -> the hash most likely behind it (md5sum, sha1sum, sha256sum, …).
_DIGESTS = {32: "md5", 40: "sha1", 56: "sha224", 64: "sha256", 96: "sha384", 128: "sha512"}
_JUDGED_CHARS = 100  # plenty to judge; zxcvbn slows down on long input


def check_token_strength(token: str) -> None:
    """ValueError (saying how to make a good one) for a secret anyone could guess."""
    if is_weak(token):
        raise ValueError(
            f"too weak: use at least {MIN_LENGTH} random characters, not words, a placeholder "
            f"or the hash of a word. Make one with: {MAKE_TOKEN_HINT}"
        )


def is_weak(token: str) -> bool:
    if len(token) < MIN_LENGTH or len(set(token)) < 8:
        return True
    if any(p in token.lower() for p in PLACEHOLDERS) or _digest_of_a_word(token):
        return True
    judged = token[:_JUDGED_CHARS]
    guesses = min(
        zxcvbn(form, user_inputs=list(PROJECT_WORDS))["guesses_log10"]
        for form in {judged, _SEPARATORS.sub("", judged)}
        if form
    )
    return bool(guesses < MIN_GUESSES_LOG10)


def _digest_of_a_word(token: str) -> bool:
    """Whether ``token`` is the hex digest of a dictionary or project word (as ``sha256sum``
    prints it, with or without the newline ``echo`` adds)."""
    algorithm = _DIGESTS.get(len(token))
    if algorithm is None or not re.fullmatch(r"[0-9a-fA-F]+", token):
        return False
    return token.lower() in _word_digests(algorithm)


@cache
def _word_digests(algorithm: str) -> frozenset[str]:
    words = {w for ranked in FREQUENCY_LISTS.values() for w in ranked} | set(PROJECT_WORDS)
    return frozenset(
        hashlib.new(algorithm, form.encode()).hexdigest()
        for word in words
        for form in (word, word + "\n")
    )
