"""The team queue page as its readers live with it: served by gunicorn as the README's deployment runs it
(four sync workers) on a port of its own, with the configured cache (CACHE_URL: Redis in production), read by
concurrent readers over HTTP, each with its own session. Reports p50/p95 milliseconds per request and the
page's bytes, for the page and for its unchanged live refresh: the poll a reader's page sends every 3 seconds
(scheduler/jobs/live_rows.py), saying which version of the region it shows."""
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count
from django.test import Client

from quotas.models import Membership
from scheduler.models import PENDING_STATUSES, Job

ROOT = Path(__file__).resolve().parents[2]
WORKERS = 4  # README, Production: the web unit's `gunicorn portal.wsgi --workers 4` (sync workers)
_REGION = re.compile(rb'data-live-frame="([^"]*)" data-live-version="([^"]*)"')


def _database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def _serve(port: int) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": _database_url()}
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "portal.wsgi", "--bind", f"127.0.0.1:{port}",
                               "--workers", str(WORKERS), "--log-level", "warning"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
            break
        except Exception:
            time.sleep(0.3)
    # Every worker booted (their start-up is not a request's cost): all there and their CPU time at rest.
    settled = None
    while time.monotonic() < deadline:
        try:
            now = _workers_cpu_s(server) if len(_children(server)) == WORKERS else None
        except OSError:
            now = None
        if now is not None and now == settled:
            break
        settled = now
        time.sleep(0.5)
    return server


def concurrent_page_figures(world, *, readers: int = 20, requests_each: int = 10, port: int = 9610) -> dict:
    busiest = (Job.objects.filter(pool=world.pool, status__in=PENDING_STATUSES).values("tenant_id")
               .annotate(n=Count("id")).order_by("-n").first())
    tenant = next(t for t in world.tenants if t.pk == busiest["tenant_id"])
    cookies = []
    for k in range(readers):
        user = get_user_model().objects.create_user(username=f"{world.prefix}reader-{k}")
        Membership.objects.create(user=user, tenant=tenant, role=Membership.Role.MEMBER)
        client = Client()
        client.force_login(user)  # a session row the server reads
        cookies.append(f"sessionid={client.cookies['sessionid'].value}")
    url = f"http://127.0.0.1:{port}/tenants/{tenant.slug}/queue/"
    server = _serve(port)
    try:
        # The version's render, alone: the first reader after a change (a cycle, a write, the minute) waits for
        # it while the team's other readers wait on its claim (scheduler/jobs/shared_renders.py). Timed here
        # on its own, then the readers read the rendered version concurrently (the state a team's readers are
        # in between changes; a minute that turns during their reads renders again among them).
        before = _workers_cpu_s(server)
        first = _read(url, cookies[:1], 1, {})
        render_cpu_ms = round((_workers_cpu_s(server) - before) * 1000, 1)
        # Each reader's first visit, concurrently, timed apart: it renders that reader's frame, and it is each
        # worker's first page since it booted (its database connection and prepared statements, its cache
        # client); in one run the first of a reader's ten reads were its whole p95 (412 ms against 88-100 ms
        # for the rounds after it). The figures below are the readers' reads between changes.
        visits = _read(url, cookies, 1, {})
        start, db_start, readers_start = _workers_cpu_s(server), _database_cpu(), time.process_time()
        page = _read(url, cookies, requests_each, {})
        middle, db_middle, readers_middle = _workers_cpu_s(server), _database_cpu(), time.process_time()
        # Each reader's poll, as live_rows.js sends it: the frame and version of the region its page shows (the
        # version as the last answer's X-Live-Version said).
        refresh = _read(url, cookies, requests_each, {"HX-Request": "true"}, polls=page["regions"])
        end, db_end, readers_end = _workers_cpu_s(server), _database_cpu(), time.process_time()
    finally:
        _stop(server)
    n = len(cookies) * requests_each

    def per_request(before, after):
        return None if before is None or after is None else round(_used(before, after) * 1000 / n, 2)
    return {"readers": readers, "queue_page_first_render_ms": first["p50"], "queue_page_first_render_server_cpu_ms":
            render_cpu_ms, "queue_page_first_render_errors": first["errors"],
            "queue_page_first_visits_p95_ms": visits["p95"], "queue_page_first_visits_errors": visits["errors"],
            "queue_page_concurrent_p50_ms": page["p50"], "queue_page_concurrent_p95_ms": page["p95"],
            "queue_page_concurrent_bytes": page["bytes"],
            # The server's CPU per request (its workers' own accounting): what a read costs, however busy the
            # machine is with other work while the wall-clock figures are taken.
            "queue_page_server_cpu_ms": round((middle - start) * 1000 / len(cookies) / requests_each, 2),
            "unchanged_refresh_server_cpu_ms": round((end - middle) * 1000 / len(cookies) / requests_each, 2),
            # The same machine's other CPU per request: PostgreSQL's backends serving the workers, and the
            # readers themselves (this process's threads), which share the cores with the server.
            "queue_page_database_cpu_ms": per_request(db_start, db_middle),
            "unchanged_refresh_database_cpu_ms": per_request(db_middle, db_end),
            "queue_page_readers_cpu_ms": round((readers_middle - readers_start) * 1000 / n, 2),
            "unchanged_refresh_readers_cpu_ms": round((readers_end - readers_middle) * 1000 / n, 2),
            "queue_page_concurrent_errors": page["errors"],
            "unchanged_refresh_concurrent_p50_ms": refresh["p50"], "unchanged_refresh_concurrent_p95_ms": refresh["p95"],
            "unchanged_refresh_concurrent_errors": refresh["errors"], "unchanged_refresh_statuses": refresh["statuses"],
            "gunicorn_workers": WORKERS}


def _stop(server: subprocess.Popen, timeout: float = 20) -> None:
    """Stop gunicorn: gracefully, or killed when a loaded machine keeps its workers from ending within
    `timeout` seconds (its workers leave when their parent is gone); never left running."""
    server.terminate()
    try:
        server.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=timeout)


def _children(server: subprocess.Popen) -> list[str]:
    return Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()


def _workers_cpu_s(server: subprocess.Popen) -> float:
    """CPU seconds used so far by gunicorn's workers (Linux /proc; the workers live as long as the server)."""
    total = 0
    for pid in _children(server):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def _database_cpu() -> dict[int, float] | None:
    """CPU seconds of each PostgreSQL backend on this database but this process's own (the workers'
    connections, kept between requests), or None when the server's processes are not visible here."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid()")
        pids = [pid for (pid,) in cursor.fetchall()]
    used = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile, or the database runs elsewhere
            continue
        used[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return used if used or not pids else None


def _used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU used between two readings: a backend that started in between counts from zero."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def _get(port: int, request: bytes) -> tuple[int, dict, bytes]:
    """One GET over its own connection (gunicorn's sync workers close it after each answer), read to the end:
    the status, the headers (lower-case names) and the whole body. A plain socket, not urllib: the readers share
    the cores with the server, and urllib's machinery cost them about twice this per page (0.84 against 0.47 ms
    of CPU a page in one bench_pages run each)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        conn.sendall(request)
        chunks = []
        while chunk := conn.recv(262144):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict((name.strip().lower(), value.strip()) for name, _, value in (line.partition(":") for line in lines[1:]))
    if "content-length" in headers and len(body) != int(headers["content-length"]):
        raise OSError(f"answer cut short: {len(body)} of {headers['content-length']} bytes")
    return int(lines[0].split()[1]), headers, body


def _read(url: str, cookies: list[str], requests_each: int, headers: dict, polls: dict | None = None) -> dict:
    """Each cookie's reader sends its requests one after another; with `polls` (cookie -> the frame and version
    its page shows) each request is that reader's live poll, which keeps the version the last answer gave."""
    timings, sizes, errors, etags, statuses, regions = [], [], [0], [], {}, {}
    lock = threading.Lock()
    address = urllib.parse.urlsplit(url)
    port, target = address.port, address.path + (f"?{address.query}" if address.query else "")

    def reader(cookie: str) -> None:
        shown = list(polls[cookie]) if polls else None
        for _ in range(requests_each):
            have = {"X-Live-Have": f"{shown[0]};{shown[1]}"} if shown else {}
            fields = {"Host": f"127.0.0.1:{port}", "Cookie": cookie, "Connection": "close", **headers, **have}
            request = (f"GET {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
                       + "\r\n").encode("latin-1")
            start = time.perf_counter()
            try:
                status, answer, body = _get(port, request)
                etag, version = answer.get("etag", ""), answer.get("x-live-version")
                if status not in (200, 204, 304):  # a redirect to the login page is a failed read too
                    with lock:
                        errors[0] += 1
            except OSError as failure:  # no answer in time, or none at all: counted, and the reader goes on
                body, etag, status, version = b"", "", type(failure).__name__, None
                with lock:
                    errors[0] += 1
            elapsed = (time.perf_counter() - start) * 1000.0
            found = _REGION.search(body)
            if shown is not None:
                shown = [found.group(1).decode() if found else shown[0], version or shown[1]]
            with lock:
                timings.append(elapsed)
                sizes.append(len(body))
                etags.append(etag)
                statuses[status] = statuses.get(status, 0) + 1
                if found:
                    regions[cookie] = (found.group(1).decode(), found.group(2).decode())
    threads = [threading.Thread(target=reader, args=(cookie,)) for cookie in cookies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    timings.sort()
    return {"p50": round(statistics.median(timings), 1),
            "p95": round(timings[min(len(timings) - 1, int(round(0.95 * (len(timings) - 1))))], 1),
            "bytes": max(sizes), "errors": errors[0], "etag": next((e for e in etags if e), ""),
            "statuses": {str(k): v for k, v in sorted(statuses.items())}, "regions": regions}
