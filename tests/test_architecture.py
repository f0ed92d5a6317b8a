"""The house rules: arrows between the parts run one way, there is no import cycle, and the rules
themselves catch a planted arrow or cycle (so a green run means something)."""
from pathlib import Path

from tests.architecture import (
    SCHEDULER_LAYERS,
    arrows_against_direction,
    cycles,
    import_graph,
    scheduler_arrows_up,
    scheduler_layer,
)

ROOT = Path(__file__).resolve().parent.parent


def test_arrows_run_one_way():
    assert arrows_against_direction(import_graph(ROOT)) == []


def test_scheduler_sub_packages_import_only_their_own_layer_or_those_below():
    assert scheduler_arrows_up(import_graph(ROOT)) == []


def test_every_scheduler_sub_package_has_a_layer():
    """A new sub-package must be placed in the order, or its arrows would go unchecked."""
    packages = {p.name for p in (ROOT / "scheduler").iterdir() if (p / "__init__.py").exists()}
    unplaced = {name for name in packages if scheduler_layer(f"scheduler.{name}.x") not in SCHEDULER_LAYERS}
    assert unplaced <= {"management", "migrations", "templatetags"}


def test_there_is_no_import_cycle():
    assert cycles(import_graph(ROOT)) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for app in ("portal", "quotas", "scheduler", "audit"):
        (tmp_path / app).mkdir()
        (tmp_path / app / "__init__.py").write_text("")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_planted_arrow_against_the_direction_is_reported(tmp_path):
    root = _tree(tmp_path, {
        "portal/tenancy.py": "",
        "quotas/views.py": "def page():\n    from portal.tenancy import x\n",
        "audit/chain/services.py": "from quotas import views\n",
        "scheduler/engine/decide.py": "import scheduler.jobs\n",
        "scheduler/jobs/__init__.py": "",
    })
    assert arrows_against_direction(import_graph(root)) == [
        "audit.chain.services (ledger) imports quotas.views (quotas)",
        "quotas.views (quotas) imports portal.tenancy (portal)",
        "scheduler.engine.decide (engine) imports scheduler.jobs (scheduler)",
    ]


def test_a_planted_cycle_is_reported_even_through_an_import_inside_a_function(tmp_path):
    root = _tree(tmp_path, {
        "scheduler/triggers.py": "def go():\n    from scheduler.tasks import run\n",
        "scheduler/tasks.py": "from scheduler import triggers\n",
    })
    assert cycles(import_graph(root)) == [["scheduler.tasks", "scheduler.triggers"]]


def test_a_planted_arrow_up_between_scheduler_sub_packages_is_reported(tmp_path):
    root = _tree(tmp_path, {
        "scheduler/runs/services.py": "from scheduler.jobs import submit\n",
        "scheduler/jobs/submit.py": "from scheduler.runs.services import x\nfrom scheduler.jobs.views import page\n",
        "scheduler/jobs/views.py": "from scheduler.cycle.services import run\n",
        "scheduler/cycle/services.py": "def f():\n    from scheduler.jobs.views import page\n",
        "scheduler/models.py": "from scheduler.runs.models import JobRun\n",
        "scheduler/runs/models.py": "from scheduler.queue.triggers import t\n",
        "scheduler/queue/triggers.py": "",
    })
    assert scheduler_arrows_up(import_graph(root)) == [
        "scheduler.cycle.services (cycle) imports scheduler.jobs.views (web)",
        "scheduler.jobs.submit (jobs) imports scheduler.jobs.views (web)",
        "scheduler.runs.models (models) imports scheduler.queue.triggers (queue)",
        "scheduler.runs.services (runs) imports scheduler.jobs.submit (jobs)",
    ]
