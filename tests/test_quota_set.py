"""Base-quota writes: validation messages, database constraints, oversubscription, history."""
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.models import AuditEvent
from quotas import errors, selectors, services
from quotas.models import Quota, QuotaCoverage
from tests import factories


def test_it_refuses_negative_gpus_with_a_field_message(world):
    with pytest.raises(ValidationError) as exc:
        factories.quota(world.alpha, world.pool, world.a100, -1)
    assert exc.value.message_dict == {"gpus": [errors.NEGATIVE]}


def test_it_refuses_a_window_that_ends_before_it_starts(world):
    start = timezone.now() + timedelta(days=2)
    with pytest.raises(ValidationError) as exc:
        factories.quota(world.alpha, world.pool, world.a100, 4, effective_from=start,
                        effective_to=start - timedelta(hours=1))
    assert exc.value.message_dict == {"effective_to": [errors.WINDOW_ORDER]}


def test_it_refuses_an_unknown_workload_class(world):
    with pytest.raises(ValidationError) as exc:
        factories.quota(world.alpha, world.pool, world.a100, 4, workload_classes=["gaming"])
    assert exc.value.message_dict == {"workload_classes": [errors.UNKNOWN_CLASS.format(value="gaming")]}


def test_it_requires_a_reason(world):
    with pytest.raises(ValidationError) as exc:
        services.quota_set(actor=None, tenant=world.alpha, pool=world.pool, gpu_model=world.a100, gpus=2, reason=" ")
    assert exc.value.message_dict == {"reason": [errors.REASON_REQUIRED]}


def test_it_refuses_an_overlapping_active_quota_for_the_same_class(world):
    factories.quota(world.alpha, world.pool, world.a100, 4, workload_classes=["training", "experiment"])
    with pytest.raises(ValidationError) as exc:
        factories.quota(world.alpha, world.pool, world.a100, 2, workload_classes=["experiment"])
    assert "already covers experiment" in exc.value.message_dict["workload_classes"][0]
    # a disjoint class set is a separate quota
    factories.quota(world.alpha, world.pool, world.a100, 2, workload_classes=["online_inference"])
    assert Quota.objects.filter(tenant=world.alpha, gpu_model=world.a100).count() == 2


def test_the_database_itself_refuses_two_active_quotas_for_one_class(world):
    quota = world.alpha_quota
    twin = Quota.objects.create(tenant=world.alpha, pool=world.pool, gpu_model=world.h100, gpus=1,
                                effective_from=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        QuotaCoverage.objects.create(quota=twin, tenant=world.alpha, pool=world.pool, gpu_model=world.h100,
                                     workload_class="training", active=True)
    assert QuotaCoverage.objects.filter(quota=quota, workload_class="training", active=True).exists()


def test_the_database_refuses_negative_vectors(world):
    with pytest.raises(IntegrityError), transaction.atomic():
        Quota.objects.filter(pk=world.alpha_quota.pk).update(cpu_cores=-5)


def test_it_refuses_oversubscription_unless_acknowledged(world):
    # 32 H100 schedulable; alpha 16 + beta 8 = 24; raising beta to 24 makes 40.
    with pytest.raises(ValidationError) as exc:
        factories.quota(world.beta, world.pool, world.h100, 24)
    assert exc.value.message_dict["gpus"] == [errors.OVERSUBSCRIBED.format(
        pool="gpu-a", gpu_model="H100-80G", total=40, capacity=32)]
    world.beta_quota.refresh_from_db()
    assert world.beta_quota.gpus == 8
    factories.quota(world.beta, world.pool, world.h100, 24, acknowledge_oversubscription=True)
    cap = next(c for c in selectors.pool_capacity() if c.gpu_model == "H100-80G")
    assert (cap.quota_sum, cap.gpus_schedulable, cap.oversubscribed) == (40, 32, True)


def test_changing_a_quota_writes_history_with_actor_and_reason(world, platform_admin):
    services.quota_set(actor=platform_admin, tenant=world.alpha, pool=world.pool, gpu_model=world.h100, gpus=20,
                       reason="Q3 pretraining push")
    history = selectors.quota_history(quota=world.alpha_quota)
    assert [(h.change, h.actor, h.reason, h.values["gpus"]) for h in history] == [
        ("changed", "platform-admin", "Q3 pretraining push", 20),
        ("created", None, "test set-up", 16),
    ]
    assert history[0].changed_fields == ("gpus",)
    event = AuditEvent.objects.filter(event_type="quota.set", object_id=str(world.alpha_quota.id)).first()
    assert event.payload["old"]["gpus"] == 16 and event.payload["new"]["gpus"] == 20
    assert event.actor == platform_admin


def test_setting_the_same_values_changes_nothing(world):
    before = Quota.history.filter(id=world.alpha_quota.id).count()
    factories.quota(world.alpha, world.pool, world.h100, 16)
    assert Quota.history.filter(id=world.alpha_quota.id).count() == before


def test_a_future_quota_is_scheduled_then_activated_replacing_the_old_one(world):
    start = timezone.now() + timedelta(hours=2)
    future = factories.quota(world.alpha, world.pool, world.h100, 24, effective_from=start,
                             acknowledge_oversubscription=True)
    assert future.status == Quota.Status.SCHEDULED
    assert services.quota_activate_due(now=start - timedelta(minutes=1)) == 0
    assert services.quota_activate_due(now=start + timedelta(seconds=1)) == 1
    assert services.quota_activate_due(now=start + timedelta(seconds=2)) == 0
    world.alpha_quota.refresh_from_db()
    future.refresh_from_db()
    assert (world.alpha_quota.status, future.status) == (Quota.Status.ENDED, Quota.Status.ACTIVE)


def test_node_changes_write_history(world, platform_admin):
    node = world.pool.nodes.first()
    services.node_cordon(actor=platform_admin, node=node, reason="ECC errors")
    end = timezone.now() + timedelta(hours=4)
    services.node_maintenance_set(actor=platform_admin, node=node, start=None, end=end, reason="Replace GPU 3")
    history = selectors.node_history(node=node)
    assert [(h.values["state"], h.actor, h.reason) for h in history[:2]] == [
        ("maintenance", "platform-admin", "Replace GPU 3"), ("cordoned", "platform-admin", "ECC errors")]
    with pytest.raises(ValidationError) as exc:
        services.node_maintenance_set(actor=platform_admin, node=node, start=end, end=end, reason="x")
    assert exc.value.message_dict == {"end": [errors.WINDOW_ORDER]}


def test_pool_capacity_counts_schedulable_separately(world, platform_admin):
    node = world.pool.nodes.filter(gpu_model=world.h100).first()
    services.node_cordon(actor=platform_admin, node=node, reason="drain")
    cap = {c.gpu_model: c for c in selectors.pool_capacity()}
    assert (cap["H100-80G"].gpus_total, cap["H100-80G"].gpus_schedulable, cap["H100-80G"].gpus_cordoned) == (32, 24, 8)
    assert (cap["H100-80G"].quota_sum, cap["H100-80G"].unassigned) == (24, 0)
    assert cap["A100-40G"].quota_sum == 0 and cap["A100-40G"].unassigned == 16
