"""`manage.py bench_cycle`: the real cycle on the database, and a stream of submits sent over HTTP to a real
gunicorn by 4 signed-in clients while a real worker decides them; one JSON line with R beside the figures."""
import io
import json

import pytest
from django.core.management import call_command


@pytest.mark.django_db(transaction=True)  # gunicorn and the worker read the rows from their own connections
def test_the_cycle_benchmark_streams_submits_over_http_and_prints_one_json_line():
    out = io.StringIO()
    call_command("bench_cycle", jobs=80, nodes=12, tenants=3, repeats=2, no_pages=True, readers=0, port=9617,
                 stdout=out)
    (line,) = out.getvalue().splitlines()
    figures = json.loads(line)
    assert figures["r_s"] > 0 and figures["rows_written"]["nochange"] == 0
    assert figures["stream_over"] == "http" and figures["stream_clients"] == 4
    assert (figures["stream_created"], figures["stream_error_count"], figures["stream_undecided"]) == (80, 0, 0), figures["stream_errors"]
    assert figures["stream_decided_after_last_submit_s"] >= 0
