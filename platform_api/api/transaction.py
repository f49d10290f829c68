"""A request's database session that is committed before the response is sent.

FastAPI ends ``yield`` dependencies after the response by default (scope ``"request"``): a
client could read 201 before the row is committed, send its next request (redeem the link
token it just got) and find nothing, or get a success for a write whose commit then failed.
``scope="function"`` ends the dependency, and so commits, when the route function returns.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends
from sqlmodel import Session

from platform_api.api.deps import get_session

CommittedSessionDep = Annotated[Session, Depends(get_session, scope="function")]
