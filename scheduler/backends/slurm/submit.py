"""What a portal job's start asks of Slurm, said once (`Submission`), and its two renderings: `sbatch`
arguments, and the body of slurmrestd's POST /slurm/v0.0.38/job/submit. Both paths read the same
submission, so a job submitted either way is the same job in `scontrol show job`."""
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Submission:
    partition: str
    name: str
    comment: str
    nodelist: tuple[str, ...]
    replicas: int  # nodes = tasks, one task per node
    gres: str  # "gpu:<type>:<count>" per node
    time_minutes: int
    working_dir: str
    output: str
    error: str
    account: str  # "" for none
    cpus_per_task: int  # 0 for Slurm's default
    memory_gb_per_node: int  # 0 for Slurm's default
    env: dict[str, str]  # the job's whole environment (Slurm adds its own SLURM_* variables)
    script: str

    def sbatch_args(self) -> list[str]:
        """`sbatch` reads the script on stdin and takes the environment from its own (--export=ALL)."""
        args = ["--parsable", f"--partition={self.partition}", f"--job-name={self.name}", f"--comment={self.comment}",
                f"--nodelist={','.join(self.nodelist)}", f"--nodes={self.replicas}", f"--ntasks={self.replicas}",
                "--ntasks-per-node=1", f"--gres={self.gres}", f"--time={self.time_minutes}", "--requeue",
                f"--chdir={self.working_dir}", "--export=ALL", f"--output={self.output}", f"--error={self.error}"]
        if self.account:
            args.append(f"--account={self.account}")
        if self.cpus_per_task:
            args.append(f"--cpus-per-task={self.cpus_per_task}")
        if self.memory_gb_per_node:
            args.append(f"--mem={self.memory_gb_per_node}G")
        return args

    def rest_body(self) -> dict:
        """slurmrestd 22.05 (v0.0.38) parses these keys as sbatch's options of the same name; the environment
        is the job's whole environment (nothing is inherited from slurmrestd's own)."""
        job = {"partition": self.partition, "name": self.name, "comment": self.comment,
               "nodelist": ",".join(self.nodelist), "nodes": str(self.replicas), "ntasks": self.replicas,
               "ntasks_per_node": 1, "gres": self.gres, "time_limit": self.time_minutes, "requeue": True,
               "current_working_directory": self.working_dir, "standard_output": self.output,
               "standard_error": self.error, "environment": dict(self.env)}
        if self.account:
            job["account"] = self.account
        if self.cpus_per_task:
            job["cpus_per_task"] = self.cpus_per_task
        if self.memory_gb_per_node:
            job["memory_per_node"] = self.memory_gb_per_node * 1024  # MB, as --mem=<n>G
        return {"script": self.script, "job": job}


def per_replica(total: int | float, replicas: int) -> int:
    """A job's CPUs or memory split over its replicas (one per node), rounded up."""
    return math.ceil(total / replicas) if total else 0
