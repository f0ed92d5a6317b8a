"""Helpers every app uses, one place each: how a moment is shown (`times`), the bounds of every number a
user can send (`limits`), list pages (`pagination`), server-drawn charts (`charts`), safe redirects
(`redirects`) and the grace figures read from settings (`grace`). They import no other part of the portal
beyond Django, so quotas, the scheduler, reports and the web shell can all use them."""
