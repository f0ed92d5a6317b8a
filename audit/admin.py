from django.contrib import admin

from audit.chain.readonly import ReadOnlyAdminMixin
from audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["occurred_at", "event_type", "tenant", "actor_kind", "actor", "object_type", "object_id"]
    list_filter = ["event_type", "actor_kind", "tenant"]
    search_fields = ["event_type", "object_id", "actor__username"]
    date_hierarchy = "occurred_at"
