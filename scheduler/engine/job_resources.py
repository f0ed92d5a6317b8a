"""What one replica of a job asks beyond GPUs, as the engine counts it: the job's own CPU cores and memory
(stored for the whole job, split over its replicas as `sbatch` splits them), or else the pool's per-GPU
defaults (as Slurm's DefCpuPerGPU and DefMemPerGPU). The one place the cycle, the pages, the what-if and
the usage records work it out; in the engine (pure arithmetic) so every layer above may ask it."""
from math import ceil


def per_replica(*, default_cpus_per_gpu: int, default_memory_gb_per_gpu: int, gpus: int, replicas: int,
                cpu: int, memory_gb: int) -> tuple[int, int]:
    """(CPU cores, GB memory) per replica; 0 where neither the job nor the pool says."""
    replicas = max(replicas, 1)
    cpus = ceil(cpu / replicas) if cpu else default_cpus_per_gpu * gpus
    memory = ceil(memory_gb / replicas) if memory_gb else default_memory_gb_per_gpu * gpus
    return cpus, memory


def quota_limit(value: int) -> int | None:
    """A quota dimension beyond GPUs as the engine takes it: a stored 0 is a dimension left empty (every
    quota row before dimensions were enforced holds 0 there), so unlimited; a number is enforced."""
    return value or None
