from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "portal.accounts"
    # The label keeps the tables and migrations the app had as a top-level package.
    label = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from portal.accounts import lockout  # noqa: F401  (connects the failed-login counter)
