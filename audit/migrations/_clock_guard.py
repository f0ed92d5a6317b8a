"""The INSERT guard on audit events' time: the database fills occurred_at when a writer leaves it out,
and refuses a time further than the tolerance from its own clock, so a forged event cannot be backdated
into a sealed stretch of the chain. Kept beside the migrations so the test of the production bound
installs the very same function."""


def occurred_at_guard_sql(tolerance_seconds: int) -> str:
    return f"""
CREATE OR REPLACE FUNCTION audit_event_occurred_at_guard() RETURNS trigger AS $$
BEGIN
    IF NEW.occurred_at IS NULL THEN
        NEW.occurred_at := now();
    ELSIF abs(extract(epoch FROM (NEW.occurred_at - now()))) > {int(tolerance_seconds)} THEN
        RAISE EXCEPTION 'audit event time % is more than {int(tolerance_seconds)} s from the database clock %: refused',
            NEW.occurred_at, now() USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""


TRIGGER = """
DROP TRIGGER IF EXISTS audit_event_occurred_at_guard ON audit_auditevent;
CREATE TRIGGER audit_event_occurred_at_guard
    BEFORE INSERT ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_event_occurred_at_guard();
"""

DROP = """
DROP TRIGGER IF EXISTS audit_event_occurred_at_guard ON audit_auditevent;
DROP FUNCTION IF EXISTS audit_event_occurred_at_guard();
"""
