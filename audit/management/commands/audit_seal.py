"""Seal every committed audit event now (the beat task does this periodically) and export the heads."""
from django.core.management.base import BaseCommand

from audit.chain.sealing import audit_seal


class Command(BaseCommand):
    help = "Chain, sign and export every audit event not sealed yet."

    def handle(self, *args, **options):
        self.stdout.write(f"Sealed {audit_seal()} audit events.")
