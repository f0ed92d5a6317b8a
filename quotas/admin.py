"""Admin for tenancy, pools and quotas. Quota and node changes go through the services so history
and audit are written; the admin shows that history. Every other save or deletion of a tenant,
project, membership, pool, GPU model or node goes through quotas.admin_edits (audited)."""
from django.contrib import admin, messages
from simple_history.admin import SimpleHistoryAdmin

from audit.chain.readonly import ReadOnlyAdminMixin
from quotas import services
from quotas.admin_edits import admin_object_delete, admin_object_save
from quotas.leases.pool_defaults import pool_switch_defaults_apply
from quotas.models import GpuModel, Membership, Node, Pool, Project, Quota, Tenant


class AuditedAdminMixin:
    """Saves and deletions, on the page, in inlines and in bulk, through the audited services."""

    def save_model(self, request, obj, form, change):
        admin_object_save(actor=request.user, obj=obj)

    def delete_model(self, request, obj):
        admin_object_delete(actor=request.user, obj=obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            admin_object_delete(actor=request.user, obj=obj)

    def save_formset(self, request, form, formset, change):
        instances = formset.save(commit=False)
        for obj in formset.deleted_objects:
            admin_object_delete(actor=request.user, obj=obj)
        for obj in instances:
            admin_object_save(actor=request.user, obj=obj)
        formset.save_m2m()


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Tenant)
class TenantAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["slug", "name", "language", "created_at"]
    list_filter = ["language"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]


@admin.register(Project)
class ProjectAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["slug", "name", "tenant", "state", "created_at"]
    list_filter = ["state", "tenant"]
    search_fields = ["slug", "name", "tenant__slug"]


@admin.register(Membership)
class MembershipAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["user", "tenant", "role", "created_at"]
    list_filter = ["role", "tenant"]
    search_fields = ["user__username", "tenant__slug"]
    autocomplete_fields = ["user"]


@admin.register(Pool)
class PoolAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["name", "display_name", "backend", "requires_runtime_limit"]
    search_fields = ["name", "display_name"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if not change:  # a new pool starts in backfill mode (its own override, audited)
            pool_switch_defaults_apply(pool=obj, actor=request.user)


@admin.register(GpuModel)
class GpuModelAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["name", "memory_gb", "chargeback_weight"]
    search_fields = ["name"]


@admin.register(Node)
class NodeAdmin(AuditedAdminMixin, SimpleHistoryAdmin):
    list_display = ["name", "pool", "gpu_model", "gpus", "cpu_cores", "memory_gb", "state", "maintenance_end"]
    list_filter = ["state", "pool", "gpu_model"]
    search_fields = ["name"]
    readonly_fields = ["state", "maintenance_start", "maintenance_end"]
    history_list_display = ["state", "maintenance_start", "maintenance_end"]
    actions = ["cordon", "uncordon"]

    @admin.action(description="Cordon selected nodes (no new work)")
    def cordon(self, request, queryset):
        for node in queryset:
            services.node_cordon(actor=request.user, node=node, reason=f"Cordoned in the admin by {request.user}")
        self.message_user(request, f"Cordoned {queryset.count()} node(s).", messages.SUCCESS)

    @admin.action(description="Return selected nodes to service")
    def uncordon(self, request, queryset):
        for node in queryset:
            services.node_uncordon(actor=request.user, node=node, reason=f"Uncordoned in the admin by {request.user}")
        self.message_user(request, f"Returned {queryset.count()} node(s) to service.", messages.SUCCESS)


@admin.register(Quota)
class QuotaAdmin(ReadOnlyAdminMixin, SimpleHistoryAdmin):
    """Read-only: base quotas change through quota_set (API, quota requests) so every change has a reason."""

    list_display = ["tenant", "project", "pool", "gpu_model", "gpus", "classes", "status", "effective_from",
                    "effective_to", "over_quota_rule"]
    list_filter = ["status", "pool", "gpu_model", "over_quota_rule", "tenant"]
    search_fields = ["tenant__slug", "project__slug"]
    history_list_display = ["gpus", "status", "effective_from", "effective_to"]

    @admin.display(description="Classes")
    def classes(self, obj):
        return ", ".join(obj.workload_classes) or "all"


# Leases, lending policies and switches register their own (read-only) admin.
from quotas.leases import admin as lease_admin  # noqa: E402,F401
