"""REST endpoints for jobs and pool queues; every read goes through the tenant-scoped selectors."""
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from quotas.common.pagination import BoundedLimitOffsetPagination
from quotas.models import Pool
from quotas.access import tenants_for_user
from quotas.tenant_api import READABLE, SHARED, TENANT_OBJECT, ScopedAPIView, TenantAPIView
from scheduler.jobs import selectors, services
from scheduler.jobs.contents import job_contents_reveal, may_read_contents
from scheduler.jobs.positions import positions_of
from scheduler.jobs.serializers import (
    BulkResultSerializer,
    CancelSerializer,
    EnvironmentReportSerializer,
    JobBulkSubmitSerializer,
    JobContentsRevealSerializer,
    JobContentsSerializer,
    JobSerializer,
    JobSubmitSerializer,
    JobSummarySerializer,
    PoolQueueSerializer,
    PreemptionRejectSerializer,
    SummarySerializer,
    bulk_specs,
)
from scheduler.jobs.summary import job_summary
from scheduler.jobs.wait_text import wait_message
from scheduler.models import Job, Preemption
from scheduler.preemption import selectors as preemption_selectors
from scheduler.preemption import plan, stop

QUEUE_LIMIT = 500


def job_payload(user, job_id: int) -> dict:
    """One job as `user` may read it: what it runs only for its owner and its tenant's admins."""
    job = selectors.job_for_user(user, job_id)
    return JobSerializer(job, context={"show_contents": may_read_contents(user, job)}).data


class JobListView(ScopedAPIView):
    scope = READABLE  # jobs_for_user reads the tenants the caller may read; submitting checks membership
    # Declared so the schema shows the paginated envelope this view returns.
    pagination_class = BoundedLimitOffsetPagination

    @extend_schema(
        parameters=[OpenApiParameter("tenant", str), OpenApiParameter("status", str, description="comma list"),
                    OpenApiParameter("pool", str)],
        responses=JobSummarySerializer(many=True), summary="Jobs of the tenants you may read")
    def get(self, request):
        jobs = selectors.jobs_for_user(request.user, tenant=request.query_params.get("tenant", ""),
                                       status=request.query_params.get("status", ""),
                                       pool=request.query_params.get("pool", ""))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(jobs, request, view=self)
        context = {"positions": positions_of(page)}
        return paginator.get_paginated_response(JobSummarySerializer(page, many=True, context=context).data)

    @extend_schema(request=JobSubmitSerializer, responses={201: JobSerializer}, summary="Submit a job")
    def post(self, request):
        serializer = JobSubmitSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        job = services.job_submit(actor=request.user, **serializer.validated_data)
        return Response(job_payload(request.user, job.pk),
                        status=status.HTTP_201_CREATED)


class JobBulkSubmitView(ScopedAPIView):
    scope = READABLE
    @extend_schema(request=JobBulkSubmitSerializer, responses={201: BulkResultSerializer},
                   summary="Submit many jobs at once (all or nothing)")
    def post(self, request):
        serializer = JobBulkSubmitSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        specs = bulk_specs(serializer.validated_data["jobs"])
        jobs = services.job_submit_bulk(actor=request.user, specs=specs)
        return Response({"count": len(jobs), "ids": [job.pk for job in jobs]}, status=status.HTTP_201_CREATED)


class _OneJobView(ScopedAPIView):
    scope = TENANT_OBJECT

    def scoped_object(self, request, job_id: int):
        return selectors.job_for_user(request.user, job_id)


class JobDetailView(_OneJobView):
    @extend_schema(responses=JobSerializer, summary="One job with its wait reason")
    def get(self, request, job_id: int):
        return Response(job_payload(request.user, job_id))


class JobContentsRevealView(_OneJobView):
    @extend_schema(request=JobContentsRevealSerializer, responses=JobContentsSerializer,
                   summary="What a job runs: its owner and tenant admins read it; a platform admin reveals it "
                           "with a reason, which the audit trail keeps")
    def post(self, request, job_id: int):
        job = self.object
        data = JobContentsRevealSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        contents = job_contents_reveal(actor=request.user, job=job, reason=data.validated_data["reason"])
        return Response(JobContentsSerializer(contents).data)


class JobCancelView(_OneJobView):
    @extend_schema(request=CancelSerializer, responses=JobSerializer, summary="Cancel a job")
    def post(self, request, job_id: int):
        job = self.object
        serializer = CancelSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        services.job_cancel(actor=request.user, job=job, reason=serializer.validated_data["reason"])
        return Response(job_payload(request.user, job_id))


class JobEnvironmentView(_OneJobView):
    @extend_schema(request=EnvironmentReportSerializer, responses=JobSerializer,
                   summary="Report the job's environment fixed or failed (owner, tenant admin); a fixed job is "
                           "evaluated again")
    def post(self, request, job_id: int):
        job = self.object
        serializer = EnvironmentReportSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        services.job_environment_update(actor=request.user, job=job, **serializer.validated_data)
        return Response(job_payload(request.user, job_id))


class PoolQueueView(ScopedAPIView):
    scope = SHARED  # other tenants' entries carry only tenant and numbers
    @extend_schema(responses=PoolQueueSerializer, summary="A pool's pending jobs in queue order")
    def get(self, request, name: str):
        pool = get_object_or_404(Pool, name=name)
        readable = selectors.readable_tenant_ids(request.user)
        queue, count, order = selectors.pool_queue(pool=pool, limit=QUEUE_LIMIT)
        entries = []
        for job in queue:
            mine = job.tenant_id in readable
            rank = order.rank(job.pk)
            entries.append({
                "position": None if rank is None else rank + 1, "tenant": job.tenant.slug, "id": job.pk if mine else None,
                "project": job.project.slug if mine else None, "name": job.name if mine else None,
                "priority_class": job.priority_class, "gpu_model": job.gpu_model.name, "gpus": job.gpus,
                "replicas": job.replicas, "status": job.status, "wait_code": job.wait_code,
                "message": wait_message(job.wait) if mine and job.wait else None, "submitted_at": job.submitted_at,
            })
        return Response(PoolQueueSerializer({"pool": pool.name, "count": count, "jobs": entries}).data)


class PoolSummaryView(ScopedAPIView):
    scope = SHARED  # counts only
    @extend_schema(responses=SummarySerializer, summary="A pool's jobs counted by status and waiting jobs by wait code")
    def get(self, request, name: str):
        pool = get_object_or_404(Pool, name=name)
        return Response(SummarySerializer({"pool": pool.name, **job_summary(Job.objects.filter(pool=pool))}).data)


class TenantSummaryView(TenantAPIView):
    @extend_schema(responses=SummarySerializer, summary="A tenant's jobs counted by status and waiting jobs by wait code")
    def get(self, request, slug: str):
        tenant = self.access.tenant
        return Response(SummarySerializer({"tenant": tenant.slug, **job_summary(Job.objects.filter(tenant=tenant))}).data)


class JobCheckpointView(_OneJobView):
    @extend_schema(request=None, responses=JobSerializer,
                   summary="Report a finished checkpoint (releases the GPUs early during a preemption's grace)")
    def post(self, request, job_id: int):
        job = self.object
        stop.job_checkpoint_report(actor=request.user, job=job)
        return Response(job_payload(request.user, job_id))


class PreemptionListView(ScopedAPIView):
    scope = READABLE  # preemptions_for_user: approvers and staff all, members their tenants'
    # Declared so the schema shows the paginated envelope this view returns.
    pagination_class = BoundedLimitOffsetPagination

    @extend_schema(parameters=[OpenApiParameter("state", str, description="comma list")], responses=dict,
                   summary="Planned and past preemptions (the approvers' inbox with state=awaiting_approval)")
    def get(self, request):
        rows = preemption_selectors.preemptions_for_user(request.user, state=request.query_params.get("state", ""))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response([preemption_selectors.preemption_view(p) for p in page])


class _OnePreemptionView(ScopedAPIView):
    scope = TENANT_OBJECT

    def scoped_object(self, request, preemption_id: int) -> Preemption:
        # Outsiders to the victim's tenant get 404; the services decide who may approve or reject.
        return get_object_or_404(Preemption.objects.filter(victim__tenant__in=tenants_for_user(request.user)),
                                 pk=preemption_id)


class PreemptionApproveView(_OnePreemptionView):
    @extend_schema(request=None, responses=dict, summary="Approve a planned preemption (manual mode)")
    def post(self, request, preemption_id: int):
        p = plan.preemption_approve(actor=request.user, preemption=self.object)
        return Response(preemption_selectors.preemption_view(p))


class PreemptionRejectView(_OnePreemptionView):
    @extend_schema(request=PreemptionRejectSerializer, responses=dict,
                   summary="Reject a planned preemption with a comment (manual mode): the victim keeps running")
    def post(self, request, preemption_id: int):
        data = PreemptionRejectSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        p = plan.preemption_reject(actor=request.user, preemption=self.object,
                                   comment=data.validated_data["comment"])
        return Response(preemption_selectors.preemption_view(p))
