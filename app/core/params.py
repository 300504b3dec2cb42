"""Path parameters shared by the route modules of several domains."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

JobName = Annotated[str, Path(max_length=128, description="The job's name.")]
ClusterName = Annotated[str, Path(max_length=128)]
SnapshotPath = Annotated[str, Path(max_length=128, description="The snapshot's name.")]
RunId = Annotated[int, Path(ge=1, le=2**62)]
