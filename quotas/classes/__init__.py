"""Priority classes as data: ordered, with what each may do, edited by platform admins (issue 39)."""
