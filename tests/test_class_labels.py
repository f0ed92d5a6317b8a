"""One class catalogue (quotas/classes/labels.py): a job's class line says each word once in both
languages, and the switches page names switches and priority classes by their labels, never codes."""
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from quotas.classes.labels import job_class_label
from quotas.leases import services
from quotas.leases.models import PolicySwitch


@pytest.mark.parametrize("language, workload, priority, text", [
    ("en", "evaluation", "candidate", "Evaluation (production candidate)"),
    ("zh-hans", "evaluation", "candidate", "模型评估（生产候选）"),
    ("en", "training", "training", "Training"),
    ("zh-hans", "training", "training", "训练"),
    ("en", "online_inference", "production", "Online inference · Production"),
    ("zh-hans", "online_inference", "production", "在线推理 · 生产"),
])
def test_a_jobs_class_line_says_each_word_once(db, language, workload, priority, text):
    with translation.override(language):
        assert job_class_label(workload, priority) == text


@pytest.mark.parametrize("language, classes, switch", [
    ("en", ["Production", "Production candidate", "Training", "Batch", "Experiment"], "Borrowing enabled"),
    ("zh-hans", ["生产", "生产候选", "训练", "批量", "实验"], None),
])
def test_the_switches_page_names_switches_and_classes_by_label(platform_admin, language, classes, switch):
    services.policy_switch_set(actor=platform_admin, key=PolicySwitch.Key.BORROWING_ENABLED, value=False,
                               reason="staged rollout, step one")
    client = Client()
    client.force_login(platform_admin)
    html = client.get(reverse("platform-switches"), HTTP_ACCEPT_LANGUAGE=language).content.decode()
    for label in classes:
        assert f'<th scope="row">{label}</th>' in html
    if switch:
        assert f"<td>{switch}</td>" in html  # the history's switch column
    for code in ("borrowing_enabled", "preemption_mode", "reclaim_mode", "candidate", "production"):
        assert f"<code>{code}</code>" not in html and f"<td>{code}</td>" not in html
