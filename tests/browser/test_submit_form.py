"""The submit form as a person uses it (issue #42, item 7): the GPU model list offers only the models of the
chosen pool, a workload class proposes its runtime limit and checkpoint interval, and the job is stored with
what the form sent. In English and zh-Hans, at 1440 and 390 px; with PORTAL_SHOTS_DIR set, screenshots."""
import importlib
import os
from pathlib import Path

from django.apps import apps

import pytest

from quotas.models import GpuModel, Pool
from quotas.classes.models import PriorityClass
from scheduler.jobs.forms import CHECKPOINT_DEFAULTS
from scheduler.models import Job
from tests import factories
from tests.browser.test_mobile_pages import DESKTOP, PHONE, open_as

SHOTS = os.environ.get("PORTAL_SHOTS_DIR")


@pytest.fixture
def class_rows(db):
    """The default class rows as the data migrations write them: a live-server test's database may follow
    another such test's flush, which empties every table, migrated data included."""
    for migration, step in (("0011_priority_classes", "add_defaults"), ("0013_class_runtime_limits", "limits_onto_rows")):
        getattr(importlib.import_module(f"quotas.migrations.{migration}"), step)(apps, None)


@pytest.fixture
def two_pools(world, class_rows):
    """gpu-a has H100 and A100; gpu-b only L40S."""
    pool_b = Pool.objects.create(name="gpu-b", display_name="Pool B")
    l40s = GpuModel.objects.create(name="L40S-48G", memory_gb=48, chargeback_weight=1)
    factories.nodes(pool_b, l40s, 2, gpus=4)
    return world


def offered(page) -> list[str]:
    return page.eval_on_selector_all("#id_gpu_model option", "os => os.filter(o => !o.disabled).map(o => o.value)")


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
@pytest.mark.parametrize("language, label", [("en", "Checkpoint interval (minutes)"), ("zh-hans", "检查点间隔（分钟）")])
def test_models_follow_the_pool_and_the_class_proposes_its_limits(browser, live_server, two_pools, member, width,
                                                                  language, label):
    # One rule: the class rows' limits, as a platform admin set them, are what the form proposes and bounds.
    PriorityClass.objects.filter(name="candidate").update(default_runtime_minutes=150, max_runtime_minutes=600)
    PriorityClass.objects.filter(name="experiment").update(default_runtime_minutes=45)
    context, page, errors = open_as(browser, live_server, member, width=width, language=language)
    page.goto(f"{live_server.url}/tenants/alpha/queue/")
    page.click("#submit-job summary")
    assert page.inner_text("label[for=id_checkpoint_interval_minutes]") == label
    page.select_option("#id_pool", "gpu-a")
    assert offered(page) == ["A100-40G", "H100-80G"]
    page.select_option("#id_pool", "gpu-b")
    assert offered(page) == ["L40S-48G"]
    assert page.input_value("#id_gpu_model") == "L40S-48G"

    page.select_option("#id_workload_class", "evaluation")
    assert (page.input_value("#id_max_runtime_minutes"), page.input_value("#id_checkpoint_interval_minutes")) == (
        "150", str(CHECKPOINT_DEFAULTS["evaluation"]))
    assert page.get_attribute("#id_max_runtime_minutes", "max") == "600"
    page.fill("#id_checkpoint_interval_minutes", "20")  # typed: a later class change keeps it
    page.select_option("#id_workload_class", "validation")
    assert page.input_value("#id_checkpoint_interval_minutes") == "20"
    assert page.input_value("#id_max_runtime_minutes") == "45"  # validation is an experiment-class workload
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"submit-form-{language}-{width}.png"), full_page=True)

    page.select_option("#id_pool", "gpu-a")
    page.select_option("#id_gpu_model", "H100-80G")
    page.fill("#id_name", "eval-run")
    page.fill("#id_gpus", "2")
    page.click("form.submit-job button.primary")
    page.wait_for_selector(".messages")
    job = Job.objects.get(name="eval-run")
    assert (job.pool.name, job.gpu_model.name, job.workload_class, job.max_runtime_minutes,
            job.checkpoint_interval_minutes) == ("gpu-a", "H100-80G", "validation", 45, 20)
    assert not errors
    context.close()
