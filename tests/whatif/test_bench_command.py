"""`manage.py bench_whatif` prints one JSON line with the figures the closing note reports."""
import json
from io import StringIO

from django.core.management import call_command


def test_bench_whatif_prints_one_json_line_of_figures():
    out = StringIO()
    call_command("bench_whatif", "--jobs", "300", "--nodes", "4", "--days", "1", stdout=out)
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1
    figures = json.loads(lines[0])
    assert figures["jobs"] == 300 and figures["nodes"] == 4
    assert figures["wall_s"] >= figures["replay_s"] > 0 and figures["peak_rss_mb"] > 0
    assert 0 < figures["cpu_s"] <= figures["wall_s"] + 0.5
    assert figures["cycles"] == figures["fast_admissions"] + figures["quiet_cycles"] + figures["decide_calls"]
    assert 0 < figures["utilisation"] <= 1 and 0 < figures["started"] <= 300


def test_bench_whatif_check_finds_every_shortcut_cycle_equal_to_a_full_decide():
    out = StringIO()
    call_command("bench_whatif", "--jobs", "400", "--nodes", "6", "--days", "2", "--check", stdout=out)
    figures = json.loads(out.getvalue())
    assert figures["disagreed"] == 0, figures["first_disagreements"]
    assert sum(figures["checked"].values()) == figures["cycles"]
    assert figures["checked"]["quiet"] and figures["checked"]["decide"]
    assert figures["let_pass"] > 0  # wakes let pass without a cycle, each decided in full and found idle
