"""Admin for notice channels, the outbox and its delivery log. Channels are created through the
service so targets are validated and audited; outbox rows are read-only evidence."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from audit.chain.readonly import ReadOnlyAdminMixin
from scheduler.notices import services
from scheduler.notices.channels import target_display, validate_target
from scheduler.notices.models import Notice, NoticeChannel, NoticeDelivery


class NoticeChannelForm(forms.ModelForm):
    class Meta:
        model = NoticeChannel
        fields = ["tenant", "kind", "name", "target", "enabled"]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("kind") and cleaned.get("target"):
            try:
                cleaned["target"] = validate_target(kind=cleaned["kind"], target=cleaned["target"])
            except ValidationError as exc:
                self.add_error(None, exc.message_dict.get("target", exc.messages))
        return cleaned


@admin.register(NoticeChannel)
class NoticeChannelAdmin(admin.ModelAdmin):
    form = NoticeChannelForm
    list_display = ["tenant", "kind", "name", "masked_target", "enabled", "created_by", "created_at"]
    list_filter = ["kind", "enabled", "tenant"]
    search_fields = ["tenant__slug", "tenant__name", "name"]
    actions = ["enable", "disable"]

    @admin.display(description="Target")
    def masked_target(self, obj):
        return target_display(kind=obj.kind, target=obj.target)

    def has_change_permission(self, request, obj=None):
        # Editing a target in place would skip the audit trail; disable it and add a new one.
        return False

    def save_model(self, request, obj, form, change):
        created = services.notice_channel_create(actor=request.user, tenant=obj.tenant, kind=obj.kind,
                                                 target=obj.target, name=obj.name, enabled=obj.enabled)
        obj.pk = created.pk

    @admin.action(description="Enable selected channels")
    def enable(self, request, queryset):
        for channel in queryset:
            services.notice_channel_set_enabled(actor=request.user, channel=channel, enabled=True)
        self.message_user(request, "Channels enabled.", messages.SUCCESS)

    @admin.action(description="Disable selected channels")
    def disable(self, request, queryset):
        for channel in queryset:
            services.notice_channel_set_enabled(actor=request.user, channel=channel, enabled=False)
        self.message_user(request, "Channels disabled.", messages.SUCCESS)


class NoticeDeliveryInline(admin.TabularInline):
    model = NoticeDelivery
    extra = 0
    fields = ["at", "attempt", "channel_kind", "channel", "address", "status", "detail"]
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Notice)
class NoticeAdmin(admin.ModelAdmin):
    list_display = ["id", "created_at", "kind", "tenant", "job_id", "state", "attempts", "next_attempt_at",
                    "delivered_at"]
    list_filter = ["state", "kind", "tenant"]
    search_fields = ["subject", "tenant__slug", "job_id", "dedupe_key"]
    date_hierarchy = "created_at"
    readonly_fields = ["kind", "tenant", "job_id", "dedupe_key", "recipients", "to_channels", "subject", "body",
                       "facts", "created_at", "state", "attempts", "next_attempt_at", "claim_token", "last_error",
                       "delivered_at"]
    inlines = [NoticeDeliveryInline]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(NoticeDelivery)
class NoticeDeliveryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["at", "notice", "attempt", "channel_kind", "channel", "status"]
    list_filter = ["status", "channel_kind"]
    search_fields = ["notice__id", "notice__tenant__slug", "detail"]
    date_hierarchy = "at"
