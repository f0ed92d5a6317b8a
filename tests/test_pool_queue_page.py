"""The pool queue page: the whole pool's order as the last cycle left it, the reader's jobs marked and
linked, other teams' jobs without name, project or message; counts by wait code; bounded pages."""
import pytest
from django.test import Client
from django.urls import reverse

from scheduler.jobs.pool_page import PAGE_SIZE
from scheduler.models import PENDING_STATUSES, Job
from tests.jobs import beta, cycle, submit

pytestmark = pytest.mark.django_db


def page(user, language="en"):
    client = Client(headers={"accept-language": language})
    client.force_login(user)
    return client


def test_a_member_sees_who_is_ahead_and_how_big_without_their_names(world, member):
    # Beta fills its 8 and waits with two more; alpha's two jobs beyond its 16 + what it may borrow wait too.
    [submit(**beta(gpus=8, name=f"beta-run-{i}", max_runtime_minutes=120)) for i in range(3)]
    mine = [submit(member, gpus=8, name=f"alpha-run-{i}") for i in range(6)]
    cycle(world)
    response = page(member).get(reverse("pool-queue", args=["gpu-a"]))
    assert response.status_code == 200
    html = response.content.decode()
    waiting_alpha = [j for j in mine if f'id="job-{j.pk}"' in html]
    assert waiting_alpha and all(f'href="/jobs/{j.pk}/"' in html for j in waiting_alpha)
    assert "beta-run" not in html and "exp</span>" not in html  # another team's name and project stay hidden
    assert "<code>beta</code>" in html and "another team's job" in html
    assert html.count("<tr") - 1 == Job.objects.filter(status__in=PENDING_STATUSES).count()  # one row each
    assert "Go to your first job" in html


def test_the_page_is_bounded_and_counts_every_waiting_job(world, member):
    for i in range(PAGE_SIZE + 5):
        submit(**beta(gpus=8, name=f"b-{i}"))
    cycle(world)
    waiting = Job.objects.filter(status__in=PENDING_STATUSES).count()
    assert PAGE_SIZE < waiting < 2 * PAGE_SIZE
    html = page(member).get(reverse("pool-queue", args=["gpu-a"])).content.decode()
    assert html.count("another team's job") == PAGE_SIZE and "Page 1 of 2" in html
    assert f"{waiting} jobs wait for {waiting * 8} GPUs" in html
    second = page(member).get(reverse("pool-queue", args=["gpu-a"]) + "?page=2").content.decode()
    assert second.count("another team's job") == waiting - PAGE_SIZE and "Page 2 of 2" in second


def test_the_pool_queue_in_chinese(world, member):
    submit(member, gpus=8, name="a-0")
    html = page(member, "zh-hans").get(reverse("pool-queue", args=["gpu-a"])).content.decode()
    assert "资源池队列" in html and "Pool queue" not in html


def test_an_unknown_pool_is_a_404_and_anonymous_readers_log_in(world, member):
    assert page(member).get(reverse("pool-queue", args=["nope"])).status_code == 404
    assert Client().get(reverse("pool-queue", args=["gpu-a"])).status_code == 302
