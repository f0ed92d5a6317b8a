"""Admin for tenancy, pools and quotas. Quota and node changes go through the services so history
and audit are written; the admin shows that history."""
from django.contrib import admin, messages
from simple_history.admin import SimpleHistoryAdmin

from audit.chain.readonly import ReadOnlyAdminMixin
from quotas import services
from quotas.models import GpuModel, Membership, Node, Pool, Project, Quota, Tenant


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "language", "created_at"]
    list_filter = ["language"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "tenant", "state", "created_at"]
    list_filter = ["state", "tenant"]
    search_fields = ["slug", "name", "tenant__slug"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "tenant", "role", "created_at"]
    list_filter = ["role", "tenant"]
    search_fields = ["user__username", "tenant__slug"]
    autocomplete_fields = ["user"]


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ["name", "display_name", "backend"]
    search_fields = ["name", "display_name"]


@admin.register(GpuModel)
class GpuModelAdmin(admin.ModelAdmin):
    list_display = ["name", "memory_gb", "chargeback_weight"]
    search_fields = ["name"]


@admin.register(Node)
class NodeAdmin(SimpleHistoryAdmin):
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
