"""Accounting for the private local Slurm: slurmdbd backed by a MariaDB of its own (Debian's `mariadb-server`
and `slurmdbd`), in the cluster's folder, on free loopback ports. The machine may run a MariaDB at 3306; this
never uses it, so the tests and CI depend on nothing but the packages. Runs as root, like the rest."""
from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BINARIES = ("mariadb-install-db", "mariadbd", "mariadb-admin", "slurmdbd", "sacctmgr", "sacct")
INSTALL_HINT = "apt-get install -y mariadb-server slurmdbd"


@dataclass
class LocalAccounting:
    root: Path  # the cluster's folder; the database lives in root/db
    env: dict[str, str]
    db_port: int = 0
    dbd_port: int = 0
    password: str = field(default_factory=lambda: secrets.token_hex(12))

    @property
    def datadir(self) -> Path:
        return self.root / "db" / "data"

    @property
    def socket(self) -> Path:
        return self.root / "db" / "mariadb.sock"

    def missing(self) -> list[str]:
        return [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]

    def slurm_conf_lines(self) -> list[str]:
        """What slurm.conf says so slurmctld records every job in this slurmdbd."""
        # AccountingStoragePass is, for slurmdbd, the munge socket its clients sign with (slurm.conf(5)).
        return ["AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=127.0.0.1",
                f"AccountingStoragePort={self.dbd_port}", f"AccountingStoragePass={self.root}/munge/munge.sock"]

    def write_config(self, *, slurmdbd_pid: Path) -> None:
        (self.root / "db").mkdir(parents=True, exist_ok=True)
        conf = self.root / "slurmdbd.conf"  # slurmdbd reads it beside SLURM_CONF; it must be 0600
        conf.write_text("\n".join([
            "AuthType=auth/munge", f"AuthInfo=socket={self.root}/munge/munge.sock",
            "DbdHost=localhost", "DbdAddr=127.0.0.1", f"DbdPort={self.dbd_port}", "SlurmUser=root",
            f"PidFile={slurmdbd_pid}", f"LogFile={self.root}/log/slurmdbd.log", "DebugLevel=info",
            "StorageType=accounting_storage/mysql", "StorageHost=127.0.0.1", f"StoragePort={self.db_port}",
            "StorageUser=slurm", f"StoragePass={self.password}", "StorageLoc=slurm_acct_db",
        ]) + "\n")
        conf.chmod(0o600)

    def mariadb_argv(self) -> list[str]:
        # Small buffers and logs, no syncs: a throwaway database of a few hundred job rows, once per session.
        return ["mariadbd", "--no-defaults", f"--datadir={self.datadir}", "--user=root", f"--socket={self.socket}",
                f"--port={self.db_port}", "--bind-address=127.0.0.1", "--skip-name-resolve", "--skip-log-bin",
                f"--pid-file={self.root / 'db' / 'mariadbd.pid'}", f"--log-error={self.root / 'log' / 'mariadbd.log'}",
                f"--init-file={self.root / 'db' / 'init.sql'}", "--innodb-buffer-pool-size=32M",
                "--innodb-log-file-size=8M", "--innodb-flush-log-at-trx-commit=0", "--innodb-file-per-table=0",
                "--innodb-flush-method=nosync", "--innodb-doublewrite=0"]

    def install_database(self) -> None:
        """A fresh data folder and the grant slurmdbd signs in with, applied at every start.

        `mariadb-install-db` takes 1 s on an idle machine and 9 s on a busy one (it syncs every system
        table), so its result is kept once per MariaDB version in the temp folder and copied (40 MB) for
        each cluster: a test session starts one cluster per worker, and the demo and benchmarks theirs."""
        if not (self.datadir / "mysql").exists():
            shutil.copytree(self._pristine_datadir(), self.datadir, symlinks=True)
        (self.root / "db" / "init.sql").write_text(
            f"CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '{self.password}';\n"
            f"ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{self.password}';\n"
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';\n")

    @staticmethod
    def _pristine_datadir() -> Path:
        version = subprocess.run(["mariadbd", "--version"], capture_output=True, text=True, timeout=30).stdout
        digest = hashlib.sha256(version.encode()).hexdigest()[:12]
        pristine = Path(tempfile.gettempdir()) / f"portal-mariadb-pristine-{os.geteuid()}-{digest}"
        if (pristine / "mysql").exists():
            return pristine
        building = Path(tempfile.mkdtemp(prefix=f"{pristine.name}-", dir=pristine.parent))
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={building / 'data'}", "--user=root",
                        "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve",
                        "--innodb-log-file-size=8M"],
                       capture_output=True, text=True, timeout=180, check=True)
        try:  # the first of two sessions building it at once wins; the other's copy is thrown away
            os.rename(building / "data", pristine)
        except OSError:
            pass
        shutil.rmtree(building, ignore_errors=True)
        return pristine

    def database_answers(self) -> bool:
        return subprocess.run(["mariadb-admin", "--no-defaults", f"--socket={self.socket}", "-uroot", "ping"],
                              capture_output=True, text=True, timeout=10).returncode == 0

    def sacctmgr(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(["sacctmgr", "-i", *argv], env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def wait_dbd(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            done = self.sacctmgr("-n", "show", "cluster", "format=cluster", timeout=10)
            if done.returncode == 0:
                return
            last = done.stderr.strip()
            time.sleep(0.2)
        raise TimeoutError(f"slurmdbd did not answer sacctmgr in {timeout}s: {last}")

    def remove_data(self) -> None:
        shutil.rmtree(self.root / "db", ignore_errors=True)

