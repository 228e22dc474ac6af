"""Roles from an identity provider's claims: the ``IRIS_AUTH_ADMIN_CLAIM`` rule.

A rule is ``path=value`` (the claim equals the value) or ``path contains value`` (the claim is a list
holding the value, or a space-separated string such as ``scope`` holding it as one word). The path walks
nested objects by dots (``app_metadata.role``); a claim whose name itself has dots (Auth0's namespaced
``https://example.com/roles``) is found by its whole name first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from iris.app.settings import SettingsError

_RULE = re.compile(r"^\s*(?P<path>\S+?)\s*(?:(?P<eq>=)|\s(?P<contains>contains)\s)\s*(?P<value>\S.*?)\s*$")
_DEFAULT_ADMIN_ROLES = frozenset({"admin", "service_role"})


class ClaimRule(msgspec.Struct, frozen=True, kw_only=True):
    """One test on a token's claims."""

    path: str
    operator: Literal["equals", "contains"]
    value: str

    def matches(self, claims: Mapping[str, Any]) -> bool:
        """Whether the claims pass this test; a missing claim never does."""
        found = _claim_at(claims, self.path)
        if self.operator == "equals":
            return _scalar_text(found) == self.value
        if isinstance(found, list):
            return any(_scalar_text(item) == self.value for item in found)
        if isinstance(found, str):
            return self.value in found.split()
        return False


def parse_claim_rule(text: str) -> ClaimRule:
    """``role=admin`` or ``groups contains iris-admins`` as a :class:`ClaimRule`; anything else is a
    :class:`SettingsError` naming the setting."""
    match = _RULE.fullmatch(text)
    if match is None:
        raise SettingsError(
            f"IRIS_AUTH_ADMIN_CLAIM={text!r}: write 'claim=value' or 'claim contains value' "
            "(e.g. 'role=admin', 'groups contains iris-admins', 'app_metadata.role=admin')"
        )
    operator: Literal["equals", "contains"] = "equals" if match["eq"] else "contains"
    return ClaimRule(path=match["path"], operator=operator, value=match["value"])


def is_admin(claims: Mapping[str, Any], rule: ClaimRule | None) -> bool:
    """Admin by the rule when one is set, else by Supabase's convention (`role` ``admin`` or
    ``service_role``)."""
    if rule is None:
        return claims.get("role") in _DEFAULT_ADMIN_ROLES
    return rule.matches(claims)


def _claim_at(claims: Mapping[str, Any], path: str) -> object:
    if path in claims:
        return claims[path]
    found: object = claims
    for part in path.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


def _scalar_text(value: object) -> str | None:
    """A string, number or boolean as the rule's text spells it (``true``, ``1``); others never match."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None
