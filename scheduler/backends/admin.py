"""The pool admin with its backend choice checked by the backend itself (the scheduler owns backends, so
it extends the quotas app's pool admin instead of quotas importing the scheduler)."""
from django import forms
from django.contrib import admin

from quotas.admin import PoolAdmin
from quotas.models import Pool
from scheduler.backends.registry import backend_settings_validate
from scheduler.runs.models import JobRun


class PoolForm(forms.ModelForm):
    class Meta:
        model = Pool
        fields = "__all__"

    def clean(self):
        cleaned = super().clean()
        for field, problems in backend_settings_validate(cleaned.get("backend", ""),
                                                         cleaned.get("backend_settings") or {}).items():
            self.add_error(field, problems)
        return cleaned


class PoolBackendAdmin(PoolAdmin):
    form = PoolForm


admin.site.unregister(Pool)
admin.site.register(Pool, PoolBackendAdmin)


@admin.register(JobRun)
class JobRunAdmin(admin.ModelAdmin):
    """Read-only: runs are written by the backend tick."""

    list_display = ["job", "attempt", "backend", "external_id", "state", "backend_state", "exit_code", "started_at",
                    "ended_at", "last_error"]
    list_filter = ["backend", "state", "backend_state"]
    search_fields = ["=job__id", "external_id"]
    readonly_fields = [f.name for f in JobRun._meta.concrete_fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
