"""What a notice says. Builders take plain values and return the subject, a bilingual body and the
structured facts; nothing here can reach a job's command, arguments, environment or data paths."""
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import translation

from quotas.common import clock, times

# Keys that must never appear in a notice's facts, at any depth (docs/design.md section 10).
FORBIDDEN_KEYS = frozenset({
    "command", "cmd", "args", "arguments", "argv", "entrypoint", "script",
    "env", "environment", "env_vars", "environment_variables", "secrets",
    "data_path", "data_paths", "dataset", "datasets", "dataset_path", "dataset_paths", "volumes", "mounts",
    "prompt", "prompts", "request_body",
})
# The only job attributes a notice may copy; everything else on a job is left behind.
VICTIM_FIELDS = ("id", "name", "project", "pool", "gpu_model", "gpus", "replicas", "workload_class",
                 "priority_class", "checkpoint_interval_minutes")
CHECKPOINT_PATH = "/api/v1/jobs/{id}/checkpoint/"

FORBIDDEN_KEY_FOUND = "Notice facts must not carry {key!r}: notices never hold job commands, arguments, env or data paths."


class SensitiveContentError(ValueError):
    pass


def assert_no_forbidden_keys(facts: Any, *, path: str = "facts") -> None:
    """Raise SensitiveContentError when a forbidden key appears anywhere in the facts."""
    if isinstance(facts, Mapping):
        for key, value in facts.items():
            if str(key).lower() in FORBIDDEN_KEYS:
                raise SensitiveContentError(FORBIDDEN_KEY_FOUND.format(key=f"{path}.{key}"))
            assert_no_forbidden_keys(value, path=f"{path}.{key}")
    elif isinstance(facts, (list, tuple)):
        for index, value in enumerate(facts):
            assert_no_forbidden_keys(value, path=f"{path}[{index}]")


def _plain(value: Any) -> Any:
    """Related objects become their slug or name so a notice never holds a model instance."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    for attr in ("slug", "name"):
        if isinstance(getattr(value, attr, None), str):
            return getattr(value, attr)
    return str(value)


def victim_from_job(job: Mapping[str, Any] | Any) -> dict[str, Any]:
    """Copy the allowed attributes of a job (a model instance or a mapping) under builder argument names."""
    def read(field):
        return job.get(field) if isinstance(job, Mapping) else getattr(job, field, None)

    values = {field: _plain(read(field)) for field in VICTIM_FIELDS}
    return {
        "job_id": values["id"], "job_name": values["name"], "project": values["project"], "pool": values["pool"],
        "gpu_model": values["gpu_model"], "gpus": values["gpus"], "replicas": values["replicas"] or 1,
        "checkpoint_interval_minutes": values["checkpoint_interval_minutes"],
    }


@dataclass(frozen=True)
class NoticeContent:
    kind: str
    subject: str
    body: str
    facts: dict[str, Any]


def _when(value: datetime | None) -> str:
    if value is None:
        return "none reported / 未上报"
    return times.local_text(value)


def _iso(value: datetime | None) -> str | None:
    return times.iso_local(value)


def _facts(kind, *, job_id, job_name, project, pool, gpu_model, gpus, replicas, reason, reason_code, tenant_field,
           tenant_name, at, grace_deadline, gpu_hours_at_risk, last_checkpoint_at, checkpoint_interval_minutes,
           extra=None) -> dict[str, Any]:
    facts = {
        "kind": kind,
        "job": {"id": job_id, "name": job_name, "project": _plain(project), "pool": _plain(pool),
                "gpu_model": _plain(gpu_model), "gpus": gpus, "replicas": replicas or 1},
        "reason": reason,
        "reason_code": reason_code,
        tenant_field: _plain(tenant_name),
        "at": _iso(at),
        "grace_deadline": _iso(grace_deadline),
        "gpu_hours_at_risk": round(float(gpu_hours_at_risk or 0), 2),
        "last_checkpoint_at": _iso(last_checkpoint_at),
        "checkpoint_interval_minutes": checkpoint_interval_minutes,
        "checkpoint_report": {"method": "POST", "path": CHECKPOINT_PATH.format(id=job_id)},
        "next": "requeue",
        **(extra or {}),
    }
    assert_no_forbidden_keys(facts)
    return facts


def next_checkpoint_due(last_checkpoint_at: datetime | None, interval_minutes: int, now: datetime) -> datetime | None:
    """The first moment after ``now`` at which a job checkpointing every ``interval_minutes`` since its
    last reported checkpoint is due to save the next one (None without a reported checkpoint)."""
    if last_checkpoint_at is None or interval_minutes <= 0:
        return None
    step = clock.span(interval_minutes)  # the demo's clock runs checkpoints as fast as its jobs
    periods = max(int((now - last_checkpoint_at) / step) + 1, 1)
    return last_checkpoint_at + periods * step


def _both_languages(reason: str) -> str:
    """The reason as sent (English, its catalogue msgid) and in Chinese, like every other line of the notice;
    the notice is built in a worker or cycle, not in its reader's language."""
    with translation.override("zh-hans"):
        chinese = translation.gettext(reason)
    return reason if chinese == reason else f"{reason} / {chinese}"


def _body(facts: dict[str, Any], *, headline: str, by_line: str, at: datetime, grace_deadline: datetime,
          last_checkpoint_at: datetime | None) -> str:
    job = facts["job"]
    total = job["gpus"] * job["replicas"] if isinstance(job["gpus"], int) else job["gpus"]
    interval = facts["checkpoint_interval_minutes"]
    path = facts["checkpoint_report"]["path"]
    lines = [
        headline,
        "",
        f"Reason / 原因: {_both_languages(facts['reason'])}",
        by_line,
        f"Decided at / 决定时间: {_when(at)}",
        f"Grace deadline / 宽限截止: {_when(grace_deadline)}",
        f"Job / 任务: #{job['id']} {job['name']} · project / 项目 {job['project']} · pool / 资源池 {job['pool']} · "
        f"{job['gpus']} × {job['gpu_model']} × {job['replicas']} replica(s) = {total} GPUs",
        f"At risk / 影响: {facts['gpu_hours_at_risk']:.1f} GPU-hours since the last checkpoint / 自上次检查点以来的 GPU 时",
        f"Last checkpoint / 最近检查点: {_when(last_checkpoint_at)}",
        "",
        "What to do / 建议操作:",
        "- Save a checkpoint before the deadline and report it with "
        f"POST {path} — the GPUs are then released early and no further work is lost.",
        f"- 请在截止时间前保存检查点，并调用 POST {path} 上报；上报后 GPU 提前释放，不会再损失进度。",
    ]
    if interval:
        lines.append(f"- Your job checkpoints every {interval} minutes / 任务检查点间隔: {interval} 分钟.")
        due = next_checkpoint_due(last_checkpoint_at, interval, at)
        if due is not None and due > grace_deadline:
            lines.append(f"- Next checkpoint due {_when(due)}, after the deadline: save one now / "
                         f"下次检查点应在 {_when(due)}，晚于截止时间：请立即保存。")
        elif due is not None:
            lines.append(f"- Next checkpoint due {_when(due)}, before the deadline / "
                         f"下次检查点应在 {_when(due)}，早于截止时间。")
    lines += [
        "",
        "What happens next / 后续:",
        "- At the deadline the job is stopped and requeued automatically; it resumes from its last checkpoint "
        "when capacity is free. Nothing needs to be resubmitted.",
        "- 截止时任务将被停止并自动重新排队，资源空闲后从最近的检查点恢复，无需重新提交。",
    ]
    return "\n".join(lines)


def preemption_notice(*, job_id: int, job_name: str, project, pool, gpu_model, gpus: int, replicas: int = 1,
                      reason: str, reason_code: str = "", preempting_tenant: str, at: datetime,
                      grace_deadline: datetime, gpu_hours_at_risk: float, last_checkpoint_at: datetime | None = None,
                      checkpoint_interval_minutes: int | None = None) -> NoticeContent:
    """Your job will be preempted by a job of ``preempting_tenant`` (a tenant name, never a job name)."""
    facts = _facts("preemption", job_id=job_id, job_name=job_name, project=project, pool=pool, gpu_model=gpu_model,
                   gpus=gpus, replicas=replicas, reason=reason, reason_code=reason_code,
                   tenant_field="preempting_tenant", tenant_name=preempting_tenant, at=at,
                   grace_deadline=grace_deadline, gpu_hours_at_risk=gpu_hours_at_risk,
                   last_checkpoint_at=last_checkpoint_at, checkpoint_interval_minutes=checkpoint_interval_minutes)
    deadline = _when(grace_deadline)
    subject = f"[GPU portal] Job #{job_id} {job_name} will be preempted at {deadline} / 任务将被抢占"
    body = _body(facts, headline=f"Your job #{job_id} {job_name} will be preempted at {deadline}.\n"
                                 f"您的任务 #{job_id} {job_name} 将于 {deadline} 被抢占。",
                 by_line=f"Preempting tenant / 抢占方租户: {facts['preempting_tenant']}", at=at,
                 grace_deadline=grace_deadline, last_checkpoint_at=last_checkpoint_at)
    return NoticeContent(kind="preemption", subject=subject[:200], body=body, facts=facts)


def reclaim_notice(*, job_id: int, job_name: str, project, pool, gpu_model, gpus: int, replicas: int = 1,
                   reason: str, reason_code: str = "", reclaiming_tenant: str, at: datetime,
                   grace_deadline: datetime, gpu_hours_at_risk: float, last_checkpoint_at: datetime | None = None,
                   checkpoint_interval_minutes: int | None = None, lease_id: int | None = None) -> NoticeContent:
    """Your job runs on borrowed capacity that ``reclaiming_tenant`` (the lender) now takes back."""
    facts = _facts("reclaim", job_id=job_id, job_name=job_name, project=project, pool=pool, gpu_model=gpu_model,
                   gpus=gpus, replicas=replicas, reason=reason, reason_code=reason_code,
                   tenant_field="reclaiming_tenant", tenant_name=reclaiming_tenant, at=at,
                   grace_deadline=grace_deadline, gpu_hours_at_risk=gpu_hours_at_risk,
                   last_checkpoint_at=last_checkpoint_at, checkpoint_interval_minutes=checkpoint_interval_minutes,
                   extra={"lease_id": lease_id})
    deadline = _when(grace_deadline)
    subject = f"[GPU portal] Borrowed GPUs of job #{job_id} {job_name} are reclaimed at {deadline} / 借用资源回收"
    body = _body(facts, headline=f"Your job #{job_id} {job_name} runs on borrowed GPUs that are reclaimed at {deadline}.\n"
                                 f"您的任务 #{job_id} {job_name} 使用的借用资源将于 {deadline} 被回收。",
                 by_line=f"Reclaiming tenant (lender) / 回收方租户（出借方）: {facts['reclaiming_tenant']}"
                         + (f" · lease / 借用单 #{lease_id}" if lease_id else ""),
                 at=at, grace_deadline=grace_deadline, last_checkpoint_at=last_checkpoint_at)
    return NoticeContent(kind="reclaim", subject=subject[:200], body=body, facts=facts)


def stop_withdrawn_notice(*, job_id: int, job_name: str, project, pool, gpu_model, gpus: int, replicas: int = 1,
                          reason: str, reason_code: str = "", by_tenant: str, at: datetime,
                          grace_deadline: datetime, gpu_hours_at_risk: float, reclaim: bool = False,
                          lease_id: int | None = None, last_checkpoint_at: datetime | None = None,
                          checkpoint_interval_minutes: int | None = None) -> NoticeContent:
    """The stop (a preemption, or with ``reclaim`` the reclaim of the job's lease) announced for
    ``grace_deadline`` is called off: the job it was for no longer needs these GPUs (``reason`` says why),
    so the victim runs on and has nothing to do."""
    tenant_field = "reclaiming_tenant" if reclaim else "preempting_tenant"
    facts = _facts("preemption_withdrawn", job_id=job_id, job_name=job_name, project=project, pool=pool,
                   gpu_model=gpu_model, gpus=gpus, replicas=replicas, reason=reason, reason_code=reason_code,
                   tenant_field=tenant_field, tenant_name=by_tenant, at=at,
                   grace_deadline=grace_deadline, gpu_hours_at_risk=gpu_hours_at_risk,
                   last_checkpoint_at=last_checkpoint_at, checkpoint_interval_minutes=checkpoint_interval_minutes,
                   extra={"next": "keeps_running", "withdrawn": "reclaim" if reclaim else "preemption",
                          **({"lease_id": lease_id} if reclaim else {})})
    deadline = _when(grace_deadline)
    if reclaim:
        subject = (f"[GPU portal] Borrowed GPUs of job #{job_id} {job_name} are not reclaimed: the reclaim is "
                   f"withdrawn / 借用资源回收已撤销")
        headline = [f"The reclaim of the borrowed GPUs of your job #{job_id} {job_name} planned for {deadline} is "
                    f"withdrawn; the job keeps running on its lease" + (f" #{lease_id}" if lease_id else "") + ".",
                    f"您的任务 #{job_id} {job_name} 借用资源原定于 {deadline} 的回收已撤销，任务继续在借用资源上运行。"]
        by_line = f"Reclaiming tenant (lender) / 回收方租户（出借方）: {facts['reclaiming_tenant']}"
    else:
        subject = f"[GPU portal] Job #{job_id} {job_name} will not be preempted: the stop is withdrawn / 抢占已撤销"
        headline = [f"The stop of your job #{job_id} {job_name} planned for {deadline} is withdrawn; the job keeps "
                    f"running.", f"您的任务 #{job_id} {job_name} 原定于 {deadline} 的停止已撤销，任务继续运行。"]
        by_line = f"Preempting tenant / 抢占方租户: {facts['preempting_tenant']}"
    body = "\n".join([
        *headline,
        "",
        f"Why / 原因: {_both_languages(reason)}",
        by_line,
        f"Withdrawn at / 撤销时间: {_when(at)}",
        "",
        "What to do / 建议操作:",
        "- Nothing: the job was not stopped and loses no work. A checkpoint you saved for the stop stays valid.",
        "- 无需操作：任务未被停止，没有损失进度；为这次停止保存的检查点仍然有效。",
    ])
    return NoticeContent(kind="preemption_withdrawn", subject=subject[:200], body=body, facts=facts)
