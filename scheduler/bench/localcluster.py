"""A private single-host Slurm from Debian's packages (munge, slurmctld, one `slurmd -N` per node) in a
folder of its own, for the tests and `make demo BACKEND=slurm`. Loopback only, fake GPUs through
`gres.conf` with empty device files, and accounting (slurmdbd on a private MariaDB, localaccounting.py) so
`sacct` and QOS work as on a real site, and slurmrestd on a unix socket beside it (the portal submits its
jobs there). Runs as root (slurmd must)."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from scheduler.bench.localaccounting import INSTALL_HINT, LocalAccounting

DAEMONS = ("munged", "slurmctld", "slurmd")


class LocalClusterError(RuntimeError):
    pass


@dataclass(frozen=True)
class LocalNode:
    name: str
    gres_type: str
    gpus: int
    cpus: int = 32
    memory_mb: int = 64000


DEFAULT_NODES = (
    LocalNode("n-h100-1", "h100", 2), LocalNode("n-h100-2", "h100", 2),
    LocalNode("n-a100-1", "a100", 4), LocalNode("n-a100-2", "a100", 4),
)


def _free_ports(count: int) -> list[int]:
    socks, ports = [], []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


@dataclass
class LocalCluster:
    root: Path
    nodes: tuple[LocalNode, ...] = DEFAULT_NODES
    partition: str = "gpu"
    cluster_name: str = "portaltest"
    accounting: bool = True
    # How often each job step's usage is sampled (and its --mem enforced without cgroups): every second for
    # the tests' out-of-memory job; the benchmarks' thousand sleeping jobs take Slurm's default, 30 s (a
    # thousand steps sampling every second kept a 2-core host at a load of 400).
    gather_seconds: int = 1
    # slurmrestd on a unix socket in the cluster's folder, named in settings() as the pool's rest_socket;
    # False for a cluster whose pools submit with sbatch.
    rest: bool = True
    pids: dict[str, int] = field(default_factory=dict)
    _accounting: LocalAccounting | None = field(default=None, repr=False)

    @property
    def acct(self) -> LocalAccounting:
        if self._accounting is None:
            self._accounting = LocalAccounting(self.root, self.env)
        return self._accounting

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        # A hand-run `sbatch` without --output writes slurm-<id>.out into its working directory, which
        # is the checkout when run from a test or the demo: it goes to this cluster's jobs folder instead.
        return {**os.environ, "SLURM_CONF": str(self.conf), "SBATCH_OUTPUT": str(self.root / "jobs" / "slurm-%j.out")}

    def settings(self) -> dict:
        """Connection settings for a pool governed by this cluster (scheduler.backends.slurm.config)."""
        return {"slurm_conf": str(self.conf), "partition": self.partition, "native_intake": True,
                "gres_models": {"h100": "H100-80G", "a100": "A100-40G"},
                **({"rest_socket": str(self.rest_socket)} if self.rest else {})}

    @property
    def rest_socket(self) -> Path:
        return self.root / "slurmrestd.sock"

    # --- set-up ---------------------------------------------------------------------------------------

    def check_installed(self) -> None:
        wanted = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", *(("slurmrestd",) if self.rest else ()))
        missing = [b for b in wanted if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]
        if missing:
            raise LocalClusterError(
                f"Slurm is not installed (missing {', '.join(missing)}): "
                "apt-get install -y slurmctld slurmd slurm-client slurmrestd munge")
        if os.geteuid() != 0:
            raise LocalClusterError("The local Slurm needs root: slurmd runs jobs as their users.")
        if self.accounting and self.acct.missing():
            raise LocalClusterError(f"Slurm accounting is not installed (missing {', '.join(self.acct.missing())}): "
                                    f"{INSTALL_HINT}")

    def write_config(self) -> None:
        for d in ("munge", "state", "spool", "log", "dev", "jobs"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        (self.root / "munge").chmod(0o700)
        key = self.root / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            key.chmod(0o600)
        host = socket.gethostname()
        ctl_port, self.acct.db_port, self.acct.dbd_port, *node_ports = _free_ports(3 + len(self.nodes))
        lines = [
            f"ClusterName={self.cluster_name}",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={ctl_port}",
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge",
            f"AuthInfo=socket={self.root}/munge/munge.sock",
            f"StateSaveLocation={self.root}/state",
            f"SlurmdSpoolDir={self.root}/spool/%n",
            f"SlurmctldPidFile={self.pid_file('slurmctld')}",
            f"SlurmdPidFile={self.pid_file('slurmd-%n')}",  # %n: Slurm puts the node's name
            f"SlurmctldLogFile={self.root}/log/slurmctld.log",
            f"SlurmdLogFile={self.root}/log/slurmd-%n.log",
            "SlurmctldDebug=info", "SlurmdDebug=info",
            # No cgroups in containers: track processes by parent id, no task containment.
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            *(self._accounting_lines() if self.accounting else
              ["JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none"]),
            "JobCompType=jobcomp/none", "MpiDefault=none", "SwitchType=switch/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory", "DefMemPerCPU=256",
            "GresTypes=gpu",
            # The node lines below describe fake hardware; slurmd takes them over what it detects.
            "SlurmdParameters=config_overrides",
            "ReturnToService=2", "JobRequeue=1", "MinJobAge=600", "KillWait=5", "InactiveLimit=0",
            "SlurmctldTimeout=10", "SlurmdTimeout=30", "MessageTimeout=10",
            "PreemptType=preempt/none", "SchedulerType=sched/backfill",
            # Slurm's quick pass at a submit stops at the first job it leaves pending in a partition; the jobs
            # after it ("Priority") wait for the main loop, every 60 s by default. Jobs the portal starts in
            # parallel often arrive so; a 2 s main loop starts them as a busy site's tuned controller would.
            "SchedulerParameters=sched_interval=2",
        ]
        for node, port in zip(self.nodes, node_ports):
            lines.append(f"NodeName={node.name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} "
                         f"CPUs={node.cpus} RealMemory={node.memory_mb} Gres=gpu:{node.gres_type}:{node.gpus} "
                         "State=UNKNOWN")
        lines.append(f"PartitionName={self.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n")
        gres = ["AutoDetect=off"]
        for node in self.nodes:
            files = []
            for i in range(node.gpus):
                dev = self.root / "dev" / f"{node.name}-gpu{i}"
                dev.touch()
                files.append(str(dev))
            gres += [f"NodeName={node.name} Name=gpu Type={node.gres_type} File={f}" for f in files]
        (self.root / "gres.conf").write_text("\n".join(gres) + "\n")
        if self.accounting:
            self.acct.write_config(slurmdbd_pid=self.pid_file("slurmdbd"))

    def _accounting_lines(self) -> list[str]:
        # No cgroups here, so memory is enforced the cgroup-less way: jobacct_gather/linux samples each step
        # every second and OverMemoryKill kills one that exceeds its --mem (Slurm records OUT_OF_MEMORY).
        # GPUs in accounting (sacct's AllocTRES/ReqTRES), by type, as a GPU site tracks them: what-if before
        # adoption reads a site's history from there (scheduler/whatif/sacct_parse.py).
        gpus = ",".join(["gres/gpu", *sorted({f"gres/gpu:{n.gres_type}" for n in self.nodes})])
        return [*self.acct.slurm_conf_lines(), "JobAcctGatherType=jobacct_gather/linux",
                f"JobAcctGatherFrequency=task={self.gather_seconds}", "JobAcctGatherParams=OverMemoryKill",
                f"AccountingStorageTRES={gpus}"]

    def _run(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout, check=True)
        except subprocess.CalledProcessError as exc:
            raise LocalClusterError(f"{' '.join(argv)} failed ({exc.returncode}): {exc.stderr.strip()}\n"
                                    f"{self.log_tail()}") from exc
        except subprocess.TimeoutExpired as exc:
            raise LocalClusterError(f"{' '.join(argv)} did not answer in {timeout}s") from exc

    def is_running(self) -> bool:
        """A cluster started earlier in this folder whose controller still answers (the demo restarts)."""
        try:
            pid = int(self.pid_file("slurmctld").read_text().strip())
            os.kill(pid, 0)
        except (FileNotFoundError, ValueError, ProcessLookupError):
            return False
        return self.conf.exists() and subprocess.run(["scontrol", "ping"], env=self.env, capture_output=True,
                                                     text=True, timeout=10).stdout.count("is UP") > 0

    def pid_file(self, daemon: str) -> Path:
        """Where a daemon of this cluster writes its pid: `munged`, `slurmctld` or `slurmd-<node>`; the
        one place that says so, for starting, finding and stopping them."""
        if daemon == "munged":
            return self.root / "munge" / "munged.pid"
        if daemon == "mariadbd":
            return self.root / "db" / "mariadbd.pid"
        return self.root / f"{daemon}.pid"

    def attach(self) -> "LocalCluster":
        """Take over the daemons a cluster started earlier in this folder wrote pid files for (the demo's
        cluster outlives the demo), so `stop` can end them."""
        for name in ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmrestd", *(f"slurmd-{n.name}" for n in self.nodes)):
            try:
                self.pids[name] = int(self.pid_file(name).read_text().strip())
            except (FileNotFoundError, ValueError):
                continue
        return self

    def start(self, timeout: float = 60) -> "LocalCluster":
        self.check_installed()
        self.write_config()
        m = self.root / "munge"
        self._run("munged", "--force", f"--key-file={m}/munge.key", f"--socket={m}/munge.sock",
                  f"--pid-file={self.pid_file('munged')}", f"--log-file={m}/munged.log", f"--seed-file={m}/munged.seed")
        self.pids["munged"] = self._wait_pid(self.pid_file("munged"))
        if self.accounting:
            self.start_accounting()
        self.start_controller()
        for node in self.nodes:
            self._run("slurmd", "-N", node.name)
            self.pids[f"slurmd-{node.name}"] = self._wait_pid(self.pid_file(f"slurmd-{node.name}"))
        if self.rest:
            self.start_rest()
        self.wait_idle(timeout)
        return self

    def start_rest(self) -> None:
        """slurmrestd on the cluster's unix socket, local authentication (the socket's peer is the user: no
        token), only the job API the portal uses, detached (`setsid -f`, as mariadbd) with a pid file of our
        own, since slurmrestd writes none. Slurm 22.05 refuses to run it as root unless told so."""
        self.rest_socket.unlink(missing_ok=True)
        env = {**self.env, "SLURMRESTD_SECURITY": "disable_user_check"}
        log = self.root / "log" / "slurmrestd.log"
        script = (f'echo $$ > {self.pid_file("slurmrestd")}; exec slurmrestd -a rest_auth/local -s openapi/v0.0.38 '
                  f'-t 4 unix:{self.rest_socket} >> {log} 2>&1')
        subprocess.run(["setsid", "-f", "sh", "-c", script], env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=True)
        self.pids["slurmrestd"] = self._wait_pid(self.pid_file("slurmrestd"))
        deadline = time.monotonic() + 15
        while not self.rest_socket.exists():
            if time.monotonic() > deadline:
                raise LocalClusterError(f"slurmrestd did not open {self.rest_socket} in 15s\n{self.log_tail()}")
            time.sleep(0.05)

    def start_accounting(self) -> None:
        """MariaDB, then slurmdbd on it, then this cluster registered, before slurmctld starts (it reports
        every job from its first one)."""
        try:
            self.acct.install_database()
            # mariadbd does not daemonize itself: `setsid -f` detaches it, so it is no child of this process
            # (a child would linger as a zombie after stop, and look alive to the next `is_running`).
            subprocess.run(["setsid", "-f", *self.acct.mariadb_argv()], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30, check=True)
            self.pids["mariadbd"] = self._wait_pid(self.pid_file("mariadbd"), timeout=30)
            deadline = time.monotonic() + 30
            while not self.acct.database_answers():
                if time.monotonic() > deadline:
                    raise LocalClusterError(f"MariaDB did not answer in 30s\n{self.log_tail()}")
                time.sleep(0.1)
            self._run("slurmdbd")
            self.pids["slurmdbd"] = self._wait_pid(self.pid_file("slurmdbd"))
            self.acct.wait_dbd()
        except (subprocess.CalledProcessError, TimeoutError) as exc:
            raise LocalClusterError(f"Slurm accounting did not start: {exc}\n{self.log_tail()}") from exc
        self.sacctmgr("add", "cluster", self.cluster_name, ok_exists=True)

    def sacctmgr(self, *argv: str, ok_exists: bool = False) -> str:
        """An accounting change as an admin makes it (`sacctmgr -i`); "already exists" is fine when asked."""
        done = self.acct.sacctmgr(*argv)
        text = done.stdout + done.stderr
        if done.returncode != 0 and not (ok_exists and ("already exists" in text or "Nothing new" in text)):
            raise LocalClusterError(f"sacctmgr {' '.join(argv)} failed ({done.returncode}): {text.strip()}")
        return done.stdout

    def add_accounts(self, *names: str, user: str = "root") -> None:
        """Slurm accounts (the tenants' slugs, as the portal's `--account=<tenant>`), with `user` in each."""
        self.sacctmgr("add", "account", ",".join(names), f"cluster={self.cluster_name}", ok_exists=True)
        self.sacctmgr("add", "user", user, f"account={','.join(names)}", f"cluster={self.cluster_name}", ok_exists=True)

    def add_qos(self, name: str, *, priority: int = 0, user: str = "root") -> None:
        """A QOS `user` may submit with (added to its associations), as a site defines `urgent` or `scavenger`."""
        self.sacctmgr("add", "qos", name, f"priority={priority}", ok_exists=True)
        self.sacctmgr("modify", "user", user, "set", f"qos+={name}", ok_exists=True)

    def start_controller(self, *, clear: bool = False) -> None:
        # -c: a fresh controller state the first time (or when asked: a controller that lost its state);
        # a restart otherwise keeps its jobs.
        first = clear or not (self.root / "state" / "job_state").exists()
        self._run("slurmctld", *(["-c"] if first else []), "-i")
        self.pids["slurmctld"] = self._wait_pid(self.pid_file("slurmctld"))

    def stop_controller(self) -> None:
        self._kill("slurmctld")

    def stop_node(self, name: str) -> None:
        """The node's slurmd dies (a node failure, as the controller sees it)."""
        self._kill(f"slurmd-{name}")

    def start_node(self, name: str) -> None:
        self._run("slurmd", "-N", name)
        self.pids[f"slurmd-{name}"] = self._wait_pid(self.pid_file(f"slurmd-{name}"))

    def wait_idle(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        want = {n.name for n in self.nodes}
        last = ""
        while time.monotonic() < deadline:
            out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=self.env, capture_output=True, text=True,
                                 timeout=10)
            last = out.stdout + out.stderr
            states = dict(line.split() for line in out.stdout.splitlines() if line.strip())
            if want <= {n for n, s in states.items() if s in ("idle", "mix", "alloc")}:
                return
            time.sleep(0.5)
        raise LocalClusterError(f"Slurm nodes not idle after {timeout}s: {last}\n{self.log_tail()}")

    def _wait_pid(self, pidfile: Path, timeout: float = 15) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                pid = int(pidfile.read_text().strip())
                os.kill(pid, 0)
                return pid
            except (FileNotFoundError, ValueError, ProcessLookupError):
                time.sleep(0.1)
        raise LocalClusterError(f"{pidfile.name} did not appear in {timeout}s\n{self.log_tail()}")

    def log_tail(self, lines: int = 15) -> str:
        out = []
        for log in sorted((self.root / "log").glob("*.log")):
            out.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(out)

    # --- tear-down --------------------------------------------------------------------------------------

    def _kill(self, *names: str, timeout: float = 15) -> None:
        """SIGTERM to each, then wait for all at once (each takes ~2 s to wind down), SIGKILL what is left."""
        pids = [pid for pid in (self.pids.pop(name, None) for name in names) if pid is not None]
        for pid in list(pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pids.remove(pid)
        deadline = time.monotonic() + timeout
        while pids and time.monotonic() < deadline:
            for pid in list(pids):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    pids.remove(pid)
            if pids:
                time.sleep(0.1)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _kill_steps(self) -> None:
        """The job steps of this cluster that outlived their slurmd (when the controller was too busy to cancel
        a thousand jobs in time, a benchmark left 465 of them sleeping): each `slurmstepd` whose environment
        names this cluster's slurm.conf, and every process under it (the job)."""
        mine = f"SLURM_CONF={self.conf}".encode()
        children: dict[int, list[int]] = {}
        steps = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                name, ppid = stat[stat.index("(") + 1:stat.rindex(")")], int(stat[stat.rindex(")") + 2:].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
                if name == "slurmstepd" and mine in (entry / "environ").read_bytes().split(b"\0"):
                    steps.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
        doomed, queue = [], list(steps)
        while queue:
            pid = queue.pop()
            doomed.append(pid)
            queue += children.get(pid, [])
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        # Jobs first, so no sleep outlives the cluster; then the nodes, the controller, munge.
        # A busy controller with a thousand jobs may not answer in time: the daemons are stopped all the same
        # (a timeout here once left 50 slurmd and their controller running after a benchmark).
        if "slurmctld" in self.pids:
            try:
                subprocess.run(["scancel", "--full", f"--partition={self.partition}"], env=self.env,
                               capture_output=True, timeout=10, check=False)
            except subprocess.TimeoutExpired:
                pass
        self._kill("slurmrestd")
        self._kill(*[n for n in self.pids if n.startswith("slurmd-")])
        self._kill("slurmctld")
        self._kill("slurmdbd")
        self._kill("mariadbd")
        self._kill("munged")
        self._kill_steps()  # after every daemon, which carry the same SLURM_CONF
        if self.accounting:
            self.acct.remove_data()  # ~40 MB per cluster; nothing in it outlives the cluster
