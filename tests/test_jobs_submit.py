"""Submission: field-level validation, membership, over-quota rules (reject, downgrade), bulk."""
import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from audit.models import AuditEvent
from quotas.models import Quota
from scheduler.jobs import errors
from scheduler.jobs.services import job_submit_bulk
from scheduler.models import Job
from tests import factories
from tests.jobs import beta, spec, submit

BAD_INPUTS = [
    ({"tenant": "nope"}, "tenant", errors.UNKNOWN_TENANT.format(value="nope")),
    ({"project": "nope"}, "project", errors.UNKNOWN_PROJECT.format(value="nope", tenant="alpha")),
    ({"pool": "nowhere"}, "pool", errors.UNKNOWN_POOL.format(value="nowhere")),
    ({"gpu_model": "TPU-v9"}, "gpu_model", errors.UNKNOWN_GPU_MODEL.format(value="TPU-v9")),
    ({"gpus": 0}, "gpus", errors.MUST_BE_POSITIVE),
    ({"gpus": -3}, "gpus", errors.MUST_BE_POSITIVE),
    ({"replicas": 0}, "replicas", errors.MUST_BE_POSITIVE),
    ({"gpus": 9}, "gpus", errors.REPLICA_TOO_LARGE.format(gpu_model="H100-80G", pool="gpu-a", gpus=9, largest=8)),
    ({"workload_class": "mining"}, "workload_class", errors.UNKNOWN_WORKLOAD_CLASS.format(value="mining")),
    ({"max_runtime_minutes": 0}, "max_runtime_minutes", errors.MUST_BE_POSITIVE),
    ({"cpu": -1}, "cpu", errors.MUST_NOT_BE_NEGATIVE),
    ({"name": " "}, "name", errors.NAME_REQUIRED),
]


@pytest.mark.parametrize("overrides, field, message", BAD_INPUTS)
def test_submit_api_gives_400_with_the_field(api, member, overrides, field, message):
    response = api(member).post("/api/v1/jobs/", spec(**overrides), format="json")
    assert response.status_code == 400
    assert response.json()[field] == [message]
    assert not Job.objects.exists()


def test_a_model_without_nodes_in_the_pool_is_refused(world):
    from quotas.models import GpuModel

    GpuModel.objects.create(name="L40S-48G", memory_gb=48)
    with pytest.raises(ValidationError) as exc:
        submit(gpu_model="L40S-48G")
    assert exc.value.message_dict == {"gpu_model": [errors.NO_NODE_OF_MODEL.format(pool="gpu-a",
                                                                                   gpu_model="L40S-48G")]}


def test_submit_creates_a_submitted_job_with_an_audit_event(api, member):
    response = api(member).post("/api/v1/jobs/", spec(environment={"image": "reg/x:1", "ready": True}),
                                format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "submitted" and body["priority_class"] == "training"
    assert body["submitted_by"] == "alpha-dev" and body["environment"]["image"] == "reg/x:1"
    event = AuditEvent.objects.get(event_type="job.submitted")
    assert event.object_id == str(body["id"]) and event.tenant.slug == "alpha" and event.actor == member
    assert "image" not in str(event.payload)


def test_an_outsider_cannot_tell_another_tenant_exists(api, outsider):
    response = api(outsider).post("/api/v1/jobs/", spec(), format="json")
    assert response.status_code == 400
    assert response.json()["tenant"] == [errors.UNKNOWN_TENANT.format(value="alpha")]


def test_a_platform_reader_without_membership_may_not_submit(api, auditor):
    response = api(auditor).post("/api/v1/jobs/", spec(), format="json")
    assert response.status_code == 403


def test_priority_class_follows_the_workload_class(world):
    assert submit(workload_class="online_inference").priority_class == "production"
    assert submit(workload_class="validation").priority_class == "experiment"


def _set_rule(world, rule, downgrade_to=""):
    factories.quota(world.alpha, world.pool, world.h100, 16, over_quota_rule=rule, downgrade_to=downgrade_to)


def _hold(world, gpus):
    """A running alpha job holding `gpus` H100s."""
    job = submit(gpus=gpus)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, placements=[1])
    return job


def test_reject_rule_refuses_a_job_that_does_not_fit_the_base_quota(world):
    _set_rule(world, Quota.OverQuotaRule.REJECT)
    _hold(world, 8)
    _hold(world, 4)
    with pytest.raises(ValidationError) as exc:
        submit(gpus=8)
    assert exc.value.message_dict == {"gpus": [errors.OVER_QUOTA_REJECTED.format(
        tenant="alpha", pool="gpu-a", gpu_model="H100-80G", requested=8, free=4, quota=16, used=12)]}
    assert submit(gpus=4).status == Job.Status.SUBMITTED  # still fits


def test_queue_rule_accepts_over_quota_jobs(world):
    _hold(world, 8)
    _hold(world, 8)
    assert submit(gpus=8).priority_class == "training"


def test_downgrade_rule_moves_an_over_quota_job_to_the_lower_class(world):
    _set_rule(world, Quota.OverQuotaRule.DOWNGRADE, downgrade_to="experiment")
    _hold(world, 8)
    within = submit(gpus=8, workload_class="evaluation")
    assert within.priority_class == "candidate"
    _hold(world, 8)
    over = submit(gpus=4, workload_class="evaluation")
    assert over.priority_class == "experiment" and over.workload_class == "evaluation"
    event = AuditEvent.objects.filter(event_type="job.submitted", object_id=str(over.pk)).get()
    assert event.payload["downgraded_from"] == "candidate"


def test_bulk_submit_is_all_or_nothing_with_indexed_fields(api, member):
    response = api(member).post("/api/v1/jobs/bulk/", {"jobs": [spec(), spec(gpus=0), spec(pool="x")]},
                                format="json")
    assert response.status_code == 400
    assert response.json() == {"jobs[1].gpus": [errors.MUST_BE_POSITIVE],
                               "jobs[2].pool": [errors.UNKNOWN_POOL.format(value="x")]}
    assert not Job.objects.exists()


def test_bulk_submit_creates_every_job_and_one_audit_event_each(api, member, django_assert_max_num_queries):
    specs = [spec(name=f"sweep-{i}", gpus=1 + i % 4) for i in range(300)]
    response = api(member).post("/api/v1/jobs/bulk/", {"jobs": specs}, format="json")
    assert response.status_code == 201
    assert response.json()["count"] == 300
    assert Job.objects.filter(status="submitted").count() == 300
    assert AuditEvent.objects.filter(event_type="job.submitted").count() == 300


def test_bulk_submit_reads_a_fixed_number_of_queries(world, django_assert_max_num_queries):
    few = [spec(name=f"a-{i}") for i in range(3)]
    many = [spec(name=f"b-{i}") for i in range(400)] + [beta(name="c")]
    with django_assert_max_num_queries(16):
        job_submit_bulk(actor=None, specs=few)
    with django_assert_max_num_queries(16):
        job_submit_bulk(actor=None, specs=many)


def test_bulk_submit_treats_other_tenants_as_unknown_for_a_member(member, world):
    with pytest.raises(ValidationError) as exc:
        job_submit_bulk(actor=member, specs=[spec(), beta()])
    assert exc.value.message_dict == {"jobs[1].tenant": [errors.UNKNOWN_TENANT.format(value="beta")]}


def test_bulk_submit_refuses_a_reader_without_membership(auditor, world):
    with pytest.raises(PermissionDenied):
        job_submit_bulk(actor=auditor, specs=[spec()])


def test_bulk_refuses_an_empty_list(member):
    with pytest.raises(ValidationError) as exc:
        job_submit_bulk(actor=member, specs=[])
    assert exc.value.message_dict == {"jobs": [errors.BULK_EMPTY]}
