"""`python -m app.runner --port N --state-dir DIR`."""

from app.runner.cli import runner_app

runner_app(prog_name="python -m app.runner")
