"""The one error the rig raises for conditions a user can act on (missing Go, a failed build, a timeout)."""


class RigError(Exception):
    """Printed as one line; `make e2e` exits 2."""
