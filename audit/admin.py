from django.contrib import admin

from audit.chain.readonly import ReadOnlyAdminMixin
from audit.models import AuditEvent, AuditRefusal


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["occurred_at", "event_type", "tenant", "actor_kind", "actor", "object_type", "object_id"]
    list_filter = ["event_type", "actor_kind", "tenant"]
    search_fields = ["event_type", "object_id", "actor__username"]
    date_hierarchy = "occurred_at"


@admin.register(AuditRefusal)
class AuditRefusalAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Events the sealer refused as backdated: the first place to look when audit_verify fails on them."""

    list_display = ["event_id", "event_type", "occurred_at", "head_seq", "head_sealed_at", "refused_at"]
    list_filter = ["event_type"]
