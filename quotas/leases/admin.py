"""Read-only admin of leases, lending policies and switches: changes go through the services (and the
portal pages) so limits are checked and audit is written."""
from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from audit.chain.readonly import ReadOnlyAdminMixin
from quotas.leases.models import Lease, LendingPolicy, PolicySwitch


class ReadOnlyAdmin(ReadOnlyAdminMixin, SimpleHistoryAdmin):
    """History-aware and read-only."""


@admin.register(Lease)
class LeaseAdmin(ReadOnlyAdmin):
    list_display = ["id", "lender", "borrower", "pool", "gpu_model", "gpus", "state", "started_at", "expires_at"]
    list_filter = ["state", "pool", "gpu_model"]
    search_fields = ["borrower__slug", "lender__slug"]


@admin.register(LendingPolicy)
class LendingPolicyAdmin(ReadOnlyAdmin):
    list_display = ["tenant", "lending_limit_gpus", "reserved_gpus", "borrowing_limit_gpus", "max_lease_minutes",
                    "protected_minutes"]


@admin.register(PolicySwitch)
class PolicySwitchAdmin(ReadOnlyAdmin):
    list_display = ["key", "value", "updated_at", "updated_by", "reason"]
