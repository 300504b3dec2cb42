"""API tokens: the admin endpoints that create, list and revoke them (audited; auth itself
only checks them)."""
