"""The version policy's path check, property-based (issue 26, #1): whatever a caller writes, a
file it lets through lies under an app root once the URL is normalised as a client would
normalise it, and a list Spark would split is let through only if every piece is."""

from __future__ import annotations

import posixpath
from urllib.parse import quote, unquote, urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from app.jobs.version_policy import under_an_app_root

ROOTS = ["/srv/apps", "s3a://bucket/apps"]
SEGMENT = st.sampled_from(["..", ".", "apps", "x.py", "other", "%2e%2e", "%2E", "a%2fb", ""])


def _normalised(url: str) -> str:
    return posixpath.normpath("/" + unquote(urlsplit(url).path).lstrip("/"))


@settings(max_examples=400, deadline=None)
@given(st.lists(SEGMENT, min_size=1, max_size=6), st.booleans())
def test_a_url_let_through_lies_under_its_root(segments: list[str], encode: bool) -> None:
    path = "/".join(quote(s, safe="%") if encode else s for s in segments)
    url = f"s3a://bucket/apps/{path}"
    if under_an_app_root(url, ROOTS):
        assert _normalised(url).startswith("/apps/"), url


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "/srv/apps/job.py",
                "/srv/apps/lib/x.py",
                "/tmp/evil.zip",
                "https://attacker.example/x.py",
                "s3a://bucket/apps/y.py",
                "s3a://bucket/other/y.py",
                "",
            ]
        ),
        min_size=1,
        max_size=4,
    )
)
def test_a_list_is_let_through_only_if_every_piece_is(pieces: list[str]) -> None:
    inside = {"/srv/apps/job.py", "/srv/apps/lib/x.py", "s3a://bucket/apps/y.py"}
    allowed = all(under_an_app_root(p, ROOTS) for p in ",".join(pieces).split(","))
    assert allowed == all(p in inside for p in pieces)
