"""The sacct reader of what-if before adoption (scheduler/whatif/sacct_parse.py): what sacct prints in its
`-P -X` shape becomes rows, and a line it would not print is refused naming the line and the field."""
from datetime import datetime, timedelta, timezone

import pytest

from scheduler.whatif.sacct_parse import SACCT_FORMAT, SacctError, parse_sacct, sacct_window

HEADER = SACCT_FORMAT.replace(",", "|")
SHANGHAI = timezone(timedelta(hours=8))
# JobID|Account|QOS|Partition|Submit|Start|End|State|Timelimit|NNodes|NodeList|AllocTRES|ReqTRES
GOOD = "|".join(("41", "ml", "normal", "gpu", "1764547200", "1764547260", "1764550860", "COMPLETED", "01:00:00", "1",
                 "n-h100-1", "billing=2,cpu=2,gres/gpu:h100=2,gres/gpu=2,mem=512M,node=1",
                 "billing=2,cpu=2,gres/gpu:h100=2,gres/gpu=2,mem=512M,node=1"))


def _line(**fields) -> str:
    values = dict(zip(SACCT_FORMAT.split(","), GOOD.split("|")))
    values.update(fields)
    return "|".join(values.values())


def test_a_finished_job_reads_with_its_times_gpus_and_limit():
    (job,) = parse_sacct(f"{HEADER}\n{GOOD}\n")
    assert (job.line, job.job_id, job.account, job.qos, job.partition, job.state) == (2, "41", "ml", "normal", "gpu",
                                                                                     "COMPLETED")
    assert job.submitted == datetime(2025, 12, 1, tzinfo=timezone.utc)
    assert (job.started - job.submitted, job.ended - job.started) == (timedelta(minutes=1), timedelta(hours=1))
    assert (job.gpu_type, job.gpus, job.nodes, job.node_names, job.time_limit_minutes) == ("h100", 2, 1, "n-h100-1", 60)


@pytest.mark.parametrize("fields, expected", [
    # sacct's local ISO times, read in the zone given
    ({"Submit": "2025-12-01T08:00:00", "Start": "2025-12-01T08:01:00", "End": "2025-12-01T09:01:00"},
     {"submitted": datetime(2025, 12, 1, tzinfo=timezone.utc)}),
    # never started, cancelled in the queue: its GPUs from ReqTRES, no start
    ({"Start": "Unknown", "State": "CANCELLED by 1000", "AllocTRES": "", "NodeList": "None assigned"},
     {"started": None, "state": "CANCELLED", "gpus": 2, "node_names": ""}),
    # what sacct really prints for it: Start = End = the cancel, yet no nodes and no allocation
    ({"Start": "1764547500", "End": "1764547500", "State": "CANCELLED by 0", "AllocTRES": "",
      "NodeList": "None assigned"}, {"started": None, "ended": datetime.fromtimestamp(1764547500, tz=timezone.utc)}),
    # still running at the capture: no end
    ({"End": "Unknown", "State": "RUNNING"}, {"ended": None, "state": "RUNNING"}),
    # an untyped count only (slurm.conf tracks gres/gpu without types)
    ({"AllocTRES": "cpu=2,gres/gpu=4,node=2", "NNodes": "2"}, {"gpu_type": "", "gpus": 4, "nodes": 2}),
    ({"AllocTRES": "cpu=2,mem=1G,node=1"}, {"gpus": 0}),
    ({"Timelimit": "UNLIMITED"}, {"time_limit_minutes": None}),
    ({"Timelimit": "Partition_Limit"}, {"time_limit_minutes": None}),
    ({"Timelimit": "2-12:00:00"}, {"time_limit_minutes": 3600}),
    ({"Timelimit": "1-06"}, {"time_limit_minutes": 1800}),
    ({"Timelimit": "30:30"}, {"time_limit_minutes": 31}),
    ({"Timelimit": "45"}, {"time_limit_minutes": 45}),
    ({"JobID": "77_3"}, {"job_id": "77_3"}),
])
def test_what_sacct_prints_reads(fields, expected):
    (job,) = parse_sacct(f"{HEADER}\n{_line(**fields)}\n", tz=SHANGHAI)
    assert {k: getattr(job, k) for k in expected} == expected


def test_a_header_in_another_order_with_extra_columns_and_no_header_both_read():
    names = SACCT_FORMAT.split(",")
    values = dict(zip(names, GOOD.split("|")))
    shuffled = ["JobName", *reversed(names)]
    text = "|".join(shuffled) + "\n" + "|".join("train" if n == "JobName" else values[n] for n in shuffled) + "\n"
    assert parse_sacct(text) == parse_sacct(f"{HEADER}\n{GOOD}\n")
    (bare,) = parse_sacct(GOOD + "\n")  # sacct -n: the fixed order
    assert (bare.line, bare.gpus) == (1, 2)
    assert parse_sacct(f"{HEADER}|\n{GOOD}|\n")[0].gpus == 2  # -p ends lines with a separator


@pytest.mark.parametrize("text, line, field, words", [
    ("JobID|Account|QOS\n", 1, "Partition", "missing from the header"),
    (f"{HEADER}\n{GOOD}\n41|ml|normal\n", 3, "line", "3 fields, expected 13"),
    (f"{HEADER}\n{GOOD}\n{GOOD}\n", 3, "JobID", "job 41 already on line 2"),
    (f"{HEADER}\n{_line(JobID='41.batch')}\n", 2, "JobID", "is a job step"),
    (f"{HEADER}\n{_line(JobID='')}\n", 2, "JobID", "empty"),
    (f"{HEADER}\n{_line(State='WAITING')}\n", 2, "State", "unknown state WAITING"),
    (f"{HEADER}\n{_line(Submit='Unknown')}\n", 2, "Submit", "needs its submit time"),
    (f"{HEADER}\n{_line(Start='yesterday')}\n", 2, "Start", "not a time: yesterday"),
    (f"{HEADER}\n{_line(End='1764547000')}\n", 2, "End", "before its start"),
    (f"{HEADER}\n{_line(NNodes='two')}\n", 2, "NNodes", "not a whole number"),
    (f"{HEADER}\n{_line(NNodes='0')}\n", 2, "NNodes", "at least 1"),
    (f"{HEADER}\n{_line(Timelimit='1:xx')}\n", 2, "Timelimit", "not a Slurm time"),
    (f"{HEADER}\n{_line(AllocTRES='cpu=2,gres/gpu:h100=two')}\n", 2, "AllocTRES", "needs a whole number"),
    (f"{HEADER}\n{_line(AllocTRES='cpu')}\n", 2, "AllocTRES", "is not name=value"),
    (f"{HEADER}\n{_line(AllocTRES='gres/gpu:h100=1,gres/gpu:a100=1')}\n", 2, "AllocTRES", "several types"),
    (f"{HEADER}\n{_line(Start='Unknown', AllocTRES='', ReqTRES='gres/gpu=x')}\n", 2, "ReqTRES", "whole number"),
])
def test_a_bad_line_names_its_line_and_field(text, line, field, words):
    with pytest.raises(SacctError) as raised:
        parse_sacct(text)
    assert (raised.value.line, raised.value.field) == (line, field)
    assert words in raised.value.message
    assert str(raised.value).startswith(f"Line {line}, field {field}: ")


def test_the_window_runs_from_the_first_submit_past_the_last_moment():
    jobs = parse_sacct(f"{HEADER}\n{GOOD}\n{_line(JobID='42', Submit='1764547100', End='Unknown', State='RUNNING')}\n")
    start, end = sacct_window(jobs)
    assert start == datetime.fromtimestamp(1764547100, tz=timezone.utc)
    assert end == datetime.fromtimestamp(1764550861, tz=timezone.utc)
    assert parse_sacct(f"{HEADER}\n") == [] and parse_sacct("") == []
