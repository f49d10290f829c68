"""Deleting a row together with every row that refers to it, found from the table metadata.

Tables added later (API logs, cached records, sync runs ...) are covered without a list to
maintain: anything with a foreign key to the row, directly or through another such row, goes.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, SQLModel


def delete_with_dependents(
    session: Session,
    *,
    table: sa.Table,
    where: ColumnElement[bool],
    metadata: sa.MetaData | None = None,
    _path: tuple[str, ...] = (),
) -> None:
    """Delete the rows of ``table`` matching ``where`` and, first, all rows referring to them."""
    metadata = metadata or SQLModel.metadata
    for child in metadata.sorted_tables:
        # Self references and cycles would recurse forever; no table here has them.
        if child.name == table.name or child.name in _path:
            continue
        for fk in child.foreign_keys:
            if fk.column.table.name != table.name:
                continue
            referenced = sa.select(table.c[fk.column.name]).where(where)
            delete_with_dependents(
                session,
                table=child,
                where=fk.parent.in_(referenced),
                metadata=metadata,
                _path=(*_path, table.name),
            )
    session.execute(sa.delete(table).where(where))
