"""Pages for jobs: the live queue of a tenant (with a submit form and cancel buttons), the whole pool's
queue, and one job's whole wait explanation. HTMX requests get the partial of the same template."""
from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.middleware.csrf import get_token
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import condition, require_POST

from quotas.access import is_platform_admin, tenant_for_user
from quotas.errors import ConflictError
from quotas.reader import tenant_access
from quotas.models import Pool
from scheduler.engine.job_resources import per_replica
from scheduler.jobs import contents, live_rows, queue, queue_frame, selectors, services, shared_renders
from scheduler.jobs.forms import JobSubmitForm, QueueFilterForm
from scheduler.jobs.page_version import Versions, queue_etag, queue_versions
from scheduler.jobs.pool_page import pool_queue_page
from scheduler.jobs.timeline import job_timeline
from scheduler.jobs.run_logs import run_log_files
from scheduler.models import FINAL_STATUSES, Preemption
from scheduler.preemption import stop
from scheduler.preemption.selectors import job_preemption
from scheduler.preemption.victim import latest_stop

SUBMITTED = gettext_lazy("Job #{id} submitted; it appears in the queue below once evaluated.")
CANCELLED = gettext_lazy("Job #{id} cancelled.")
ENVIRONMENT_FIXED = gettext_lazy("Environment of job #{id} reported fixed: it is evaluated again.")
ENVIRONMENT_FAILING = gettext_lazy("Environment of job #{id} reported failing: it waits until it is fixed.")
CHECKPOINT_REPORTED = gettext_lazy("Checkpoint of job #{id} reported.")
FILTER_PREFIX = "q"  # the filters' names never meet the submit form's prefill parameters
PREFILL_FIELDS = ("name", "project", "workload_class", "pool", "gpu_model", "gpus", "replicas", "max_runtime_minutes",
                  "checkpoint_interval_minutes")


REGION = "scheduler/queue.html#queue-live"
CONTENT = "scheduler/queue.html#queue-content"
# Stands for the reader's CSRF token in content shared by readers (a token is the reader's session's secret).
CSRF_PLACEHOLDER = "csrf-token-of-this-request"


def _region_context(access, request) -> dict:
    """What the live region shows: the same for every reader of the tenant with the same rights, language and
    query string (scheduler/jobs/page_version.py), never anything of the reader alone."""
    filters = QueueFilterForm(request.GET, tenant=access.tenant, prefix=FILTER_PREFIX)
    chosen = filters.chosen() if filters.is_valid() else None
    return {"access": access, "tenant": access.tenant,
            "query": _query_without(request, "page"), "running_query": _query_without(request, "running_page"),
            "live_query": f"?{request.GET.urlencode()}" if request.GET else "",
            **queue.tenant_queue(tenant=access.tenant, chosen=chosen)}


def _query_without(request, field: str) -> str:
    """The query string without one of the filter form's page fields, for a pager's links."""
    query = request.GET.copy()
    query.pop(f"{FILTER_PREFIX}-{field}", None)
    return query.urlencode()


@login_required
def tenant_queue(request, slug: str):
    access = tenant_access(request, slug)  # the navigation reads the same statement's rights
    if request.method == "GET":
        versions = queue_versions(request, access)
        version = versions and versions.region
        # The live poll says what it shows: answered with the rows that changed, or 204. A version holds the
        # query string and is given to valid filters only, so a poll showing it needs no second look at them.
        if request.htmx and live_rows.HAVE_HEADER in request.headers and (
                live_rows.shows(request, version) or _filters_valid(request, access)):
            return live_rows.respond(request, REGION, lambda: _region_context(access, request), version=version)
        if versions is not None:
            return _queue_get(request, access, versions)
    return _queue_page(request, access)


def _filters_valid(request, access) -> bool:
    return QueueFilterForm(request.GET, tenant=access.tenant, prefix=FILTER_PREFIX).is_valid()


def _region_response(request, access, version: str | None = None) -> HttpResponse:
    html = live_rows.region(request, REGION, lambda: _region_context(access, request), version=version)[0]
    response = HttpResponse(html)
    response[live_rows.VERSION_HEADER] = version or ""
    return response


def _queue_get(request, access, versions: Versions):
    """GET with a version: an unchanged page is a 304 with no body (a reload, or a browser without the
    live script's header); the page's content is rendered once per version for the readers who share it,
    its frame once per reader (scheduler/jobs/queue_frame.py)."""
    frame_key = queue_frame.key(request, access, form=access.is_member)
    etag = queue_etag(request, f"{versions.page}|{frame_key}")  # the navigation's changes count too

    @condition(etag_func=lambda request: etag)
    def respond(request):
        if request.htmx:
            return _queue_page(request, access, versions=versions)
        key = f"queue-content:{versions.page}"
        frame, content = queue_frame.fetched(frame_key, key)
        if content is None:
            content = shared_renders.claim_or_wait(key)
        if content is None:
            response = _queue_page(request, access, versions=versions)
            if response.status_code == 200:  # a page with errors is this request's alone
                shared_renders.keep(key, response.shared_content, live_rows.REGION_SECONDS)
            else:
                shared_renders.release(key)
            return response
        if frame is None:
            frame = queue_frame.render(request, access, form=access.is_member, csrf_placeholder=CSRF_PLACEHOLDER)
            queue_frame.keep(frame_key, frame)
        response = HttpResponse(queue_frame.assembled(request, frame, content).replace(CSRF_PLACEHOLDER, get_token(request)))
        response[live_rows.VERSION_HEADER] = versions.region
        return response
    response = respond(request)
    response["Cache-Control"] = "private, no-cache"
    return response


def _queue_page(request, access, versions: Versions | None = None):
    filters = QueueFilterForm(request.GET, tenant=access.tenant, prefix=FILTER_PREFIX)
    if request.method == "GET" and not filters.is_valid():
        return _render_page(request, access, {"filters": filters, "form": None}, status=400)
    if request.htmx and request.method == "GET":
        return _region_response(request, access, versions and versions.region)
    form = None
    status = 200
    if access.is_member:
        if request.method == "POST":
            form = JobSubmitForm(request.POST, tenant=access.tenant)
            if form.is_valid():
                try:
                    job = services.job_submit(actor=request.user, **form.job_spec(access.tenant))
                except ValidationError as exc:
                    _add_errors(form, exc)
                except PermissionDenied as exc:
                    form.add_error(None, str(exc))
                else:
                    messages.success(request, _(SUBMITTED).format(id=job.pk))
                    return redirect("tenant-queue", access.tenant.slug)
            status = 400
        else:
            initial = {k: request.GET[k] for k in PREFILL_FIELDS if request.GET.get(k)}
            form = JobSubmitForm(initial=initial, tenant=access.tenant)
    elif request.method == "POST":
        raise PermissionDenied(services.errors.NOT_ALLOWED_TO_SUBMIT.format(tenant=access.tenant.slug))
    # The submit panel sits folded above the queue; it opens on errors and on a prefilled resubmit.
    page = {"filters": filters, "form": form, "form_open": form is not None and (form.is_bound or bool(form.initial))}
    return _render_page(request, access, page, versions=versions, status=status)


def _render_page(request, access, page: dict, *, versions: Versions | None = None, status: int = 200):
    """The page's content (everything but the navigation around it) rendered for no reader in particular: the
    CSRF token its forms carry is a placeholder each response fills in. The response keeps that content as
    `shared_content`, which readers of the same version are served from."""
    region = live_rows.region(request, REGION, lambda: _region_context(access, request),
                              version=versions and versions.region)[0]
    content = render_to_string(CONTENT, {"access": access, "tenant": access.tenant, "pools": queue.tenant_pools(
        access.tenant), **page, "queue_region": mark_safe(region), "csrf_token": CSRF_PLACEHOLDER})  # noqa: S308
    response = _page(request, access, content, versions and versions.region, status=status, form=page["form"])
    response.shared_content = content
    return response


def _page(request, access, content: str, version: str | None, *, form, status: int = 200) -> HttpResponse:
    """The reader's page: their navigation and this request's CSRF token around the shared content."""
    content = content.replace(CSRF_PLACEHOLDER, get_token(request))
    html = render_to_string("scheduler/queue.html", {"tenant": access.tenant, "form": form,
                                                     "queue_content": mark_safe(content)}, request)  # noqa: S308
    response = HttpResponse(html, status=status)
    response[live_rows.VERSION_HEADER] = version or ""
    return response


def _add_errors(form, exc: ValidationError) -> None:
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc)
        return
    for name, errors in exc.message_dict.items():
        form.add_error(name if name in form.fields else None, errors)


@login_required
def job_detail(request, job_id: int):
    job = selectors.job_for_user(request.user, job_id)
    template = "scheduler/job_detail.html#job-live" if request.htmx else "scheduler/job_detail.html"
    return render(request, template, _job_context(request, job))


def _backfill_gap(job) -> dict | None:
    """An admitted or running job backfilled in front of a reservation: whose, from when, and by when this job
    must end (its limit, which the cluster enforces)."""
    gap = job.backfill_gap
    if not gap or job.status not in (job.Status.ADMITTED, job.Status.RUNNING):
        return None
    return {"job_id": gap["job_id"], "until": datetime.fromisoformat(gap["until"]), "must_end": job.expected_end}


def _job_context(request, job, **extra) -> dict:
    access = tenant_for_user(request.user, job.tenant.slug)
    row = queue.tenant_queue_row(job)
    preemption = job_preemption(job)
    ended = job.status in FINAL_STATUSES
    may_report = access.is_tenant_admin or access.platform or job.submitted_by_id == request.user.pk
    readable = contents.may_read_contents(request.user, job)
    cpus, memory = per_replica(default_cpus_per_gpu=job.pool.default_cpus_per_gpu,
                               default_memory_gb_per_gpu=job.pool.default_memory_gb_per_gpu, gpus=job.gpus,
                               replicas=job.replicas, cpu=job.cpu, memory_gb=job.memory_gb)
    return {
        "job_runs": run_log_files(job, visible=may_report),
        "access": access, "tenant": job.tenant, "row": row, "job": job, "preemption": preemption,
        "per_replica": {"cpus": cpus, "memory_gb": memory, "from_pool": not (job.cpu and job.memory_gb)},
        "stop": latest_stop(job) if preemption else None,
        "gap": _backfill_gap(job),
        "timeline": job_timeline(job),
        "contents": contents.contents_of(job) if readable else None, "outline": contents.contents_outline(job),
        "can_reveal": not readable and is_platform_admin(request.user),
        "can_report_environment": may_report and not ended and (not job.env_ready or job.wait_code == "ENV_NOT_READY"),
        "can_report_checkpoint": access.is_member and job.status == job.Status.RUNNING and bool(
            preemption and preemption["state"] == Preemption.State.NOTIFIED), **extra}


@login_required
@require_POST
def job_contents(request, job_id: int):
    """A platform admin's reveal: the page answers with the contents once (never kept in the session)."""
    job = selectors.job_for_user(request.user, job_id)
    try:
        shown = contents.job_contents_reveal(actor=request.user, job=job, reason=request.POST.get("reason", ""))
    except ValidationError as exc:
        return render(request, "scheduler/job_detail.html",
                      _job_context(request, job, reveal_error=" ".join(exc.messages)), status=400)
    response = render(request, "scheduler/job_detail.html", _job_context(request, job, contents=shown, revealed=True))
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def job_environment(request, job_id: int):
    job = selectors.job_for_user(request.user, job_id)
    ready = request.POST.get("ready") == "1"
    try:
        services.job_environment_update(actor=request.user, job=job, ready=ready,
                                        detail=request.POST.get("detail", "")[:300])
    except ConflictError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, (ENVIRONMENT_FIXED if ready else ENVIRONMENT_FAILING).format(id=job.pk))
    return redirect("job-detail", job.pk)


@login_required
@require_POST
def job_checkpoint(request, job_id: int):
    job = selectors.job_for_user(request.user, job_id)
    try:
        stop.job_checkpoint_report(actor=request.user, job=job)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, CHECKPOINT_REPORTED.format(id=job.pk))
    return redirect("job-detail", job.pk)


@login_required
@require_POST
def job_cancel(request, job_id: int):
    job = selectors.job_for_user(request.user, job_id)
    access = tenant_for_user(request.user, job.tenant.slug)
    try:
        services.job_cancel(actor=request.user, job=job, reason="cancelled on the queue page")
    except ConflictError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _(CANCELLED).format(id=job.pk))
    if request.htmx:
        return _region_response(request, access)
    return redirect("tenant-queue", access.tenant.slug)


@login_required
def pool_queue(request, name: str):
    """The whole pool's waiting jobs in queue order; other tenants' jobs anonymised as in the API."""
    pool = get_object_or_404(Pool, name=name)
    context = pool_queue_page(pool=pool, user=request.user, page=request.GET.get("page"))
    template = "scheduler/pool_queue.html#pool-live" if request.htmx else "scheduler/pool_queue.html"
    return render(request, template, context)
