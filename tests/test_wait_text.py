"""Wait reasons and next actions speak the reader's language with the engine's numbers, on the
queue page and in the API; stored English stays the audit text and the fallback."""
import re
import string
from datetime import UTC, datetime

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from scheduler.engine import reasons
from scheduler.engine.texts import LABELS, MESSAGES, Counted
from scheduler.jobs.wait_text import action_label, blocker_message, localized_wait
from tests.jobs import borrowing_off, cycle, reload, submit

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_every_reason_and_action_text_has_a_chinese_translation_with_the_same_numbers():
    with translation.override("zh-hans"):
        for template in (*MESSAGES.values(), *LABELS.values()):
            if isinstance(template, Counted):
                assert fields(template.singular) == fields(template.plural) >= {template.count}, template
                for n in (1, 2):
                    chinese = translation.ngettext(template.singular, template.plural, n)
                    assert chinese not in template and fields(chinese) == fields(template.plural), template
                continue
            chinese = translation.gettext(template)
            assert chinese != template, template
            assert fields(chinese) == fields(template), template


@pytest.mark.parametrize("kind, details, text", [
    ("preempting", {"victims": 1, "gpus": 8}, "Preempting 1 lower-priority job (8 GPUs) of alpha"),
    ("preempting", {"victims": 2, "gpus": 16}, "Preempting 2 lower-priority jobs (16 GPUs) of alpha"),
    ("quota_exceeded", {"requested": 1, "free": 0, "quota": 8, "used": 8}, "requested 1 GPU, 0 free"),
    ("maintenance", {"unavailable": 1}, "1 H100-80G node in gpu-a that could run this job is cordoned"),
    ("lower_priority", {"jobs_ahead": 1, "gpus_ahead": 8}, "1 ahead asks for 8 GPUs"),
])
def test_a_count_of_one_reads_in_the_singular(kind, details, text):
    blocker = {"code": "X", "kind": kind, "details": {
        "tenant": "alpha", "project": "", "pool": "gpu-a", "gpu_model": "H100-80G", "until": "", **details}}
    with translation.override("en"):
        assert text in blocker_message(blocker)
    with translation.override("zh-hans"):  # one form in Chinese
        assert "个" in blocker_message(blocker) or "项" in blocker_message(blocker)


def quota_wait() -> dict:
    blockers = (reasons.quota_exceeded("alpha", "gpu-a", "H100-80G", requested=8, quota=16, used=16),
                reasons.borrowing_paused("alpha", "gpu-a", "H100-80G", 8))
    return {"code": blockers[0].code, "message": "; ".join(b.message for b in blockers),
            "blockers": [b.to_dict() for b in blockers],
            "next_actions": [a.to_dict() for a in reasons.next_actions(blockers, None)]}


def test_a_quota_wait_reads_in_chinese_with_its_numbers():
    with translation.override("zh-hans"):
        wait = localized_wait(quota_wait())
    assert wait["blockers"][0]["message"] == (
        "alpha 在 gpu-a/H100-80G 上超出配额：申请 8 个 GPU，基础配额 16 中空闲 0 个（已用 16 个）")
    assert wait["message"] == wait["blockers"][0]["message"] + "；平台已暂停借用"
    assert "为 alpha 申请在 gpu-a 上增加 8 个 H100-80G GPU 配额" in [a["label"] for a in wait["next_actions"]]
    assert wait["code"] == "QUOTA_EXCEEDED" and wait["blockers"][0]["details"]["quota"] == 16


def test_english_renders_the_same_text_the_engine_stored():
    stored = quota_wait()
    with translation.override("en"):
        assert localized_wait(stored)["message"] == stored["message"]


def test_a_stored_wait_without_a_known_kind_keeps_its_stored_text():
    old = {"code": "POOL_FULL", "message": "gpu-a is full", "details": {"free": 0}}
    assert blocker_message(old) == "gpu-a is full"
    assert blocker_message({**old, "kind": "renamed_since"}) == "gpu-a is full"
    assert blocker_message({**old, "kind": "pool_full"}) == "gpu-a is full"  # details of another version
    assert action_label({"code": "wait", "label": "Wait"}) == "Wait"


def test_deadlines_read_in_local_time_and_unreported_details_in_words():
    until = datetime(2026, 12, 3, 2, 30, tzinfo=UTC)
    maintenance = reasons.maintenance("gpu-a", "H100-80G", 2, until).to_dict()
    env = reasons.env_not_ready("").to_dict()
    with translation.override("zh-hans"):
        assert blocker_message(maintenance).endswith("直到 2026-12-03 10:30 CST")  # Asia/Shanghai, with its zone
        assert blocker_message(env) == "运行环境未就绪：未上报；修复之前不会重试该任务"
    no_quota = reasons.no_quota("alpha", "gpu-a", "H100-80G", "online_inference", 4).to_dict()
    with translation.override("zh-hans"):
        assert "“在线推理”" in blocker_message(no_quota)


@pytest.mark.django_db
def test_the_queue_page_and_the_api_explain_a_wait_in_chinese(member, world):
    borrowing_off(world)
    submit(gpus=8, replicas=2)  # the whole base quota of 16
    waiting = submit(name="big", gpus=8)
    cycle(world)
    assert reload(waiting).wait_code == "QUOTA_EXCEEDED"
    client = Client()
    client.force_login(member)
    body = client.get(reverse("tenant-queue", args=["alpha"]), **ZH).content.decode()
    assert "超出配额：申请 8 个 GPU，基础配额 16 中空闲 0 个（已用 16 个）" in body
    assert re.search(r'gpus=24">为 alpha 申请在 gpu-a 上增加 8 个 H100-80G GPU 配额</a>', body)
    assert "requested 8 GPUs" not in body
    wait = client.get(f"/api/v1/jobs/{waiting.pk}/", **ZH).json()["wait"]
    assert "基础配额 16 中空闲 0 个" in wait["message"] and wait["blockers"][0]["kind"] == "quota_exceeded"
    [queued] = [j for j in client.get("/api/v1/pools/gpu-a/queue/", **ZH).json()["jobs"] if j["id"] == waiting.pk]
    assert queued["message"] == wait["message"]
    english = client.get(f"/api/v1/jobs/{waiting.pk}/", HTTP_ACCEPT_LANGUAGE="en").json()["wait"]
    assert "requested 8 GPUs, 0 free of base quota 16 (16 in use)" in english["message"]
    assert "message" not in reload(waiting).wait  # stored as data: code, kinds and numbers
