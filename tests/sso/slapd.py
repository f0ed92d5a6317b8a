"""A private OpenLDAP server for the SSO tests: Debian's slapd on a free loopback port, with its
configuration and database in a temporary directory (never the system's /etc/ldap or /var/lib/ldap).
It fails, never skips, when slapd cannot start (.ci/run installs it)."""
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SUFFIX = "dc=example,dc=com"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PASSWORD = "root-secret-2026"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
SCHEMA_DIR = Path("/etc/ldap/schema")
_FOLDERS = (f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people\n\n"
            f"dn: {GROUPS}\nobjectClass: organizationalUnit\nou: groups\n")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _conf(directory: Path, port: int) -> str:
    schemas = "\n".join(f"include {SCHEMA_DIR / name}.schema" for name in ("core", "cosine", "inetorgperson", "nis"))
    return f"""{schemas}
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {directory / 'slapd.pid'}
argsfile {directory / 'slapd.args'}
# Anyone may bind (the portal binds as the user to check a password); only the bound may read.
access to attrs=userPassword by self write by anonymous auth by * none
access to * by users read by anonymous auth

database mdb
maxsize 10485760
suffix "{SUFFIX}"
rootdn "{ROOT_DN}"
rootpw {ROOT_PASSWORD}
directory {directory / 'data'}
index objectClass eq
index member eq
"""


@dataclass
class Directory:
    """A running slapd and what a test needs to change its people and groups."""
    uri: str
    process: subprocess.Popen
    workdir: Path

    def _tool(self, tool: str, ldif: str) -> None:
        result = subprocess.run([tool, "-x", "-H", self.uri, "-D", ROOT_DN, "-w", ROOT_PASSWORD],
                                input=ldif, capture_output=True, text=True, timeout=20)
        if result.returncode != 0:
            raise RuntimeError(f"{tool} failed ({result.returncode}): {result.stderr}\n{ldif}")

    def add(self, ldif: str) -> None:
        self._tool("ldapadd", ldif)

    def modify(self, ldif: str) -> None:
        self._tool("ldapmodify", ldif)

    def add_person(self, uid: str, password: str, *, given: str = "Dana", surname: str = "Directory") -> str:
        dn = f"uid={uid},{PEOPLE}"
        self.add(f"dn: {dn}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {given} {surname}\n"
                 f"givenName: {given}\nsn: {surname}\nmail: {uid}@example.com\nuserPassword: {password}\n")
        return dn

    def add_group(self, name: str, *member_dns: str) -> str:
        dn = f"cn={name},{GROUPS}"
        # groupOfNames needs a member: the root DN stays in every group, so its last person can leave.
        members = "".join(f"member: {m}\n" for m in (ROOT_DN, *member_dns))
        self.add(f"dn: {dn}\nobjectClass: groupOfNames\ncn: {name}\n{members}")
        return dn

    def add_member(self, group: str, member_dn: str) -> None:
        self.modify(f"dn: cn={group},{GROUPS}\nchangetype: modify\nadd: member\nmember: {member_dn}\n")

    def remove_member(self, group: str, member_dn: str) -> None:
        self.modify(f"dn: cn={group},{GROUPS}\nchangetype: modify\ndelete: member\nmember: {member_dn}\n")

    def delete(self, dn: str) -> None:
        result = subprocess.run(["ldapdelete", "-x", "-H", self.uri, "-D", ROOT_DN, "-w", ROOT_PASSWORD, dn],
                                capture_output=True, text=True, timeout=20)
        if result.returncode != 0:
            raise RuntimeError(f"ldapdelete failed: {result.stderr}")

    def empty(self) -> None:
        """Back to the empty people and groups folders `start` made (the next test's directory)."""
        for base in (PEOPLE, GROUPS):
            result = subprocess.run(["ldapdelete", "-x", "-r", "-H", self.uri, "-D", ROOT_DN, "-w", ROOT_PASSWORD,
                                     base], capture_output=True, text=True, timeout=20)
            if result.returncode not in (0, 32):  # 32: no such object (already empty)
                raise RuntimeError(f"ldapdelete -r {base} failed: {result.stderr}")
        self.add(_FOLDERS)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def start(workdir: Path) -> Directory:
    slapd = shutil.which("slapd") or "/usr/sbin/slapd"
    if not Path(slapd).exists():
        raise RuntimeError("slapd is not installed: apt-get install slapd ldap-utils (.ci/run does)")
    (workdir / "data").mkdir(parents=True, exist_ok=True)
    conf = workdir / "slapd.conf"
    port = free_port()
    conf.write_text(_conf(workdir, port))
    uri = f"ldap://127.0.0.1:{port}"
    # -d 0 keeps slapd in the foreground (so this process owns it) without debug output.
    process = subprocess.Popen([slapd, "-f", str(conf), "-h", f"{uri}/", "-d", "0"],
                               stdout=subprocess.DEVNULL, stderr=open(workdir / "slapd.log", "w"))
    directory = Directory(uri=uri, process=process, workdir=workdir)
    deadline = time.monotonic() + 20
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"slapd exited ({process.returncode}): {(workdir / 'slapd.log').read_text()}")
        probe = subprocess.run(["ldapsearch", "-x", "-H", uri, "-D", ROOT_DN, "-w", ROOT_PASSWORD,
                                "-b", "", "-s", "base"], capture_output=True, timeout=10)
        if probe.returncode == 0:
            break
        if time.monotonic() > deadline:
            directory.stop()
            raise RuntimeError(f"slapd did not answer on {uri}: {probe.stderr.decode()}")
        time.sleep(0.1)
    directory.add(f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n\n"
                  + _FOLDERS)
    return directory
