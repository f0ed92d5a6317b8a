from portal.accounts.sso import admin  # noqa: F401  (registers the single sign-on admin pages)
