"""The zh-Hans catalog is complete and compiled, and pages render in Chinese after the switch."""
import re
import string
from pathlib import Path

import pytest
from django.apps import apps
from django.urls import reverse
from django.utils import translation

from tests.jobs import spec

PO = Path(__file__).resolve().parent.parent / "portal" / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"


def test_every_message_has_a_chinese_translation():
    text = PO.read_text(encoding="utf-8")
    entries = text.split("\n\n")[1:]  # the first block is the header
    untranslated = [e for e in entries if not e.startswith("#~") and (
        re.search(r'^msgstr(\[0\])? ""\Z', e.strip(), re.M) or "#, fuzzy" in e)]
    assert untranslated == []


def test_the_compiled_catalog_is_used():
    with translation.override("zh-hans"):
        assert translation.gettext("Pools") == "资源池"
        assert translation.gettext("Why it waits") == "等待原因"


def test_language_switch_renders_the_pool_page_in_chinese(client, member):
    client.force_login(member)
    response = client.post(reverse("set_language"), {"language": "zh-hans", "next": reverse("pools")}, follow=True)
    html = response.content.decode()
    assert '<html lang="zh-hans">' in html and "资源池容量" in html


def test_every_choice_label_of_the_portal_reads_in_chinese():
    """States and kinds shown on pages come from model choices: each must be marked for translation."""
    proper_names = {"Slack"}
    untranslated = []
    for model in apps.get_models():
        if model._meta.app_label not in {"quotas", "scheduler", "audit", "notices", "portal"}:
            continue
        for field in model._meta.concrete_fields:
            for value, label in field.flatchoices:
                with translation.override("en"):
                    english = str(label)
                with translation.override("zh-hans"):
                    chinese = str(label)
                if english != value and english == chinese and english not in proper_names:  # identifier choices (value as label) excepted
                    untranslated.append(f"{model.__name__}.{field.name}: {english}")
    assert untranslated == []


def test_quota_history_says_what_changed_in_chinese(client, member, world):
    client.force_login(member)
    html = client.get(reverse("tenant-quota", args=["alpha"]), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "<td>创建</td>" in html and "<td>created</td>" not in html


@pytest.mark.parametrize("url, chinese", [
    ("/platform/switches/", "已有借用运行到期"),  # form choices
    ("/leases/", "进行中（生效或回收中）"),  # the state filter
    ("/reports/", "各 GPU 型号的 GPU 小时"),  # chart titles drawn on the server
])
def test_forms_filters_and_charts_read_in_chinese(client, platform_admin, url, chinese):
    client.force_login(platform_admin)
    response = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 200 and chinese in response.content.decode()


def _po_entries():
    """(msgid, msgstr, flags) of each singular entry, quoted continuation lines joined."""
    for block in PO.read_text(encoding="utf-8").split("\n\n")[1:]:
        parts, current = {}, None
        for line in block.splitlines():
            keyword = re.match(r'^(msgid|msgstr|msgid_plural|msgctxt)\s+"(.*)"$', line)
            if keyword:
                current = keyword.group(1)
                parts[current] = keyword.group(2)
            elif line.startswith('"') and current:
                parts[current] += line[1:-1]
        if "msgid" in parts and "msgstr" in parts:
            yield parts["msgid"], parts["msgstr"], block


def test_every_translation_keeps_the_placeholders_of_its_message():
    def brace(text):
        return sorted(m for _, m, _, _ in string.Formatter().parse(text.replace("\\n", "")) if m is not None)

    def percent(text):
        return sorted(re.findall(r"%\(\w+\)s", text))

    wrong = []
    for msgid, msgstr, block in _po_entries():
        if "python-brace-format" in block and brace(msgid) != brace(msgstr):
            wrong.append(msgid)
        if "python-format" in block and percent(msgid) != percent(msgstr):
            wrong.append(msgid)
    assert wrong == []


def test_service_errors_speak_the_language_of_the_request(api, member, world):
    response = api(member).post("/api/v1/jobs/", spec(gpus=0), format="json", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 400 and response.json()["gpus"] == ["必须至少为 1。"]
    too_big = api(member).post("/api/v1/jobs/", spec(gpus=64), format="json", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert too_big.json()["gpus"] == ["gpu-a 中没有拥有 64 个 GPU 的 H100-80G 节点：最大的节点只有 8 个。"]
