"""The rollout stage a new pool starts at: its own `scheduling_mode` override set to backfill, so big jobs
are not starved there from the first day, while existing pools keep the platform default (best effort)
until someone switches them. Audited like any switch change, and reversible on the switches page."""
from django.db import transaction

from audit.chain.services import audit_record
from quotas.history import with_history
from quotas.leases.models import PolicySwitch
from quotas.models import Pool

NEW_POOL_REASON = "new pool: backfill with reservations by default"


def pool_switch_defaults_apply(*, pool: Pool, actor=None) -> PolicySwitch | None:
    """Give a pool that was just created its scheduling-mode override, unless it has one already."""
    value = PolicySwitch.NEW_POOL_SCHEDULING_MODE
    with transaction.atomic():
        if PolicySwitch.objects.select_for_update().filter(key=PolicySwitch.Key.SCHEDULING_MODE, pool=pool).exists():
            return None
        switch = PolicySwitch(key=PolicySwitch.Key.SCHEDULING_MODE, pool=pool, value=value, reason=NEW_POOL_REASON,
                              updated_by=actor if getattr(actor, "is_authenticated", False) else None)
        with_history(switch, actor=actor, reason=NEW_POOL_REASON).save()
        audit_record(event_type="policy_switch.set", target=switch, actor=actor,
                     payload={"key": PolicySwitch.Key.SCHEDULING_MODE.value, "pool": pool.name,
                              "old": PolicySwitch.DEFAULTS[PolicySwitch.Key.SCHEDULING_MODE], "new": value,
                              "reason": NEW_POOL_REASON, "return_leases_now": False, "leases_returned": []})
    return switch
