"""The Lua scripts of accounts (accounts/lua/)."""

from __future__ import annotations

from core.lua import load

LINK_CODE_ISSUE = load(__file__, "link_code_issue")
LINK_CODE_REDEEM = load(__file__, "link_code_redeem")
LOGIN_FAILURES = load(__file__, "login_failures")
