"""Start web, worker and beat together in the foreground for the embedded demo; a dead worker or beat
is restarted; Ctrl-C stops all."""
import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand

from portal.demo import DEMO_PASSWORD, load_demo
from portal.demo_im import demo_im_log, start_demo_im_receiver
from portal.demo_mail import demo_mail_folder, start_demo_smtp_receiver


# More than MAX_RESTARTS deaths of one process within RESTART_WINDOW seconds stop the demo instead.
MAX_RESTARTS, RESTART_WINDOW = 5, 60.0


class Command(BaseCommand):
    help = "Run the embedded demo: Django web server + Celery worker + Celery beat."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=settings.DEMO_PORT)
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args, host: str, port: int, **options):
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        # The receivers' ports follow the port served unless set explicitly; the worker that sends mail and
        # IM and the demo data's IM channel (loaded below, in this process) must agree on them.
        settings.DEMO_IM_PORT = int(os.environ.get("DEMO_IM_PORT", port + 25))
        settings.DEMO_SMTP_PORT = int(os.environ.get("DEMO_SMTP_PORT", port + 26))
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PORT": str(port), "DEMO_IM_PORT": str(settings.DEMO_IM_PORT),
               "DEMO_SMTP_PORT": str(settings.DEMO_SMTP_PORT)}
        python = sys.executable
        processes = {
            # One worker per queue: evaluations never wait behind sbatch and squeue calls.
            "worker": [python, "-m", "celery", "-A", "portal", "worker", "--pool=solo", "--loglevel=INFO",
                       "--without-gossip", "--without-mingle", "-Q", "celery", "-n", "demo-worker@%h"],
            "cluster-worker": [python, "-m", "celery", "-A", "portal", "worker", "--pool=solo", "--loglevel=INFO",
                               "--without-gossip", "--without-mingle", "-Q", settings.CLUSTER_QUEUE,
                               "-n", "demo-cluster@%h"],
            "beat": [python, "-m", "celery", "-A", "portal", "beat", "--loglevel=INFO",
                     f"--schedule={settings.CELERY_BEAT_SCHEDULE_FILENAME}"],
            "web": [python, "manage.py", "runserver", "--noreload", f"{host}:{port}"],
        }
        # The demo team llm's IM channel posts here (portal/demo_im.py): notices show up in a page and a log.
        try:
            start_demo_im_receiver()
            im_line = (f"IM notices of team llm: http://127.0.0.1:{settings.DEMO_IM_PORT}/ "
                       f"(also appended to {demo_im_log()})")
        except OSError as exc:
            im_line = f"Demo IM receiver not started on port {settings.DEMO_IM_PORT}: {exc} (set DEMO_IM_PORT)"
        if os.environ.get("EMAIL_HOST"):
            mail_line = f"Mail goes to {os.environ['EMAIL_HOST']} (EMAIL_HOST)."
        else:
            try:
                start_demo_smtp_receiver()
                mail_line = (f"Mail: http://127.0.0.1:{settings.DEMO_IM_PORT}/mail/ (SMTP on 127.0.0.1:"
                             f"{settings.DEMO_SMTP_PORT}, files in {demo_mail_folder()})")
            except (OSError, ImportError, RuntimeError) as exc:
                mail_line = f"Demo mail receiver not started on port {settings.DEMO_SMTP_PORT}: {exc} (set DEMO_SMTP_PORT)"
        children = {name: subprocess.Popen(cmd, env=env) for name, cmd in processes.items()}
        url = f"http://{host}:{port}/"
        self.stdout.write(self.style.SUCCESS(f"\nGPU quota portal demo running at {url}  (admin: {url}admin/)"))
        self.stdout.write(f"Logins (password {DEMO_PASSWORD!r} for all):")
        for login in load_demo():
            self.stdout.write(f"  {login.username:<18} {login.role}")
        self.stdout.write(im_line)
        self.stdout.write(mail_line)
        self.stdout.write("Press Ctrl-C to stop web, worker and beat.\n")

        def stop(*_):
            for child in children.values():
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            for child in children.values():
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    child.kill()
            sys.exit(0)

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        restarts = {name: [] for name in processes}
        while True:
            for name, child in list(children.items()):
                if child.poll() is None:
                    continue
                recent = [t for t in restarts[name] if time.monotonic() - t < RESTART_WINDOW]
                if name == "web" or len(recent) >= MAX_RESTARTS:
                    self.stderr.write(f"{name} exited with code {child.returncode}; stopping the demo.")
                    stop()
                # A worker or beat that dies (a broker restart can kill a Celery worker) is started
                # again, as systemd's Restart=always does in production.
                self.stderr.write(f"{name} exited with code {child.returncode}; restarting it.")
                restarts[name] = [*recent, time.monotonic()]
                children[name] = subprocess.Popen(processes[name], env=env)
            time.sleep(1)
