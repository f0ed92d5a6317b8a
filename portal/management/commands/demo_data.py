from django.core.management.base import BaseCommand

from portal.demo import DEMO_PASSWORD, load_demo
from portal.demo_history import load_demo_history


class Command(BaseCommand):
    help = "Load the demo teams, pools, nodes, base quotas and users (idempotent)."

    def handle(self, *args, **options):
        logins = load_demo()
        load_demo_history()
        self.stdout.write(self.style.SUCCESS(f"Demo data ready: {len(logins)} logins, password {DEMO_PASSWORD!r}"))
