"""A mixin for admin pages that show evidence or service-owned rows: nothing is added, changed or
deleted there, because the services write history and audit beside every change."""


class ReadOnlyAdminMixin:
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
