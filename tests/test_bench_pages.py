"""`manage.py bench_pages`: concurrent readers through a real gunicorn read the team queue page and its
unchanged refresh; one JSON line with R beside the figures."""
import io
import json

import pytest
from django.core.management import call_command


@pytest.mark.django_db(transaction=True)  # gunicorn reads the rows from its own connections
def test_the_page_benchmark_reads_through_gunicorn_and_prints_one_json_line():
    out = io.StringIO()
    call_command("bench_pages", jobs=120, nodes=6, tenants=3, readers=3, requests=2, stdout=out)
    (line,) = out.getvalue().splitlines()
    figures = json.loads(line)
    assert figures["readers"] == 3 and figures["r_s"] > 0
    assert figures["queue_page_first_render_errors"] == 0 and figures["queue_page_first_render_ms"] > 0
    assert figures["queue_page_first_visits_errors"] == 0 and figures["queue_page_first_visits_p95_ms"] > 0
    assert figures["queue_page_concurrent_errors"] == 0 and figures["unchanged_refresh_concurrent_errors"] == 0
    assert 0 < figures["queue_page_concurrent_p50_ms"] <= figures["queue_page_concurrent_p95_ms"]
    assert figures["queue_page_concurrent_bytes"] > 1000  # the page itself, not a redirect to the login
    assert figures["queue_page_concurrent_p95_r"] > 0
    assert set(figures["within_targets"]) == {"p95_r", "bytes"}
    # What shares the cores with the server: the database's backends (visible here: same machine) and the readers.
    assert figures["queue_page_database_cpu_ms"] is not None and figures["queue_page_readers_cpu_ms"] > 0
