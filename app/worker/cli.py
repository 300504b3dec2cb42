from __future__ import annotations

from typing import Annotated

import typer

worker_app = typer.Typer(help="The worker process.", invoke_without_command=True)


@worker_app.callback()
def worker(
    concurrency: Annotated[int, typer.Option(help="Operations carried out at once.")] = 4,
    poll_seconds: Annotated[float, typer.Option(help="Fallback poll when no NOTIFY comes.")] = 1.0,
    lease_seconds: Annotated[
        float,
        typer.Option(
            min=3.0,
            help="How long an operation stays this worker's without a renewal (renewed every "
            "third of it); after a crash, another worker takes the operation over once it ends.",
        ),
    ] = 30.0,
) -> None:
    """Carry out lifecycle operations and supervise runs (several workers may run at once).

    Example: TIDEGATE_DATABASE_URL=postgresql://… tidegate worker
    """
    from app.core import checkpoint_store
    from app.core.config import get_settings
    from app.core.db import make_engine, make_sessionmaker
    from app.core.embedded import resolve_database_url
    from app.core.logging_setup import configure_from
    from app.worker.core.context import WorkerContext
    from app.worker.loop import run_worker, worker_id

    settings = get_settings()
    configure_from(settings)
    checkpoint_store.register(settings)
    url = resolve_database_url(settings)
    engine = make_engine(url, pool_size=concurrency + 4)
    ctx = WorkerContext(
        factory=make_sessionmaker(engine),
        settings=settings.model_copy(update={"database_url": url}),
        worker_id=worker_id(),
        poll_seconds=poll_seconds,
        lease_seconds=lease_seconds,
    )
    run_worker(ctx, concurrency)
