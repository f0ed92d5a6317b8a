r"""A Slurm site's own job history, as `sacct` prints it, into plain rows (what-if before adoption, issue 41).

The fixed field list (SACCT_FORMAT) and how to capture it:

    SLURM_TIME_FORMAT=%s sacct -a -P -X -S <from> -E <to> \
        --format=JobID,Account,QOS,Partition,Submit,Start,End,State,Timelimit,NNodes,NodeList,AllocTRES,ReqTRES

- `-P`: fields separated by "|"; `-X`: one line per job (its allocation), not per step; `-a`: every user.
- The first line may be sacct's header (the default) naming the fields; with it the columns may come in any
  order and extra columns are ignored. Without a header (`-n`) the columns are taken in SACCT_FORMAT's order.
- Times: epoch seconds (SLURM_TIME_FORMAT=%s, unambiguous) or sacct's ISO local time `2026-11-03T08:00:00`,
  read in the time zone the caller gives (the portal's TIME_ZONE). `Unknown`/`None`/empty: not known.
- GPUs come from AllocTRES (what the job got; ReqTRES when it never started): `gres/gpu:h100=2` gives the
  type and count, a bare `gres/gpu=2` the count only. Slurm records them only when slurm.conf tracks them:
  `AccountingStorageTRES=gres/gpu,gres/gpu:<type>,...`.
- A job cancelled while it waited reads as never started: sacct gives it Start = End = the cancel, but no
  nodes and no allocation. `sacct -S` leaves out jobs that never became eligible (held until cancelled).

A bad line raises SacctError with its line number, the field at fault and what is wrong, in the reader's
language (the texts are made when raised, in the active language). No database, no settings read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo

from django.utils.translation import gettext as _, gettext_lazy

SACCT_FIELDS = ("JobID", "Account", "QOS", "Partition", "Submit", "Start", "End", "State", "Timelimit", "NNodes",
                "NodeList", "AllocTRES", "ReqTRES")
SACCT_FORMAT = ",".join(SACCT_FIELDS)
SACCT_ARGS = ("-a", "-P", "-X", f"--format={SACCT_FORMAT}")
UNKNOWN_TIMES = ("", "unknown", "none", "n/a")
UNLIMITED = ("unlimited", "partition_limit", "infinite", "")
# sacct's base states (JOB STATE CODES); `CANCELLED by 1000` carries the canceller after the state.
STATES = frozenset((
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
    "PENDING", "PREEMPTED", "RUNNING", "REQUEUED", "RESIZING", "REVOKED", "SUSPENDED", "TIMEOUT", "REQUEUE_HOLD",
    "REQUEUE_FED", "SPECIAL_EXIT", "STOPPED", "SIGNALING", "STAGE_OUT", "CONFIGURING", "RESV_DEL_HOLD"))
_TIMELIMIT = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


WHERE = gettext_lazy("Line {line}, field {field}: {message}")


class SacctError(ValueError):
    """A line sacct would not have printed: where (1-based line, field) and what."""

    def __init__(self, line: int, field: str, message: str):
        self.line, self.field, self.message = line, field, message
        super().__init__(str(WHERE).format(line=line, field=field, message=message))


@dataclass(frozen=True, slots=True)
class SacctJob:
    line: int
    job_id: str
    account: str
    qos: str
    partition: str
    state: str  # the base state, e.g. CANCELLED for `CANCELLED by 0`
    submitted: datetime
    started: datetime | None
    ended: datetime | None
    time_limit_minutes: int | None  # None: unlimited (or the partition's limit)
    nodes: int
    node_names: str  # sacct's host list, e.g. `n-h100-[1-2]`; `None assigned` reads as ""
    gpu_type: str  # "" when only the untyped count is known
    gpus: int  # over all its nodes


def parse_sacct(text: str, *, tz: tzinfo = timezone.utc) -> list[SacctJob]:
    lines = text.splitlines()
    columns, first = list(SACCT_FIELDS), 0
    while first < len(lines) and not lines[first].strip():
        first += 1
    if first < len(lines) and "jobid" in (c.strip().lower() for c in lines[first].split("|")):
        columns = [c.strip() for c in lines[first].split("|")]
        if columns[-1] == "":  # `-p` ends every line with a separator
            columns.pop()
        known = {c.lower() for c in columns}
        for name in SACCT_FIELDS:
            if name.lower() not in known:
                raise SacctError(first + 1, name, _("missing from the header (capture with the fixed --format list)"))
        first += 1
    index = {c.lower(): k for k, c in enumerate(columns)}
    jobs, seen = [], {}
    for number, raw in enumerate(lines[first:], start=first + 1):
        if not raw.strip():
            continue
        values = raw.split("|")
        if len(values) == len(columns) + 1 and values[-1] == "":  # `-p` ends every line with a separator
            values.pop()
        if len(values) != len(columns):
            raise SacctError(number, "line", _("{count} fields, expected {expected} separated by '|' (sacct -P)")
                             .format(count=len(values), expected=len(columns)))
        job = _row(number, {name: values[index[name.lower()]].strip() for name in SACCT_FIELDS}, tz)
        if job.job_id in seen:
            raise SacctError(number, "JobID", _("job {job} already on line {first} (use -X and leave out -D)").format(
                job=job.job_id, first=seen[job.job_id]))
        seen[job.job_id] = number
        jobs.append(job)
    return jobs


def _row(number: int, f: dict[str, str], tz: tzinfo) -> SacctJob:
    if not f["JobID"]:
        raise SacctError(number, "JobID", _("empty"))
    if "." in f["JobID"]:
        raise SacctError(number, "JobID", _("{value} is a job step (use -X)").format(value=f["JobID"]))
    state = f["State"].split(" ")[0].upper()
    if state not in STATES:
        raise SacctError(number, "State", _("unknown state {value}").format(value=f["State"]))
    submitted = _time(number, "Submit", f["Submit"], tz)
    if submitted is None:
        raise SacctError(number, "Submit", _("a job needs its submit time"))
    node_names = "" if f["NodeList"].lower().startswith("none") else f["NodeList"]
    # A job cancelled while it waited has Start = End = the cancel in sacct, but no nodes and no allocation.
    never_ran = not node_names and not f["AllocTRES"]
    started = None if never_ran else _time(number, "Start", f["Start"], tz)
    ended = _time(number, "End", f["End"], tz)
    if started is not None and ended is not None and ended < started:
        raise SacctError(number, "End", _("{value} is before its start {start}").format(value=f["End"],
                                                                                        start=f["Start"]))
    try:
        nodes = int(f["NNodes"])
    except ValueError:
        raise SacctError(number, "NNodes", _("not a whole number: {value}").format(value=f["NNodes"])) from None
    if nodes < 1:
        raise SacctError(number, "NNodes", _("at least 1, not {value}").format(value=nodes))
    gpu_type, gpus = _gpus(number, "AllocTRES", f["AllocTRES"])
    if not gpus and not started:
        gpu_type, gpus = _gpus(number, "ReqTRES", f["ReqTRES"])
    return SacctJob(line=number, job_id=f["JobID"], account=f["Account"], qos=f["QOS"], partition=f["Partition"],
                    state=state, submitted=submitted, started=started, ended=ended,
                    time_limit_minutes=_timelimit(number, f["Timelimit"]), nodes=nodes, node_names=node_names,
                    gpu_type=gpu_type, gpus=gpus)


def _time(number: int, field: str, text: str, tz: tzinfo) -> datetime | None:
    if text.lower() in UNKNOWN_TIMES:
        return None
    if text.isdigit():
        return datetime.fromtimestamp(int(text), tz=timezone.utc) if int(text) > 0 else None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SacctError(number, field, _("not a time: {value} (epoch seconds or 2026-11-03T08:00:00)")
                         .format(value=text)) from None
    return moment.replace(tzinfo=tz) if moment.tzinfo is None else moment


def _timelimit(number: int, text: str) -> int | None:
    """Slurm's time format: minutes, min:sec, h:min:sec, days-h, days-h:min, days-h:min:sec."""
    if text.lower() in UNLIMITED:
        return None
    m = _TIMELIMIT.match(text)
    if not m:
        raise SacctError(number, "Timelimit", _("not a Slurm time: {value}").format(value=text))
    days, a, b, c = m.groups()
    if days is not None:  # days-hours[:minutes[:seconds]]
        seconds = int(days) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)
    elif c is not None:  # hours:minutes:seconds
        seconds = int(a) * 3600 + int(b) * 60 + int(c)
    elif b is not None:  # minutes:seconds
        seconds = int(a) * 60 + int(b)
    else:
        seconds = int(a) * 60
    return max(-(-seconds // 60), 1)


def _gpus(number: int, field: str, text: str) -> tuple[str, int]:
    """`billing=2,cpu=2,gres/gpu:h100=2,gres/gpu=2,mem=1G,node=1` -> ("h100", 2)."""
    typed, untyped = {}, 0
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise SacctError(number, field, _("{value} is not name=value").format(value=item))
        if not key.startswith("gres/gpu"):
            continue
        if not value.isdigit():
            raise SacctError(number, field, _("{key} needs a whole number, not {value}").format(key=key, value=value))
        kind = key[len("gres/gpu"):]
        if kind == "":
            untyped = int(value)
        elif kind.startswith(":"):
            typed[kind[1:]] = typed.get(kind[1:], 0) + int(value)
    if len(typed) > 1:
        raise SacctError(number, field, _("GPUs of several types ({value}): one model per job").format(
            value=", ".join(sorted(typed))))
    if typed:
        (kind, count), = typed.items()
        return kind, count
    return "", untyped


def sacct_window(jobs: list[SacctJob]) -> tuple[datetime, datetime]:
    """The window a history covers: its first submit to its last recorded moment (at least a minute)."""
    start = min(j.submitted for j in jobs)
    last = max(max(filter(None, (j.submitted, j.started, j.ended))) for j in jobs)
    return start, max(last + timedelta(seconds=1), start + timedelta(minutes=1))
