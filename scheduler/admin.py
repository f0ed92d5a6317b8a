"""Admin for jobs (read-mostly: state changes go through the services) and pool cycles."""
from django.contrib import admin, messages

from scheduler.jobs import services
from scheduler.backends import admin as backend_admin  # noqa: F401  (pool backend form, runs)
from scheduler.models import FINAL_STATUSES, Job, PoolCycle, Preemption


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "tenant", "project", "pool", "gpu_model", "gpus", "replicas", "priority_class",
                    "status", "wait_code", "submitted_at", "started_at", "finished_at"]
    list_filter = ["status", "pool", "gpu_model", "priority_class", "workload_class", "wait_code", "env_ready",
                   "tenant"]
    search_fields = ["=id", "name", "tenant__slug", "project__slug", "submitted_by__username"]
    date_hierarchy = "submitted_at"
    list_select_related = ["tenant", "project", "pool", "gpu_model"]
    raw_id_fields = ["submitted_by"]
    readonly_fields = [f.name for f in Job._meta.concrete_fields]
    actions = ["cancel"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Cancel selected jobs")
    def cancel(self, request, queryset):
        done = 0
        for job in queryset.exclude(status__in=FINAL_STATUSES):
            services.job_cancel(actor=request.user, job=job, reason=f"Cancelled in the admin by {request.user}")
            done += 1
        self.message_user(request, f"Cancelled {done} job(s).", messages.SUCCESS)


@admin.register(PoolCycle)
class PoolCycleAdmin(admin.ModelAdmin):
    list_display = ["pool", "requested", "last_started_at", "last_duration_ms", "last_admitted", "last_waiting",
                    "runs"]
    readonly_fields = ["pool", "requested", "requested_at", "last_started_at", "last_duration_ms", "last_admitted",
                       "last_waiting", "runs", "settled_digest", "settled_at"]

    def has_add_permission(self, request):
        return False


@admin.register(Preemption)
class PreemptionAdmin(admin.ModelAdmin):
    """Read-only: plans come from the cycle, approvals from the API, stops from the grace worker."""

    list_display = ["id", "kind", "state", "rule", "victim", "preemptor", "planned_at", "grace_until",
                    "gpu_hours_lost"]
    list_filter = ["kind", "state", "rule"]
    list_select_related = ["victim", "preemptor"]
    readonly_fields = [f.name for f in Preemption._meta.concrete_fields]

    def has_add_permission(self, request):
        return False
