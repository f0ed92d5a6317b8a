"""Chain the events recorded before hashing existed, in id order, and start the chain head."""
from django.db import migrations

from audit.chain.hashing import GENESIS_HASH, canonical_payload, event_hash


def backfill(apps, schema_editor):
    AuditEvent = apps.get_model("audit", "AuditEvent")
    AuditChainHead = apps.get_model("audit", "AuditChainHead")
    seq, prev = 0, GENESIS_HASH
    # The historical model has the plain manager, so these saves are allowed; the guard arrives in 0005.
    for event in AuditEvent.objects.order_by("id").iterator():
        seq += 1
        event.payload = canonical_payload(event.payload)
        event.seq, event.prev_hash = seq, prev
        event.hash = event_hash(seq=seq, occurred_at=event.occurred_at, event_type=event.event_type,
                                actor_kind=event.actor_kind, actor_id=event.actor_id, tenant_id=event.tenant_id,
                                object_type=event.object_type, object_id=event.object_id, payload=event.payload,
                                prev_hash=prev)
        event.save(update_fields=["seq", "prev_hash", "hash", "payload"])
        prev = event.hash
    AuditChainHead.objects.update_or_create(pk=1, defaults={"seq": seq, "hash": prev})


class Migration(migrations.Migration):
    dependencies = [("audit", "0003_chain_rollups")]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
