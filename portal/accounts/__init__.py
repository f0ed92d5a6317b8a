"""Sign-in protection and personal API tokens: login throttling and lockout, hashed tokens users
create and revoke themselves, and the token authentication that reads both kinds of token."""
