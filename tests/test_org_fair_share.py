"""Weighted fair share over the organisation tree through the running system (issue 39): a unit's weight,
set through the audited service, decides which department's job takes the last free node in a real cycle;
the tree page shows each unit's weight, share of its siblings' weight and rolled-up decayed usage."""
from datetime import timedelta

import pytest
import time_machine
from django.urls import reverse
from django.utils import timezone

from audit.models import AuditEvent
from quotas.models import Node, Project
from quotas.orgs import services
from quotas.orgs.models import OrgUnit
from scheduler.cycle.services import scheduler_cycle_run
from scheduler.jobs.services import job_cancel
from scheduler.models import Job
from scheduler.sync.tick import backend_tick
from tests.jobs import beta, submit
from tests.org_helpers import build_tree

pytestmark = pytest.mark.django_db


def _cycle(world, now):
    scheduler_cycle_run(pool=world.pool, now=now)
    backend_tick(now=now)


def _past_usage(world, gamma, hours_ago=3, ran_hours=1):
    """alpha (in cv) and gamma (in nlp) each ran 8 H100 for an hour, ended: equal usage per department."""
    Project.objects.create(tenant=gamma, slug="nlp", name="NLP")
    start = timezone.now() - timedelta(hours=hours_ago)
    with time_machine.travel(start, tick=False):
        jobs = [submit(gpus=8, name="old-alpha"), submit(gpus=8, name="old-gamma", tenant="gamma", project="nlp")]
        _cycle(world, start)
    end = start + timedelta(hours=ran_hours)
    with time_machine.travel(end, tick=False):
        for job in jobs:
            job_cancel(actor=None, job=Job.objects.get(pk=job.pk), reason="done")
        backend_tick(now=end)


@pytest.mark.parametrize("cv_weight, first", [(1, "gamma"), (3, "beta")])
def test_a_departments_weight_decides_who_takes_the_last_node(world, platform_admin, cv_weight, first):
    gamma = build_tree(world, platform_admin)
    _past_usage(world, gamma)
    services.org_unit_weight_set(actor=platform_admin, unit=OrgUnit.objects.get(slug="cv"), weight=cv_weight,
                                 reason="cv carries three product lines")
    last = Node.objects.filter(pool=world.pool, gpu_model=world.h100).order_by("-name")[0]
    Node.objects.filter(pk=last.pk).update(state=Node.State.CORDONED)  # the world: three H100 nodes schedulable
    now = timezone.now()
    for i in range(2):  # alpha's 16: two of the three nodes are taken
        submit(gpus=8, name=f"alpha-{i}")
    _cycle(world, now - timedelta(minutes=1))
    assert Job.objects.filter(name__startswith="alpha-", status=Job.Status.RUNNING).count() == 2
    # beta (cv, nothing used itself) and gamma (nlp, 8 GPU-hours) want the last node, both within quota.
    # Flat, beta's own fair share would win; over the tree cv (alpha's usage rolled up) stands behind nlp
    # at equal weights, and ahead of it when cv weighs 3.
    submit(**beta(gpus=8, name="beta-now"))
    submit(gpus=8, name="gamma-now", tenant="gamma", project="nlp")
    _cycle(world, now)
    running = set(Job.objects.filter(name__endswith="-now", status=Job.Status.RUNNING)
                  .values_list("tenant__slug", flat=True))
    assert running == {first}
    if cv_weight != 1:
        event = AuditEvent.objects.get(event_type="org_unit.weight_set")
        assert (event.payload["old"], event.payload["new"]) == ("1.00", "3")


def test_the_tree_page_shows_weight_share_and_rolled_up_decayed_usage(client, world, platform_admin):
    gamma = build_tree(world, platform_admin)
    _past_usage(world, gamma, hours_ago=2)
    services.org_unit_weight_set(actor=platform_admin, unit=OrgUnit.objects.get(slug="nlp"), weight=3,
                                 reason="nlp serves production")
    client.force_login(platform_admin)
    body = client.get(reverse("pool-tree", args=["gpu-a"])).content.decode()

    def fields(slug):
        node = body[body.index(f'data-node="{slug}"'):]
        node = node[:node.index("</p>")]
        return {f: node.split(f'data-field="{f}">')[1].split("<")[0] for f in
                ("weight", "share", "usage", "level-fair-share") if f'data-field="{f}"' in node}

    cv, nlp = fields("cv"), fields("nlp")
    assert (cv["weight"], cv["share"]) == ("Weight 1.00", "25% of its siblings' weight")
    assert (nlp["weight"], nlp["share"]) == ("Weight 3.00", "75% of its siblings' weight")
    # an hour of 8 GPUs, ended an hour ago, decayed by a 7-day half-life: just under 8 GPU-hours each
    assert cv["usage"] == nlp["usage"] == "8.0 decayed GPU-hours"
    assert fields("ai")["usage"] == "15.9 decayed GPU-hours"  # both departments rolled up
    assert (cv["level-fair-share"], nlp["level-fair-share"]) == ("usage ÷ share 2.00", "usage ÷ share 0.67")
    assert fields("alpha") == {"usage": "8.0 decayed GPU-hours"}
    client.cookies.load({"django_language": "zh-hans"})
    body = client.get(reverse("pool-tree", args=["gpu-a"])).content.decode()
    assert "权重 3.00" in body and "衰减 GPU 小时" in body
