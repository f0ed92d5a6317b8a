"""A control character in a page's form (issue #42, item 9): a translated 400 page that names the field and
gives the input back, control characters removed, in a form that sends it to the same address again; nothing
is saved. A control character in a page's address gets the same page without a form. The API keeps JSON."""
from urllib.parse import urlencode

import pytest

from portal.edge import BAD_FIELD
from scheduler.models import Job

pytestmark = pytest.mark.django_db

FORM = {"name": "resnet\x00-run", "project": "train", "workload_class": "training", "pool": "gpu-a",
        "gpu_model": "H100-80G", "gpus": "2", "replicas": "1", "max_runtime_minutes": "60",
        "command": "python train.py\n--epochs 3"}


@pytest.mark.parametrize("language, said, again", [
    ("en", str(BAD_FIELD).format(field="name"), "Send again"),
    ("zh-hans", "你的输入没有发送：name 含有控制字符（例如 NUL），这是不允许的。", "重新发送"),
])
def test_a_form_with_a_control_character_comes_back_with_the_input(client, member, language, said, again):
    client.force_login(member)
    response = client.post("/tenants/alpha/queue/", urlencode(FORM), content_type="application/x-www-form-urlencoded",
                           HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 400 and response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert said in html and again in html
    assert '<form method="post" action="/tenants/alpha/queue/"' in html
    assert ">resnet-run</textarea>" in html  # the input, without the NUL
    assert "python train.py\n--epochs 3</textarea>" in html  # line breaks are input, kept
    assert not Job.objects.exists()


def test_a_control_character_in_a_page_address_is_said_in_the_readers_language(client, member):
    client.force_login(member)
    response = client.get("/reports/?tenant=%00", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 400
    html = response.content.decode()
    assert "这个地址没有打开" in html and "<form" not in html


def test_a_multipart_form_is_checked_too(client, member):
    client.force_login(member)
    response = client.post("/tenants/alpha/queue/", FORM)  # the test client sends multipart/form-data
    assert response.status_code == 400 and "Input not accepted" in response.content.decode()
    assert not Job.objects.exists()
