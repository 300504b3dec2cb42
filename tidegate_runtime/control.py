"""The stable public path of the runtime a pipeline starts its queries through:
``from tidegate_runtime.control import Runtime``. The code lives in
tidegate_runtime/driver/runtime.py; a pipeline imports it from here, so the runtime's own
layout can change under it."""

from tidegate_runtime.driver.runtime import Runtime

__all__ = ["Runtime"]
