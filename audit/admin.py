from django.contrib import admin

from audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["occurred_at", "event_type", "tenant", "actor_kind", "actor", "object_type", "object_id"]
    list_filter = ["event_type", "actor_kind", "tenant"]
    search_fields = ["event_type", "object_id", "actor__username"]
    date_hierarchy = "occurred_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
