"""Contains all the data models used in inputs/outputs"""

from .app_spec import AppSpec
from .application_response import ApplicationResponse
from .application_response_after_offsets import ApplicationResponseAfterOffsets
from .application_response_before_offsets_type_0 import ApplicationResponseBeforeOffsetsType0
from .application_response_startpoints_item import ApplicationResponseStartpointsItem
from .applied_report import AppliedReport
from .applied_report_after import AppliedReportAfter
from .applied_report_before_type_0 import AppliedReportBeforeType0
from .batch_account import BatchAccount
from .build_body import BuildBody
from .build_response import BuildResponse
from .build_response_resume_point import BuildResponseResumePoint
from .cluster_create import ClusterCreate
from .cluster_create_kind import ClusterCreateKind
from .cluster_credentials import ClusterCredentials
from .cluster_response import ClusterResponse
from .compatibility_body import CompatibilityBody
from .compatibility_body_resume_point_type_0 import CompatibilityBodyResumePointType0
from .compatibility_response import CompatibilityResponse
from .coordinates import Coordinates
from .coordinates_response import CoordinatesResponse
from .directives import Directives
from .directives_drain_type_0 import DirectivesDrainType0
from .directives_query_restart_policy_type_0 import DirectivesQueryRestartPolicyType0
from .directives_sink_options import DirectivesSinkOptions
from .directives_sink_options_additional_property import DirectivesSinkOptionsAdditionalProperty
from .directives_sources import DirectivesSources
from .directives_sources_additional_property import DirectivesSourcesAdditionalProperty
from .directives_startpoints_item import DirectivesStartpointsItem
from .drain_body import DrainBody
from .drain_report import DrainReport
from .drain_report_end_offsets import DrainReportEndOffsets
from .drain_report_end_offsets_additional_property import DrainReportEndOffsetsAdditionalProperty
from .event_response import EventResponse
from .event_response_detail_type_0 import EventResponseDetailType0
from .fence_report import FenceReport
from .health import Health
from .initialize import Initialize
from .job_create import JobCreate
from .job_response import JobResponse
from .job_response_state import JobResponseState
from .job_update import JobUpdate
from .list_jobs_state_type_0 import ListJobsStateType0
from .operation_response import OperationResponse
from .operation_response_kind import OperationResponseKind
from .operation_response_params import OperationResponseParams
from .operation_response_result_type_0 import OperationResponseResultType0
from .operation_response_state import OperationResponseState
from .operator_info import OperatorInfo
from .operator_info_key_schema_type_0 import OperatorInfoKeySchemaType0
from .operator_info_value_schema_type_0 import OperatorInfoValueSchemaType0
from .page_cluster_response import PageClusterResponse
from .page_event_response import PageEventResponse
from .page_job_response import PageJobResponse
from .page_operation_response import PageOperationResponse
from .page_run_response import PageRunResponse
from .page_snapshot_summary import PageSnapshotSummary
from .page_version_response import PageVersionResponse
from .preview import Preview
from .preview_error import PreviewError
from .preview_late import PreviewLate
from .preview_row import PreviewRow
from .preview_row_move import PreviewRowMove
from .preview_row_type import PreviewRowType
from .problem import Problem
from .problem_errors_type_0_item import ProblemErrorsType0Item
from .problem_response import ProblemResponse
from .progress_report import ProgressReport
from .progress_report_durations_ms import ProgressReportDurationsMs
from .progress_response import ProgressResponse
from .progress_response_payload import ProgressResponsePayload
from .put_result import PutResult
from .query_account import QueryAccount
from .query_failure_report import QueryFailureReport
from .query_outcome import QueryOutcome
from .query_outcome_outcome import QueryOutcomeOutcome
from .query_outcome_source_type_0 import QueryOutcomeSourceType0
from .query_response import QueryResponse
from .query_restarts_response import QueryRestartsResponse
from .query_snapshot import QuerySnapshot
from .query_snapshot_declared_operators_item import QuerySnapshotDeclaredOperatorsItem
from .query_snapshot_offsets import QuerySnapshotOffsets
from .query_spec import QuerySpec
from .query_spec_output_mode import QuerySpecOutputMode
from .readiness import Readiness
from .restart_body import RestartBody
from .restart_policy import RestartPolicy
from .resume_from import ResumeFrom
from .retention_body import RetentionBody
from .retention_response import RetentionResponse
from .run_account import RunAccount
from .run_response import RunResponse
from .run_response_drain_type_0 import RunResponseDrainType0
from .run_response_progress import RunResponseProgress
from .run_response_query_restarts import RunResponseQueryRestarts
from .run_token import RunToken
from .sink_spec import SinkSpec
from .sink_spec_options import SinkSpecOptions
from .snapshot_body import SnapshotBody
from .snapshot_response import SnapshotResponse
from .snapshot_response_state import SnapshotResponseState
from .snapshot_summary import SnapshotSummary
from .snapshot_summary_state import SnapshotSummaryState
from .snapshot_use_response import SnapshotUseResponse
from .source_kind import SourceKind
from .source_kind_drain import SourceKindDrain
from .source_progress import SourceProgress
from .source_spec import SourceSpec
from .source_spec_options import SourceSpecOptions
from .spare_response import SpareResponse
from .split_entry import SplitEntry
from .standby_answer import StandbyAnswer
from .startpoint_response import StartpointResponse
from .startpoint_response_state import StartpointResponseState
from .startpoint_response_type import StartpointResponseType
from .startpoint_set import StartpointSet
from .startpoint_set_type import StartpointSetType
from .startpoints_put import StartpointsPut
from .startpoints_view import StartpointsView
from .state_operator_progress import StateOperatorProgress
from .state_operator_progress_custom_metrics import StateOperatorProgressCustomMetrics
from .stateful_operator_spec import StatefulOperatorSpec
from .step import Step
from .step_detail_type_0 import StepDetailType0
from .stop_body import StopBody
from .submit_body import SubmitBody
from .submit_body_resume_point_type_0 import SubmitBodyResumePointType0
from .token_create import TokenCreate
from .token_create_scope import TokenCreateScope
from .token_created import TokenCreated
from .token_response import TokenResponse
from .transition_response import TransitionResponse
from .update_body import UpdateBody
from .update_body_strategy import UpdateBodyStrategy
from .version_create import VersionCreate
from .version_create_conf import VersionCreateConf
from .version_response import VersionResponse
from .version_response_conf import VersionResponseConf

__all__ = (
    "ApplicationResponse",
    "ApplicationResponseAfterOffsets",
    "ApplicationResponseBeforeOffsetsType0",
    "ApplicationResponseStartpointsItem",
    "AppliedReport",
    "AppliedReportAfter",
    "AppliedReportBeforeType0",
    "AppSpec",
    "BatchAccount",
    "BuildBody",
    "BuildResponse",
    "BuildResponseResumePoint",
    "ClusterCreate",
    "ClusterCreateKind",
    "ClusterCredentials",
    "ClusterResponse",
    "CompatibilityBody",
    "CompatibilityBodyResumePointType0",
    "CompatibilityResponse",
    "Coordinates",
    "CoordinatesResponse",
    "Directives",
    "DirectivesDrainType0",
    "DirectivesQueryRestartPolicyType0",
    "DirectivesSinkOptions",
    "DirectivesSinkOptionsAdditionalProperty",
    "DirectivesSources",
    "DirectivesSourcesAdditionalProperty",
    "DirectivesStartpointsItem",
    "DrainBody",
    "DrainReport",
    "DrainReportEndOffsets",
    "DrainReportEndOffsetsAdditionalProperty",
    "EventResponse",
    "EventResponseDetailType0",
    "FenceReport",
    "Health",
    "Initialize",
    "JobCreate",
    "JobResponse",
    "JobResponseState",
    "JobUpdate",
    "ListJobsStateType0",
    "OperationResponse",
    "OperationResponseKind",
    "OperationResponseParams",
    "OperationResponseResultType0",
    "OperationResponseState",
    "OperatorInfo",
    "OperatorInfoKeySchemaType0",
    "OperatorInfoValueSchemaType0",
    "PageClusterResponse",
    "PageEventResponse",
    "PageJobResponse",
    "PageOperationResponse",
    "PageRunResponse",
    "PageSnapshotSummary",
    "PageVersionResponse",
    "Preview",
    "PreviewError",
    "PreviewLate",
    "PreviewRow",
    "PreviewRowMove",
    "PreviewRowType",
    "Problem",
    "ProblemErrorsType0Item",
    "ProblemResponse",
    "ProgressReport",
    "ProgressReportDurationsMs",
    "ProgressResponse",
    "ProgressResponsePayload",
    "PutResult",
    "QueryAccount",
    "QueryFailureReport",
    "QueryOutcome",
    "QueryOutcomeOutcome",
    "QueryOutcomeSourceType0",
    "QueryResponse",
    "QueryRestartsResponse",
    "QuerySnapshot",
    "QuerySnapshotDeclaredOperatorsItem",
    "QuerySnapshotOffsets",
    "QuerySpec",
    "QuerySpecOutputMode",
    "Readiness",
    "RestartBody",
    "RestartPolicy",
    "ResumeFrom",
    "RetentionBody",
    "RetentionResponse",
    "RunAccount",
    "RunResponse",
    "RunResponseDrainType0",
    "RunResponseProgress",
    "RunResponseQueryRestarts",
    "RunToken",
    "SinkSpec",
    "SinkSpecOptions",
    "SnapshotBody",
    "SnapshotResponse",
    "SnapshotResponseState",
    "SnapshotSummary",
    "SnapshotSummaryState",
    "SnapshotUseResponse",
    "SourceKind",
    "SourceKindDrain",
    "SourceProgress",
    "SourceSpec",
    "SourceSpecOptions",
    "SpareResponse",
    "SplitEntry",
    "StandbyAnswer",
    "StartpointResponse",
    "StartpointResponseState",
    "StartpointResponseType",
    "StartpointSet",
    "StartpointSetType",
    "StartpointsPut",
    "StartpointsView",
    "StatefulOperatorSpec",
    "StateOperatorProgress",
    "StateOperatorProgressCustomMetrics",
    "Step",
    "StepDetailType0",
    "StopBody",
    "SubmitBody",
    "SubmitBodyResumePointType0",
    "TokenCreate",
    "TokenCreated",
    "TokenCreateScope",
    "TokenResponse",
    "TransitionResponse",
    "UpdateBody",
    "UpdateBodyStrategy",
    "VersionCreate",
    "VersionCreateConf",
    "VersionResponse",
    "VersionResponseConf",
)
