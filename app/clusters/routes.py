from __future__ import annotations

from fastapi import APIRouter, Request, Response

from app.auth.deps import Admin, Reader
from app.auth.service import Scope
from app.clusters import service
from app.clusters.schemas import ClusterCreate, ClusterResponse
from app.core.deps import DbSession
from app.core.pagination import Cursor, Limit, Page
from app.core.params import ClusterName

router = APIRouter(tags=["clusters"])


@router.post(
    "/clusters",
    status_code=201,
    response_model=ClusterResponse,
    operation_id="createCluster",
    name="cluster.create",
)
def create_cluster(body: ClusterCreate, session: DbSession, actor: Admin) -> ClusterResponse:
    return service.cluster_response(service.create_cluster(session, body, actor))


@router.get(
    "/clusters",
    response_model=Page[ClusterResponse],
    operation_id="listClusters",
    name="cluster.list",
)
def list_clusters(
    session: DbSession, _: Reader, limit: Limit = 50, cursor: Cursor = None
) -> Page[ClusterResponse]:
    rows, next_cursor = service.list_clusters(session, limit=limit, cursor=cursor)
    return Page(items=[service.cluster_response(c) for c in rows], next_cursor=next_cursor)


@router.get(
    "/clusters/{name}",
    response_model=ClusterResponse,
    operation_id="getCluster",
    name="cluster.get",
)
def get_cluster(
    name: ClusterName, session: DbSession, caller: Reader, request: Request
) -> ClusterResponse:
    # Only a token that may act on clusters' jobs has the service call the cluster (with its
    # credentials); a read token sees the cluster as stored.
    probes = request.app.state.probes if caller.allows(Scope.OPERATE) else None
    return service.cluster_response(service.get_cluster(session, name), probes=probes)


@router.delete(
    "/clusters/{name}", status_code=204, operation_id="deleteCluster", name="cluster.delete"
)
def delete_cluster(name: ClusterName, session: DbSession, actor: Admin) -> Response:
    service.delete_cluster(session, name, actor)
    return Response(status_code=204)
