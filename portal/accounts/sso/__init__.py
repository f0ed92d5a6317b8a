"""Single sign-on: LDAP and OpenID Connect sign-in (each optional by settings), the rules that map
directory groups to tenants and roles, and the sync that keeps directory users' access in step."""
