"""Why a lease ended and why a job is stopped are stored as codes with their numbers and read in the
reader's language: the same row says it in Chinese on a zh-Hans page and in English to the API; rows
written before the codes existed are read back into codes by the migration."""
import importlib

import pytest
from django.apps import apps
from django.urls import reverse

from quotas.leases import end_reasons
from quotas.leases.models import Lease
from scheduler.models import Preemption
from scheduler.preemption.stop import preemption_grace_due
from tests.borrow_preempt_helpers import alpha_borrows_from_beta, at, beta_wants_its_quota
from tests.lease_helpers import grant

pytestmark = pytest.mark.django_db
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def _reclaimed(world, member):
    """beta takes back the GPUs it lent alpha: the victim is notified, then stopped at its deadline."""
    _jobs, victim = alpha_borrows_from_beta(world, member)
    beta_wants_its_quota(world, 31)
    return victim


def test_a_reclaimed_lease_stores_its_end_as_a_code_and_each_reader_reads_it_in_their_language(
        world, member, platform_admin, client, api):
    _reclaimed(world, member)
    preemption_grace_due(now=at(45))
    lease = Lease.objects.get(lender=world.beta)
    assert (lease.state, lease.end_code, lease.end_details) == (Lease.State.RETURNED, end_reasons.RECLAIMED, {})
    assert lease.end_reason == "Reclaimed by the lender after the grace period"  # the English sentence stays
    client.force_login(platform_admin)
    zh = client.get("/leases/?state=all", **ZH).content.decode()
    assert "宽限期结束后被出借方收回" in zh and "Reclaimed by the lender" not in zh
    assert "Reclaimed by the lender after the grace period" in client.get("/leases/?state=all").content.decode()
    row = next(r for r in api(platform_admin).get("/api/v1/leases/?state=returned").json()["results"]
               if r["id"] == lease.pk)
    assert (row["end_code"], row["end_reason"]) == ("reclaimed", "Reclaimed by the lender after the grace period")


def test_a_stopped_jobs_lease_keeps_the_job_and_the_cause_as_numbers(world):
    lease = grant(world, world.alpha, world.beta, 8)
    from quotas.leases.services import lease_return

    lease_return(lease=lease, code=end_reasons.JOB_STOPPED, details={"job": 41, "cause": "preemption"})
    lease.refresh_from_db()
    assert (lease.end_code, lease.end_details, lease.end_reason) == (
        "job_stopped", {"job": 41, "cause": "preemption"}, "Job #41 stopped (preemption)")
    from django.utils import translation

    with translation.override("zh-hans"):
        assert lease.end_text == "任务 #41 已停止（抢占）"


def test_the_migration_reads_the_english_sentences_of_older_rows_back_into_codes(world):
    migration = importlib.import_module("quotas.migrations.0008_lease_end_code")
    sentences = {
        "Reclaimed by the lender after the grace period": ("reclaimed", {}),
        "Expired at its maximum length": ("expired_at_maximum", {}),
        "Expired: borrowing is paused, no renewal": ("expired_borrowing_paused", {}),
        "Job #12 stopped (reclaim)": ("job_stopped", {"job": 12, "cause": "reclaim"}),
        "Job #7 ended on the cluster (NODE_FAIL)": ("job_ended_on_cluster", {"job": 7, "cause": "NODE_FAIL"}),
        "Its jobs no longer run on it": ("jobs_gone", {}),
        "Borrowing paused: returned now (GPU shortage (week 49))": ("borrowing_paused",
                                                                    {"reason": "GPU shortage (week 49)"}),
        "Demo: jobs finished": ("", {}),  # a person's own words stay words
    }
    ids = {}
    for i, sentence in enumerate(sentences):
        lease = grant(world, world.alpha, world.beta, 1, job_ids=(i + 1,))
        Lease.objects.filter(pk=lease.pk).update(state=Lease.State.RETURNED, end_reason=sentence)
        ids[lease.pk] = sentence
    migration.codes_from_english(apps, None)
    for pk, sentence in ids.items():
        lease = Lease.objects.get(pk=pk)
        assert (lease.end_code, lease.end_details) == sentences[sentence], sentence
        # The English reader reads what the row said before, the stop's kind now in words.
        assert lease.end_text == sentence.replace("(reclaim)", "(reclaim of lent quota)")


def test_a_victim_reads_why_its_job_stops_and_the_numbers_behind_it_in_chinese(world, member, client, api):
    victim = _reclaimed(world, member)
    client.force_login(member)
    job_page = client.get(reverse("job-detail", args=[victim.pk]), **ZH).content.decode()
    assert "出借方需要收回借出的配额来运行自己的任务" in job_page and "已通知，宽限期中" in job_page
    assert ">notified<" not in job_page
    preemptions = client.get("/preemptions/?state=all", **ZH).content.decode()
    assert "被抢占任务的 GPU 8" in preemptions and "victim gpus" not in preemptions
    # Programs keep the codes; the words follow the request's language.
    english = api(member).get(f"/api/v1/jobs/{victim.pk}/").json()["preemption"]
    assert (english["rule"], english["state"], english["reason"]) == (
        "reclaim_of_lent_quota", "notified", "The lender needs the quota it lent back for its own job")
    chinese = api(member).get(f"/api/v1/jobs/{victim.pk}/", **ZH).json()["preemption"]
    assert (chinese["rule"], chinese["state_label"]) == ("reclaim_of_lent_quota", "已通知，宽限期中")
    assert Preemption.objects.get(victim=victim).rule == "reclaim_of_lent_quota"
