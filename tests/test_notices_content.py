"""Notice content: everything a victim needs to act, nothing of the job's payload."""
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.notices import services
from scheduler.notices.content import (
    FORBIDDEN_KEY_FOUND, FORBIDDEN_KEYS, SensitiveContentError, assert_no_forbidden_keys, next_checkpoint_due,
    preemption_notice,
    reclaim_notice, victim_from_job,
)

SECRET_COMMAND = "python train.py --lr 3e-4 --token sk-live-9f8e7d"
SECRET_ENV = "HF_TOKEN=hf_supersecret123"
SECRET_PATH = "/mnt/datasets/customer-pii/2026-q1"

JOB = {
    "id": 4242, "name": "llama-ft-7b", "project": "train", "pool": "gpu-a", "gpu_model": "H100-80G", "gpus": 4,
    "replicas": 2, "workload_class": "training", "priority_class": "training", "checkpoint_interval_minutes": 30,
    "command": SECRET_COMMAND, "args": ["--resume", SECRET_PATH], "env": {"HF_TOKEN": SECRET_ENV},
    "data_paths": [SECRET_PATH], "environment": {"image": "registry/secret:1", "detail": SECRET_ENV},
}


def build(**overrides):
    now = timezone.now()
    values = {**victim_from_job(JOB), "reason": "Tenant Beta team needs its base quota back for a production job",
              "reason_code": "priority_in_quota", "preempting_tenant": "Beta team", "at": now,
              "grace_deadline": now + timedelta(minutes=15), "gpu_hours_at_risk": 3.5,
              "last_checkpoint_at": now - timedelta(minutes=25), **overrides}
    return preemption_notice(**values)


def test_a_notice_never_carries_the_jobs_command_arguments_env_or_data_paths():
    content = build()
    rendered = content.subject + content.body + json.dumps(content.facts, ensure_ascii=False)
    for secret in (SECRET_COMMAND, SECRET_ENV, SECRET_PATH, "sk-live", "hf_supersecret", "registry/secret",
                   "--resume", "customer-pii"):
        assert secret not in rendered
    assert_no_forbidden_keys(content.facts)


def test_a_preemption_notice_says_why_who_when_the_impact_and_what_to_do():
    content = build()
    assert content.kind == "preemption"
    assert "#4242 llama-ft-7b" in content.subject and "将被抢占" in content.subject
    body = content.body
    assert "Tenant Beta team needs its base quota back" in body
    assert "Preempting tenant / 抢占方租户: Beta team" in body
    assert "At risk / 影响: 3.5 GPU-hours since the last checkpoint" in body
    assert "POST /api/v1/jobs/4242/checkpoint/" in body
    assert "requeued automatically" in body and "自动重新排队" in body
    assert "every 30 minutes" in body
    assert "4 × H100-80G × 2 replica(s) = 8 GPUs" in body
    facts = content.facts
    assert facts["preempting_tenant"] == "Beta team"
    assert facts["job"] == {"id": 4242, "name": "llama-ft-7b", "project": "train", "pool": "gpu-a",
                            "gpu_model": "H100-80G", "gpus": 4, "replicas": 2}
    assert facts["checkpoint_report"] == {"method": "POST", "path": "/api/v1/jobs/4242/checkpoint/"}
    assert facts["gpu_hours_at_risk"] == 3.5 and facts["next"] == "requeue"
    assert facts["grace_deadline"] and facts["at"]


def test_a_reclaim_notice_names_the_lender_and_the_lease():
    now = timezone.now()
    content = reclaim_notice(**victim_from_job(JOB), reason="Alpha team reclaims its lent quota",
                             reclaiming_tenant="Alpha team", at=now, grace_deadline=now + timedelta(minutes=10),
                             gpu_hours_at_risk=0, lease_id=77)
    assert content.kind == "reclaim"
    assert "Reclaiming tenant (lender) / 回收方租户（出借方）: Alpha team · lease / 借用单 #77" in content.body
    assert content.facts["reclaiming_tenant"] == "Alpha team" and content.facts["lease_id"] == 77
    assert "Last checkpoint / 最近检查点: none reported" in content.body


@pytest.mark.parametrize("facts", [
    {"command": "rm -rf /"},
    {"job": {"id": 1, "env": {"A": "b"}}},
    {"jobs": [{"id": 1}, {"id": 2, "Data_Paths": ["/x"]}]},
])
def test_the_guard_refuses_forbidden_keys_at_any_depth(facts):
    with pytest.raises(SensitiveContentError) as exc:
        assert_no_forbidden_keys(facts)
    assert str(exc.value).startswith(FORBIDDEN_KEY_FOUND.split("{")[0])


def test_forbidden_keys_cover_the_design_list():
    assert {"command", "args", "arguments", "env", "environment", "data_path", "data_paths", "dataset_path",
            "prompt"} <= FORBIDDEN_KEYS


def test_enqueue_refuses_facts_with_a_forbidden_key(world):
    with pytest.raises(SensitiveContentError):
        services.notice_enqueue(kind="preemption", tenant=world.alpha, recipients=["a@example.com"],
                                facts={"job": {"id": 1, "command": SECRET_COMMAND}}, subject="s", body="b")


def test_the_notice_says_when_the_next_checkpoint_is_due_and_whether_it_beats_the_deadline():
    now = timezone.now().replace(microsecond=0)
    late = build(at=now, grace_deadline=now + timedelta(minutes=10), last_checkpoint_at=now - timedelta(minutes=5),
                 checkpoint_interval_minutes=30)
    assert "after the deadline: save one now" in late.body
    in_time = build(at=now, grace_deadline=now + timedelta(minutes=10), last_checkpoint_at=now - timedelta(minutes=5),
                    checkpoint_interval_minutes=8)
    assert "before the deadline" in in_time.body and "after the deadline" not in in_time.body


def test_next_checkpoint_due_steps_from_the_last_one_past_now():
    now = timezone.now()
    assert next_checkpoint_due(now - timedelta(minutes=25), 10, now) == now + timedelta(minutes=5)
    assert next_checkpoint_due(None, 10, now) is None


def test_a_reason_the_catalogue_knows_is_given_in_both_languages_and_any_other_as_it_is():
    known = build(reason="A production job needs the capacity held on borrowed GPUs")
    assert ("Reason / 原因: A production job needs the capacity held on borrowed GPUs / "
            "一个生产任务需要借用 GPU 上占用的容量") in known.body
    assert known.facts["reason"] == "A production job needs the capacity held on borrowed GPUs"  # for programs
    assert "Reason / 原因: Tenant Beta team needs its base quota back for a production job\n" in build().body
