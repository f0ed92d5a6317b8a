"""Print a new personal API token for a user (scripts and the fuzz run; users use /account/tokens/)."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from portal.accounts.tokens import personal_token_create


class Command(BaseCommand):
    help = "Create a personal API token for USERNAME and print its key."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="script")
        parser.add_argument("--days", type=int, default=7)

    def handle(self, *args, username: str, name: str, days: int, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        _token, key = personal_token_create(user=user, name=name, lifetime_days=days)
        self.stdout.write(key)
