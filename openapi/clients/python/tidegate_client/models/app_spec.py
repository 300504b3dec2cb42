from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="AppSpec")


@_attrs_define
class AppSpec:
    """
    Attributes:
        file (str): The PySpark main file: an absolute path or a URL the cluster can read.
        py_files (list[str] | Unset):
        args (list[str] | Unset):
    """

    file: str
    py_files: list[str] | Unset = UNSET
    args: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        file = self.file

        py_files: list[str] | Unset = UNSET
        if not isinstance(self.py_files, Unset):
            py_files = self.py_files

        args: list[str] | Unset = UNSET
        if not isinstance(self.args, Unset):
            args = self.args

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "file": file,
            }
        )
        if py_files is not UNSET:
            field_dict["py_files"] = py_files
        if args is not UNSET:
            field_dict["args"] = args

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        file = d.pop("file")

        py_files = cast(list[str], d.pop("py_files", UNSET))

        args = cast(list[str], d.pop("args", UNSET))

        app_spec = cls(
            file=file,
            py_files=py_files,
            args=args,
        )

        return app_spec
