"""The app-path check, property-based (issues 26 #1 and 51 C1): whatever a caller writes, a
path let through is stored in a canonical form that lies under an app root, reads the same to
every parser (nothing to decode, no dot segment), and one Spark would split is never let
through. Spark's own reading of the stored form is in test_app_paths_spark.py."""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from app.jobs import conf_policy
from app.jobs.app_paths import Refused, canonical

SEGMENT = st.sampled_from(
    ["..", ".", "apps", "x.py", "other", "%2e%2e", "%2E", "a%2fb", "", "a?b", "a#b", "a\\b", "é"]
)
PREFIX = st.sampled_from(
    ["", "file:", "file://", "file:///", "file://localhost", "file://tmp", "local:", "local://"]
)


def roots(tmp: Path) -> list[str]:
    return [str(tmp / "apps"), "s3a://bucket/apps"]


@settings(max_examples=400, deadline=None)
@given(st.lists(SEGMENT, min_size=1, max_size=6))
def test_a_url_let_through_lies_under_its_root_as_written(segments: list[str]) -> None:
    url = "s3a://bucket/apps/" + "/".join(segments)
    form = canonical(url, ["/srv/apps", "s3a://bucket/apps"])
    if isinstance(form, str):
        assert form == url
        decoded = posixpath.normpath(unquote(urlsplit(url).path))
        assert decoded == urlsplit(url).path and decoded.startswith("/apps/"), url


@settings(max_examples=600, deadline=None)
@given(PREFIX, st.lists(SEGMENT, min_size=1, max_size=6))
def test_a_local_path_let_through_is_its_resolved_self_under_a_root(
    prefix: str, segments: list[str]
) -> None:
    root = "/srv/apps"
    path = prefix + root + "/" + "/".join(segments)
    form = canonical(path, [root])
    if isinstance(form, str):
        plain = form.removeprefix("local:")
        assert plain == os.path.realpath(plain) and plain.startswith(root + "/"), (path, form)
        assert not any(c in form for c in "%?#\\,") and "/./" not in form and "/../" not in form
        assert form.startswith("local:") == prefix.startswith("local:")
    else:
        assert isinstance(form, Refused) and form.reason


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["/srv/apps/job.py", "/tmp/evil.zip", "s3a://bucket/apps/y.py", ""]),
        min_size=2,
        max_size=4,
    )
)
def test_a_list_spark_would_split_is_never_one_file(pieces: list[str]) -> None:
    assert isinstance(canonical(",".join(pieces), ["/srv/apps", "s3a://bucket/apps"]), Refused)


def test_a_link_inside_a_root_is_stored_as_the_file_it_names(tmp_path: Path) -> None:
    apps = tmp_path / "apps"
    (apps / "lib").mkdir(parents=True)
    (apps / "lib" / "job.py").write_text("")
    (apps / "job.py").symlink_to(apps / "lib" / "job.py")
    (apps / "out.py").symlink_to(tmp_path / "evil.py")
    assert canonical(f"file://{apps}/job.py", roots(tmp_path)) == f"{apps}/lib/job.py"
    assert canonical(f"local:{apps}/job.py", roots(tmp_path)) == f"local:{apps}/lib/job.py"
    assert isinstance(canonical(f"{apps}/out.py", roots(tmp_path)), Refused)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(sorted(conf_policy.ALLOWED)), st.text(max_size=24))
def test_a_conf_value_let_through_is_plain_and_never_substituted(key: str, value: str) -> None:
    """Issue 51 H1: whatever the value, one let through holds no '${' and nothing but the
    characters of numbers, sizes, durations, names and zones."""
    if conf_policy.problem(key, value) is None:
        assert "${" not in value
        assert re.fullmatch(r"[A-Za-z0-9._:+/-]*", value.strip()), (key, value)
    assert conf_policy.problem(key, "${env:X}") is not None
