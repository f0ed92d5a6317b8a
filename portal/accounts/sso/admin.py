"""Admin for single sign-on: platform admins edit group rules here, each save and delete through the
audited services; directory accounts are shown, never edited (the directory and the sync own them)."""
from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from audit.chain.readonly import ReadOnlyAdminMixin
from portal.accounts.sso import services
from portal.accounts.sso.models import DirectoryAccount, GroupRule


@admin.register(GroupRule)
class GroupRuleAdmin(admin.ModelAdmin):
    list_display = ["group", "role", "tenant", "updated_at"]
    list_filter = ["role", "tenant"]
    search_fields = ["group", "tenant__slug"]
    fields = ["group", "tenant", "role"]

    def save_model(self, request, obj, form, change):
        try:
            if change:
                saved = services.group_rule_update(actor=request.user, rule=obj, group=obj.group, tenant=obj.tenant,
                                                   role=obj.role)
            else:
                saved = services.group_rule_create(actor=request.user, group=obj.group, tenant=obj.tenant,
                                                   role=obj.role)
            obj.pk = saved.pk
        except ValidationError as exc:
            messages.error(request, "; ".join(m for msgs in exc.message_dict.values() for m in msgs))

    def delete_model(self, request, obj):
        services.group_rule_delete(actor=request.user, rule=obj)

    def delete_queryset(self, request, queryset):
        for rule in queryset:
            services.group_rule_delete(actor=request.user, rule=rule)


@admin.register(DirectoryAccount)
class DirectoryAccountAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["user", "source", "subject", "signed_in_at", "synced_at", "disabled_by_sync_at"]
    list_filter = ["source"]
    search_fields = ["user__username", "subject"]
