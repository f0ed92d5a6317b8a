"""Slurm's machine-readable output into plain values: host lists, wait statuses, job and node states."""
import re
from datetime import datetime, timezone

from scheduler.backends import base as B

# squeue job_state -> the portal's run outcome (squeue(1) JOB STATE CODES).
JOB_STATES = {
    "PENDING": B.RUN_PENDING, "CONFIGURING": B.RUN_PENDING, "REQUEUE_HOLD": B.RUN_PENDING,
    "REQUEUE_FED": B.RUN_PENDING, "RESV_DEL_HOLD": B.RUN_PENDING,
    "SUSPENDED": B.RUN_PENDING,  # off its GPUs until resumed: mirrored as not running
    "RUNNING": B.RUN_RUNNING, "COMPLETING": B.RUN_RUNNING, "SIGNALING": B.RUN_RUNNING, "STAGE_OUT": B.RUN_RUNNING,
    "RESIZING": B.RUN_RUNNING,
    "COMPLETED": B.RUN_SUCCEEDED,
    "FAILED": B.RUN_FAILED, "TIMEOUT": B.RUN_FAILED, "OUT_OF_MEMORY": B.RUN_FAILED, "BOOT_FAIL": B.RUN_FAILED,
    "DEADLINE": B.RUN_FAILED, "SPECIAL_EXIT": B.RUN_FAILED,
    "CANCELLED": B.RUN_CANCELLED, "REVOKED": B.RUN_CANCELLED,
    "NODE_FAIL": B.RUN_REQUEUED, "PREEMPTED": B.RUN_REQUEUED, "REQUEUED": B.RUN_REQUEUED,
}
# Node states and flags that take a node out of scheduling (sinfo --json "state"/"state_flags").
MAINTENANCE_STATES = {"down", "future", "unknown", "error"}
MAINTENANCE_FLAGS = {"DRAIN", "DRAINING", "DRAINED", "MAINT", "FAIL", "POWERED_DOWN", "POWER_DOWN", "REBOOT_REQUESTED"}
_RANGE = re.compile(r"^(.*?)\[([^\]]+)\](.*)$")


def expand_hostlist(text: str) -> list[str]:
    """`n-a100-[1-2],n-h100-1` -> ["n-a100-1", "n-a100-2", "n-h100-1"] (one bracket group per name)."""
    names, depth, part = [], 0, ""
    for ch in (text or "") + ",":
        if ch == "," and depth == 0:
            if part:
                names += _expand_one(part)
            part = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        part += ch
    return names


def _expand_one(name: str) -> list[str]:
    m = _RANGE.match(name)
    if not m:
        return [name]
    head, body, tail = m.groups()
    out = []
    for piece in body.split(","):
        lo, _, hi = piece.partition("-")
        if hi:
            out += [f"{head}{i:0{len(lo)}d}{tail}" for i in range(int(lo), int(hi) + 1)]
        else:
            out.append(f"{head}{lo}{tail}")
    return [n for o in out for n in _expand_one(o)]


_MEM_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def memory_mb(text: str) -> float | None:
    """sacct's MaxRSS or ReqMem (`100284K`, `50M`, `4G`, older `4000Mn`/`Mc`) in MiB; None when empty."""
    text = (text or "").strip().rstrip("nc")
    if not text:
        return None
    unit = text[-1].upper()
    try:
        return float(text[:-1]) * _MEM_UNITS[unit] if unit in _MEM_UNITS else float(text) / (1024 * 1024)
    except ValueError:
        return None


def memory_kills(sacct_out: str) -> set[str]:
    """Job ids whose accounting (`sacct -n -P -j ... -o JobID,State,MaxRSS,ReqMem`, steps included) shows
    they ran out of memory: a step Slurm recorded OUT_OF_MEMORY (cgroup sites), or a step whose peak RSS
    reached the memory the job asked for (jobacct_gather's OverMemoryKill, which records the job FAILED
    with signal 9)."""
    asked: dict[str, float] = {}
    peaks: dict[str, float] = {}
    found = set()
    for line in sacct_out.splitlines():
        fields = line.split("|")
        if len(fields) < 4:
            continue
        job_id = fields[0].split(".")[0]
        if fields[1].split()[0:1] == ["OUT_OF_MEMORY"]:
            found.add(job_id)
        if "." not in fields[0] and memory_mb(fields[3]):
            asked[job_id] = memory_mb(fields[3])
        rss = memory_mb(fields[2])
        if rss:
            peaks[job_id] = max(peaks.get(job_id, 0.0), rss)
    return found | {j for j, peak in peaks.items() if j in asked and peak >= asked[j]}


def sacct_exit_code(text: str) -> int | None:
    """sacct's ExitCode `code:signal` as a shell would tell it (128 + signal when killed)."""
    code, _, signal = (text or "").partition(":")
    if signal.isdigit() and int(signal):
        return 128 + int(signal)
    return int(code) if code.isdigit() else None


def exit_code(status: int | None) -> int | None:
    """squeue's exit_code is a wait status: high byte the exit code, low bits the killing signal."""
    if status is None:
        return None
    signal = status & 0x7F
    return 128 + signal if signal else (status >> 8) & 0xFF


def when(epoch) -> datetime | None:
    return datetime.fromtimestamp(epoch, tz=timezone.utc) if isinstance(epoch, (int, float)) and epoch > 0 else None


def gres_gpus(text: str) -> tuple[str, int]:
    """`gpu:h100:2` (or `gpu:h100:2(S:0)`, `gres:gpu:a100:1`) -> ("h100", 2); ("", 0) without GPUs."""
    for item in (text or "").split(","):
        parts = item.split("(")[0].split(":")
        if parts and parts[0] == "gres":
            parts = parts[1:]
        if parts and parts[0] == "gpu":
            if len(parts) == 3:
                return parts[1], int(parts[2])
            if len(parts) == 2 and parts[1].isdigit():
                return "", int(parts[1])
    return "", 0


def job_report(job: dict) -> B.RunReport:
    state = str(job.get("job_state") or "")
    outcome = JOB_STATES.get(state, B.RUN_PENDING)
    reason = str(job.get("state_reason") or "")
    if reason == "None":
        reason = ""
    if state in ("TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "PREEMPTED", "CANCELLED"):
        reason = reason or state
    ended = outcome not in (B.RUN_PENDING, B.RUN_RUNNING)
    return B.RunReport(
        outcome=outcome, external_id=str(job.get("job_id", "")),
        nodes=tuple(expand_hostlist(str(job.get("nodes") or ""))), backend_state=state, reason=reason,
        exit_code=exit_code(job.get("exit_code")) if ended else None, submitted_at=when(job.get("submit_time")),
        started_at=when(job.get("start_time")) if outcome != B.RUN_PENDING else None,
        ended_at=when(job.get("end_time")) if ended else None)


def node_maintenance(node: dict) -> tuple[bool, str]:
    state = str(node.get("state") or "").lower()
    flags = {str(f).upper() for f in node.get("state_flags") or []}
    out = state in MAINTENANCE_STATES or bool(flags & MAINTENANCE_FLAGS)
    reason = str(node.get("reason") or "").strip()
    if out and not reason:
        reason = "+".join([state.upper(), *sorted(flags & MAINTENANCE_FLAGS)])
    return out, reason


def reservations(text: str) -> list[dict[str, str]]:
    """`scontrol show reservation -o`: one reservation per line of Key=Value words."""
    rows = []
    for line in text.splitlines():
        if "ReservationName=" not in line:
            continue
        rows.append(dict(word.split("=", 1) for word in line.split() if "=" in word))
    return rows


# The poll's listing (`squeue -h --states=all -O ...`): what job_report and the twin check read, each field
# followed by `|` and the job's name, free text, last and whole (size 0: never cut). `squeue --json` took 1-7 s
# for ~900 jobs on a loaded host (3.6 MB that squeue serialises and the tick parses); these fields 0.3-2 s.
LISTING_FIELDS = ("JobID", "Partition", "State", "exit_code", "SubmitTime", "StartTime", "EndTime", "NodeList",
                  "Reason")
LISTING_FORMAT = ",".join([f"{field}:|" for field in LISTING_FIELDS] + ["Name:"])


def listing_rows(text: str) -> list[dict]:
    """The listing's lines as the dicts `squeue --json` gives (the keys job_report and the poll read): Slurm's
    local times as epochs, its exit code the same wait status."""
    rows = []
    for line in text.splitlines():
        fields = line.split("|", len(LISTING_FIELDS))
        if len(fields) != len(LISTING_FIELDS) + 1 or not fields[0].strip().isdigit():
            continue
        *fixed, name = fields  # the name as Slurm has it (not padded: size 0)
        job_id, partition, state, code, submit, start, end, nodes, reason = (f.strip() for f in fixed)
        rows.append({"job_id": int(job_id), "partition": partition, "job_state": state,
                     "exit_code": int(code) if code.lstrip("-").isdigit() else None,
                     "submit_time": _epoch(submit), "start_time": _epoch(start), "end_time": _epoch(end),
                     "nodes": "" if nodes in ("", "(null)") else nodes, "state_reason": reason, "name": name})
    return rows


def described(job: dict | None) -> bool:
    """Whether the listing's reason is Slurm's description of it, not its code: squeue prints a job's
    description where it has one ("ReqNodeNotAvail, UnavailableNodes:n1", "job requeued in held state"),
    where --json gives the code (state_reason) and the description apart."""
    reason = str((job or {}).get("state_reason") or "")
    return bool(reason) and not _REASON_CODE.fullmatch(reason)


_REASON_CODE = re.compile(r"[A-Za-z0-9_]+")


def _epoch(text: str) -> int:
    """squeue's `2026-12-07T16:47:43` (the local time of this process: the CLI passes TZ on) as an epoch;
    0, as --json says it, for "N/A", "Unknown" or "None"."""
    try:
        return int(datetime.fromisoformat(text).timestamp()) if text[:1].isdigit() else 0
    except ValueError:
        return 0
