"""`manage.py bench_queue` (engine only) prints one JSON line whose figures add up."""
import io
import json

import pytest
from django.core.management import call_command


def test_the_engine_benchmark_prints_its_figures_as_one_json_line():
    out = io.StringIO()
    call_command("bench_queue", jobs=300, nodes=40, tenants=5, repeats=3, stdout=out)
    (line,) = out.getvalue().splitlines()
    figures = json.loads(line)
    assert figures["engine_admitted"] + figures["engine_waits"] == 300
    assert 0 <= figures["decide_gc_ms_p50"] <= figures["decide_ms_p50"]
    assert figures["decide_ms_p50"] <= figures["decide_serialise_ms_p50"]
    assert figures["cpu_reference_s"] > 0
    # The vectors' ratio in CPU time too, from their own cycles' figures (not mixed with the GPU-only ones).
    assert figures["vectors_cpu_ratio_p50"] == pytest.approx(
        figures["vectors_decide_cpu_ms_p50"] / figures["decide_cpu_ms_p50"], rel=0.1)
